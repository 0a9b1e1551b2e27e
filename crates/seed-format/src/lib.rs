//! seed's format layer: what a fact is, byte for byte, and nothing else.
//!
//! Canonical CBOR (the one encoder and the strict decoders), facts (the
//! fixed-position header, envelopes, ids, signing and strict signature
//! checks, the core's fact bodies and their schemas), the naming rules and
//! the named limits. It knows no store, no clock, no key ring, no world, no
//! role and no network: its dependencies (no tokio, axum, reqwest or sled)
//! make reaching for any of them a compile error. docs/reel-format.md is its
//! specification; docs/ARCHITECTURE.md places it among the layers.

pub mod canonical;
pub mod canopy;
pub mod fact;
pub mod limits;
pub mod names;
pub mod schemas;
