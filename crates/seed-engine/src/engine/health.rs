//! Measuring the land's health signs (`crate::health` scores them): facts
//! sealed in the last minute and failed moments and store errors in the last
//! hour, each counted over stored time as steps end; open hook breakers,
//! asked of the hooks; free disk, asked of the file system under the land's
//! folder. Measuring is the engine's, at the edge: the score and the trip
//! are decided by the pure core and sealed as a world fact.

use crate::health::Measured;
use std::collections::VecDeque;
use std::path::Path;

/// The window of the facts-per-minute sign, in milliseconds of stored time.
const FACTS_WINDOW_MS: u64 = 60_000;
/// The window of the failures and store-errors signs, in milliseconds of stored time.
const ERRORS_WINDOW_MS: u64 = 3_600_000;

/// Counts over sliding windows of stored time.
#[derive(Debug, Default)]
pub(super) struct HealthMonitor {
    /// (stored time, facts sealed then), oldest first, and their sum.
    facts: VecDeque<(u64, u64)>,
    facts_in_window: u64,
    failures: VecDeque<u64>,
    store_errors: VecDeque<u64>,
    /// Hook breakers that had opened when the counts were last cleared.
    hook_breakers_before: u64,
    /// The latest health measured (for the portal and `/metrics`).
    pub(super) latest: Option<crate::health::Health>,
    /// A trip is due and could not be sealed yet (said once in the log).
    pub(super) trip_unsealed: bool,
}

impl HealthMonitor {
    pub(super) fn facts_sealed(&mut self, now_ms: u64, facts: u64) {
        if facts > 0 {
            self.facts.push_back((now_ms, facts));
            self.facts_in_window = self.facts_in_window.saturating_add(facts);
        }
    }

    pub(super) fn moment_failed(&mut self, now_ms: u64) {
        self.failures.push_back(now_ms);
    }

    pub(super) fn store_failed(&mut self, now_ms: u64) {
        self.store_errors.push_back(now_ms);
    }

    /// Forgets every count: a revived land is measured afresh, its hook
    /// breakers from the `hook_breakers_opened` that had opened by then.
    pub(super) fn clear(&mut self, hook_breakers_opened: u64) {
        *self = HealthMonitor { hook_breakers_before: hook_breakers_opened, ..HealthMonitor::default() };
    }

    /// The signs at `now_ms`, given the hook breakers opened since the land
    /// was opened: what is older than its window is dropped first.
    pub(super) fn measure(&mut self, now_ms: u64, hook_breakers_opened: u64, land_dir: Option<&Path>) -> Measured {
        while let Some(&(at, facts)) = self.facts.front() {
            if at.saturating_add(FACTS_WINDOW_MS) > now_ms {
                break;
            }
            self.facts.pop_front();
            self.facts_in_window -= facts;
        }
        for times in [&mut self.failures, &mut self.store_errors] {
            while times.front().is_some_and(|at| at.saturating_add(ERRORS_WINDOW_MS) <= now_ms) {
                times.pop_front();
            }
        }
        Measured {
            values: [
                self.facts_in_window,
                self.failures.len() as u64,
                self.store_errors.len() as u64,
                hook_breakers_opened.saturating_sub(self.hook_breakers_before),
            ],
            disk_free_bytes: land_dir.and_then(|dir| fs2::available_space(dir).ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_fall_out_of_their_window_of_stored_time() {
        let mut monitor = HealthMonitor::default();
        monitor.facts_sealed(0, 5);
        monitor.facts_sealed(30_000, 3);
        monitor.moment_failed(0);
        monitor.store_failed(1_000);
        assert_eq!(monitor.measure(59_999, 2, None).values, [8, 1, 1, 2]);
        assert_eq!(monitor.measure(60_000, 0, None).values, [3, 1, 1, 0]);
        assert_eq!(monitor.measure(3_600_000, 0, None).values, [0, 0, 1, 0]);
        assert_eq!(monitor.measure(3_601_000, 0, None).values, [0, 0, 0, 0]);
        monitor.facts_sealed(3_601_000, 4);
        monitor.clear(2);
        assert_eq!(monitor.measure(3_601_000, 3, None).values, [0, 0, 0, 1], "breakers since the revival");
        assert!(monitor.measure(0, 0, Some(Path::new("."))).disk_free_bytes.is_some());
    }
}
