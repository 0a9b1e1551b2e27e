//! Data parallelism without a thread pool: scoped threads over chunks, results
//! in input order (so nothing downstream depends on scheduling).
//!
//! [`map_in_order`] hands out chunks of [`PARALLEL_CHUNK_ITEMS`] in turn, so a
//! thread slowed by other work takes fewer, and each thread writes its results
//! straight into their places in input order (the module's one `unsafe`).
//! [`drop_in_background`] frees large structures nobody needs to wait for on a
//! thread of their own.

use std::sync::{Mutex, PoisonError};

/// Below this many items, one thread is cheaper than starting others.
pub const PARALLEL_ITEMS_MIN: usize = 16;

/// Items are handed to the threads in chunks of this many, taken in turn:
/// a thread that shares its core with other work (verification runs beside
/// the replay's fold) takes fewer chunks instead of holding up the others.
pub const PARALLEL_CHUNK_ITEMS: usize = 256;

/// `map` over `items` on `threads` threads; the results keep the input order.
///
/// Each thread writes its results straight into their places in the output,
/// so nothing is gathered, sorted or copied on one thread afterwards.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < PARALLEL_ITEMS_MIN {
        return items.iter().map(map).collect();
    }
    let chunk_items = PARALLEL_CHUNK_ITEMS.min(items.len().div_ceil(threads));
    let mut results: Vec<R> = Vec::with_capacity(items.len());
    let slots = &mut results.spare_capacity_mut()[..items.len()];
    // Chunks of input and the output slots they fill, taken in turn.
    let work = Mutex::new(items.chunks(chunk_items).zip(slots.chunks_mut(chunk_items)));
    let (map, work) = (&map, &work);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(items.len().div_ceil(chunk_items)))
            .map(|_| {
                scope.spawn(move || loop {
                    // Nothing panics while the lock is held, so it is never poisoned.
                    let next = work.lock().unwrap_or_else(PoisonError::into_inner).next();
                    let Some((inputs, outputs)) = next else { break };
                    for (input, output) in inputs.iter().zip(outputs) {
                        output.write(map(input));
                    }
                })
            })
            .collect();
        for worker in workers {
            // A worker that panicked is a bug in this build, not bad input.
            worker.join().expect("a parallel worker panicked");
        }
    });
    // SAFETY: the chunks of output slots cover the first `items.len()` slots
    // of the spare capacity, each handed to exactly one worker, which wrote
    // every slot of it; every worker finished (had one panicked, the panic
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
