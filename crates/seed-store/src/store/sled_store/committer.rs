//! The committer: the one thread that writes. It drains the queue, checks
//! each append against the heads (gap-free seq, prev, time, key; a
//! different fact at a held seq becomes a fork proof), writes the group as
//! one atomic sled batch, flushes once, records the durable count in the
//! witness, and only then acknowledges every fact of the group; it also
//! runs reindexing.

use super::indexes::{derive_indexes, encode_derived};
use super::io_error;
use super::layout::{
    being_key, encode_fact_record, fact_key, fork_key, land_key, name_key, name_prefix, raw_record, read_head,
    DERIVED_PREFIXES, PREFIX_FORKED, PREFIX_KEY, PREFIX_LAND, PREFIX_LEGACY_HEAD, REINDEXING_MARKER,
};
use crate::fact::body::{GenesisBody, RotateKeyBody, KIND_END, KIND_GENESIS, KIND_ROTATE_KEY};
use crate::fact::{blake3_of, BeingId, Fact, FactError, FactId, Hash32};
use crate::store::{Appended, Head, ReindexReport, StoreError};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender};

pub(super) type Reply = SyncSender<Result<Appended, StoreError>>;

pub(super) enum Request {
    Append { fact: Box<Fact>, reply: Reply },
    Reindex { reply: SyncSender<Result<ReindexReport, StoreError>> },
}

/// Why a fact cannot extend its reel's head.
#[derive(Debug, thiserror::Error)]
pub(super) enum HeadError {
    #[error("{0}")]
    Body(FactError),
    #[error("the first fact is not a genesis")]
    NoGenesis,
}

/// Folds one fact into its reel's head: the only place the head rules live,
/// shared by the committer (incrementally) and reindex (from scratch).
pub(super) fn next_head(previous: Option<&Head>, fact: &Fact) -> Result<Head, HeadError> {
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
pub(super) struct Committer {
    db: sled::Db,
    tree: sled::Tree,
    heads: HashMap<BeingId, Head>,
    forked: HashSet<BeingId>,
    pub(super) next_land_seq: u64,
    pub(super) witness: Option<std::fs::File>,
}

pub(super) const WITNESS_PREFIX: &str = "durable_facts ";

/// The witness's recorded count; `None` if it is absent or unreadable (it is
/// written without a sync, so after a power loss it may be empty: then it
/// proves nothing and is ignored).
pub(super) fn read_witness(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim().strip_prefix(WITNESS_PREFIX)?.parse().ok()
}

/// Records a lower bound of the durable facts, overwriting a fixed-width
/// record in place (no file is created or renamed per group). Written after
/// the flush, so it never claims more than the store holds; not synced,
/// because a stale witness only weakens the truncation check, never breaks it.
pub(super) fn write_witness(file: &std::fs::File, durable_facts: u64) {
    use std::os::unix::fs::FileExt;
    let _ = file.write_all_at(format!("{WITNESS_PREFIX}{durable_facts:020}\n").as_bytes(), 0);
}

/// What one group has staged but not yet written.
#[derive(Default)]
pub(super) struct Staged {
    batch: sled::Batch,
    heads: HashMap<BeingId, Head>,
    facts: HashMap<(BeingId, u64), (FactId, u64)>,
    names: HashMap<String, BeingId>,
    forked: HashSet<BeingId>,
    appended: u64,
}

impl Committer {
    pub(super) fn new(db: sled::Db, tree: sled::Tree) -> Result<Committer, StoreError> {
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

    pub(super) fn run(mut self, receiver: Receiver<Request>, group_max: usize) {
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

    pub(super) fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
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
