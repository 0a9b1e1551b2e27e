//! The derived indexes (`k`, `l`, `n`, `z`): rebuilt from the primary
//! records (`f`, `x`), encoded as entries, and read back out so that
//! verification can compare what is stored with a rebuild.

use super::io_error;
use super::layout::{
    being_key, land_key, name_key, raw_record, DERIVED_PREFIXES, PREFIX_FACT, PREFIX_FORK, PREFIX_FORKED, PREFIX_KEY,
    PREFIX_LAND, PREFIX_NAME,
};
use crate::fact::BeingId;
use crate::store::chain::IndexDeriver;
use crate::store::{DerivedIndexes, ReindexReport, StoreError};
use std::collections::BTreeMap;

/// Computes every derived index from the primary records alone.
pub(super) fn derive_indexes(tree: &sled::Tree) -> Result<(DerivedIndexes, ReindexReport), StoreError> {
    let mut deriver = IndexDeriver::default();
    for entry in tree.scan_prefix([PREFIX_FACT]) {
        let (key, value) = entry.map_err(io_error)?;
        if let Some(record) = raw_record(&key, &value) {
            deriver.push(&record);
        }
    }
    for entry in tree.scan_prefix([PREFIX_FORK]) {
        let (key, _) = entry.map_err(io_error)?;
        if let Some(being) = BeingId::from_slice(&key[1..33.min(key.len())]) {
            deriver.fork_proof(being);
        }
    }
    Ok(deriver.finish())
}

/// The sled entries that represent `derived`, leaving out skipped beings, in
/// key order (see [`derived_entries_in_key_order`]).
pub(super) fn encode_derived(derived: &DerivedIndexes) -> Vec<(Vec<u8>, Vec<u8>)> {
    derived_entries_in_key_order(derived).collect()
}

/// The sled entries that represent `derived`, leaving out skipped beings, in
/// key order. The land log's entries (one per fact) are made one at a time
/// as they are taken, so a comparison with the stored indexes holds no copy
/// of them; the entries of the other indexes (a few per being) are gathered
/// and sorted.
pub(super) fn derived_entries_in_key_order(derived: &DerivedIndexes) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
    let kept = |being: &BeingId| !derived.skip.contains(being);
    let mut per_being = Vec::with_capacity(derived.heads.len() + derived.names.len() + derived.forked.len());
    for (being, head) in derived.heads.iter().filter(|(being, _)| kept(being)) {
        per_being.push((being_key(PREFIX_KEY, being), head.public_key.as_bytes().to_vec()));
    }
    for (name, being) in derived.names.iter().filter(|(_, being)| kept(being)) {
        per_being.push((name_key(name, being), Vec::new()));
    }
    for being in &derived.forked {
        per_being.push((being_key(PREFIX_FORKED, being), Vec::new()));
    }
    // Each kind of entry has its own prefix and comes from a map or a set
    // keyed by what its key encodes, so no key repeats.
    per_being.sort_unstable_by(|left, right| left.0.cmp(&right.0));
    debug_assert!(per_being.windows(2).all(|pair| pair[0].0 != pair[1].0), "index keys repeat");
    // Land log keys are the land prefix and a big-endian land seq: in the
    // map's order, and all between the per-being entries before and after
    // that prefix.
    let after_land_log = per_being.partition_point(|(key, _)| key.first() < Some(&PREFIX_LAND));
    let later = per_being.split_off(after_land_log);
    let land_log =
        derived.land_log.iter().filter(move |(_, (being, _))| kept(being)).map(|(land_seq, (being, seq))| {
            let mut value = being.as_bytes().to_vec();
            value.extend_from_slice(&seq.to_be_bytes());
            (land_key(*land_seq), value)
        });
    per_being.into_iter().chain(land_log).chain(later)
}

/// The being an index entry speaks of, if any.
pub(super) fn index_entry_being(key: &[u8], value: &[u8]) -> Option<BeingId> {
    match key.first()? {
        &PREFIX_KEY | &PREFIX_FORKED => BeingId::from_slice(key.get(1..33)?),
        &PREFIX_LAND => BeingId::from_slice(value.get(..32)?),
        &PREFIX_NAME => BeingId::from_slice(key.get(key.len().checked_sub(32)?..)?),
        _ => None,
    }
}

pub(super) fn derived_entries(tree: &sled::Tree) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, StoreError> {
    let mut entries = BTreeMap::new();
    for prefix in DERIVED_PREFIXES {
        for entry in tree.scan_prefix([prefix]) {
            let (key, value) = entry.map_err(io_error)?;
            entries.insert(key.to_vec(), value.to_vec());
        }
    }
    Ok(entries)
}

pub(super) fn describe_index_key(key: &[u8]) -> String {
    match key.first() {
        Some(&PREFIX_KEY) => format!("key index entry of {}", hex::encode(&key[1..]).get(..12).unwrap_or("?")),
        Some(&PREFIX_LAND) if key.len() == 9 => {
            format!("land log entry {}", u64::from_be_bytes(key[1..9].try_into().unwrap_or([0; 8])))
        }
        Some(&PREFIX_NAME) => {
            format!("name index {:?}", String::from_utf8_lossy(&key[1..key.len().saturating_sub(33)]))
        }
        Some(&PREFIX_FORKED) => "fork marker".to_string(),
        _ => format!("key {}", hex::encode(key)),
    }
}
