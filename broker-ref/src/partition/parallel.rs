//! A bounded pool of scoped threads for per-partition work at startup and shutdown (opening and
//! closing logs is mostly waiting on the disk, so a few threads overlap the waits), and a way to
//! do such work from a request handler without stalling the other connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f`, which may block for long (creating or deleting thousands of partitions), telling a
/// multi-threaded tokio runtime first so it moves this worker's other tasks elsewhere; on any
/// other thread it just runs `f`.
pub(crate) fn blocking_section<R>(f: impl FnOnce() -> R) -> R {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

/// Applies `f` to every item on at most `threads` threads and returns the results in the
/// items' order. With one thread (or one item) everything runs on the caller's thread.
pub(crate) fn map_bounded<T, R, F>(items: Vec<T>, threads: usize, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let threads = threads.max(1).min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = slots.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = slots.get(i) else { break };
                let item = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(item) = item {
                    let r = f(item);
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_bounds_threads() {
        let live = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let out = map_bounded((0..64).collect(), 3, |i: u64| {
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::yield_now();
            live.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        assert_eq!(out, (0..64).map(|i| i * 2).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(map_bounded(Vec::<u8>::new(), 4, |x| x), Vec::<u8>::new());
        assert_eq!(map_bounded(vec![1], 0, |x| x + 1), vec![2]);
    }
}
