//! The witness: a small file outside the store recording how many facts
//! were durable after the last group, so that a store found holding fewer
//! (truncated, or replaced by an older copy) is refused on open.

use std::path::Path;

pub(crate) const WITNESS_PREFIX: &str = "durable_facts ";

/// The witness's recorded count; `None` if it is absent or unreadable (it is
/// written without a sync, so after a power loss it may be empty: then it
/// proves nothing and is ignored).
pub(crate) fn read_witness(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim().strip_prefix(WITNESS_PREFIX)?.parse().ok()
}

/// Records a lower bound of the durable facts, overwriting a fixed-width
/// record in place (no file is created or renamed per group). Written after
/// the flush, so it never claims more than the store holds; not synced,
/// because a stale witness only weakens the truncation check, never breaks it.
pub(crate) fn write_witness(file: &std::fs::File, durable_facts: u64) {
    use std::os::unix::fs::FileExt;
    let _ = file.write_all_at(format!("{WITNESS_PREFIX}{durable_facts:020}\n").as_bytes(), 0);
}
