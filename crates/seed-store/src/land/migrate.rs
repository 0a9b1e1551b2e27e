//! Migrating a land of earlier builds, whose facts are in a sled store
//! (`store/`), into the log store (`log/`), once, the first time it is
//! opened. Every envelope is copied byte for byte at its land seq (a fact
//! that verification would refuse is copied as it is, so that it still
//! refuses it), and so are the fork proofs. The copy is built in
//! `log.migrating/` and renamed to `log/` only once it is whole and synced;
//! the sled store is removed after that. A migration that is interrupted
//! leaves the sled store as it was and starts over the next time.

use super::{LandError, SLED_STORE_DIR, WITNESS_FILE};
use crate::limits::Limits;
use crate::store::segments::{SegmentLog, SEGMENT_BYTES_MAX_DEFAULT};
use crate::store::{LogStore, SledOpenError, SledStore, Store, LOG_STORE_FORKS_DIR, LOG_STORE_SEGMENTS_DIR};
use std::path::Path;

/// Where the migration builds the log store before it is renamed into place.
const MIGRATING_DIR: &str = "log.migrating";
/// Land log entries copied a group (and a sync) at a time.
const MIGRATE_GROUP_FACTS: u64 = 4096;

pub(super) fn migrate_sled_store(dir: &Path, limits: &Limits) -> Result<(), LandError> {
    let failed = |reason: String| LandError::StoreOpen { dir: dir.to_path_buf(), reason };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LandError::Io { path, source }
    };
    let sled =
        SledStore::open(&dir.join(SLED_STORE_DIR), Some(&dir.join(WITNESS_FILE)), limits).map_err(
            |error| match error {
                SledOpenError::Locked => LandError::Locked { dir: dir.to_path_buf() },
                other => failed(format!("the store of an earlier build could not be read to migrate it: {other}")),
            },
        )?;
    let staging = dir.join(MIGRATING_DIR);
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    let mut log = SegmentLog::open_for_appending(&staging.join(LOG_STORE_SEGMENTS_DIR), SEGMENT_BYTES_MAX_DEFAULT)
        .map_err(|error| failed(error.to_string()))?;
    let len = sled.land_len()?;
    let mut from = 0;
    while from < len {
        let to = (from + MIGRATE_GROUP_FACTS).min(len);
        let mut envelopes = Vec::with_capacity((to - from) as usize);
        for entry in sled.land_log(from, to)? {
            let expected = from + envelopes.len() as u64;
            if entry.land_seq != expected {
                return Err(failed(format!(
                    "the land log of the store to migrate has no entry {expected}; run `seed reindex` with the build that wrote it"
                )));
            }
            let record = sled.raw_record_at(&entry.being, entry.seq)?.ok_or_else(|| {
                failed(format!("land log entry {expected} points at a fact the store to migrate does not hold"))
            })?;
            envelopes.push(record.envelope);
        }
        if envelopes.len() as u64 != to - from {
            return Err(failed(format!("the land log of the store to migrate ends early, before {to}")));
        }
        log.append_group(envelopes.iter().map(Vec::as_slice)).map_err(|error| failed(error.to_string()))?;
        from = to;
    }
    let proofs = sled.fork_proofs(None)?;
    if !proofs.is_empty() {
        let mut forks = SegmentLog::open_for_appending(&staging.join(LOG_STORE_FORKS_DIR), SEGMENT_BYTES_MAX_DEFAULT)
            .map_err(|error| failed(error.to_string()))?;
        forks
            .append_group(proofs.iter().map(|proof| proof.rival_envelope.as_slice()))
            .map_err(|error| failed(error.to_string()))?;
    }
    drop(log);
    sled.close()?;
    drop(sled);
    // Opening indexes the copy; closing writes its index files.
    let copy = LogStore::open(&staging, None, limits).map_err(|error| failed(error.to_string()))?;
    if copy.land_len()? != len {
        return Err(failed(format!("the migrated copy holds {} facts, not {len}", copy.land_len()?)));
    }
    copy.close()?;
    drop(copy);
    let target = dir.join(super::LOG_DIR);
    std::fs::rename(&staging, &target).map_err(io(&target))?;
    std::fs::File::open(dir).and_then(|folder| folder.sync_all()).map_err(io(dir))?;
    let old = dir.join(SLED_STORE_DIR);
    std::fs::remove_dir_all(&old).map_err(io(&old))?;
    Ok(())
}
