//! The land's runner lease: which one process runs a live land (`seed up`)
//! when several processes can open it (a land on PostgreSQL).
//!
//! A live land's rounds and its people's moments write the reels of many
//! beings; two processes doing so at once would sign rival facts at one
//! seq of a reel, a fork, and freeze it. So a live land has one **runner**:
//! the process holding the lease, which it renews on the database's clock.
//! Taking the lease bumps its **epoch**, and from then on every commit of the
//! taker's store is fenced by that epoch: once another process took the
//! lease (after this one stopped renewing it, say a paused or partitioned
//! process), this one's commits are refused whole, before any fact is
//! written. A land folder needs none of it: one process holds its lock.

use crate::store::StoreError;

/// How long a runner lease holds without renewal (the database's clock).
pub const RUNNER_LEASE_MS_DEFAULT: u64 = 10_000;

/// Who holds the runner lease, as the store has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerHolder {
    /// What the holder called itself (its portal's address and process id).
    pub holder: String,
    pub epoch: u64,
    /// Whether the lease still holds (it may be taken when it does not).
    pub live: bool,
}

/// The runner lease of a store several processes can open.
pub trait RunnerLease: Send + Sync {
    /// Takes the lease for `holder`, for `lease_ms`, when no live lease
    /// holds it: `Some(epoch)`, and every later commit of this store is
    /// fenced by that epoch; `None` when another holder's lease is live.
    fn take_runner(&self, holder: &str, lease_ms: u64) -> Result<Option<u64>, StoreError>;

    /// Extends the lease taken at `epoch` by `lease_ms`; `false` when
    /// another process took it since.
    fn renew_runner(&self, epoch: u64, lease_ms: u64) -> Result<bool, StoreError>;

    /// Gives up the lease taken at `epoch` (a runner stopping cleanly):
    /// another process may take it at once.
    fn release_runner(&self, epoch: u64) -> Result<(), StoreError>;

    /// Who holds the lease (`None`: nobody ever took it).
    fn runner(&self) -> Result<Option<RunnerHolder>, StoreError>;
}
