//! `queued.max.requests`: how many requests the broker serves at once, across every
//! connection. A connection whose next request finds no free slot waits before handling it
//! (and so stops reading its socket: TCP pushes back on the client), as Kafka's network threads
//! stop reading once its request queue holds `queued.max.requests`. A request that waits for
//! something other than the broker's work (a long-polling Fetch, a JoinGroup or SyncGroup
//! waiting for the rest of its group) gives its slot back first, so waiting requests never
//! starve the ones they wait for.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

tokio::task_local! {
    /// The slot of the request the current task is serving.
    static HELD: RefCell<Option<OwnedSemaphorePermit>>;
}

/// The broker's request slots.
#[derive(Debug)]
pub struct RequestSlots {
    slots: Arc<Semaphore>,
}

impl RequestSlots {
    /// `count` slots (at least one).
    pub fn new(count: usize) -> RequestSlots {
        RequestSlots {
            slots: Arc::new(Semaphore::new(count.max(1))),
        }
    }

    /// Waits for a free slot, then runs `serve` holding it (until `serve` completes or calls
    /// [`release_while_waiting`]).
    pub async fn serve<F: Future>(&self, serve: F) -> F::Output {
        // The semaphore is never closed; were it, the request would be served unbounded.
        let permit = self.slots.clone().acquire_owned().await.ok();
        HELD.scope(RefCell::new(permit), serve).await
    }

    /// Slots free right now.
    pub fn available(&self) -> usize {
        self.slots.available_permits()
    }
}

/// The current request is about to wait for other clients or for time: its slot goes back
/// (a no-op outside [`RequestSlots::serve`], or when already given back).
pub fn release_while_waiting() {
    let _ = HELD.try_with(|held| held.borrow_mut().take());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_holds_its_slot_until_done_or_waiting() {
        let slots = Arc::new(RequestSlots::new(1));
        let inner = slots.clone();
        slots
            .serve(async move {
                assert_eq!(inner.available(), 0, "the only slot is held");
                release_while_waiting();
                assert_eq!(inner.available(), 1, "given back while waiting");
                release_while_waiting();
                assert_eq!(inner.available(), 1);
            })
            .await;
        assert_eq!(slots.available(), 1);
        // With the slot held, a second request waits for it.
        let held = slots.slots.clone().acquire_owned().await.unwrap();
        let second =
            tokio::time::timeout(std::time::Duration::from_millis(50), slots.serve(async {})).await;
        assert!(second.is_err(), "no slot: the second request waits");
        drop(held);
        slots.serve(async {}).await;
        release_while_waiting(); // outside a request: nothing happens
    }
}
