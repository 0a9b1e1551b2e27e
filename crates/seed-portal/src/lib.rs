//! seed's edge: HTTP in and out.
//!
//! `portal` serves a live land to people (axum, sessions, pages, the API, the
//! event streams); `llm_http` calls language models over HTTP and runs an
//! in-process fake endpoint for tests; `mcp_client` calls the tools of the
//! MCP servers extensions declare; `canopy` is how a land speaks to other
//! lands (signed requests, proven identities). Nothing below this crate speaks HTTP or
//! starts a process.
//! The layers below are re-exported at their familiar paths.

pub mod canopy_http;
pub mod in_flight;
pub mod llm_http;
pub mod mcp_client;
pub mod portal;
pub mod tls;

pub use seed_core::{
    approval, authoring, canopy, cascade, config, embedding, extensions, face, health, llm, memory, moment, ownership,
    roles, script, spend, tools, world,
};
pub use seed_engine::{audit, cascade_view, config_view, engine, memory_view, replay, snapshots};
pub use seed_format::{canonical, fact, limits, names, schemas};
pub use seed_store::{bundle, check, clock, keys, land, mirror, parallel, progress, store, view};
