//! Handing memory the process freed back to the operating system at the
//! moments the engine knows a great deal was just freed and a great deal is
//! about to be allocated: a round's end, before its world snapshot is
//! written. The library chooses no allocator, so the program that does (the
//! `seed` binary: mimalloc, which keeps freed pages for a while so that
//! replays do not fault them in again) installs how; without one this does
//! nothing.
//!
//! At a million beings, a round's end held the round's copy of the world,
//! freed moments before and kept by the allocator, beside the snapshot's
//! bytes (docs/performance.md, "Freed memory handed back before a snapshot").

use std::sync::OnceLock;

static RELEASE_FREED_MEMORY: OnceLock<fn()> = OnceLock::new();

/// Installs how freed memory is handed back now (once per process; a
/// second call is ignored, as the global allocator is chosen once).
pub fn set_release_freed_memory(release: fn()) {
    let _ = RELEASE_FREED_MEMORY.set(release);
}

/// Hands back what the process freed, if a program installed how.
pub fn release_freed_memory() {
    if let Some(release) = RELEASE_FREED_MEMORY.get() {
        release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RELEASES: AtomicUsize = AtomicUsize::new(0);

    fn count_release() {
        RELEASES.fetch_add(1, Ordering::SeqCst);
    }

    fn other_release() {
        RELEASES.fetch_add(100, Ordering::SeqCst);
    }

    /// Nothing else in this test binary installs a release.
    #[test]
    fn the_installed_release_is_called_and_the_first_one_installed_stays() {
        set_release_freed_memory(count_release);
        set_release_freed_memory(other_release);
        let before = RELEASES.load(Ordering::SeqCst);
        release_freed_memory();
        release_freed_memory();
        assert_eq!(RELEASES.load(Ordering::SeqCst) - before, 2);
    }
}
