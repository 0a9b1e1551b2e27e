//! Data parallelism on threads started once: chunks of input handed out in
//! turn, results in input order (so nothing downstream depends on scheduling).
//!
//! [`map_in_order`] hands out chunks of [`PARALLEL_CHUNK_ITEMS`] in turn, so a
//! thread slowed by other work takes fewer, and each thread writes its results
//! straight into their places in input order (the module's one `unsafe`).
//! The threads are a pool started on first use and kept for the process
//! ([`PARALLEL_POOL_THREADS_MAX`]): a replay maps thousands of chunks, and a
//! thread started for each found no memory of its own to reuse, so the
//! allocator took fresh pages for every chunk and the kernel zeroed each
//! one (a fifth of a one-being replay's samples on a million beings).
//! [`drop_in_background`] frees large structures nobody needs to wait for on a
//! thread of their own.

use std::sync::{Mutex, OnceLock, PoisonError};

/// The most threads the pool [`map_in_order`] runs on starts: the machine's
/// cores, up to this many (a map asking for more threads than the pool has
/// runs its extra shares on the threads there are).
pub const PARALLEL_POOL_THREADS_MAX: usize = 64;

/// The pool, started on first use; `None` if no thread could be started
/// (then maps run on their caller's thread).
fn pool() -> Option<&'static rayon_core::ThreadPool> {
    static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |cores| cores.get());
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(cores.clamp(2, PARALLEL_POOL_THREADS_MAX))
            .thread_name(|index| format!("seed-parallel-{index}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Below this many items, one thread is cheaper than starting others.
pub const PARALLEL_ITEMS_MIN: usize = 16;

/// How many items to put in each group when `items` are done in groups of
/// at most `most` (work shared within a group, such as keys derived or
/// facts signed together) and the groups are mapped over threads: fewer
/// than `most` when that many would make too few groups to be spread
/// over the threads ([`PARALLEL_ITEMS_MIN`] groups at least, where there
/// are items enough). At least 1.
pub fn items_per_group(items: usize, most: usize) -> usize {
    items.div_ceil(PARALLEL_ITEMS_MIN).clamp(1, most.max(1))
}

/// Items are handed to the threads in chunks of this many, taken in turn:
/// a thread that shares its core with other work (verification runs beside
/// the replay's fold) takes fewer chunks instead of holding up the others.
pub const PARALLEL_CHUNK_ITEMS: usize = 256;

/// `map` over `items` on `threads` threads; the results keep the input order.
///
/// Each thread writes its results straight into their places in the output,
/// so nothing is gathered, sorted or copied on one thread afterwards.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let pool = match pool() {
        Some(pool) if threads > 1 && items.len() >= PARALLEL_ITEMS_MIN => pool,
        _ => return items.iter().map(map).collect(),
    };
    let chunk_items = PARALLEL_CHUNK_ITEMS.min(items.len().div_ceil(threads));
    let mut results: Vec<R> = Vec::with_capacity(items.len());
    let slots = &mut results.spare_capacity_mut()[..items.len()];
    // Chunks of input and the output slots they fill, taken in turn.
    let work = Mutex::new(items.chunks(chunk_items).zip(slots.chunks_mut(chunk_items)));
    let (map, work) = (&map, &work);
    // The scope returns once every share has returned; a share that
    // panicked (a bug in this build, not bad input) panics the caller then.
    pool.scope(|scope| {
        for _ in 0..threads.min(items.len().div_ceil(chunk_items)) {
            scope.spawn(move |_| loop {
                // Nothing panics while the lock is held, so it is never poisoned.
                let next = work.lock().unwrap_or_else(PoisonError::into_inner).next();
                let Some((inputs, outputs)) = next else { break };
                for (input, output) in inputs.iter().zip(outputs) {
                    output.write(map(input));
                }
            });
        }
    });
    // SAFETY: the chunks of output slots cover the first `items.len()` slots
    // of the spare capacity, each handed to exactly one share, which wrote
    // every slot of it; every share finished (had one panicked, the panic
    // went on above and what was written leaked, which is safe).
    unsafe { results.set_len(items.len()) };
    results
}

/// Drops `value` on a thread of its own, so that nobody waits while a large
/// structure (tens of thousands of decoded facts) is freed; a process that
/// exits meanwhile does not free it at all. If no thread can be started, the
/// value is dropped here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    // On failure `spawn` drops its closure, and with it the value, right here.
    let _ = std::thread::Builder::new().name("seed-drop".into()).spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_as_large_as_allowed_once_there_are_enough_of_them_for_the_threads() {
        let check = |items: usize, most: usize, expected: usize| {
            assert_eq!(items_per_group(items, most), expected, "{items} items, at most {most} a group");
        };
        for (items, most, expected) in [
            (0, 64, 1),
            (10, 64, 1),
            (16, 64, 1),
            (17, 64, 2),
            (1_000, 64, 63),
            (1_024, 64, 64),
            (1_000_000, 64, 64),
            (5, 0, 1),
        ] {
            check(items, most, expected);
        }
    }

    #[test]
    fn results_keep_the_input_order_whatever_the_threads_and_chunks() {
        for count in [0usize, 1, 15, 16, 17, 255, 256, 257, 513, 5_000] {
            let items: Vec<usize> = (0..count).collect();
            let expected: Vec<usize> = items.iter().map(|item| item * 3 + 1).collect();
            for threads in [1, 2, 3, 8] {
                // Uneven work, so threads finish their chunks out of order.
                let mapped = map_in_order(&items, threads, |item| {
                    if item % 97 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    item * 3 + 1
                });
                assert_eq!(mapped, expected, "{count} items on {threads} threads");
            }
        }
    }

    /// Results that own memory are written in place and dropped once, as a
    /// vector built on one thread would hold them.
    #[test]
    fn owned_results_land_in_their_places() {
        let items: Vec<usize> = (0..3_000).collect();
        let mapped = map_in_order(&items, 3, |item| format!("item {item}"));
        assert_eq!(mapped.len(), items.len());
        for (item, text) in items.iter().zip(&mapped) {
            assert_eq!(text, &format!("item {item}"));
        }
    }

    /// A panicking map is a bug: the panic reaches the caller, whose other
    /// results are never read.
    #[test]
    fn a_panicking_map_panics_the_caller() {
        let items: Vec<usize> = (0..2_000).collect();
        let outcome = std::panic::catch_unwind(|| {
            map_in_order(&items, 2, |item| {
                assert_ne!(*item, 1_234, "the bug under test");
                vec![*item; 3]
            })
        });
        assert!(outcome.is_err());
    }
}
