//! Data parallelism without a thread pool: scoped threads over chunks, results
//! in input order (so nothing downstream depends on scheduling).

/// Below this many items, one thread is cheaper than starting others.
pub const PARALLEL_ITEMS_MIN: usize = 16;

/// `map` over `items` on `threads` threads; the results keep the input order.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < PARALLEL_ITEMS_MIN {
        return items.iter().map(map).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let map = &map;
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(map).collect::<Vec<R>>())).collect();
        // A worker that panicked is a bug in this build, not bad input.
        handles.into_iter().flat_map(|handle| handle.join().expect("a parallel worker panicked")).collect()
    })
}

/// Drops `value` on a thread of its own, so that nobody waits while a large
/// structure (tens of thousands of decoded facts) is freed; a process that
/// exits meanwhile does not free it at all. If no thread can be started, the
/// value is dropped here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    // On failure `spawn` drops its closure, and with it the value, right here.
    let _ = std::thread::Builder::new().name("seed-drop".into()).spawn(move || drop(value));
}
