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
use crate::fact::{BeingId, Fact, FactId};
use crate::store::chain::{judge, ChainState, StagedChain, Verdict};
use crate::store::queue::{GroupWriter, Reply};
use crate::store::witness::write_witness;
use crate::store::{Appended, Head, ReindexReport, StoreError};
use std::collections::{HashMap, HashSet};

/// The single writer. Everything it caches mirrors what it has written.
pub(super) struct Committer {
    db: sled::Db,
    tree: sled::Tree,
    heads: HashMap<BeingId, Head>,
    forked: HashSet<BeingId>,
    pub(super) next_land_seq: u64,
    pub(super) witness: Option<std::fs::File>,
}

/// What one group has staged but not yet written.
#[derive(Default)]
pub(super) struct Staged {
    batch: sled::Batch,
    chain: StagedChain,
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

    fn commit_group_now(&mut self, group: Vec<(Box<Fact>, Reply)>) {
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
                self.heads.extend(staged.chain.heads);
                self.forked.extend(staged.chain.forked);
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
        if let Some(head) = staged.chain.heads.get(being) {
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
        if let Some(found) = staged.chain.facts.get(&(*being, seq)) {
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
        if let Some(holder) = staged.chain.names.get(name) {
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
        let being = fact.header.being;
        let verdict = judge(fact, &mut SledChain { committer: self, staged })?;
        let (new_head, name) = match verdict {
            Verdict::Duplicate { id, land_seq } => return Ok(Appended { id, land_seq, duplicate: true }),
            Verdict::Forks { kept } => {
                staged.batch.insert(fork_key(&being, fact.header.seq, &fact.id()), fact.encode_envelope());
                staged.batch.insert(being_key(PREFIX_FORKED, &being), Vec::<u8>::new());
                staged.chain.forked.insert(being);
                return Err(StoreError::Fork { being, seq: fact.header.seq, kept, rival: fact.id() });
            }
            Verdict::Extends { head, name } => (head, name),
        };
        let head = self.head(&being, staged)?;
        if let Some(name) = name {
            staged.batch.insert(name_key(&name, &being), Vec::<u8>::new());
            staged.chain.names.insert(name, being);
        }
        let land_seq = self.next_land_seq + staged.appended;
        staged.batch.insert(fact_key(&being, fact.header.seq), encode_fact_record(land_seq, &fact.encode_envelope()));
        if head.is_none_or(|head| head.public_key != new_head.public_key) {
            staged.batch.insert(being_key(PREFIX_KEY, &being), new_head.public_key.as_bytes().to_vec());
        }
        let mut land_value = being.as_bytes().to_vec();
        land_value.extend_from_slice(&fact.header.seq.to_be_bytes());
        staged.batch.insert(land_key(land_seq), land_value);
        staged.chain.heads.insert(being, new_head);
        staged.chain.facts.insert((being, fact.header.seq), (fact.id(), land_seq));
        staged.appended += 1;
        Ok(Appended { id: fact.id(), land_seq, duplicate: false })
    }

    pub(super) fn reindex_now(&mut self) -> Result<ReindexReport, StoreError> {
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

/// The sled committer and the group it is staging, as the chain rules see them.
struct SledChain<'a> {
    committer: &'a mut Committer,
    staged: &'a Staged,
}

impl ChainState for SledChain<'_> {
    fn is_forked(&self, being: &BeingId) -> bool {
        self.committer.forked.contains(being) || self.staged.chain.forked.contains(being)
    }

    fn head(&mut self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        self.committer.head(being, self.staged)
    }

    fn stored_at(&mut self, being: &BeingId, seq: u64) -> Result<Option<(FactId, u64)>, StoreError> {
        self.committer.stored_at(being, seq, self.staged)
    }

    fn name_holder(&mut self, name: &str) -> Result<Option<BeingId>, StoreError> {
        self.committer.name_holder(name, self.staged)
    }
}

impl GroupWriter for Committer {
    fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>) {
        self.commit_group_now(group);
    }

    fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
        self.reindex_now()
    }
}
