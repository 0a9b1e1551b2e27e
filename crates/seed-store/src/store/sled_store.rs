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
//! so a truncated store is refused on open), and `raw_records_in_parts`, which
//! reads ranges of being ids on several threads, `RECORD_READ_RANGES_PER_PART`
//! ranges a reader, taken in turn.

use super::{
    AppendTicket, Appended, DerivedIndexes, ForkProof, Head, LandEntry, RawRecord, ReindexReport, Store, StoreError,
    StoredFact,
};
use crate::fact::body::{GenesisBody, RotateKeyBody, KIND_END, KIND_GENESIS, KIND_ROTATE_KEY};
use crate::fact::{blake3_of, BeingId, Fact, FactError, FactId, Hash32, PublicKeyBytes};
use crate::limits::Limits;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

const PREFIX_FACT: u8 = b'f';
/// Most ranges `raw_records_in_parts` reads at once.
pub const RECORD_READ_PARTS_MAX: usize = 16;
/// `raw_records_in_parts` splits the records into this many ranges per
/// reader, handed out in turn.
const RECORD_READ_RANGES_PER_PART: usize = 4;
const PREFIX_FORK: u8 = b'x';
const PREFIX_KEY: u8 = b'k';
/// The per-fact head index of lands written by earlier builds.
const PREFIX_LEGACY_HEAD: u8 = b'h';
const PREFIX_LAND: u8 = b'l';
const PREFIX_NAME: u8 = b'n';
const PREFIX_FORKED: u8 = b'z';
const DERIVED_PREFIXES: [u8; 4] = [PREFIX_KEY, PREFIX_LAND, PREFIX_NAME, PREFIX_FORKED];
const REINDEXING_MARKER: &[u8] = b"m:reindexing";
/// How long opening waits for a lock held by a store that is closing: sled
/// releases its file lock from a background thread shortly after the last
/// handle is dropped, so a land closed and reopened at once can find it held.
pub const STORE_LOCK_WAIT_MS: u64 = 2_000;
const STORE_LOCK_RETRY_MS: u64 = 20;
/// Most index discrepancies `index_problems` lists before it stops counting.
const INDEX_PROBLEMS_LISTED_MAX: usize = 50;

type Reply = SyncSender<Result<Appended, StoreError>>;

enum Request {
    Append { fact: Box<Fact>, reply: Reply },
    Reindex { reply: SyncSender<Result<ReindexReport, StoreError>> },
}

pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    sender: Mutex<Option<SyncSender<Request>>>,
    committer: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum SledOpenError {
    #[error("the store is locked by another process (is another `seed` running on this land?)")]
    Locked,
    #[error("the store is corrupt ({reason}); restore the land from a copy or re-import its reels")]
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
    /// The records of beings whose id's first byte lies in `from..to` (`to`
    /// at most 256), in key order.
    fn raw_records_between(&self, from: u16, to: u16) -> Result<Vec<RawRecord>, StoreError> {
        let start = vec![PREFIX_FACT, from as u8];
        let end = if to >= 256 { vec![PREFIX_FACT + 1] } else { vec![PREFIX_FACT, to as u8] };
        records_of(self.tree.range(start..end))
    }

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
            committer.reindex().map_err(store_error)?;
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
        let (sender, receiver) = sync_channel(limits.append_queue_facts_max);
        let group_max = limits.group_commit_facts_max.max(1);
        let handle = std::thread::Builder::new()
            .name("seed-committer".into())
            .spawn(move || committer.run(receiver, group_max))
            .map_err(|error| SledOpenError::Other { reason: error.to_string() })?;
        Ok(SledStore { db, tree, sender: Mutex::new(Some(sender)), committer: Mutex::new(Some(handle)) })
    }

    /// The raw sled tree, for repair tools and the tamper tests. Writing to it
    /// bypasses every chain rule.
    pub fn raw_tree(&self) -> &sled::Tree {
        &self.tree
    }

    fn send(&self, request: Request) -> Result<(), StoreError> {
        let guard = self.sender.lock().map_err(|_| StoreError::Closed)?;
        match guard.as_ref() {
            Some(sender) => sender.send(request).map_err(|_| StoreError::Closed),
            None => Err(StoreError::Closed),
        }
    }

    /// Stops the committer after it has written everything queued, and flushes.
    pub fn close(&self) -> Result<(), StoreError> {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Ok(mut handle) = self.committer.lock() {
            if let Some(handle) = handle.take() {
                let _ = handle.join();
            }
        }
        self.db.flush().map(|_| ()).map_err(io_error)
    }
}

fn open_db(path: &Path) -> Result<sled::Db, SledOpenError> {
    sled::Config::new().path(path).open().map_err(|error| match error {
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

fn fact_key(being: &BeingId, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(41);
    key.push(PREFIX_FACT);
    key.extend_from_slice(being.as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The fact records a scan of fact keys reads, in its order.
fn records_of(
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

fn being_key(prefix: u8, being: &BeingId) -> Vec<u8> {
    let mut key = Vec::with_capacity(33);
    key.push(prefix);
    key.extend_from_slice(being.as_bytes());
    key
}

fn land_key(land_seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(9);
    key.push(PREFIX_LAND);
    key.extend_from_slice(&land_seq.to_be_bytes());
    key
}

fn name_key(name: &str, being: &BeingId) -> Vec<u8> {
    let mut key = name_prefix(name);
    key.extend_from_slice(being.as_bytes());
    key
}

fn name_prefix(name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 34);
    key.push(PREFIX_NAME);
    key.extend_from_slice(name.as_bytes());
    key.push(0);
    key
}

fn fork_key(being: &BeingId, seq: u64, rival: &FactId) -> Vec<u8> {
    let mut key = Vec::with_capacity(73);
    key.push(PREFIX_FORK);
    key.extend_from_slice(being.as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key.extend_from_slice(rival.as_bytes());
    key
}

/// A reel's head: its last fact record (seq, id, time, ended) and its `k`
/// entry (the key that signs next). `None` for a being with no reel.
fn read_head(tree: &sled::Tree, being: &BeingId) -> Result<Option<Head>, StoreError> {
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

fn encode_fact_record(land_seq: u64, envelope: &[u8]) -> Vec<u8> {
    let mut value = Vec::with_capacity(8 + envelope.len());
    value.extend_from_slice(&land_seq.to_be_bytes());
    value.extend_from_slice(envelope);
    value
}

fn split_fact_key(key: &[u8]) -> Option<(BeingId, u64)> {
    if key.len() != 41 || key[0] != PREFIX_FACT {
        return None;
    }
    Some((BeingId::from_slice(&key[1..33])?, u64::from_be_bytes(key[33..41].try_into().ok()?)))
}

fn raw_record(key: &[u8], value: &[u8]) -> Option<RawRecord> {
    let (being, seq) = split_fact_key(key)?;
    let (land_seq, envelope) = if value.len() >= 8 {
        (Some(u64::from_be_bytes(value[0..8].try_into().ok()?)), value[8..].to_vec())
    } else {
        (None, value.to_vec())
    };
    Some(RawRecord { being, seq, land_seq, envelope })
}

/// Why a fact cannot extend its reel's head.
#[derive(Debug, thiserror::Error)]
enum HeadError {
    #[error("{0}")]
    Body(FactError),
    #[error("the first fact is not a genesis")]
    NoGenesis,
}

/// Folds one fact into its reel's head: the only place the head rules live,
/// shared by the committer (incrementally) and reindex (from scratch).
fn next_head(previous: Option<&Head>, fact: &Fact) -> Result<Head, HeadError> {
    let public_key = match fact.kind() {
        KIND_GENESIS => fact.body_as::<GenesisBody>().map_err(HeadError::Body)?.public_key,
        KIND_ROTATE_KEY => fact.body_as::<RotateKeyBody>().map_err(HeadError::Body)?.new_public_key,
        _ => match previous {
            Some(head) => head.public_key,
            None => return Err(HeadError::NoGenesis),
        },
    };
    Ok(Head {
        seq: fact.header.seq,
        id: fact.id(),
        stored_time_ms: fact.header.stored_time_ms,
        public_key,
        ended: fact.kind() == KIND_END,
    })
}

/// The single writer. Everything it caches mirrors what it has written.
struct Committer {
    db: sled::Db,
    tree: sled::Tree,
    heads: HashMap<BeingId, Head>,
    forked: HashSet<BeingId>,
    next_land_seq: u64,
    witness: Option<std::fs::File>,
}

const WITNESS_PREFIX: &str = "durable_facts ";

/// The witness's recorded count; `None` if it is absent or unreadable (it is
/// written without a sync, so after a power loss it may be empty: then it
/// proves nothing and is ignored).
fn read_witness(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim().strip_prefix(WITNESS_PREFIX)?.parse().ok()
}

/// Records a lower bound of the durable facts, overwriting a fixed-width
/// record in place (no file is created or renamed per group). Written after
/// the flush, so it never claims more than the store holds; not synced,
/// because a stale witness only weakens the truncation check, never breaks it.
fn write_witness(file: &std::fs::File, durable_facts: u64) {
    use std::os::unix::fs::FileExt;
    let _ = file.write_all_at(format!("{WITNESS_PREFIX}{durable_facts:020}\n").as_bytes(), 0);
}

/// What one group has staged but not yet written.
#[derive(Default)]
struct Staged {
    batch: sled::Batch,
    heads: HashMap<BeingId, Head>,
    facts: HashMap<(BeingId, u64), (FactId, u64)>,
    names: HashMap<String, BeingId>,
    forked: HashSet<BeingId>,
    appended: u64,
}

impl Committer {
    fn new(db: sled::Db, tree: sled::Tree) -> Result<Committer, StoreError> {
        let next_land_seq = match tree.scan_prefix([PREFIX_LAND]).next_back() {
            Some(entry) => {
                let (key, _) = entry.map_err(io_error)?;
                let bytes: [u8; 8] = key[1..].try_into().map_err(|_| StoreError::Io {
                    reason: "land index key has the wrong length (run `seed reindex`)".into(),
                })?;
                u64::from_be_bytes(bytes) + 1
            }
            None => 0,
        };
        let mut forked = HashSet::new();
        for entry in tree.scan_prefix([PREFIX_FORKED]) {
            let (key, _) = entry.map_err(io_error)?;
            if let Some(being) = BeingId::from_slice(&key[1..]) {
                forked.insert(being);
            }
        }
        Ok(Committer { db, tree, heads: HashMap::new(), forked, next_land_seq, witness: None })
    }

    fn run(mut self, receiver: Receiver<Request>, group_max: usize) {
        while let Ok(first) = receiver.recv() {
            let mut group = Vec::new();
            let mut pending = Some(first);
            while let Some(request) = pending.take() {
                match request {
                    Request::Append { fact, reply } => group.push((fact, reply)),
                    Request::Reindex { reply } => {
                        // Everything queued before the reindex is written first.
                        self.commit_group(std::mem::take(&mut group));
                        let _ = reply.send(self.reindex());
                    }
                }
                if group.len() < group_max {
                    pending = receiver.try_recv().ok();
                }
            }
            self.commit_group(group);
        }
    }

    fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>) {
        if group.is_empty() {
            return;
        }
        let mut staged = Staged::default();
        let mut outcomes = Vec::with_capacity(group.len());
        for (fact, reply) in group {
            let outcome = self.stage(&fact, &mut staged);
            outcomes.push((reply, outcome));
        }
        let write = self.tree.apply_batch(std::mem::take(&mut staged.batch)).and_then(|_| self.db.flush());
        match write {
            Ok(_) => {
                self.heads.extend(staged.heads);
                self.forked.extend(staged.forked);
                self.next_land_seq += staged.appended;
                if let (Some(witness), true) = (&self.witness, staged.appended > 0) {
                    write_witness(witness, self.next_land_seq);
                }
            }
            Err(error) => {
                let failure = io_error(error);
                for (_, outcome) in outcomes.iter_mut() {
                    *outcome = Err(failure.clone());
                }
                // The batch may or may not be on disk: forget what we cached.
                self.heads.clear();
                if let Ok(fresh) = Committer::new(self.db.clone(), self.tree.clone()) {
                    self.next_land_seq = fresh.next_land_seq;
                    self.forked = fresh.forked;
                }
            }
        }
        for (reply, outcome) in outcomes {
            let _ = reply.send(outcome);
        }
    }

    fn head(&mut self, being: &BeingId, staged: &Staged) -> Result<Option<Head>, StoreError> {
        if let Some(head) = staged.heads.get(being) {
            return Ok(Some(*head));
        }
        if let Some(head) = self.heads.get(being) {
            return Ok(Some(*head));
        }
        let head = read_head(&self.tree, being)?;
        if let Some(head) = head {
            self.heads.insert(*being, head);
        }
        Ok(head)
    }

    fn stored_at(&self, being: &BeingId, seq: u64, staged: &Staged) -> Result<Option<(FactId, u64)>, StoreError> {
        if let Some(found) = staged.facts.get(&(*being, seq)) {
            return Ok(Some(*found));
        }
        let Some(value) = self.tree.get(fact_key(being, seq)).map_err(io_error)? else {
            return Ok(None);
        };
        let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq, reason };
        let record = raw_record(&fact_key(being, seq), &value).ok_or_else(|| corrupt("malformed record".into()))?;
        let fact = Fact::decode_envelope(&record.envelope).map_err(|error| corrupt(error.to_string()))?;
        Ok(Some((fact.id(), record.land_seq.unwrap_or(0))))
    }

    fn name_holder(&self, name: &str, staged: &Staged) -> Result<Option<BeingId>, StoreError> {
        if let Some(holder) = staged.names.get(name) {
            return Ok(Some(*holder));
        }
        match self.tree.scan_prefix(name_prefix(name)).next() {
            Some(entry) => {
                let (key, _) = entry.map_err(io_error)?;
                Ok(BeingId::from_slice(&key[key.len() - 32..]))
            }
            None => Ok(None),
        }
    }

    /// Checks one append against the chain rules and stages its writes.
    fn stage(&mut self, fact: &Fact, staged: &mut Staged) -> Result<Appended, StoreError> {
        let header = &fact.header;
        let being = header.being;
        if self.forked.contains(&being) || staged.forked.contains(&being) {
            return Err(StoreError::BeingForked { being });
        }
        let head = self.head(&being, staged)?;
        match head {
            None => {
                if header.seq != 0 || fact.kind() != KIND_GENESIS || header.prev != FactId::ZERO {
                    return Err(StoreError::NotGenesis { being });
                }
                if blake3_of(fact.body()) != Hash32(being.0) {
                    return Err(StoreError::GenesisIdMismatch { being });
                }
            }
            Some(head) => {
                if header.seq <= head.seq {
                    let (kept, land_seq) = self.stored_at(&being, header.seq, staged)?.ok_or_else(|| {
                        StoreError::Corrupt { being, seq: header.seq, reason: "missing below the head".into() }
                    })?;
                    if kept == fact.id() {
                        return Ok(Appended { id: kept, land_seq, duplicate: true });
                    }
                    staged.batch.insert(fork_key(&being, header.seq, &fact.id()), fact.encode_envelope());
                    staged.batch.insert(being_key(PREFIX_FORKED, &being), Vec::<u8>::new());
                    staged.forked.insert(being);
                    return Err(StoreError::Fork { being, seq: header.seq, kept, rival: fact.id() });
                }
                if head.ended {
                    return Err(StoreError::Ended { being });
                }
                if header.seq != head.seq + 1 {
                    return Err(StoreError::Gap { being, expected: head.seq + 1, got: header.seq });
                }
                if header.prev != head.id {
                    return Err(StoreError::PrevMismatch { being, seq: header.seq });
                }
                if header.stored_time_ms < head.stored_time_ms {
                    return Err(StoreError::TimeWentBackwards {
                        being,
                        seq: header.seq,
                        previous_ms: head.stored_time_ms,
                        stored_ms: header.stored_time_ms,
                    });
                }
            }
        }
        let new_head = next_head(head.as_ref(), fact)
            .map_err(|error| StoreError::GenesisBody { being, reason: error.to_string() })?;
        if fact.kind() == KIND_GENESIS {
            let genesis: GenesisBody =
                fact.body_as().map_err(|error| StoreError::GenesisBody { being, reason: error.to_string() })?;
            if let Some(holder) = self.name_holder(&genesis.name, staged)? {
                return Err(StoreError::NameTaken { name: genesis.name, holder });
            }
            staged.batch.insert(name_key(&genesis.name, &being), Vec::<u8>::new());
            staged.names.insert(genesis.name, being);
        }
        let land_seq = self.next_land_seq + staged.appended;
        staged.batch.insert(fact_key(&being, header.seq), encode_fact_record(land_seq, &fact.encode_envelope()));
        if head.is_none_or(|head| head.public_key != new_head.public_key) {
            staged.batch.insert(being_key(PREFIX_KEY, &being), new_head.public_key.as_bytes().to_vec());
        }
        let mut land_value = being.as_bytes().to_vec();
        land_value.extend_from_slice(&header.seq.to_be_bytes());
        staged.batch.insert(land_key(land_seq), land_value);
        staged.heads.insert(being, new_head);
        staged.facts.insert((being, header.seq), (fact.id(), land_seq));
        staged.appended += 1;
        Ok(Appended { id: fact.id(), land_seq, duplicate: false })
    }

    fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
        self.tree.insert(REINDEXING_MARKER, Vec::<u8>::new()).map_err(io_error)?;
        self.db.flush().map_err(io_error)?;
        let (derived, report) = derive_indexes(&self.tree)?;
        let derived = encode_derived(&derived);
        let mut batch = sled::Batch::default();
        for prefix in DERIVED_PREFIXES.into_iter().chain([PREFIX_LEGACY_HEAD]) {
            for entry in self.tree.scan_prefix([prefix]) {
                let (key, _) = entry.map_err(io_error)?;
                batch.remove(key);
            }
        }
        for (key, value) in &derived {
            batch.insert(key.as_slice(), value.as_slice());
        }
        batch.remove(REINDEXING_MARKER);
        self.tree.apply_batch(batch).map_err(io_error)?;
        self.db.flush().map_err(io_error)?;
        let fresh = Committer::new(self.db.clone(), self.tree.clone())?;
        self.heads.clear();
        self.forked = fresh.forked;
        self.next_land_seq = fresh.next_land_seq;
        Ok(report)
    }
}

/// Computes every derived index from the primary records alone.
fn derive_indexes(tree: &sled::Tree) -> Result<(DerivedIndexes, ReindexReport), StoreError> {
    let mut derived = DerivedIndexes::default();
    let mut report = ReindexReport::default();
    let mut current: Option<(BeingId, Head)> = None;
    for entry in tree.scan_prefix([PREFIX_FACT]) {
        let (key, value) = entry.map_err(io_error)?;
        let Some(record) = raw_record(&key, &value) else {
            continue;
        };
        let decoded = Fact::decode_envelope_for_index(&record.envelope);
        let (Some(land_seq), Ok(fact)) = (record.land_seq, decoded) else {
            report.unreadable_records.push((record.being, record.seq));
            continue;
        };
        let previous = match &current {
            Some((being, head)) if *being == record.being => Some(*head),
            _ => None,
        };
        if previous.is_none() {
            report.beings += 1;
        }
        let head = match next_head(previous.as_ref(), &fact) {
            Ok(head) => head,
            Err(_) => {
                report.unreadable_records.push((record.being, record.seq));
                continue;
            }
        };
        if fact.kind() == KIND_GENESIS {
            if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                derived.names.insert((genesis.name, record.being));
            }
        }
        derived.land_log.insert(land_seq, (record.being, record.seq));
        derived.heads.insert(record.being, head);
        current = Some((record.being, head));
        report.facts += 1;
    }
    for entry in tree.scan_prefix([PREFIX_FORK]) {
        let (key, _) = entry.map_err(io_error)?;
        if let Some(being) = BeingId::from_slice(&key[1..33.min(key.len())]) {
            derived.forked.insert(being);
            report.fork_proofs += 1;
        }
    }
    Ok((derived, report))
}

/// The sled entries that represent `derived`, leaving out skipped beings, in
/// key order. Gathered and sorted once rather than inserted into a map:
/// verification builds this for every fact of the land.
fn encode_derived(derived: &DerivedIndexes) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries =
        Vec::with_capacity(derived.heads.len() + derived.land_log.len() + derived.names.len() + derived.forked.len());
    let kept = |being: &BeingId| !derived.skip.contains(being);
    for (being, head) in derived.heads.iter().filter(|(being, _)| kept(being)) {
        entries.push((being_key(PREFIX_KEY, being), head.public_key.as_bytes().to_vec()));
    }
    for (land_seq, (being, seq)) in derived.land_log.iter().filter(|(_, (being, _))| kept(being)) {
        let mut value = being.as_bytes().to_vec();
        value.extend_from_slice(&seq.to_be_bytes());
        entries.push((land_key(*land_seq), value));
    }
    for (name, being) in derived.names.iter().filter(|(_, being)| kept(being)) {
        entries.push((name_key(name, being), Vec::new()));
    }
    for being in &derived.forked {
        entries.push((being_key(PREFIX_FORKED, being), Vec::new()));
    }
    // Each kind of entry has its own prefix and comes from a map or a set
    // keyed by what its key encodes, so no key repeats.
    entries.sort_unstable_by(|left, right| left.0.cmp(&right.0));
    debug_assert!(entries.windows(2).all(|pair| pair[0].0 != pair[1].0), "index keys repeat");
    entries
}

/// The being an index entry speaks of, if any.
fn index_entry_being(key: &[u8], value: &[u8]) -> Option<BeingId> {
    match key.first()? {
        &PREFIX_KEY | &PREFIX_FORKED => BeingId::from_slice(key.get(1..33)?),
        &PREFIX_LAND => BeingId::from_slice(value.get(..32)?),
        &PREFIX_NAME => BeingId::from_slice(key.get(key.len().checked_sub(32)?..)?),
        _ => None,
    }
}

fn derived_entries(tree: &sled::Tree) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, StoreError> {
    let mut entries = BTreeMap::new();
    for prefix in DERIVED_PREFIXES {
        for entry in tree.scan_prefix([prefix]) {
            let (key, value) = entry.map_err(io_error)?;
            entries.insert(key.to_vec(), value.to_vec());
        }
    }
    Ok(entries)
}

fn describe_index_key(key: &[u8]) -> String {
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

impl Store for SledStore {
    fn submit(&self, fact: Fact) -> AppendTicket {
        let (reply, receiver) = sync_channel(1);
        match self.send(Request::Append { fact: Box::new(fact), reply }) {
            Ok(()) => AppendTicket::waiting(receiver),
            Err(error) => AppendTicket::failed(error),
        }
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

    fn raw_records(&self, being: Option<&BeingId>) -> Result<Vec<RawRecord>, StoreError> {
        let prefix = match being {
            Some(being) => being_key(PREFIX_FACT, being),
            None => vec![PREFIX_FACT],
        };
        records_of(self.tree.scan_prefix(prefix))
    }

    fn raw_records_in_parts(&self, parts: usize) -> Result<Vec<RawRecord>, StoreError> {
        let parts = parts.clamp(1, RECORD_READ_PARTS_MAX);
        if parts == 1 {
            return self.raw_records(None);
        }
        // Records are keyed by being id, a BLAKE3 output, so ranges of its
        // first byte hold about as many records each. There are several
        // ranges per reader, taken in turn, so that a reader slowed by other
        // work on its core reads fewer of them instead of holding up the rest.
        let ranges = parts * RECORD_READ_RANGES_PER_PART;
        let bounds: Vec<u16> = (0..=ranges).map(|range| (range * 256 / ranges) as u16).collect();
        let next_range = AtomicUsize::new(0);
        // Per reader: (range index, that range's records or its error).
        type RangesRead = Vec<(usize, Result<Vec<RawRecord>, StoreError>)>;
        let read: Vec<RangesRead> = std::thread::scope(|scope| {
            let readers: Vec<_> = (0..parts)
                .map(|_| {
                    scope.spawn(|| {
                        let mut read = Vec::new();
                        loop {
                            let range = next_range.fetch_add(1, Ordering::Relaxed);
                            let Some(pair) = bounds.get(range..range + 2) else { break };
                            read.push((range, self.raw_records_between(pair[0], pair[1])));
                        }
                        read
                    })
                })
                .collect();
            // A reader that panicked is a bug in this build, not in the land.
            readers.into_iter().map(|reader| reader.join().expect("a record reader panicked")).collect()
        });
        let mut in_key_order: Vec<(usize, Result<Vec<RawRecord>, StoreError>)> = read.into_iter().flatten().collect();
        in_key_order.sort_unstable_by_key(|(range, _)| *range);
        let mut records = Vec::new();
        for (_, range) in in_key_order {
            records.extend(range?);
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
        let (reply, receiver) = sync_channel(1);
        self.send(Request::Reindex { reply })?;
        receiver.recv().unwrap_or(Err(StoreError::Closed))
    }

    fn index_problems(&self, expected: &DerivedIndexes) -> Result<Vec<String>, StoreError> {
        // A merge of two sorted runs: the entries the verified facts imply and
        // the stored ones, read in key order without copying them out.
        let wanted = encode_derived(expected);
        let mut wanted_entries = wanted.iter().peekable();
        let (mut missing_or_wrong, mut unexpected) = (Vec::new(), Vec::new());
        let mut prefixes = DERIVED_PREFIXES;
        prefixes.sort_unstable();
        'scan: for prefix in prefixes {
            for entry in self.tree.scan_prefix([prefix]) {
                let (key, value) = entry.map_err(io_error)?;
                while let Some((wanted_key, _)) =
                    wanted_entries.next_if(|(wanted_key, _)| wanted_key.as_slice() < &*key)
                {
                    missing_or_wrong.push(format!("{} is missing", describe_index_key(wanted_key)));
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
        missing_or_wrong.extend(wanted_entries.map(|(key, _)| format!("{} is missing", describe_index_key(key))));
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
