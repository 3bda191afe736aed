//! Fetch requests long-polling a partition, woken when its offsets move.
//!
//! Each waiting Fetch owns one [`Notify`] and registers it with every partition it reads; the
//! partition keeps only weak references, so a request that answered (or whose connection went
//! away) costs nothing once dropped, and dead entries are pruned on every registration and wake.
//! A produce therefore wakes only the fetches that read the partition it grew, never all of
//! them. `notify_one` stores a permit, so a wake between a fetch's read and its wait is not lost.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::Notify;

/// The fetches waiting on one partition.
#[derive(Debug, Default)]
pub struct Waiters {
    list: Mutex<Vec<Weak<Notify>>>,
}

impl Waiters {
    /// Registers `waiter` to be woken by the next [`Waiters::wake_all`].
    pub fn register(&self, waiter: &Arc<Notify>) {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(waiter));
    }

    /// Wakes every live waiter and forgets the dead ones.
    pub fn wake_all(&self) {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|w| match w.upgrade() {
            Some(n) => {
                n.notify_one();
                true
            }
            None => false,
        });
    }

    /// Live and dead registrations (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.list.lock().map(|l| l.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_before_the_wait_is_kept_and_dropped_waiters_are_pruned() {
        let waiters = Waiters::default();
        let fetch = Arc::new(Notify::new());
        waiters.register(&fetch);
        waiters.wake_all();
        // The permit stored by the wake completes the wait at once.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let woke = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), fetch.notified())
                .await
                .is_ok()
        });
        assert!(woke);
        for _ in 0..100 {
            waiters.register(&Arc::new(Notify::new()));
        }
        waiters.register(&fetch);
        assert_eq!(waiters.len(), 2, "the dropped registrations were pruned");
        drop(fetch);
        waiters.wake_all();
        assert_eq!(waiters.len(), 0);
    }
}
