//! A one-value handoff from the cluster's thread to a caller that blocks for it, on a mutex and
//! a condition variable. Not `std::sync::mpsc`: a blocking `recv` there gives the caller's
//! thread a `std::thread::Thread` handle that stays in its thread-local storage until the
//! thread exits (for a C program's main thread, until the process does, which leak checkers
//! then report); a condition variable waits on a futex and allocates nothing.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

#[derive(Debug)]
struct Slot<T> {
    /// The value, and whether the sender is gone.
    state: Mutex<(Option<T>, bool)>,
    ready: Condvar,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, (Option<T>, bool)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Hands one value over.
#[derive(Debug)]
pub(crate) struct Sender<T>(Arc<Slot<T>>);

/// Waits for it.
#[derive(Debug)]
pub(crate) struct Receiver<T>(Arc<Slot<T>>);

/// A connected pair.
pub(crate) fn handoff<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new((None, false)),
        ready: Condvar::new(),
    });
    (Sender(slot.clone()), Receiver(slot))
}

impl<T> Sender<T> {
    /// Hands `value` over (the receiver may be gone: then it is dropped).
    pub(crate) fn send(self, value: T) {
        self.0.lock().0 = Some(value);
        self.0.ready.notify_all();
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.0.lock().1 = true;
        self.0.ready.notify_all();
    }
}

impl<T> Receiver<T> {
    /// The value; `None` if the sender was dropped without sending.
    pub(crate) fn recv(self) -> Option<T> {
        let mut state = self.0.lock();
        loop {
            if let Some(v) = state.0.take() {
                return Some(v);
            }
            if state.1 {
                return None;
            }
            state = self
                .0
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_over_once_and_reports_a_dropped_sender() {
        let (tx, rx) = handoff();
        let t = std::thread::spawn(move || tx.send(7));
        assert_eq!(rx.recv(), Some(7));
        t.join().unwrap();
        let (tx, rx) = handoff::<i32>();
        drop(tx);
        assert_eq!(rx.recv(), None);
    }
}
