//! The chain rules every backend applies to an append, in one place: what a
//! fact may do to its reel given the reel's head, what the store holds at a
//! seq already and who holds a name. Backends look those up and apply the
//! verdict; none of them decides anything here.

use crate::fact::body::{GenesisBody, MoveBody, RotateKeyBody, KIND_END, KIND_GENESIS, KIND_MOVE, KIND_ROTATE_KEY};
use crate::fact::{blake3_of, BeingId, Fact, FactError, FactId, Hash32};
use crate::store::{Head, StoreError};

/// Why a fact cannot extend its reel's head.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
    #[error("{0}")]
    Body(FactError),
    #[error("the first fact is not a genesis")]
    NoGenesis,
}

/// Folds one fact into its reel's head: the only place the head rules live,
/// shared by committers (incrementally) and reindexing (from scratch).
pub(crate) fn next_head(previous: Option<&Head>, fact: &Fact) -> Result<Head, HeadError> {
    HeadStep::of(fact)?.head_after(previous)
}

/// What one fact does to its reel's head, read from the fact alone: the
/// head it makes, but for the key, which the fact either sets (a genesis,
/// a rotation, a move) or keeps from the head before it. Kept instead of
/// the fact where heads are moved along facts read earlier
/// (`pg_store::followed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadStep {
    pub(crate) being: BeingId,
    pub(crate) seq: u64,
    pub(crate) prev: FactId,
    pub(crate) id: FactId,
    pub(crate) stored_time_ms: u64,
    pub(crate) ended: bool,
    pub(crate) key_set: Option<crate::fact::PublicKeyBytes>,
}

impl HeadStep {
    pub(crate) fn of(fact: &Fact) -> Result<HeadStep, HeadError> {
        let key_set = match fact.kind() {
            KIND_GENESIS => Some(fact.body_as::<GenesisBody>().map_err(HeadError::Body)?.public_key),
            KIND_ROTATE_KEY => Some(fact.body_as::<RotateKeyBody>().map_err(HeadError::Body)?.new_public_key),
            // A move hands the reel to the key its new land minted.
            KIND_MOVE => Some(fact.body_as::<MoveBody>().map_err(HeadError::Body)?.new_public_key),
            _ => None,
        };
        Ok(HeadStep {
            being: fact.header.being,
            seq: fact.header.seq,
            prev: fact.header.prev,
            id: fact.id(),
            stored_time_ms: fact.header.stored_time_ms,
            ended: fact.kind() == KIND_END,
            key_set,
        })
    }

    /// The head this step makes from `previous`, the head before it.
    pub(crate) fn head_after(&self, previous: Option<&Head>) -> Result<Head, HeadError> {
        let public_key = match (self.key_set, previous) {
            (Some(key), _) => key,
            (None, Some(head)) => head.public_key,
            (None, None) => return Err(HeadError::NoGenesis),
        };
        Ok(Head { seq: self.seq, id: self.id, stored_time_ms: self.stored_time_ms, public_key, ended: self.ended })
    }

    /// Whether this step extends the head at `seq` with id `id`: the next
    /// seq, linked to it.
    pub(crate) fn extends(&self, seq: u64, id: FactId) -> bool {
        seq.checked_add(1) == Some(self.seq) && self.prev == id
    }

    /// Moves the head `heads` keeps for this step's being along it, where
    /// the step extends it; drops it where the step does not. A being with
    /// no head kept is left alone.
    pub(crate) fn follow(&self, heads: &mut std::collections::HashMap<BeingId, Head>) {
        let Some(head) = heads.get(&self.being) else { return };
        if self.extends(head.seq, head.id) {
            let next = self.head_after(Some(head));
            heads.insert(self.being, next.expect("a head before it"));
        } else {
            heads.remove(&self.being);
        }
    }
}

/// What an append does, once the rules have been applied.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The fact extends its reel: store it with this new head (and claim
    /// `name` when it is a genesis).
    Extends { head: Head, name: Option<String> },
    /// The very same fact is stored already, at this land seq.
    Duplicate { id: FactId, land_seq: u64 },
    /// A different fact holds its seq: keep it as a fork proof and mark the
    /// being forked; the append itself fails with `StoreError::Fork`.
    Forks { kept: FactId },
}

/// What a group being staged has decided so far, as the rules see it: each
/// committer keeps one beside what it writes.
#[derive(Default)]
pub(crate) struct StagedChain {
    pub(crate) heads: std::collections::HashMap<BeingId, Head>,
    pub(crate) facts: std::collections::HashMap<(BeingId, u64), (FactId, u64)>,
    pub(crate) names: std::collections::HashMap<String, BeingId>,
    pub(crate) forked: std::collections::HashSet<BeingId>,
}

impl StagedChain {
    /// Room for a group of `facts` appends: each adds a head and a fact, and
    /// a group grown insert by insert rehashed its maps on every doubling.
    pub(crate) fn with_capacity(facts: usize) -> StagedChain {
        StagedChain {
            heads: std::collections::HashMap::with_capacity(facts),
            facts: std::collections::HashMap::with_capacity(facts),
            names: std::collections::HashMap::new(),
            forked: std::collections::HashSet::new(),
        }
    }
}

/// What a backend tells the rules about the store as it stands (with the
/// group being staged counted in).
pub(crate) trait ChainState {
    fn is_forked(&self, being: &BeingId) -> bool;
    fn head(&mut self, being: &BeingId) -> Result<Option<Head>, StoreError>;
    /// The id and land seq of the fact stored at `seq` of `being`'s reel.
    fn stored_at(&mut self, being: &BeingId, seq: u64) -> Result<Option<(FactId, u64)>, StoreError>;
    fn name_holder(&mut self, name: &str) -> Result<Option<BeingId>, StoreError>;
}

/// Applies the chain rules to one append: gap-free seq, prev link,
/// non-decreasing stored time, one genesis per being whose id is its body's
/// hash, unique names, nothing after `end`, no appends to a forked reel.
pub(crate) fn judge(fact: &Fact, state: &mut dyn ChainState) -> Result<Verdict, StoreError> {
    let header = &fact.header;
    let being = header.being;
    if state.is_forked(&being) {
        return Err(StoreError::BeingForked { being });
    }
    let head = state.head(&being)?;
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
                let (kept, land_seq) = state.stored_at(&being, header.seq)?.ok_or_else(|| StoreError::Corrupt {
                    being,
                    seq: header.seq,
                    reason: "missing below the head".into(),
                })?;
                if kept == fact.id() {
                    return Ok(Verdict::Duplicate { id: kept, land_seq });
                }
                return Ok(Verdict::Forks { kept });
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
    let new_head =
        next_head(head.as_ref(), fact).map_err(|error| StoreError::GenesisBody { being, reason: error.to_string() })?;
    let mut name = None;
    if fact.kind() == KIND_GENESIS {
        let genesis: GenesisBody =
            fact.body_as().map_err(|error| StoreError::GenesisBody { being, reason: error.to_string() })?;
        if let Some(holder) = state.name_holder(&genesis.name)? {
            return Err(StoreError::NameTaken { name: genesis.name, holder });
        }
        name = Some(genesis.name);
    }
    Ok(Verdict::Extends { head: new_head, name })
}

/// Folds primary records into the derived indexes, the same way for every
/// backend: records come grouped by being, in seq order within a being
/// (what a reindex scans); a record that does not decode, or cannot extend
/// its reel's head, is left out and named in the report.
#[derive(Default)]
pub(crate) struct IndexDeriver {
    derived: crate::store::DerivedIndexes,
    report: crate::store::ReindexReport,
    current: Option<(BeingId, Head)>,
}

impl IndexDeriver {
    pub(crate) fn push(&mut self, record: &crate::store::RawRecord) {
        let decoded = Fact::decode_envelope_for_index(&record.envelope);
        let (Some(land_seq), Ok(fact)) = (record.land_seq, decoded) else {
            self.report.unreadable_records.push((record.being, record.seq));
            return;
        };
        let previous = match &self.current {
            Some((being, head)) if *being == record.being => Some(*head),
            _ => None,
        };
        if previous.is_none() {
            self.report.beings += 1;
        }
        let Ok(head) = next_head(previous.as_ref(), &fact) else {
            self.report.unreadable_records.push((record.being, record.seq));
            return;
        };
        if fact.kind() == KIND_GENESIS {
            if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                self.derived.names.insert((genesis.name, record.being));
            }
        }
        self.derived.land_log.insert(land_seq, (record.being, record.seq));
        self.derived.heads.insert(record.being, head);
        self.current = Some((record.being, head));
        self.report.facts += 1;
    }

    /// One stored fork proof of `being`.
    pub(crate) fn fork_proof(&mut self, being: BeingId) {
        self.derived.forked.insert(being);
        self.report.fork_proofs += 1;
    }

    pub(crate) fn finish(self) -> (crate::store::DerivedIndexes, crate::store::ReindexReport) {
        (self.derived, self.report)
    }
}
