//! Data parallelism without a thread pool: scoped threads over chunks, results
//! in input order (so nothing downstream depends on scheduling).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items, one thread is cheaper than starting others.
pub const PARALLEL_ITEMS_MIN: usize = 16;

/// Items are handed to the threads in chunks of this many, taken in turn:
/// a thread that shares its core with other work (verification runs beside
/// the replay's fold) takes fewer chunks instead of holding up the others.
pub const PARALLEL_CHUNK_ITEMS: usize = 256;

/// `map` over `items` on `threads` threads; the results keep the input order.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < PARALLEL_ITEMS_MIN {
        return items.iter().map(map).collect();
    }
    let chunks: Vec<&[T]> = items.chunks(PARALLEL_CHUNK_ITEMS.min(items.len().div_ceil(threads))).collect();
    let next_chunk = AtomicUsize::new(0);
    let (map, chunks, next_chunk) = (&map, &chunks, &next_chunk);
    let mut mapped: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(chunks.len()))
            .map(|_| {
                scope.spawn(move || {
                    let mut taken = Vec::new();
                    loop {
                        let index = next_chunk.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(index) else { break taken };
                        taken.push((index, chunk.iter().map(map).collect::<Vec<R>>()));
                    }
                })
            })
            .collect();
        // A worker that panicked is a bug in this build, not bad input.
        workers.into_iter().flat_map(|worker| worker.join().expect("a parallel worker panicked")).collect()
    });
    // Chunks come back in whatever order the threads took them; the results
    // do not depend on it.
    mapped.sort_unstable_by_key(|(index, _)| *index);
    let mut results = Vec::with_capacity(items.len());
    for (_, part) in mapped {
        results.extend(part);
    }
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
}
