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

use crate::embedding::EMBEDDING_CONNECTION_CONFIG_KEY;
use crate::fact::body::Cognition;
use crate::fact::BeingId;
use crate::moment::Substrate;
use crate::world::World;
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
    /// Workers waiting for the window to move: the sealing thread wakes
    /// them only when there are some (a wake is a system call, and it took
    /// one for every moment sealed).
    waiting: usize,
}

impl MomentWindow {
    pub(crate) fn new(ahead_max: usize) -> MomentWindow {
        assert!(ahead_max > 0, "a window must let at least one moment through");
        MomentWindow {
            next_to_claim: AtomicUsize::new(0),
            sealing: Mutex::new(Sealed { taken: 0, stopped: false, waiting: 0 }),
            moved: Condvar::new(),
            ahead_max,
        }
    }

    /// The next wake for a worker to compute, once the window reaches it;
    /// `None` when every wake below `wakes` is claimed or sealing stopped.
    #[cfg(test)]
    pub(crate) fn claim(&self, wakes: usize) -> Option<usize> {
        self.claim_handing_over(wakes, || {})
    }

    /// [`MomentWindow::claim`], calling `hand_over` first if the wake is not
    /// within the window yet: a worker that holds finished moments back to
    /// send them together hands them over before it waits, since the one
    /// sealing waits for may be among them.
    pub(crate) fn claim_handing_over(&self, wakes: usize, hand_over: impl FnOnce()) -> Option<usize> {
        let index = self.next_to_claim.fetch_add(1, Ordering::Relaxed);
        if index >= wakes {
            return None;
        }
        let mut sealed = self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !sealed.stopped && index >= sealed.taken.saturating_add(self.ahead_max) {
            drop(sealed);
            hand_over();
            sealed = self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        while !sealed.stopped && index >= sealed.taken.saturating_add(self.ahead_max) {
            sealed.waiting += 1;
            sealed = self.moved.wait(sealed).unwrap_or_else(|poisoned| poisoned.into_inner());
            sealed.waiting -= 1;
        }
        (!sealed.stopped).then_some(index)
    }

    /// The sealing thread has taken the moments of the first `taken` wakes.
    pub(crate) fn taken(&self, taken: usize) {
        let mut sealed = self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sealed.taken = taken;
        // A worker counts itself waiting under this lock before it waits,
        // after reading `taken`: one that is not counted yet will read the
        // new `taken` first.
        let anyone_waiting = sealed.waiting > 0;
        drop(sealed);
        if anyone_waiting {
            self.moved.notify_all();
        }
    }

    /// Sealing stopped (the round ended or failed): workers take no more wakes.
    pub(crate) fn stop(&self) {
        self.sealing.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).stopped = true;
        self.moved.notify_all();
    }
}

/// Whether a script's moment on this land may wait on something outside
/// the process: an embedding model (a recall, where the land names an
/// embedding connection) or an MCP server (an operation that calls a tool).
pub(crate) fn scripts_may_call_out(substrate: &Substrate, world: &World) -> bool {
    world.config.contains_key(EMBEDDING_CONNECTION_CONFIG_KEY) || substrate.ops.calls_tools()
}

/// Whether a live land's worker may hold `being`'s finished moment back to
/// hand it over with later ones: only a script's, and only where a
/// script's moments wait on nothing outside the process
/// ([`scripts_may_call_out`], `scripts_call_out`). Any other moment (a
/// model's, a panel's, one a person inhabits, a script's that may call
/// out) is handed over as soon as it is computed, and what the worker
/// holds goes before it runs: a finished moment is never held behind a
/// call to a model, a tool or a person.
pub(crate) fn may_be_held_back(world: &World, being: &BeingId, scripts_call_out: bool) -> bool {
    !scripts_call_out && world.beings.get(being).is_some_and(|row| row.effective_cognition() == Cognition::Scripted)
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

    /// Workers that hold their finished moments back, to send many at
    /// once, hand them over before they wait for the window: the one the
    /// sealing waits for may be among them. Here each worker would hold
    /// every moment to the end, and the window is narrow.
    #[test]
    fn workers_holding_moments_back_hand_them_over_before_they_wait() {
        let wakes = 500;
        let window = Arc::new(MomentWindow::new(3));
        let (sender, receiver) = std::sync::mpsc::channel::<Vec<usize>>();
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (window, sender) = (window.clone(), sender.clone());
                std::thread::spawn(move || {
                    let mut held = Vec::new();
                    let hand_over = |held: &mut Vec<usize>| {
                        if !held.is_empty() {
                            sender.send(std::mem::take(held)).expect("sealing listens");
                        }
                    };
                    while let Some(index) = window.claim_handing_over(wakes, || hand_over(&mut held)) {
                        held.push(index);
                    }
                    hand_over(&mut held);
                })
            })
            .collect();
        drop(sender);
        let mut waiting = std::collections::BTreeSet::new();
        for next in 0..wakes {
            while !waiting.contains(&next) {
                // A worker that kept the awaited moment while it waited
                // would never send it.
                let sent = receiver
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("wake {next} was never handed over"));
                for index in sent {
                    assert!(index < next + 3, "wake {index} computed while sealing waited for {next}");
                    assert!(waiting.insert(index), "wake {index} computed twice");
                }
            }
            waiting.remove(&next);
            window.taken(next + 1);
        }
        for worker in workers {
            worker.join().expect("a worker ends");
        }
    }

    #[test]
    fn only_a_scripts_moments_are_held_back_on_a_live_land() {
        let flow = Arc::new(serde_json::json!([]));
        let row = |byte: u8, cognition: Cognition, inhabited: bool| crate::world::BeingRow {
            cognition,
            inhabited_by: inhabited.then_some(BeingId([0; 32])),
            ..crate::engine::scheduler::tests::row(byte, &flow, false)
        };
        let cases = [
            (1, Cognition::Scripted, false, true),
            (2, Cognition::Scripted, true, false),
            (3, Cognition::Llm, false, false),
            (4, Cognition::Panel, false, false),
            (5, Cognition::Human, false, false),
            (6, Cognition::None, false, false),
        ];
        let mut world = World::new();
        for (byte, cognition, inhabited, _) in cases {
            let row = row(byte, cognition, inhabited);
            world.beings.insert(row.id, Arc::new(row));
        }
        for (byte, cognition, inhabited, expected) in cases {
            let held = may_be_held_back(&world, &BeingId([byte; 32]), false);
            assert_eq!(held, expected, "{cognition:?}, inhabited: {inhabited}");
            let held = may_be_held_back(&world, &BeingId([byte; 32]), true);
            assert!(!held, "{cognition:?}, inhabited: {inhabited}, on a land whose scripts call out");
        }
        assert!(!may_be_held_back(&world, &BeingId([9; 32]), false), "a being the round's world does not hold");
        // What makes a land's scripts call out: an embedding connection
        // named, or an operation that calls an MCP server's tool.
        let mut substrate = Substrate::new(crate::roles::RoleRegistry::default());
        assert!(!scripts_may_call_out(&substrate, &world), "the core's operations call no tool");
        let mut embedding = world.clone();
        embedding.config.insert(EMBEDDING_CONNECTION_CONFIG_KEY.into(), serde_json::json!("embedder"));
        assert!(scripts_may_call_out(&substrate, &embedding), "an embedding connection named");
        substrate.ops.register(crate::moment::ops::OpSpec {
            name: "look-up".into(),
            schema: crate::moment::ops::ArgSchema::open(),
            handler: crate::moment::ops::OpHandler::Tool { server: "files".into(), tool: "read".into() },
            origin: "an-extension".into(),
            described: None,
        });
        assert!(scripts_may_call_out(&substrate, &world), "an operation that calls a tool");
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
