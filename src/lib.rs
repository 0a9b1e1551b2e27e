//! seed: a being substrate. A land hosts beings; each being is a row plus an
//! append-only reel of signed, hash-chained facts. See `docs/ARCHITECTURE.md`
//! for the map.
//!
//! This crate is the top of the layers: it re-exports every layer's modules
//! at one path (`seed::world`, `seed::land`, `seed::portal`, …) for the
//! `seed` binary, the integration tests and the benchmarks, and it offers
//! (never sets) the process's allocator.

mod allocator;

pub use seed_core::{
    approval, authoring, canopy, cascade, config, definitions, embedding, extensions, face, health, llm, memory,
    moment, ownership, roles, script, spend, tools, world,
};
pub use seed_engine::{audit, cascade_view, config_view, engine, memory_view, picked_facts, replay, snapshots};
pub use seed_format::{canonical, fact, limits, names, schemas};
pub use seed_portal::{canopy_http, llm_http, mcp_client, portal};
pub use seed_store::{bundle, check, clock, keys, land, mirror, parallel, progress, snapshot, store, view};

pub use allocator::{configure_allocator, turn_transparent_huge_pages_off, SeedAllocator, ALLOCATOR_PURGE_DELAY_MS};
