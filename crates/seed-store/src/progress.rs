//! How far a long operation got, told to whoever watches.
//!
//! The library only counts: verification, a land-wide replay, an import and
//! a simulation call [`Progress::stage`] and [`Progress::advance`]; the
//! binary decides how to show it (a bar on a terminal, a plain line every
//! few seconds otherwise, nothing under `--json`). Counting never changes
//! what an operation computes, and a watcher sees only counts, never facts.

/// A watcher of one long operation. Called from several threads at once.
pub trait Progress: Sync + Send {
    /// A new stage begins: `name` says what it does ("checking reels"),
    /// `total` how many `unit`s it will do (0 when not known in advance).
    fn stage(&self, name: &'static str, total: u64, unit: &'static str);
    /// `done` more units of the current stage are finished.
    fn advance(&self, done: u64);
    /// The operation is over (a bar clears itself). Called by whoever made
    /// the watcher, never by the operation it watched.
    fn finish(&self) {}
}

/// The watcher that shows nothing (tests, benchmarks, `--json`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&self, _: &'static str, _: u64, _: &'static str) {}
    fn advance(&self, _: u64) {}
}

/// A shared [`NoProgress`], for options that hold a watcher by reference.
pub static NO_PROGRESS: NoProgress = NoProgress;
