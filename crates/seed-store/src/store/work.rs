//! The wake queue a pool of worker processes shares (`seed worker`, issue
//! 27): a run's rounds, each round's wakes in being-id order, claims with a
//! lease and a fencing epoch per being, and the round's **turn**, the index
//! of the next wake to seal.
//!
//! The queue knows nothing of moments: a wake and its result are bytes the
//! engine gives their meaning. What it guarantees:
//!
//! - **A claim is exclusive until its lease runs out.** Claims take the
//!   lowest unclaimed (or expired) wakes of the round, one claimer at a
//!   time so that each claim is an unbroken run of wakes, never waiting on
//!   a sealing turn. Each claim has a fresh epoch, higher than any before:
//!   a being's wake claimed again is held at a higher epoch.
//! - **Sealing is fenced.** A worker seals a run of wakes starting at the
//!   round's turn with [`WakeQueue::submit_turn`]: its facts, the wakes'
//!   results and the turn's move commit in one transaction, and only if the
//!   turn is where the worker found it and every wake is still held by that
//!   worker at the epoch it claimed. A worker presumed dead whose lease
//!   moved cannot seal; the reel's compare-and-swap stays the last guard.
//! - **Turns keep the land order of a single process.** Wakes are sealed in
//!   index order, so the facts of a round land in being-id order whichever
//!   worker computed them.
//!
//! Lease times are the database's clock, never a process's: no fact sees them.

use crate::fact::{BeingId, Fact, Hash32};
use crate::store::{Appended, StoreError, Ticket};

/// A wake as a round hands it out: its index in the round, the being, the
/// engine's bytes for the wake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedWake {
    pub index: u64,
    pub being: BeingId,
    pub wake: Vec<u8>,
}

/// A round as the queue holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub tick: u64,
    /// The land seq every moment of the round opens at.
    pub cursor: u64,
    /// The time every fact of the round is stamped with.
    pub now_ms: u64,
    /// How many wakes the round has.
    pub wakes: u64,
    /// The index of the next wake to seal (`wakes`: the round is done).
    pub turn: u64,
}

impl Round {
    pub fn is_done(&self) -> bool {
        self.turn >= self.wakes
    }
}

/// A wake a worker holds: it may seal it while its epoch is the wake's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub wake: QueuedWake,
    pub epoch: u64,
}

/// A run of wakes sealed together: `first` must be the round's turn, the
/// claims are `first`, `first + 1`, …, each with its result bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealTurn {
    pub worker: String,
    pub tick: u64,
    pub first: u64,
    /// `(epoch, result)` of each wake from `first` on.
    pub sealed: Vec<(u64, Vec<u8>)>,
}

/// A fenced turn on its way: answered once it committed (acknowledged
/// means durable) or was refused.
pub type TurnTicket = Ticket<Vec<Appended>>;

/// A claim on its way: answered with the wakes it holds (none: nothing
/// was free).
pub type ClaimTicket = Ticket<Vec<Claim>>;

/// Whether a worker should go on: the run's state as the queue holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// No run was started in this land's queue.
    None,
    Running {
        digest: Hash32,
    },
    Finished {
        digest: Hash32,
    },
}

/// The queue as one read sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueState {
    pub run: RunState,
    /// Whether the run's driver writes a moment trace.
    pub traced: bool,
    pub round: Option<Round>,
}

/// The queue of a store several processes share (PostgreSQL).
pub trait WakeQueue: Send + Sync {
    /// Starts a run named by `digest` (what every worker must agree on:
    /// fixture, seed); refuses while a different run is unfinished.
    /// `traced`: whether the driver writes a moment trace (the workers then
    /// put each moment's trace line in its result).
    fn start_run(&self, digest: Hash32, traced: bool) -> Result<(), StoreError>;

    /// Marks the run finished: its workers stop.
    fn finish_run(&self) -> Result<(), StoreError>;

    /// Opens round `tick` with its wakes (indexes 0, 1, … in order), and
    /// tells every waiting worker.
    fn open_round(&self, tick: u64, cursor: u64, now_ms: u64, wakes: &[QueuedWake]) -> Result<(), StoreError>;

    /// The run's state and its latest round (if one was opened), read
    /// together: what a pool process looks at each time it wakes.
    fn state(&self) -> Result<QueueState, StoreError>;

    /// Claims up to `max` wakes of round `tick` with an index in `indexes`
    /// that no live lease holds, each for `lease_ms` of the database's
    /// clock: from the first index of `prefer` (in its order) that is free,
    /// else lowest index first. (Wakes below the round's turn are sealed: a
    /// claimer starts there.) Returns at once.
    fn claim(
        &self,
        worker: &str,
        tick: u64,
        indexes: std::ops::Range<u64>,
        max: usize,
        lease_ms: u64,
        prefer: &[u64],
    ) -> ClaimTicket;

    /// How many workers held a claim that was not lost (taken over after
    /// its lease ran out) in the latest round before `tick` with claims: 0
    /// when there was none. What a worker sizes its claims by, so that
    /// every worker of a pool has work in a round of any size.
    fn workers_before(&self, tick: u64) -> Result<u64, StoreError>;

    /// Extends the leases `worker` holds in round `tick` by `lease_ms`.
    fn renew(&self, worker: &str, tick: u64, lease_ms: u64) -> Result<(), StoreError>;

    /// Queues `facts` (in order, at the next land seqs) with the results
    /// of a run of wakes, to be appended with the round's turn moved past
    /// them, all in one transaction, only if the fence holds (see the
    /// module's doc). Nothing is written when any of it is refused. Returns
    /// at once: the worker computes its next claim while this one commits.
    fn submit_turn(&self, facts: Vec<Fact>, turn: SealTurn) -> TurnTicket;

    /// Round `tick`'s wakes, by index (what a resumed driver checks the
    /// round it computes again against).
    fn wakes(&self, tick: u64) -> Result<Vec<QueuedWake>, StoreError>;

    /// The results of round `tick`'s sealed wakes from index `from` on, by index.
    fn results(&self, tick: u64, from: u64) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;

    /// Waits until another process tells of news (a round opened, a turn
    /// moved, the run finished) or `timeout_ms` passed. Callers always look
    /// again after it returns: news only cuts the wait short.
    fn wait_for_news(&self, timeout_ms: u64);
}
