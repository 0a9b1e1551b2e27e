//! seed: a being substrate. A land hosts beings; each being is a row plus an
//! append-only reel of signed, hash-chained facts. See `docs/ARCHITECTURE.md`
//! for the map of this crate.

mod allocator;
pub mod bundle;
pub mod check;
pub mod clock;
pub mod engine;
pub mod extensions;
pub mod face;
pub mod keys;
pub mod land;
pub mod llm;
pub mod moment;
pub mod parallel;
pub mod portal;
pub mod replay;
pub mod roles;
pub mod script;
pub mod store;
pub mod view;
pub mod world;

// The format layer, at the paths the rest of the crate has always used.
pub use seed_format::{canonical, fact, limits, names, schemas};

pub use allocator::{configure_allocator, SeedAllocator, ALLOCATOR_PURGE_DELAY_MS};
