//! Client-level error events for the shells' error callbacks (librdkafka's `error_cb`):
//! authentication failures, a broker that went down (`_TRANSPORT`), every broker down
//! (`_ALL_BROKERS_DOWN`). The core tells them through its cluster's error listener
//! ([`odradek::cluster::Cluster::set_error_listener`]) on a runtime thread; the shell serves
//! them on the application's thread from `poll`.
//!
//! Repeats are suppressed as librdkafka does: the same code at most once a second.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odradek::cluster::{Cluster, ErrorListener};

use crate::error::{ClientError, Stage};
use crate::runtime::Signal;

/// Errors kept while the application does not poll; the oldest are dropped beyond this.
pub const MAX_QUEUED: usize = 1_000;

/// How long the same error code is suppressed after it was told.
const REPEAT_AFTER: Duration = Duration::from_secs(1);

/// An error listener that passes each core error, mapped, to `deliver`, the same code at most
/// once per second.
pub fn listener(deliver: impl Fn(ClientError) + Send + Sync + 'static) -> ErrorListener {
    let last: Mutex<HashMap<i32, Instant>> = Mutex::new(HashMap::new());
    Arc::new(move |e| {
        let mapped = ClientError::from_core(e, Stage::Request);
        let now = Instant::now();
        if let Ok(mut last) = last.lock() {
            let code = mapped.code();
            if last
                .get(&code)
                .is_some_and(|t| now.duration_since(*t) < REPEAT_AFTER)
            {
                return;
            }
            last.insert(code, now);
        }
        deliver(mapped);
    })
}

/// Errors waiting for the shell's `poll` (a consumer's; the producer queues them with its
/// other events).
#[derive(Debug, Default)]
pub struct ErrorQueue {
    queue: Mutex<VecDeque<ClientError>>,
}

impl ErrorQueue {
    /// A queue fed by `cluster`'s error events (through [`listener`]), notifying `signal` on
    /// each: what an admin client's `poll` serves.
    pub fn attach(cluster: &Cluster, signal: Arc<Signal>) -> Arc<ErrorQueue> {
        let queue = Arc::new(ErrorQueue::default());
        let weak = Arc::downgrade(&queue);
        cluster.set_error_listener(listener(move |e| {
            if let Some(queue) = weak.upgrade() {
                queue.push(e);
                signal.notify();
            }
        }));
        queue
    }

    /// Appends one error, dropping the oldest beyond [`MAX_QUEUED`].
    pub fn push(&self, e: ClientError) {
        if let Ok(mut q) = self.queue.lock() {
            if q.len() >= MAX_QUEUED {
                q.pop_front();
            }
            q.push_back(e);
        }
    }

    /// Takes every error waiting, oldest first.
    pub fn take(&self) -> Vec<ClientError> {
        self.queue
            .lock()
            .map(|mut q| q.drain(..).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;

    #[test]
    fn the_same_code_is_told_once_a_second_and_other_codes_pass() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let l = listener(move |e| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(e.code())
        });
        let down = odradek::Error::AllBrokersDown { down: 3, total: 3 };
        let transport = odradek::Error::Connection {
            broker: "b:9092".into(),
            detail: "refused".into(),
        };
        l(&transport);
        l(&transport);
        l(&down);
        let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(seen, vec![codes::TRANSPORT, codes::ALL_BROKERS_DOWN]);
    }

    #[test]
    fn the_queue_keeps_order_and_a_bound() {
        let q = ErrorQueue::default();
        for _ in 0..MAX_QUEUED + 5 {
            q.push(ClientError::new(codes::TRANSPORT, None));
        }
        q.push(ClientError::new(codes::ALL_BROKERS_DOWN, None));
        let got = q.take();
        assert_eq!(got.len(), MAX_QUEUED);
        assert_eq!(got.last().map(|e| e.code()), Some(codes::ALL_BROKERS_DOWN));
        assert!(q.take().is_empty());
    }
}
