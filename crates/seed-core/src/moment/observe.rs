//! Observing moments as they run, without the beats reading a clock: the
//! [`MomentObserver`] a caller hands in, and the live table of running
//! moments the portal shows.

use super::Beat;
use crate::fact::BeingId;
use std::collections::BTreeMap;

/// What a moment reports while it runs: which beat it entered, and when (a
/// monotonic microsecond reading supplied by the caller). The beats never
/// read a clock themselves; observers (the moment trace's timings, the live
/// table of running moments) are handed to them.
pub trait MomentObserver {
    fn now_us(&self) -> u64 {
        0
    }
    fn entered(&self, _being: BeingId, _beat: Beat) {}
    /// Whether the trace explains the role flow's walk clause by clause
    /// (`MomentTrace::clauses`, for people: a replay, the portal, a
    /// `--trace` file). A simulation whose traces nobody reads says no:
    /// the words were about 2% of the crowd's CPU.
    fn explains_walks(&self) -> bool {
        true
    }
}

/// Observes nothing and reads no clock.
pub struct Unobserved;
impl MomentObserver for Unobserved {}

/// The live table of moments running now: being → (name, beat, since).
#[derive(Default)]
pub struct RunningMoments {
    table: std::sync::Mutex<BTreeMap<BeingId, RunningMoment>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningMoment {
    pub being: BeingId,
    pub beat: Beat,
    /// Monotonic microseconds when the moment entered this beat.
    pub since_us: u64,
}

impl RunningMoments {
    pub fn enter(&self, being: BeingId, beat: Beat, now_us: u64) {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(being, RunningMoment { being, beat, since_us: now_us });
    }

    pub fn finish(&self, being: &BeingId) {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).remove(being);
    }

    /// The moments running now, in being order.
    pub fn snapshot(&self) -> Vec<RunningMoment> {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }
}

/// An observer that keeps the live table and reads a monotonic clock.
pub struct LiveObserver<'a> {
    pub running: &'a RunningMoments,
    pub epoch: std::time::Instant,
}

impl MomentObserver for LiveObserver<'_> {
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
    fn entered(&self, being: BeingId, beat: Beat) {
        self.running.enter(being, beat, self.now_us());
    }
}

/// An observer that reads a monotonic clock for the trace's timings and
/// keeps no table: a simulation's moments, which no portal lists (keeping
/// the table locked one map shared by every moment thread at each beat).
pub struct TimedObserver {
    pub epoch: std::time::Instant,
    /// Whether anything reads the traces' explanations of the walk.
    pub explains_walks: bool,
}

impl MomentObserver for TimedObserver {
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
    fn explains_walks(&self) -> bool {
        self.explains_walks
    }
}
