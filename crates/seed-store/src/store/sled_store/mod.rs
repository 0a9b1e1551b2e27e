//! The embedded store on sled, with group commit.
//!
//! Layout: one sled tree; every key starts with a one-byte prefix.
//!
//! | prefix | key                          | value                                   | kind     |
//! |--------|------------------------------|-----------------------------------------|----------|
//! | `f`    | being(32) seq(8, big-endian) | land seq(8) ‖ fact envelope bytes       | primary  |
//! | `x`    | being(32) seq(8) rival id(32)| rival fact envelope bytes (fork proof)  | primary  |
//! | `k`    | being(32)                    | the key that signs its next fact (32)   | derived  |
//! | `l`    | land seq(8)                  | being(32) seq(8)                        | derived  |
//! | `n`    | name ‖ 0x00 ‖ being(32)      | empty                                   | derived  |
//! | `z`    | being(32)                    | empty: the being has a fork proof       | derived  |
//! | `m`    | `m:reindexing`               | present while a reindex is under way    | marker   |
//!
//! The land sequence of a fact is kept in its primary record (it is the
//! land's order of arrival, which no reel can tell), so `l` is rebuilt from
//! `f` exactly. A reel's head is read from its last `f` record plus its `k`
//! entry, which changes only at genesis and at a key rotation: an ordinary
//! append writes two keys (`f`, `l`), not three. (Lands written before this
//! layout kept a per-fact head entry under `h`; opening one rebuilds the
//! derived indexes once.) All writes go through one committer thread: it drains the
//! queue, checks each append against the heads, writes the whole group as one
//! atomic sled batch, flushes once and only then acknowledges the group.
//!
//! Beside the committer: reindexing (the derived indexes rebuilt from `f` and
//! `x`), the derived indexes read out for verification to compare with a
//! rebuild, the witness (a file outside the store recording the durable count,
//! so a truncated store is refused on open).
//!
//! This file opens the store and answers reads; `layout.rs` builds and splits
//! keys, `committer.rs` is the writing thread and the witness, `indexes.rs`
//! derives and compares the derived indexes.

mod committer;
mod indexes;
mod layout;

use crate::store::index_check::INDEX_PROBLEMS_LISTED_MAX;
use crate::store::queue::Committing;
use crate::store::witness::read_witness;
use committer::Committer;
use indexes::{derived_entries, derived_entries_in_key_order, describe_index_key, index_entry_being};
use layout::{
    being_key, fact_key, land_key, name_prefix, raw_record, read_head, records_of, split_fact_key, DERIVED_PREFIXES,
    PREFIX_FACT, PREFIX_FORK, PREFIX_KEY, PREFIX_LAND, PREFIX_LEGACY_HEAD, REINDEXING_MARKER,
};

use crate::fact::{BeingId, Fact, FactId, Hash32};
use crate::limits::Limits;
use crate::store::{
    AppendTicket, DerivedIndexes, ForkProof, Head, LandEntry, RawRecord, ReindexReport, Store, StoreError, StoredFact,
};
use std::path::Path;

/// How long opening waits for a lock held by a store that is closing: sled
/// releases its file lock from a background thread shortly after the last
/// handle is dropped, so a land closed and reopened at once can find it held.
pub const STORE_LOCK_WAIT_MS: u64 = 2_000;
const STORE_LOCK_RETRY_MS: u64 = 20;
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    committing: Committing,
}

#[derive(Debug, thiserror::Error)]
pub enum SledOpenError {
    #[error("the store is locked by another process (is another `seed` running on this land?)")]
    Locked,
    #[error("the land's old (sled) store cannot be read ({reason}); nothing was changed or removed, so the land folder still holds every byte it held for a repair")]
    Corrupt { reason: String },
    #[error("the store holds {found} facts but {witness} recorded {recorded} acknowledged facts: it was truncated or replaced by an older copy (if you restored a copy on purpose, delete {witness})")]
    Truncated { found: u64, recorded: u64, witness: String },
    #[error("cannot open the store: {reason}")]
    Other { reason: String },
}

fn io_error(error: sled::Error) -> StoreError {
    StoreError::Io { reason: error.to_string() }
}

impl SledStore {
    /// Opens the store at `path`. `witness` is a file outside the store where
    /// the committer records how many facts are durable after each group; a
    /// store found holding fewer is refused as truncated.
    pub fn open(path: &Path, witness: Option<&Path>, limits: &Limits) -> Result<SledStore, SledOpenError> {
        let mut waited_ms = 0;
        let db = loop {
            match open_db(path) {
                Err(SledOpenError::Locked) if waited_ms < STORE_LOCK_WAIT_MS => {
                    std::thread::sleep(std::time::Duration::from_millis(STORE_LOCK_RETRY_MS));
                    waited_ms += STORE_LOCK_RETRY_MS;
                }
                other => break other?,
            }
        };
        let tree: sled::Tree = (*db).clone();
        let store_error = |error: StoreError| SledOpenError::Other { reason: error.to_string() };
        let open_error = |error: sled::Error| SledOpenError::Other { reason: error.to_string() };
        let legacy_heads = tree.scan_prefix([PREFIX_LEGACY_HEAD]).next().transpose().map_err(open_error)?.is_some();
        if legacy_heads || tree.contains_key(REINDEXING_MARKER).map_err(open_error)? {
            // A reindex was interrupted (the derived indexes may be half-built),
            // or the land predates the `k` index: rebuild them.
            let mut committer = Committer::new(db.clone(), tree.clone()).map_err(store_error)?;
            committer.reindex_now().map_err(store_error)?;
        }
        let mut committer = Committer::new(db.clone(), tree.clone()).map_err(store_error)?;
        if let Some(witness) = witness {
            if let Some(recorded) = read_witness(witness) {
                if committer.next_land_seq < recorded {
                    return Err(SledOpenError::Truncated {
                        found: committer.next_land_seq,
                        recorded,
                        witness: witness.display().to_string(),
                    });
                }
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(witness)
                .map_err(|error| SledOpenError::Other { reason: format!("{}: {error}", witness.display()) })?;
            committer.witness = Some(file);
        }
        let committing = Committing::start(committer, limits.append_queue_facts_max, limits.group_commit_facts_max)
            .map_err(|error| SledOpenError::Other { reason: error.to_string() })?;
        Ok(SledStore { db, tree, committing })
    }

    /// The record stored for `being`'s fact at `seq`, exactly as kept.
    pub fn raw_record_at(&self, being: &BeingId, seq: u64) -> Result<Option<RawRecord>, StoreError> {
        let key = fact_key(being, seq);
        Ok(self.tree.get(&key).map_err(io_error)?.and_then(|value| raw_record(&key, &value)))
    }

    /// The raw sled tree, for repair tools and the tamper tests. Writing to it
    /// bypasses every chain rule.
    pub fn raw_tree(&self) -> &sled::Tree {
        &self.tree
    }

    /// Stops the committer after it has written everything queued, and flushes.
    pub fn close(&self) -> Result<(), StoreError> {
        self.committing.stop();
        self.db.flush().map(|_| ()).map_err(io_error)
    }
}

/// sled writes a snapshot of its page table to `snap.LSN.generating` and
/// renames it to `snap.LSN` once it is synced, removing older snapshots only
/// after the rename. A process killed mid-write leaves the `.generating`
/// file behind, and sled 0.34 then picks it (it sorts last) and refuses to
/// open with `Corruption` although the finished snapshot and the log beside
/// it hold everything. The suffix sled gives such a file.
const UNFINISHED_SNAPSHOT_SUFFIX: &str = ".generating";

/// Opens sled at `path`; when sled reports corruption and an unfinished
/// snapshot lies there, removes it and tries once more (see
/// `UNFINISHED_SNAPSHOT_SUFFIX`). sled reports corruption only after taking
/// the store's file lock, so no other process is writing that snapshot.
fn open_db(path: &Path) -> Result<sled::Db, SledOpenError> {
    match open_db_once(path) {
        Err(SledOpenError::Corrupt { reason }) => {
            if remove_unfinished_snapshots(path) == 0 {
                return Err(SledOpenError::Corrupt { reason });
            }
            open_db_once(path)
        }
        other => other,
    }
}

/// Removes the `snap.*.generating` files directly in `path`; returns how many.
fn remove_unfinished_snapshots(path: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let unfinished = name.starts_with("snap.") && name.ends_with(UNFINISHED_SNAPSHOT_SUFFIX);
        if unfinished && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The page cache sled keeps in memory (sled's own default is 1 GiB, which
/// every command that opens a land then grows into as it reads).
pub const SLED_CACHE_BYTES: u64 = 256 * 1024 * 1024;

fn open_db_once(path: &Path) -> Result<sled::Db, SledOpenError> {
    sled::Config::new().path(path).cache_capacity(SLED_CACHE_BYTES).open().map_err(|error| match error {
        sled::Error::Io(ref io) if io.to_string().contains("could not acquire lock") => SledOpenError::Locked,
        sled::Error::Io(ref io) if io.kind() == std::io::ErrorKind::WouldBlock => SledOpenError::Locked,
        sled::Error::Corruption { at, .. } => {
            let reason = match at {
                Some(position) => format!("unreadable data at {position:?}"),
                None => "unreadable data".to_string(),
            };
            SledOpenError::Corrupt { reason }
        }
        other => SledOpenError::Other { reason: other.to_string() },
    })
}

impl Drop for SledStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Store for SledStore {
    fn submit(&self, fact: Fact) -> AppendTicket {
        self.committing.submit(fact, StoreError::Closed)
    }

    fn appends_waiting(&self) -> u64 {
        self.committing.facts_waiting()
    }

    fn head(&self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        read_head(&self.tree, being)
    }

    fn beings(&self) -> Result<Vec<BeingId>, StoreError> {
        let mut beings = Vec::new();
        for entry in self.tree.scan_prefix([PREFIX_KEY]) {
            let (key, _) = entry.map_err(io_error)?;
            if let Some(being) = BeingId::from_slice(&key[1..]) {
                beings.push(being);
            }
        }
        Ok(beings)
    }

    fn beings_named(&self, name: &str) -> Result<Vec<BeingId>, StoreError> {
        let mut beings = Vec::new();
        for entry in self.tree.scan_prefix(name_prefix(name)) {
            let (key, _) = entry.map_err(io_error)?;
            if let Some(being) = BeingId::from_slice(&key[key.len() - 32..]) {
                beings.push(being);
            }
        }
        Ok(beings)
    }

    fn reel(&self, being: &BeingId, from_seq: u64, to_seq: u64) -> Result<Vec<StoredFact>, StoreError> {
        let mut facts = Vec::new();
        if from_seq >= to_seq {
            return Ok(facts);
        }
        for entry in self.tree.range(fact_key(being, from_seq)..fact_key(being, to_seq)) {
            let (key, value) = entry.map_err(io_error)?;
            let (_, seq) = split_fact_key(&key).unwrap_or((*being, 0));
            let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq, reason };
            let record = raw_record(&key, &value).ok_or_else(|| corrupt("malformed record".into()))?;
            let land_seq = record.land_seq.ok_or_else(|| corrupt("record too short".into()))?;
            let fact = Fact::decode_envelope(&record.envelope).map_err(|error| corrupt(error.to_string()))?;
            facts.push(StoredFact { land_seq, fact });
        }
        Ok(facts)
    }

    fn land_seq_of(&self, being: &BeingId, seq: u64) -> Result<Option<u64>, StoreError> {
        let Some(value) = self.tree.get(fact_key(being, seq)).map_err(io_error)? else { return Ok(None) };
        match value.get(0..8) {
            Some(bytes) => Ok(Some(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))),
            None => Err(StoreError::Corrupt { being: *being, seq, reason: "record too short".into() }),
        }
    }

    fn raw_records(&self, being: Option<&BeingId>) -> Result<Vec<RawRecord>, StoreError> {
        let prefix = match being {
            Some(being) => being_key(PREFIX_FACT, being),
            None => vec![PREFIX_FACT],
        };
        records_of(self.tree.scan_prefix(prefix))
    }

    fn raw_records_after(&self, after: Option<&BeingId>, facts_max: usize) -> Result<Vec<RawRecord>, StoreError> {
        let start = match after {
            // Past every key of `after`'s records (`f`, its id, an 8-byte seq).
            Some(being) => {
                let mut key = being_key(PREFIX_FACT, being);
                key.extend_from_slice(&[0xff; 9]);
                key
            }
            None => vec![PREFIX_FACT],
        };
        let mut records: Vec<RawRecord> = Vec::new();
        for entry in self.tree.range(start..vec![PREFIX_FACT + 1]) {
            let (key, value) = entry.map_err(io_error)?;
            let record = raw_record(&key, &value)
                .ok_or_else(|| StoreError::Io { reason: format!("malformed fact key {}", hex::encode(&key)) })?;
            if records.len() >= facts_max && records.last().is_some_and(|last| last.being != record.being) {
                break;
            }
            records.push(record);
        }
        Ok(records)
    }

    fn land_len(&self) -> Result<u64, StoreError> {
        match self.tree.scan_prefix([PREFIX_LAND]).next_back() {
            Some(entry) => {
                let (key, _) = entry.map_err(io_error)?;
                let bytes: [u8; 8] = key[1..]
                    .try_into()
                    .map_err(|_| StoreError::Io { reason: "land index key has the wrong length".into() })?;
                u64::from_be_bytes(bytes)
                    .checked_add(1)
                    .ok_or_else(|| StoreError::Io { reason: "land index key is the largest land seq there is".into() })
            }
            None => Ok(0),
        }
    }

    fn land_log(&self, from: u64, to: u64) -> Result<Vec<LandEntry>, StoreError> {
        let mut entries = Vec::new();
        if from >= to {
            return Ok(entries);
        }
        for entry in self.tree.range(land_key(from)..land_key(to)) {
            let (key, value) = entry.map_err(io_error)?;
            let malformed = || StoreError::Io { reason: format!("malformed land log entry {}", hex::encode(&key)) };
            if key.len() != 9 || value.len() != 40 {
                return Err(malformed());
            }
            entries.push(LandEntry {
                land_seq: u64::from_be_bytes(key[1..9].try_into().map_err(|_| malformed())?),
                being: BeingId::from_slice(&value[..32]).ok_or_else(malformed)?,
                seq: u64::from_be_bytes(value[32..40].try_into().map_err(|_| malformed())?),
            });
        }
        Ok(entries)
    }

    fn fork_proofs(&self, being: Option<&BeingId>) -> Result<Vec<ForkProof>, StoreError> {
        let prefix = match being {
            Some(being) => being_key(PREFIX_FORK, being),
            None => vec![PREFIX_FORK],
        };
        let mut proofs = Vec::new();
        for entry in self.tree.scan_prefix(prefix) {
            let (key, value) = entry.map_err(io_error)?;
            if key.len() != 73 {
                return Err(StoreError::Io { reason: format!("malformed fork proof key {}", hex::encode(&key)) });
            }
            let being = BeingId::from_slice(&key[1..33]).unwrap_or(BeingId::ZERO);
            let seq = u64::from_be_bytes(key[33..41].try_into().unwrap_or([0; 8]));
            let rival = FactId::from_slice(&key[41..73]).unwrap_or(FactId::ZERO);
            let kept = match self.tree.get(fact_key(&being, seq)).map_err(io_error)? {
                Some(stored) => raw_record(&fact_key(&being, seq), &stored)
                    .and_then(|record| Fact::decode_envelope(&record.envelope).ok())
                    .map(|fact| fact.id())
                    .unwrap_or(FactId::ZERO),
                None => FactId::ZERO,
            };
            proofs.push(ForkProof { being, seq, kept, rival, rival_envelope: value.to_vec() });
        }
        Ok(proofs)
    }

    fn reindex(&self) -> Result<ReindexReport, StoreError> {
        self.committing.reindex(StoreError::Closed)
    }

    fn index_problems(&self, expected: &DerivedIndexes) -> Result<Vec<String>, StoreError> {
        // A merge of two sorted runs: the entries the verified facts imply and
        // the stored ones, read in key order without copying them out.
        let mut wanted_entries = derived_entries_in_key_order(expected).peekable();
        let (mut missing_or_wrong, mut unexpected) = (Vec::new(), Vec::new());
        let mut prefixes = DERIVED_PREFIXES;
        prefixes.sort_unstable();
        'scan: for prefix in prefixes {
            for entry in self.tree.scan_prefix([prefix]) {
                let (key, value) = entry.map_err(io_error)?;
                while let Some((wanted_key, _)) =
                    wanted_entries.next_if(|(wanted_key, _)| wanted_key.as_slice() < &*key)
                {
                    missing_or_wrong.push(format!("{} is missing", describe_index_key(&wanted_key)));
                }
                match wanted_entries.next_if(|(wanted_key, _)| wanted_key.as_slice() == &*key) {
                    Some((_, wanted_value)) if wanted_value.as_slice() != &*value => {
                        missing_or_wrong.push(format!("{} is wrong", describe_index_key(&key)));
                    }
                    Some(_) => {}
                    None => {
                        let skipped =
                            index_entry_being(&key, &value).is_some_and(|being| expected.skip.contains(&being));
                        if !skipped && unexpected.len() < INDEX_PROBLEMS_LISTED_MAX {
                            unexpected.push(format!("{} should not exist", describe_index_key(&key)));
                        }
                    }
                }
                if missing_or_wrong.len() >= INDEX_PROBLEMS_LISTED_MAX {
                    break 'scan;
                }
            }
        }
        let room = INDEX_PROBLEMS_LISTED_MAX.saturating_sub(missing_or_wrong.len());
        missing_or_wrong
            .extend(wanted_entries.take(room).map(|(key, _)| format!("{} is missing", describe_index_key(&key))));
        // Missing and wrong entries first (in key order), then those that should not exist.
        let mut problems = missing_or_wrong;
        problems.truncate(INDEX_PROBLEMS_LISTED_MAX);
        let room = INDEX_PROBLEMS_LISTED_MAX - problems.len();
        problems.extend(unexpected.into_iter().take(room));
        Ok(problems)
    }

    fn derived_index_digest(&self) -> Result<Hash32, StoreError> {
        let mut hasher = blake3::Hasher::new();
        for (key, value) in derived_entries(&self.tree)? {
            hasher.update(&(key.len() as u64).to_be_bytes());
            hasher.update(&key);
            hasher.update(&(value.len() as u64).to_be_bytes());
            hasher.update(&value);
        }
        Ok(Hash32(*hasher.finalize().as_bytes()))
    }
}
