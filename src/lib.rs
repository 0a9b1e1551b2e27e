//! seed: a being substrate. A land hosts beings; each being is a row plus an
//! append-only reel of signed, hash-chained facts. See `docs/ARCHITECTURE.md`
//! for the map of this crate.

pub mod bundle;
pub mod canonical;
pub mod check;
pub mod clock;
pub mod extensions;
pub mod fact;
pub mod keys;
pub mod land;
pub mod limits;
pub mod llm;
pub mod moment;
pub mod names;
pub mod parallel;
pub mod portal;
pub mod replay;
pub mod roles;
pub mod script;
pub mod sim;
pub mod store;
pub mod view;
pub mod world;

/// mimalloc instead of glibc's malloc: a round of moments allocates and frees
/// many small buffers on several threads at once, and glibc's arenas spent a
/// fifth of the crowd benchmark's samples in `_int_malloc` / `_int_free` /
/// `malloc_consolidate`. Declared in the library so the binary, the tests and
/// the benchmarks all run on the same allocator.
#[global_allocator]
static GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long memory a process freed stays with it before mimalloc hands it
/// back to the operating system (mimalloc's own default is one second).
/// Replays and simulations free and reallocate hundreds of megabytes in
/// waves a second or so apart; handing pages back and faulting them in again
/// (the kernel zeroes each one) cost up to a fifth of a land replay's time.
/// An idle process still returns its memory after this delay.
pub const ALLOCATOR_PURGE_DELAY_MS: i64 = 10_000;

/// mimalloc's `mi_option_purge_delay` (`mimalloc.h`, v3 option list), which
/// libmimalloc-sys does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Applies [`ALLOCATOR_PURGE_DELAY_MS`]. Called first thing by the `seed`
/// binary and by the benchmarks (which measure what the binary runs);
/// library users may call it too. The `MIMALLOC_PURGE_DELAY` environment
/// variable, when set, still decides.
pub fn configure_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set only stores an integer in mimalloc's option
    // table (atomically); any option index and value are accepted.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS as std::ffi::c_long) }
}

#[cfg(test)]
mod allocator_tests {
    /// Guards the hand-written option index: it must read mimalloc's own
    /// default purge delay (1,000 ms in v3) before anything sets it.
    #[test]
    fn the_purge_delay_option_index_is_mimallocs() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: mi_option_get only reads mimalloc's option table.
        let default = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        // Nothing else in this test binary configures the allocator.
        assert_eq!(default, 1000);
        super::configure_allocator();
        // SAFETY: as above.
        let set = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(set, super::ALLOCATOR_PURGE_DELAY_MS as std::ffi::c_long);
    }
}
