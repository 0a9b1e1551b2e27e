//! The allocator the `seed` binary and the benchmarks choose: mimalloc, called the cheapest way each
//! allocation allows, and its runtime options.
//!
//! The library declares no global allocator, so a program that depends on it
//! chooses its own; the `seed` binary and the benchmarks declare
//! [`SeedAllocator`] and call [`configure_allocator`] first. Allocations go
//! through plain `mi_malloc` wherever its alignment suffices, and freed memory
//! stays with the process for [`ALLOCATOR_PURGE_DELAY_MS`], except where the
//! engine asks for it to be handed back now (a round's end, around its world
//! snapshot: `seed_engine::freed_memory`). Why each choice: the items' docs
//! and docs/performance.md.

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The alignment every `mi_malloc` block of at least this size has
/// (`MI_MAX_ALIGN_SIZE` in mimalloc's `types.h`, 16 on 64-bit targets);
/// smaller blocks are aligned to their size class, hence the rule in
/// [`plain_alignment_suffices`] (the standard library's `System` allocator
/// follows the same rule for `malloc`).
const MI_MAX_ALIGN_BYTES: usize = 16;

/// Whether `mi_malloc`'s own alignment already meets `layout`'s.
fn plain_alignment_suffices(layout: &Layout) -> bool {
    layout.align() <= MI_MAX_ALIGN_BYTES && layout.align() <= layout.size()
}

/// mimalloc instead of glibc's malloc: a round of moments allocates and frees
/// many small buffers on several threads at once, and glibc's arenas spent a
/// fifth of the crowd benchmark's samples in `_int_malloc` / `_int_free` /
/// `malloc_consolidate`. The library only offers it: a program chooses its
/// own global allocator, so the `seed` binary and the benchmarks declare
///
/// ```ignore
/// #[global_allocator]
/// static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;
/// ```
///
/// and call [`configure_allocator`] first.
///
/// Allocations whose alignment mimalloc's plain `mi_malloc` already gives
/// go through it: the `mimalloc` crate sends every allocation through
/// `mi_malloc_aligned`, whose checks cost about twice the plain fast path,
/// and large blocks through its slow generic path, on the hundred or so
/// allocations of every moment.
pub struct SeedAllocator;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free`
// frees aligned and plain blocks alike); a block is handed out aligned as
// its layout asks, by `mi_malloc` when `plain_alignment_suffices`, else by
// the aligned entry points.
unsafe impl GlobalAlloc for SeedAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain_alignment_suffices(&layout) {
            mi_malloc(layout.size()) as *mut u8
        } else {
            mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain_alignment_suffices(&layout) {
            mi_zalloc(layout.size()) as *mut u8
        } else {
            mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // The new size must meet the alignment too.
        let grown = Layout::from_size_align_unchecked(new_size, layout.align());
        if plain_alignment_suffices(&layout) && plain_alignment_suffices(&grown) {
            mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

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
    seed_engine::freed_memory::set_release_freed_memory(release_freed_memory);
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set only stores an integer in mimalloc's option
    // table (atomically); any option index and value are accepted.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS as std::ffi::c_long) }
}

/// mimalloc's `mi_option_allow_thp` (`mimalloc.h`, v3 option list).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Transparent huge pages off for this process (and the processes it
/// starts), as `MIMALLOC_ALLOW_THP=0` would turn them off had it been set
/// before mimalloc started, which is before `main`; with that variable set,
/// it decides instead and this does nothing. What the `seed` binary calls
/// for a command that reads a land once and exits: mimalloc asks the
/// kernel for huge pages, and the first touch of any byte of one has the
/// kernel zero all 2 MiB of it. A one-being replay on a million beings
/// faulted in 2.4–2.7 GB to hold under 1 GB, and zeroing was a fifth to a
/// third of its samples; without huge pages it took about 4.1 s instead
/// of 5, with half the system time. A process that walks a large world
/// for long is faster on them (the portal's one-being replay took 40%
/// longer without), so servers and simulations keep them
/// (docs/performance.md).
pub fn turn_transparent_huge_pages_off() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: as in `configure_allocator`.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of this process; the
    // other arguments must be zero. A kernel without it returns an error,
    // and the process goes on with huge pages.
    unsafe {
        libc::prctl(
            libc::PR_SET_THP_DISABLE,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Hands the pages freed so far back to the operating system now, whatever
/// the purge delay: what the engine calls before and after writing a world
/// snapshot (`seed_engine::freed_memory`).
fn release_freed_memory() {
    // SAFETY: mi_collect only walks mimalloc's own heaps and arenas.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards the hand-written option indexes: they must read mimalloc's
    /// own defaults (a purge delay of 1,000 ms, huge pages allowed, in v3)
    /// before anything sets them; configuring sets the delay, turning huge
    /// pages off the other, and the kernel then gives this process none.
    #[test]
    fn the_option_indexes_are_mimallocs_and_huge_pages_turn_off_when_asked() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() || std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
            return;
        }
        // SAFETY: mi_option_get only reads mimalloc's option table.
        let (default, thp_default) = unsafe {
            (libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP))
        };
        // Nothing else in this test binary configures the allocator.
        assert_eq!((default, thp_default), (1000, 1), "mimalloc's defaults of the two options");
        configure_allocator();
        // SAFETY: as above.
        assert_eq!(
            unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP) },
            1,
            "configuring leaves huge pages on"
        );
        turn_transparent_huge_pages_off();
        // SAFETY: as above.
        let (set, thp_set) = unsafe {
            (libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP))
        };
        assert_eq!((set, thp_set), (ALLOCATOR_PURGE_DELAY_MS as std::ffi::c_long, 0));
        #[cfg(target_os = "linux")]
        // SAFETY: PR_GET_THP_DISABLE only reads this process's flag.
        assert_eq!(
            unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
            1,
            "huge pages are off for the process"
        );
    }

    /// Every block is aligned as its layout asks, on both paths and through
    /// reallocation, and holds what was written to it.
    #[test]
    fn blocks_are_aligned_as_their_layouts_ask() {
        let allocator = SeedAllocator;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 15, 16, 24, 100, 1024, 5000, 70_000, 5_000_000] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: the layout has a non-zero size; each block is freed
                // once, with the layout it was last allocated with.
                unsafe {
                    let block = allocator.alloc(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "size {size} align {align}");
                    block.write_bytes(0xab, size);
                    let grown = allocator.realloc(block, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown from {size}, align {align}");
                    assert!((0..size).all(|at| *grown.add(at) == 0xab), "kept on growing {size}");
                    let shrunk = allocator.realloc(grown, Layout::from_size_align_unchecked(size * 3, align), 1);
                    assert_eq!(shrunk as usize % align, 0, "shrunk from {size}, align {align}");
                    assert_eq!(*shrunk, 0xab);
                    allocator.dealloc(shrunk, Layout::from_size_align_unchecked(1, align));
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "zeroed {size} align {align}");
                    assert!((0..size).all(|at| *zeroed.add(at) == 0), "zeroed {size}");
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
