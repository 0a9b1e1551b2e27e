//! The store: where reels live. Callers see only the [`Store`] trait, so the
//! log store and the PostgreSQL store serve them alike.
//!
//! The store enforces the chain rules on every append (compare-and-swap on
//! the being's head, gap-free seq, prev link, non-decreasing stored time, one
//! genesis per being, unique names, nothing after `end`) and keeps fork proofs.
//! It does not check signatures: facts are signed by the land that seals them
//! and `check` verifies them; imports verify before they append.

pub(crate) mod chain;
pub mod crash_points;
pub(crate) mod derived_key;
mod index_check;
mod log_store;
pub mod pg_store;
mod queue;
pub mod runner;
pub mod segments;
mod sled_store;
mod witness;
pub mod work;

pub use log_store::{LogOpenError, LogStore, LOG_STORE_FORKS_DIR, LOG_STORE_SEGMENTS_DIR};
pub use pg_store::{is_postgres_url, redact_store_url, PgOpenError, PgStore};
pub use sled_store::{SledOpenError, SledStore};

use crate::fact::{BeingId, Fact, FactId, Hash32, PublicKeyBytes};
use std::collections::{BTreeMap, BTreeSet};

/// The tip of one reel, with what the chain says about it so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub seq: u64,
    pub id: FactId,
    pub stored_time_ms: u64,
    /// The key that must sign the next fact (genesis key, or the latest rotation's).
    pub public_key: PublicKeyBytes,
    /// An `end` fact was sealed: the reel is closed.
    pub ended: bool,
}

/// What an acknowledged append returns: the fact is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub id: FactId,
    pub land_seq: u64,
    /// The very same fact was already stored; nothing was written.
    pub duplicate: bool,
}

/// One stored fact record exactly as kept, not yet decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    pub being: BeingId,
    pub seq: u64,
    /// Position in the land's order; `None` if the record is too short to hold one.
    pub land_seq: Option<u64>,
    pub envelope: Vec<u8>,
}

/// A decoded stored fact with its place in the land order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFact {
    pub land_seq: u64,
    pub fact: Fact,
}

/// Two different facts claiming the same place on one reel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkProof {
    pub being: BeingId,
    pub seq: u64,
    /// The fact the reel holds at that seq.
    pub kept: FactId,
    /// The competing fact, kept as evidence.
    pub rival: FactId,
    pub rival_envelope: Vec<u8>,
}

/// One entry of the land log: the land sequence and the fact it points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LandEntry {
    pub land_seq: u64,
    pub being: BeingId,
    pub seq: u64,
}

/// Land log entries with their envelopes side by side in one buffer (what
/// [`Store::land_log_with_envelopes_unverified`] reads: no allocation a fact).
#[derive(Debug, Default)]
pub struct LandLogRead {
    bytes: Vec<u8>,
    entries: Vec<(LandEntry, std::ops::Range<usize>)>,
}

impl LandLogRead {
    /// Empties it, keeping its memory for the next read.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    /// The buffer a store reads envelopes into, and the entries it places.
    pub(crate) fn parts_mut(&mut self) -> (&mut Vec<u8>, &mut Vec<(LandEntry, std::ops::Range<usize>)>) {
        (&mut self.bytes, &mut self.entries)
    }

    pub fn push(&mut self, entry: LandEntry, envelope: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(envelope);
        self.entries.push((entry, start..self.bytes.len()));
    }

    /// Each entry with its envelope, in land order.
    pub fn iter(&self) -> impl Iterator<Item = (&LandEntry, &[u8])> {
        self.entries.iter().map(|(entry, range)| (entry, &self.bytes[range.clone()]))
    }
}

/// What the derived indexes say, independent of how a backend stores them:
/// built by reindex from the primary records, or by the verifier from the
/// facts it checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DerivedIndexes {
    pub heads: BTreeMap<BeingId, Head>,
    pub land_log: BTreeMap<u64, (BeingId, u64)>,
    pub names: BTreeSet<(String, BeingId)>,
    pub forked: BTreeSet<BeingId>,
    /// Beings whose index entries are not to be compared (their reels have
    /// problems of their own, reported elsewhere).
    pub skip: BTreeSet<BeingId>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReindexReport {
    pub facts: u64,
    pub beings: u64,
    pub fork_proofs: u64,
    /// Records that could not be decoded and were left out of the indexes.
    pub unreadable_records: Vec<(BeingId, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("store I/O failed: {reason}")]
    Io { reason: String },
    #[error("the store is closed")]
    Closed,
    #[error("the land was opened to read only; nothing can be written to it")]
    ReadOnly,
    #[error("being {being}: expected seq {expected}, got {got} (a gap)")]
    Gap { being: BeingId, expected: u64, got: u64 },
    #[error("being {being} seq {seq}: prev does not match the head (someone else extended this reel)")]
    PrevMismatch { being: BeingId, seq: u64 },
    #[error(
        "being {being} seq {seq}: fork — fact {rival} competes with stored fact {kept}; both kept as a fork proof"
    )]
    Fork { being: BeingId, seq: u64, kept: FactId, rival: FactId },
    #[error("being {being} has a recorded fork; its reel will not be extended until the fork is resolved")]
    BeingForked { being: BeingId },
    #[error("being {being}: the first fact of a reel must be a genesis at seq 0 with a zero prev")]
    NotGenesis { being: BeingId },
    #[error("being {being}: its id is not the BLAKE3 of its genesis body")]
    GenesisIdMismatch { being: BeingId },
    #[error("being {being}: genesis body unreadable: {reason}")]
    GenesisBody { being: BeingId, reason: String },
    #[error("being {being} seq {seq}: stored time {stored_ms} is before the previous fact's {previous_ms}")]
    TimeWentBackwards { being: BeingId, seq: u64, previous_ms: u64, stored_ms: u64 },
    #[error("the name {name:?} is taken by being {holder}")]
    NameTaken { name: String, holder: BeingId },
    #[error("being {being} has ended; nothing may follow its end fact")]
    Ended { being: BeingId },
    #[error("stored record for being {being} seq {seq} is unreadable: {reason}")]
    Corrupt { being: BeingId, seq: u64, reason: String },
    /// A worker's sealing turn was refused: its lease moved or another
    /// worker sealed those wakes (nothing was written).
    #[error("round {tick}: the seal of wakes from {first} on was refused: {reason}")]
    Fenced { tick: u64, first: u64, reason: String },
    /// Another process took the land's runner lease since this one took
    /// it at `held`: this process's writes are refused (nothing was written).
    #[error(
        "another process runs this land now (runner lease epoch {now}; this process held epoch {held}): nothing was written"
    )]
    RunnerMoved { held: u64, now: u64 },
    /// A process runs this land live (`seed up`) and holds its runner
    /// lease: no other process writes meanwhile (nothing was written).
    #[error(
        "this land is running live in another process ({holder}): only that process writes while its runner lease holds; stop it (or wait until its lease runs out) and try again"
    )]
    RunByAnother { holder: String },
    /// The store keeps no wake queue (only PostgreSQL does).
    #[error("this land's store keeps no wake queue: a pool of workers needs a land on PostgreSQL")]
    NoWakeQueue,
}

/// A request on its way to the store's committer or database: `wait`
/// returns its answer; the caller goes on meanwhile.
pub struct Ticket<T> {
    pending: Result<oneshot::Receiver<Result<T, StoreError>>, StoreError>,
}

impl<T> Ticket<T> {
    pub(crate) fn waiting(receiver: oneshot::Receiver<Result<T, StoreError>>) -> Ticket<T> {
        Ticket { pending: Ok(receiver) }
    }

    pub(crate) fn failed(error: StoreError) -> Ticket<T> {
        Ticket { pending: Err(error) }
    }

    pub fn wait(self) -> Result<T, StoreError> {
        match self.pending {
            Ok(receiver) => receiver.recv().unwrap_or(Err(StoreError::Closed)),
            Err(error) => Err(error),
        }
    }

    /// The answer if it has come (what [`Ticket::wait`] would return),
    /// without waiting; once answered, the ticket is spent (asked again, it
    /// answers `Closed`).
    pub fn try_wait(&mut self) -> Option<Result<T, StoreError>> {
        if let Ok(receiver) = &self.pending {
            return match receiver.try_recv() {
                Ok(answer) => Some(answer),
                Err(oneshot::TryRecvError::Empty) => None,
                Err(oneshot::TryRecvError::Disconnected) => Some(Err(StoreError::Closed)),
            };
        }
        // A ticket that failed when it was made: its error, once.
        std::mem::replace(&mut self.pending, Err(StoreError::Closed)).err().map(Err)
    }
}

/// An append on its way to disk: answered once the group it rode in has
/// been flushed (acknowledged means durable) or it was refused.
pub type AppendTicket = Ticket<Appended>;

/// Decodes an envelope read for `entry`, which must be that entry's fact.
pub fn decode_entry_envelope(entry: &LandEntry, envelope: &[u8]) -> Result<StoredFact, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { being: entry.being, seq: entry.seq, reason };
    let fact = Fact::decode_envelope(envelope).map_err(|error| corrupt(error.to_string()))?;
    if fact.header.being != entry.being || fact.header.seq != entry.seq {
        return Err(corrupt(format!("the fact at land seq {} is not this one", entry.land_seq)));
    }
    Ok(StoredFact { land_seq: entry.land_seq, fact })
}

/// The first seq of `being`'s reel (of `reel_len` facts) whose land seq is
/// at least `land_seq`, or `reel_len` if none is: a reel is sealed in land
/// order, so a binary search reads about log2(reel_len) land seqs.
pub fn reel_seq_at_land_seq(
    store: &dyn Store,
    being: &BeingId,
    reel_len: u64,
    land_seq: u64,
) -> Result<u64, StoreError> {
    let (mut low, mut high) = (0, reel_len);
    while low < high {
        let middle = low + (high - low) / 2;
        match store.land_seq_of(being, middle)? {
            Some(found) if found < land_seq => low = middle + 1,
            Some(_) => high = middle,
            // A reel has no holes below its head: a missing fact is damage
            // that verification names; searching on past it finds nothing.
            None => high = middle,
        }
    }
    Ok(low)
}

/// Reading and replacing a stored envelope as kept, bypassing every chain
/// rule: for repair tools and the tamper tests, on every backend.
pub trait StoreSurgery {
    /// The envelope stored for `being`'s fact at `seq`, exactly as kept.
    fn stored_envelope(&self, being: &BeingId, seq: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// Replaces it with `envelope` (of the same length where the backend
    /// frames it), the backend's own checks made to match.
    fn overwrite_envelope_unchecked(&self, being: &BeingId, seq: u64, envelope: &[u8]) -> Result<(), StoreError>;
}

pub trait Store: Send + Sync {
    /// Queues a fact for the next group commit.
    fn submit(&self, fact: Fact) -> AppendTicket;

    /// Facts queued for the committer and not yet written (0 for a store
    /// opened to read only).
    fn appends_waiting(&self) -> u64;

    /// The wake queue a pool of workers shares, where the store keeps one.
    fn wake_queue(&self) -> Option<&dyn work::WakeQueue> {
        None
    }

    /// The runner lease, where several processes can open the store.
    fn runner_lease(&self) -> Option<&dyn runner::RunnerLease> {
        None
    }

    /// Appends and waits until the fact is durable.
    fn append(&self, fact: Fact) -> Result<Appended, StoreError> {
        self.submit(fact).wait()
    }

    fn head(&self, being: &BeingId) -> Result<Option<Head>, StoreError>;

    /// Facts at consecutive land seqs, in land order, that this process
    /// read and other processes committed (a pool's worker folding the
    /// others' turns): a store may keep what it caches in step with them
    /// (the PostgreSQL committer's kept heads). The default keeps nothing.
    fn followed_facts(&self, _facts: &[(u64, Fact)]) {}

    /// The heads of `beings`, in their order (`None`: no reel). A store
    /// that serves requests over a network reads them in one.
    fn heads(&self, beings: &[BeingId]) -> Result<Vec<Option<Head>>, StoreError> {
        beings.iter().map(|being| self.head(being)).collect()
    }

    /// Every being with a reel, in id order (from the key index).
    fn beings(&self) -> Result<Vec<BeingId>, StoreError>;

    /// Beings whose genesis carries this name (more than one only after an import clash).
    fn beings_named(&self, name: &str) -> Result<Vec<BeingId>, StoreError>;

    /// Decoded facts of one reel with `from_seq <= seq < to_seq`.
    fn reel(&self, being: &BeingId, from_seq: u64, to_seq: u64) -> Result<Vec<StoredFact>, StoreError>;

    /// The land seq of the fact at `seq` on `being`'s reel (`None`: the reel
    /// holds no fact there), read without decoding the fact where the store can.
    fn land_seq_of(&self, being: &BeingId, seq: u64) -> Result<Option<u64>, StoreError> {
        Ok(self.reel(being, seq, seq + 1)?.into_iter().next().map(|stored| stored.land_seq))
    }

    /// Every stored record, grouped by being in id order and seq order within,
    /// read from the primary records only (no index): what `check` verifies.
    fn raw_records(&self, being: Option<&BeingId>) -> Result<Vec<RawRecord>, StoreError>;

    /// The records of whole beings, in id order, starting after `after`
    /// (from the first being when `None`): as many beings as it takes to
    /// pass `facts_max` records, and always one whole being. Empty past the
    /// last being. A verification reads the land this way, a slice at a time.
    fn raw_records_after(&self, after: Option<&BeingId>, facts_max: usize) -> Result<Vec<RawRecord>, StoreError> {
        let mut records = Vec::new();
        for record in self.raw_records(None)? {
            if after.is_some_and(|after| record.being <= *after) {
                continue;
            }
            if records.len() >= facts_max && records.last().is_some_and(|last: &RawRecord| last.being != record.being) {
                break;
            }
            records.push(record);
        }
        Ok(records)
    }

    /// Number of facts in the land log.
    fn land_len(&self) -> Result<u64, StoreError>;

    /// Land log entries with `from <= land_seq < to`.
    fn land_log(&self, from: u64, to: u64) -> Result<Vec<LandEntry>, StoreError>;

    /// The fact a land log entry points at (`None`: the store does not hold it).
    fn fact_at(&self, entry: &LandEntry) -> Result<Option<StoredFact>, StoreError> {
        Ok(self.reel(&entry.being, entry.seq, entry.seq + 1)?.into_iter().next())
    }

    /// The land log entries with `from <= land_seq < to`, each with its
    /// fact's stored envelope, read in land order in as few reads as the
    /// store can (a fold reads the land this way; the caller decodes).
    fn land_log_with_envelopes(&self, from: u64, to: u64) -> Result<Vec<(LandEntry, Vec<u8>)>, StoreError> {
        let mut read = Vec::new();
        for entry in self.land_log(from, to)? {
            if let Some(stored) = self.fact_at(&entry)? {
                read.push((entry, stored.fact.encode_envelope()));
            }
        }
        Ok(read)
    }

    /// [`Store::land_log_with_envelopes`] for a reader that only plans
    /// which facts to read in full: each envelope as stored, where the store
    /// may leave its own check of the record unverified (the log store does
    /// not compute its frames' checks). What the reader then folds it reads
    /// again with [`Store::fact_at`] or [`Store::land_log_with_envelopes`].
    /// `read` is emptied and filled (its memory kept from read to read).
    fn land_log_with_envelopes_unverified(&self, from: u64, to: u64, read: &mut LandLogRead) -> Result<(), StoreError> {
        read.clear();
        for (entry, envelope) in self.land_log_with_envelopes(from, to)? {
            read.push(entry, &envelope);
        }
        Ok(())
    }

    fn fork_proofs(&self, being: Option<&BeingId>) -> Result<Vec<ForkProof>, StoreError>;

    /// Drops every derived index and rebuilds it from the primary records.
    fn reindex(&self) -> Result<ReindexReport, StoreError>;

    /// Records of the primary data that hold no fact a reel can claim (a
    /// frame of the log that does not decode as a fact, or is out of its
    /// reel's order), each named by its land seq and place: verification
    /// names them beside what the reels tell it. Empty where the store keeps
    /// every record under its reel.
    fn unclaimed_records(&self) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(Vec::new())
    }

    /// Differences between the derived indexes and `expected` (what the
    /// verifier derived from the facts it checked); entries of beings in
    /// `expected.skip` are not compared. Empty when they agree.
    fn index_problems(&self, expected: &DerivedIndexes) -> Result<Vec<String>, StoreError>;

    /// BLAKE3 over every derived index entry in key order: equal digests mean
    /// equal indexes (the reindex test compares them).
    fn derived_index_digest(&self) -> Result<Hash32, StoreError>;
}

#[cfg(test)]
mod ticket_tests {
    use super::*;

    /// `try_wait` gives back a ticket not yet answered, the answer once it
    /// has come, and `Closed` when the store went away without answering.
    #[test]
    fn a_ticket_is_answered_without_waiting_only_once_the_store_answered() {
        let (sender, receiver) = oneshot::channel::<Result<u64, StoreError>>();
        let mut ticket = Ticket::waiting(receiver);
        assert!(ticket.try_wait().is_none(), "answered before the store answered");
        sender.send(Ok(7)).expect("the ticket listens");
        assert!(matches!(ticket.try_wait(), Some(Ok(7))));
        assert!(matches!(ticket.try_wait(), Some(Err(StoreError::Closed))), "a spent ticket");

        let (sender, receiver) = oneshot::channel::<Result<u64, StoreError>>();
        drop(sender);
        assert!(matches!(Ticket::waiting(receiver).try_wait(), Some(Err(StoreError::Closed))));
        assert!(matches!(Ticket::<u64>::failed(StoreError::Closed).try_wait(), Some(Err(StoreError::Closed))));
    }
}
