//! Records the producer holds because they cannot join a batch yet: their topic's metadata is
//! not known (librdkafka's "unassigned partition" queue; see [`super::HoldPolicy`]).
//!
//! One FIFO per topic keeps the records of a topic in the order they were sent; while a topic
//! has held records, every later record of that topic is held behind them. A held record has
//! its deadline from the moment it was sent (`max.block.ms` or `delivery.timeout.ms`, whichever
//! is first), and the FIFO order makes the front the earliest, so expiry looks only at fronts.
//! The admission step (`super::admission`) moves held records into batches; this module only
//! stores them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;

use super::delivery::Completion;
use super::record::ProducerRecord;

/// A record waiting to join a batch.
#[derive(Debug)]
pub(crate) struct HeldRecord {
    /// The record (its topic is the queue's).
    pub record: ProducerRecord,
    /// Its create timestamp, taken when it was sent.
    pub timestamp: i64,
    /// Its size as the first record of a batch (what `buffer.memory` counts).
    pub size: usize,
    /// Its share of `buffer.memory`.
    pub memory: OwnedSemaphorePermit,
    /// How its outcome is reported.
    pub completion: Completion,
    /// When it fails if it is still held.
    pub deadline: Instant,
}

/// Every topic's held records.
#[derive(Debug, Default)]
pub(crate) struct HeldQueues {
    topics: HashMap<Arc<str>, VecDeque<HeldRecord>>,
}

impl HeldQueues {
    /// Whether records of `topic` are held.
    pub fn holds(&self, topic: &str) -> bool {
        self.topics.contains_key(topic)
    }

    /// The topics with held records.
    pub fn topics(&self) -> impl Iterator<Item = &Arc<str>> {
        self.topics.keys()
    }

    /// The held records of `topic`, oldest first (an empty queue is removed by
    /// [`HeldQueues::tidy`]).
    pub fn queue_mut(&mut self, topic: &str) -> Option<&mut VecDeque<HeldRecord>> {
        self.topics.get_mut(topic)
    }

    /// Removes topics whose queue is empty.
    pub fn tidy(&mut self) {
        self.topics.retain(|_, q| !q.is_empty());
    }

    /// The earliest deadline of a held record.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.topics
            .values()
            .filter_map(|q| q.front().map(|r| r.deadline))
            .min()
    }

    /// Takes every held record out (a purge, or a transaction that cannot take them).
    pub fn take_all(&mut self) -> Vec<HeldRecord> {
        self.topics
            .drain()
            .flat_map(|(_, q)| q.into_iter())
            .collect()
    }
}

/// When the held topics' metadata may be asked for next (exponential backoff while topics stay
/// unknown).
#[derive(Debug)]
struct MetadataRetry {
    next_at: Option<Instant>,
    backoff: Duration,
}

/// The held records of a producer, with counters that let the hot path skip the lock.
#[derive(Debug)]
pub(crate) struct Held {
    queues: Mutex<HeldQueues>,
    /// Records held (a fast "nothing held" check).
    count: AtomicUsize,
    retry: Mutex<MetadataRetry>,
    min_backoff: Duration,
    max_backoff: Duration,
}

impl Held {
    /// An empty holding area; held topics' metadata is asked for with `retry.backoff.ms`
    /// doubling up to `retry.backoff.max.ms`.
    pub fn new(min_backoff: Duration, max_backoff: Duration) -> Self {
        Held {
            queues: Mutex::new(HeldQueues::default()),
            count: AtomicUsize::new(0),
            retry: Mutex::new(MetadataRetry {
                next_at: None,
                backoff: min_backoff,
            }),
            min_backoff,
            max_backoff: max_backoff.max(min_backoff),
        }
    }

    /// Whether nothing is held (one atomic load).
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// The queues, locked. The count changes only through [`Held::push`] and [`Held::popped`].
    pub fn lock(&self) -> MutexGuard<'_, HeldQueues> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `record` at the back of its topic's queue.
    pub fn push(&self, queues: &mut HeldQueues, topic: &str, record: HeldRecord) {
        self.count.fetch_add(1, Ordering::AcqRel);
        match queues.topics.get_mut(topic) {
            Some(q) => q.push_back(record),
            None => {
                queues
                    .topics
                    .insert(Arc::from(topic), VecDeque::from([record]));
            }
        }
    }

    /// Accounts for a record taken out of a queue.
    pub fn popped(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether the held topics' metadata should be asked for now; if so the next request waits
    /// a backoff that doubles each time.
    pub fn metadata_due(&self, now: Instant) -> bool {
        let Ok(mut r) = self.retry.lock() else {
            return true;
        };
        if r.next_at.is_some_and(|at| at > now) {
            return false;
        }
        r.next_at = Some(now + r.backoff);
        r.backoff = (r.backoff * 2).min(self.max_backoff);
        true
    }

    /// When [`Held::metadata_due`] will say yes again.
    pub fn metadata_retry_at(&self) -> Option<Instant> {
        self.retry.lock().ok().and_then(|r| r.next_at)
    }

    /// Every held topic got its metadata: the next unknown topic is asked for at once.
    pub fn metadata_resolved(&self) {
        if let Ok(mut r) = self.retry.lock() {
            r.next_at = None;
            r.backoff = self.min_backoff;
        }
    }
}
