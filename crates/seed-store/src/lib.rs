//! seed's store layer: where facts are kept and what vouches for them.
//!
//! The `Store` trait and its sled backend, the key ring, the land's clock,
//! the land (the one writer of a land's facts), verification and bundles.
//! It knows no world, no role, no moment and no network: it depends on the
//! format layer only (no tokio, axum or reqwest), so reaching above it is a
//! compile error. The format layer's modules are re-exported at their
//! familiar paths (`crate::fact`, `crate::canonical`, …).

mod atomic_file;
pub mod bundle;
pub mod check;
pub mod clock;
pub mod keys;
pub mod land;
pub mod parallel;
pub mod progress;
mod signed;
pub mod snapshot;
pub mod store;
pub mod view;

pub use seed_format::{canonical, fact, limits, names, schemas};
