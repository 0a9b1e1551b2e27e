//! The land's clock: the one place wall time enters the system. A moment reads
//! it once, when its fact is stamped; nothing downstream reads it again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch, whichever clock: the wall clock
    /// (live), or a logical clock started at a Unix time (a simulation
    /// starts at its fixture's `start_ms`, by default 2026-01-01T00:00:00Z).
    /// Never smaller than a value returned before.
    fn now_ms(&self) -> u64;
}

/// Wall-clock time, made monotonic: if the system clock steps back, the clock
/// holds at the last value it gave rather than going backwards.
#[derive(Debug, Default)]
pub struct WallClock {
    last_ms: AtomicU64,
}

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0);
        let previous = self.last_ms.fetch_max(wall, Ordering::SeqCst);
        previous.max(wall)
    }
}

/// A logical clock for simulations and tests: starts at the Unix time it is
/// told and moves only when advanced.
#[derive(Debug, Default)]
pub struct LogicalClock {
    now_ms: AtomicU64,
}

impl LogicalClock {
    pub fn starting_at(ms: u64) -> LogicalClock {
        LogicalClock { now_ms: AtomicU64::new(ms) }
    }

    pub fn advance_ms(&self, delta_ms: u64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }

    /// Moves to `ms` if that is later (a live land holds the wall time it
    /// read once per step here, so every fact of the step carries it).
    pub fn advance_to(&self, ms: u64) {
        self.now_ms.fetch_max(ms, Ordering::SeqCst);
    }
}

impl Clock for LogicalClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_clock_moves_only_when_advanced() {
        let clock = LogicalClock::starting_at(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance_ms(250);
        assert_eq!(clock.now_ms(), 1_250);
    }

    #[test]
    fn wall_clock_never_goes_backwards() {
        let clock = WallClock::default();
        clock.last_ms.store(u64::MAX - 1, Ordering::SeqCst);
        assert_eq!(clock.now_ms(), u64::MAX - 1);
    }
}
