//! seed's pure core: everything a moment decides, and no I/O.
//!
//! Roles and roleFlow, the world and its fold, the moment's beats and its
//! verb layer, the face, Rhai scripts, extensions, and the LLM's prompt and
//! response. Its dependencies are the format layer and pure crates: no store,
//! no sled, no tokio, axum or reqwest, so a moment cannot reach a disk, a
//! clock or a network, and that is a compile error rather than a convention.
//! The format layer's modules are re-exported at their familiar paths.

pub mod approval;
pub mod authoring;
pub mod canopy;
pub mod cascade;
pub mod config;
pub mod definitions;
pub mod embedding;
pub mod extensions;
pub mod face;
pub mod health;
pub mod llm;
pub mod memory;
pub mod moment;
pub mod ownership;
pub mod roles;
pub mod script;
pub mod spend;
pub mod tools;
pub mod world;

pub use seed_format::{canonical, fact, limits, names, schemas};
