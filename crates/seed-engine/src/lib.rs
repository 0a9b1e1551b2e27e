//! seed's engine: the core's moments run against a store.
//!
//! `engine` runs rounds of moments and seals them in one land order, for a
//! simulation or a live land (`engine::Mode`); `replay` re-runs a reel's
//! moments from their stored inputs and compares byte for byte. It knows no
//! HTTP: the portal drives a live engine from above. The layers below are
//! re-exported at their familiar paths (`crate::world`, `crate::land`, …).

pub mod audit;
pub mod cascade_view;
pub mod config_view;
pub mod engine;
pub mod freed_memory;
pub mod memory_view;
pub mod picked_facts;
pub mod replay;
pub mod snapshots;

pub use seed_core::{
    approval, authoring, cascade, config, definitions, embedding, extensions, face, health, llm, memory, moment,
    ownership, roles, script, spend, tools, world,
};
pub use seed_format::{canonical, fact, limits, names, schemas};
pub use seed_store::{bundle, check, clock, keys, land, mirror, parallel, progress, snapshot, store, view};
