//! How far a round's moment workers may run ahead of its sealing thread.
//!
//! A round's moments are computed on worker threads and sealed on one
//! thread in wake order. Unbounded, fast workers queue finished moments
//! (their outcomes and traces) for a whole round while sealing catches up:
//! on a million-being land, most of the round at once. Workers claim wakes
//! in order from one counter and compute a wake only once it is within
//! [`MOMENTS_AHEAD_OF_SEALING_MAX`] of the next one to seal, so the round
//! holds at most that many finished moments. The wake sealing waits for is
//! always inside the window, so the round cannot stall; which worker
//! computes which wake does not change any result (every moment reads the
//! same snapshot, and they are sealed in wake order).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Finished moments a round holds at most before its sealing thread takes
/// them (each is an outcome and its trace, about a kilobyte).
pub const MOMENTS_AHEAD_OF_SEALING_MAX: usize = 4096;

/// The window one round's workers and its sealing thread share.
pub(crate) struct MomentWindow {
    /// The next wake a worker takes.
    next_to_claim: AtomicUsize,
    /// How many wakes the sealing thread has taken, and whether it stopped.
    sealing: Mutex<Sealed>,
    moved: Condvar,
    ahead_max: usize,
}

struct Sealed {
    taken: usize,
    stopped: bool,
}

impl MomentWindow {
    pub(crate) fn new(ahead_max: usize) -> MomentWindow {
        assert!(ahead_max > 0, "a window must let at least one moment through");
        MomentWindow {
            next_to_claim: AtomicUsize::new(0),
            sealing: Mutex::new(Sealed { taken: 0, stopped: false }),
            moved: Condvar::new(),
            ahead_max,
        }
    }

    /// The next wake for a worker to compute, once the window reaches it;
    /// `None` when every wake below `wakes` is claimed or sealing stopped.
    pub(crate) fn claim(&self, wakes: usize) -> Option<usize> {
        let index = self.next_to_claim.fetch_add(1, Ordering::Relaxed);
        if index >= wakes {
            return None;
        }
        let mut sealed = self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while !sealed.stopped && index >= sealed.taken.saturating_add(self.ahead_max) {
            sealed = self.moved.wait(sealed).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        (!sealed.stopped).then_some(index)
    }

    /// The sealing thread has taken the moments of the first `taken` wakes.
    pub(crate) fn taken(&self, taken: usize) {
        let mut sealed = self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sealed.taken = taken;
        drop(sealed);
        self.moved.notify_all();
    }

    /// Sealing stopped (the round ended or failed): workers take no more wakes.
    pub(crate) fn stop(&self) {
        self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).stopped = true;
        self.moved.notify_all();
    }
}

/// Stops a window when the sealing loop holding it ends, by any path (an
/// error returned early included), so no worker waits for it forever.
pub(crate) struct StopWhenDropped<'a>(pub(crate) &'a MomentWindow);

impl Drop for StopWhenDropped<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn workers_never_run_more_than_the_window_ahead_of_sealing_and_every_wake_is_computed_once() {
        let wakes = 2_000;
        let window = Arc::new(MomentWindow::new(16));
        let (sender, receiver) = std::sync::mpsc::channel();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (window, sender) = (window.clone(), sender.clone());
                std::thread::spawn(move || {
                    while let Some(index) = window.claim(wakes) {
                        sender.send(index).expect("sealing listens");
                    }
                })
            })
            .collect();
        drop(sender);
        let mut waiting = std::collections::BTreeSet::new();
        for next in 0..wakes {
            while !waiting.contains(&next) {
                let index = receiver.recv().expect("a worker sends it");
                assert!(index < next + 16, "wake {index} computed while sealing waited for {next}");
                assert!(waiting.insert(index), "wake {index} computed twice");
            }
            waiting.remove(&next);
            window.taken(next + 1);
        }
        for worker in workers {
            worker.join().expect("a worker ends");
        }
        assert!(receiver.try_recv().is_err(), "no wake beyond the round");
    }

    #[test]
    fn a_stopped_window_releases_workers_waiting_for_it() {
        let window = Arc::new(MomentWindow::new(1));
        assert_eq!(window.claim(10), Some(0));
        let blocked = {
            let window = window.clone();
            std::thread::spawn(move || window.claim(10))
        };
        drop(StopWhenDropped(&window));
        assert_eq!(blocked.join().expect("released"), None);
    }
}
