//! seed's store layer: where facts are kept and what vouches for them.
//!
//! The `Store` trait and its backends (the log store in the land folder,
//! PostgreSQL, and sled read once to migrate older lands), the key ring,
//! the land's clock, the land (the one writer of a land's facts),
//! verification and bundles. It knows no world, no role, no moment and no
//! HTTP: it depends on the format layer only among seed's crates (no axum
//! or reqwest; tokio only inside the PostgreSQL store, behind the
//! synchronous `Store` trait), so reaching above it is a compile error. The format layer's modules are re-exported at their
//! familiar paths (`crate::fact`, `crate::canonical`, …).

mod atomic_file;
pub mod bundle;
pub mod check;
pub mod clock;
pub mod keys;
pub mod land;
pub mod mirror;
pub mod parallel;
pub mod progress;
mod signed;
pub mod snapshot;
pub mod store;
pub mod view;

pub use seed_format::{canonical, fact, limits, names, schemas};
