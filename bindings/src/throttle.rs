//! Throttle reports for the shells' `throttle_cb` (librdkafka's semantics): every response a
//! broker answered with a non-zero `throttle_time_ms` (KIP-219) is reported, and so is the
//! first response after that with none (throttle time 0), served on the application's thread
//! by the shell's `poll` like the other callbacks.
//!
//! The core reports throttle times through its cluster's throttle listener
//! ([`odradek::cluster::Cluster::set_throttle_listener`]), on a runtime thread. A
//! [`ThrottleQueue`] attached to a client's cluster keeps them, in order, until the shell takes
//! them, and wakes the shell's waiting `poll` through the client's [`Signal`]. Nothing is
//! attached (and nothing kept) unless the shell asks for throttle reports: a client without a
//! `throttle_cb` pays nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use odradek::cluster::Cluster;
use odradek::net::{ThrottleEvent, ThrottleSink};

use crate::runtime::Signal;

/// Reports kept while the application does not poll; the oldest are dropped beyond this (a
/// client throttled for a long time reports once per response).
pub const MAX_QUEUED: usize = 10_000;

/// One throttle report, as librdkafka's `throttle_cb` receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// The broker's address, `host:port`: what librdkafka passes (its `rkb_nodename`, the
    /// bootstrap address for a bootstrap connection); confluent-kafka's `ThrottleEvent` prints
    /// it as `host:port/<broker_id>`.
    pub broker_name: String,
    /// The broker's node id (-1 for a bootstrap connection).
    pub broker_id: i32,
    /// How long the broker throttled the client, milliseconds (0: no longer throttled).
    pub throttle_time_ms: i32,
}

impl Throttle {
    /// The report of a core event.
    pub fn from_event(e: &ThrottleEvent) -> Throttle {
        Throttle {
            broker_name: e.broker.clone(),
            broker_id: e.node_id,
            throttle_time_ms: e.throttle_time_ms.max(0),
        }
    }
}

/// A client's throttle reports, waiting to be served.
#[derive(Debug)]
pub struct ThrottleQueue {
    events: Mutex<VecDeque<Throttle>>,
    signal: Arc<Signal>,
}

impl ThrottleQueue {
    /// A queue fed by `cluster`'s throttle listener (replacing any listener set before), which
    /// notifies `signal` for every report. The listener holds the queue weakly: dropping the
    /// last other reference stops the reports.
    pub fn attach(cluster: &Cluster, signal: Arc<Signal>) -> Arc<ThrottleQueue> {
        let queue = Arc::new(ThrottleQueue {
            events: Mutex::new(VecDeque::new()),
            signal,
        });
        let weak = Arc::downgrade(&queue);
        cluster.set_throttle_listener(ThrottleSink(Arc::new(move |event| {
            if let Some(queue) = weak.upgrade() {
                queue.push(Throttle::from_event(&event));
            }
        })));
        queue
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Throttle>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a report (the oldest is dropped when [`MAX_QUEUED`] are waiting) and wakes the
    /// shell.
    pub fn push(&self, report: Throttle) {
        {
            let mut q = self.lock();
            if q.len() >= MAX_QUEUED {
                q.pop_front();
            }
            q.push_back(report);
        }
        self.signal.notify();
    }

    /// Takes every waiting report, oldest first.
    pub fn take(&self) -> Vec<Throttle> {
        self.lock().drain(..).collect()
    }

    /// Puts reports back at the front (a callback raised; the rest wait for the next `poll`).
    pub fn requeue(&self, reports: Vec<Throttle>) {
        let mut q = self.lock();
        for r in reports.into_iter().rev() {
            q.push_front(r);
        }
    }

    /// Whether no report is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Waits up to `timeout` for a report; returns whether one is waiting. For a client whose
    /// only events are throttle reports (the admin client's `poll`). Safe without the shell's
    /// lock (the Python shell releases the GIL around it).
    pub fn wait(&self, timeout: Duration) -> bool {
        let seen = self.signal.prepare();
        if !self.is_empty() {
            self.signal.cancel_wait();
            return true;
        }
        self.signal.wait(seen, timeout);
        !self.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(node_id: i32, ms: i32) -> ThrottleEvent {
        ThrottleEvent {
            broker: "127.0.0.1:9092".into(),
            node_id,
            throttle_time_ms: ms,
        }
    }

    #[test]
    fn reports_are_librdkafkas() {
        let t = Throttle::from_event(&event(3, 120));
        assert_eq!(t.broker_name, "127.0.0.1:9092");
        assert_eq!((t.broker_id, t.throttle_time_ms), (3, 120));
        let t = Throttle::from_event(&event(-1, -5));
        assert_eq!((t.broker_id, t.throttle_time_ms), (-1, 0));
    }

    #[test]
    fn queue_keeps_order_and_bounds() {
        let q = ThrottleQueue {
            events: Mutex::new(VecDeque::new()),
            signal: Signal::new(),
        };
        assert!(!q.wait(Duration::ZERO));
        for ms in 0..(MAX_QUEUED as i32 + 5) {
            q.push(Throttle::from_event(&event(1, ms)));
        }
        assert!(q.wait(Duration::from_secs(5)));
        let got = q.take();
        assert_eq!(got.len(), MAX_QUEUED);
        assert_eq!(got[0].throttle_time_ms, 5);
        q.requeue(got[..2].to_vec());
        assert_eq!(q.take().len(), 2);
        assert!(q.is_empty());
    }
}
