//! The key layout (see the table in the module above): one-byte prefixes,
//! how each key is built and split, and reading a fact record or a reel's
//! head back from the tree.

use super::io_error;
use crate::fact::body::KIND_END;
use crate::fact::{BeingId, Fact, FactId, PublicKeyBytes};
use crate::store::{Head, RawRecord, StoreError};

pub(super) const PREFIX_FACT: u8 = b'f';
pub(super) const PREFIX_FORK: u8 = b'x';
pub(super) const PREFIX_KEY: u8 = b'k';
/// The per-fact head index of lands written by earlier builds.
pub(super) const PREFIX_LEGACY_HEAD: u8 = b'h';
pub(super) const PREFIX_LAND: u8 = b'l';
pub(super) const PREFIX_NAME: u8 = b'n';
pub(super) const PREFIX_FORKED: u8 = b'z';
pub(super) const DERIVED_PREFIXES: [u8; 4] = [PREFIX_KEY, PREFIX_LAND, PREFIX_NAME, PREFIX_FORKED];
pub(super) const REINDEXING_MARKER: &[u8] = b"m:reindexing";
pub(super) fn fact_key(being: &BeingId, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(41);
    key.push(PREFIX_FACT);
    key.extend_from_slice(being.as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The fact records a scan of fact keys reads, in its order.
pub(super) fn records_of(
    entries: impl Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>,
) -> Result<Vec<RawRecord>, StoreError> {
    let mut records = Vec::new();
    for entry in entries {
        let (key, value) = entry.map_err(io_error)?;
        match raw_record(&key, &value) {
            Some(record) => records.push(record),
            None => return Err(StoreError::Io { reason: format!("malformed fact key {}", hex::encode(&key)) }),
        }
    }
    Ok(records)
}

pub(super) fn being_key(prefix: u8, being: &BeingId) -> Vec<u8> {
    let mut key = Vec::with_capacity(33);
    key.push(prefix);
    key.extend_from_slice(being.as_bytes());
    key
}

pub(super) fn land_key(land_seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(9);
    key.push(PREFIX_LAND);
    key.extend_from_slice(&land_seq.to_be_bytes());
    key
}

pub(super) fn name_key(name: &str, being: &BeingId) -> Vec<u8> {
    let mut key = name_prefix(name);
    key.extend_from_slice(being.as_bytes());
    key
}

pub(super) fn name_prefix(name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 34);
    key.push(PREFIX_NAME);
    key.extend_from_slice(name.as_bytes());
    key.push(0);
    key
}

pub(super) fn fork_key(being: &BeingId, seq: u64, rival: &FactId) -> Vec<u8> {
    let mut key = Vec::with_capacity(73);
    key.push(PREFIX_FORK);
    key.extend_from_slice(being.as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key.extend_from_slice(rival.as_bytes());
    key
}

/// A reel's head: its last fact record (seq, id, time, ended) and its `k`
/// entry (the key that signs next). `None` for a being with no reel.
pub(super) fn read_head(tree: &sled::Tree, being: &BeingId) -> Result<Option<Head>, StoreError> {
    let Some(last) = tree.scan_prefix(being_key(PREFIX_FACT, being)).next_back() else {
        return Ok(None);
    };
    let (key, value) = last.map_err(io_error)?;
    let seq = split_fact_key(&key).map_or(0, |(_, seq)| seq);
    let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq, reason };
    let record = raw_record(&key, &value).ok_or_else(|| corrupt("malformed record".into()))?;
    let fact = Fact::decode_envelope_for_index(&record.envelope).map_err(|error| corrupt(error.to_string()))?;
    let public_key = match tree.get(being_key(PREFIX_KEY, being)).map_err(io_error)? {
        Some(value) => PublicKeyBytes::from_slice(&value),
        None => None,
    }
    .ok_or_else(|| StoreError::Io {
        reason: format!("the key index entry of {being} is missing or malformed (run `seed reindex`)"),
    })?;
    Ok(Some(Head {
        seq: fact.header.seq,
        id: fact.id(),
        stored_time_ms: fact.header.stored_time_ms,
        public_key,
        ended: fact.kind() == KIND_END,
    }))
}

pub(super) fn encode_fact_record(land_seq: u64, envelope: &[u8]) -> Vec<u8> {
    let mut value = Vec::with_capacity(8 + envelope.len());
    value.extend_from_slice(&land_seq.to_be_bytes());
    value.extend_from_slice(envelope);
    value
}

pub(super) fn split_fact_key(key: &[u8]) -> Option<(BeingId, u64)> {
    if key.len() != 41 || key[0] != PREFIX_FACT {
        return None;
    }
    Some((BeingId::from_slice(&key[1..33])?, u64::from_be_bytes(key[33..41].try_into().ok()?)))
}

pub(super) fn raw_record(key: &[u8], value: &[u8]) -> Option<RawRecord> {
    let (being, seq) = split_fact_key(key)?;
    let (land_seq, envelope) = if value.len() >= 8 {
        (Some(u64::from_be_bytes(value[0..8].try_into().ok()?)), value[8..].to_vec())
    } else {
        (None, value.to_vec())
    };
    Some(RawRecord { being, seq, land_seq, envelope })
}
