//! Delivering client-level errors to the application's listener (librdkafka's `error_cb`),
//! including those that happened before a listener was set.
//!
//! A client starts connecting as soon as it is created (a consumer's fetcher refreshes metadata
//! at once), while a binding sets its listener just after: an event told in between (every
//! bootstrap server refused, told once per episode) would otherwise be lost for good. Events
//! told with no listener yet are kept, up to [`MAX_EARLY`], and handed to the listener when it
//! is set, before any later event.

use std::collections::VecDeque;
use std::sync::{Arc, RwLock};

use crate::Error;

/// A callback for client-level errors (see [`crate::cluster::Cluster::set_error_listener`]).
pub type ErrorListener = Arc<dyn Fn(&Error) + Send + Sync>;

/// Events kept while no listener is set; older ones are dropped beyond this.
pub(crate) const MAX_EARLY: usize = 64;

/// The listener of one cluster handle, and the events told before it was set.
#[derive(Default)]
pub(crate) struct ErrorEvents {
    slot: RwLock<Slot>,
}

#[derive(Default)]
struct Slot {
    listener: Option<ErrorListener>,
    early: VecDeque<Error>,
}

impl std::fmt::Debug for ErrorEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ErrorEvents")
    }
}

impl ErrorEvents {
    /// Tells `e` to the listener, or keeps it for the listener still to come.
    pub fn tell(&self, e: &Error) {
        let listener = match self.slot.read() {
            Ok(slot) => slot.listener.clone(),
            Err(_) => return,
        };
        if let Some(l) = listener {
            l(e);
            return;
        }
        if let Ok(mut slot) = self.slot.write() {
            // Set between the two locks: tell it now rather than keep it.
            if let Some(l) = slot.listener.clone() {
                drop(slot);
                l(e);
                return;
            }
            if slot.early.len() >= MAX_EARLY {
                slot.early.pop_front();
            }
            slot.early.push_back(e.duplicate());
        }
    }

    /// Sets the listener and hands it every event kept so far, oldest first. The replay runs
    /// under the write lock, so an event told meanwhile waits and arrives after the kept ones.
    pub fn set(&self, listener: ErrorListener) {
        if let Ok(mut slot) = self.slot.write() {
            for e in std::mem::take(&mut slot.early) {
                listener(&e);
            }
            slot.listener = Some(listener);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use std::sync::Mutex;

    fn recorder() -> (ErrorListener, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let l: ErrorListener = Arc::new(move |e: &Error| {
            if let Ok(mut s) = sink.lock() {
                s.push(e.to_string());
            }
        });
        (l, seen)
    }

    #[test]
    fn events_told_before_the_listener_is_set_reach_it_in_order() {
        let events = ErrorEvents::default();
        events.tell(&Error::AllBrokersDown { down: 1, total: 1 });
        events.tell(&Error::Kafka(ErrorCode::SaslAuthenticationFailed));
        let (l, seen) = recorder();
        events.set(l);
        events.tell(&Error::Kafka(ErrorCode::NotController));
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].contains("1/1"), "{seen:?}");
        assert!(seen[1].to_lowercase().contains("sasl"), "{seen:?}");
        assert!(seen[2].to_lowercase().contains("controller"), "{seen:?}");
    }

    #[test]
    fn only_the_latest_early_events_are_kept() {
        let events = ErrorEvents::default();
        for _ in 0..MAX_EARLY + 10 {
            events.tell(&Error::Kafka(ErrorCode::NotController));
        }
        events.tell(&Error::AllBrokersDown { down: 2, total: 2 });
        let (l, seen) = recorder();
        events.set(l);
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), MAX_EARLY);
        assert!(seen[MAX_EARLY - 1].contains("2/2"), "{seen:?}");
    }
}
