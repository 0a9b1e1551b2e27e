//! Named places on the write path where the crash tests make the process die
//! at once, as a kill -9 landing exactly there would: between a group's
//! write and its sync, between the sync and the group's publication, and in
//! the middle of writing the derived index records; on PostgreSQL, before a
//! group's COMMIT and between its COMMIT and its acknowledgement.
//!
//! `SEED_TEST_CRASH_AT=<place>:<n>` aborts the process the `n`th time
//! (counting from 1) it reaches `<place>` (a [`CrashPoint`] name). Nothing
//! else sets or reads that variable; unset, each place costs one load of a
//! value read once per process. An abort, like SIGKILL, runs no destructors
//! and flushes nothing, so the files are left as a kill would leave them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable naming a place and a count.
pub const CRASH_AT_VARIABLE: &str = "SEED_TEST_CRASH_AT";

/// A place on the write path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// A group's frames are written to the segment file, not yet synced.
    SegmentWritten,
    /// The frames are synced; nothing is published or acknowledged yet.
    SegmentSynced,
    /// The group is published in memory and the witness written; its index
    /// records are not written and nothing is acknowledged yet.
    WitnessWritten,
    /// Part of the group's `land.index` records is written, cut inside a record.
    LandIndexTorn,
    /// On PostgreSQL: the group's rows are written in its transaction, not
    /// committed.
    PgWritten,
    /// On PostgreSQL: the group's transaction is committed; nothing is
    /// acknowledged yet.
    PgCommitted,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 6] = [
        CrashPoint::SegmentWritten,
        CrashPoint::SegmentSynced,
        CrashPoint::WitnessWritten,
        CrashPoint::LandIndexTorn,
        CrashPoint::PgWritten,
        CrashPoint::PgCommitted,
    ];
    /// The places of the land folder's log store.
    pub const LOG_STORE: [CrashPoint; 4] =
        [CrashPoint::SegmentWritten, CrashPoint::SegmentSynced, CrashPoint::WitnessWritten, CrashPoint::LandIndexTorn];
    /// The places of the PostgreSQL store.
    pub const POSTGRES: [CrashPoint; 2] = [CrashPoint::PgWritten, CrashPoint::PgCommitted];

    /// Whether a group that dies here is stored though never acknowledged.
    pub fn group_is_durable(self) -> bool {
        !matches!(self, CrashPoint::SegmentWritten | CrashPoint::PgWritten)
    }

    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::SegmentWritten => "segment-written",
            CrashPoint::SegmentSynced => "segment-synced",
            CrashPoint::WitnessWritten => "witness-written",
            CrashPoint::LandIndexTorn => "land-index-torn",
            CrashPoint::PgWritten => "pg-written",
            CrashPoint::PgCommitted => "pg-committed",
        }
    }
}

/// The place and count the variable names, read once (`None`: unset or
/// not a place and a count, so nothing crashes).
fn armed() -> Option<(CrashPoint, u64)> {
    static ARMED: OnceLock<Option<(CrashPoint, u64)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let text = std::env::var(CRASH_AT_VARIABLE).ok()?;
        let (name, count) = text.split_once(':')?;
        let point = CrashPoint::ALL.into_iter().find(|point| point.name() == name)?;
        Some((point, count.parse().ok()?))
    })
}

/// Whether a torn index write is armed (so the writer cuts its write in two).
pub(crate) fn armed_at(point: CrashPoint) -> bool {
    armed().is_some_and(|(armed, _)| armed == point)
}

/// Dies here if the variable names this place and this is its `n`th visit.
pub(crate) fn reach(point: CrashPoint) {
    static VISITS: AtomicU64 = AtomicU64::new(0);
    let Some((armed, count)) = armed() else { return };
    if armed == point && VISITS.fetch_add(1, Ordering::SeqCst) + 1 == count {
        std::process::abort();
    }
}
