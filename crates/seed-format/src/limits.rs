//! Named limits with their defaults (promise 11, docs/promises.md). Every limit the
//! foundation enforces is a field here with its unit in its name.
//!
//! These are the foundation's values. The moment's own limits (inbox depth,
//! summon rate and length, the LLM's budgets) are configuration keys
//! (`seed_core::config::CONFIG_KEYS`, docs/config.md): `set-config` effects
//! folded into `World::config`, so replay sees the limits in force.

/// Largest fact body a land accepts when sealing, in bytes.
pub const FACT_BODY_BYTES_MAX_DEFAULT: usize = 64 * 1024;
/// Most appends a single group commit writes with one flush.
pub const GROUP_COMMIT_FACTS_MAX_DEFAULT: usize = 4096;
/// Most appends waiting for the committer before submitters block.
pub const APPEND_QUEUE_FACTS_MAX_DEFAULT: usize = 16 * 1024;
/// Largest reel bundle `seed import` reads, in bytes.
pub const BUNDLE_BYTES_MAX_DEFAULT: u64 = 256 * 1024 * 1024;
/// Signatures verified together in one batch by `seed verify`.
pub const VERIFY_BATCH_FACTS_DEFAULT: usize = 256;
/// Longest being name, in characters.
pub const BEING_NAME_CHARS_MAX: usize = 63;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub fact_body_bytes_max: usize,
    pub group_commit_facts_max: usize,
    pub append_queue_facts_max: usize,
    pub bundle_bytes_max: u64,
    pub verify_batch_facts: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fact_body_bytes_max: FACT_BODY_BYTES_MAX_DEFAULT,
            group_commit_facts_max: GROUP_COMMIT_FACTS_MAX_DEFAULT,
            append_queue_facts_max: APPEND_QUEUE_FACTS_MAX_DEFAULT,
            bundle_bytes_max: BUNDLE_BYTES_MAX_DEFAULT,
            verify_batch_facts: VERIFY_BATCH_FACTS_DEFAULT,
        }
    }
}
