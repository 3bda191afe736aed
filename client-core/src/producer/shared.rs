//! The state a producer handle shares with its sender task.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use super::accumulator::{Accumulator, SharedAccumulator};
use super::held::Held;
use super::partitioner::PartitionChooser;
use super::txn::TransactionManager;
use crate::cluster::Cluster;
use crate::config::ClientConfig;
use crate::records::BatchBuilder;

/// State shared by the producer handle and its sender task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cluster: Arc<Cluster>,
    pub accumulator: SharedAccumulator,
    /// `buffer.memory`, in bytes: taken by every record from admission until its batch settles.
    pub memory: Arc<Semaphore>,
    /// Records sent (appended or held) whose outcome has not been reported.
    pub pending: AtomicUsize,
    /// Records that cannot join a batch yet.
    pub held: Held,
    /// Partition choice for records without an explicit partition.
    pub chooser: PartitionChooser,
    /// An empty builder with the producer's codec, to size records without allocating one.
    pub size_probe: BatchBuilder,
    /// Wakes the sender (new full batch, flush, close, retry, held records).
    pub wake: Notify,
    /// Signals that records resolved (flush waits on it).
    pub drained: Notify,
    pub flushing: AtomicUsize,
    pub closing: AtomicBool,
    /// Producer id and epoch of an idempotent producer, once InitProducerId answered.
    pub producer_id: Mutex<Option<(i64, i16)>>,
    /// Producer id assignments so far, and when the latest happened (statistics).
    pub producer_id_history: Mutex<(u64, Option<std::time::Instant>)>,
    /// A sequenced batch failed for good: its sequence numbers are lost, so the producer bumps
    /// its epoch and restarts every partition's sequence at 0 before sending more (KIP-360).
    /// (A transactional producer bumps in `abort_transaction` instead.)
    pub needs_epoch_bump: AtomicBool,
    /// The transaction manager, with `transactional.id`.
    pub txn: Option<TransactionManager>,
}

impl Shared {
    /// The state of a new producer configured by `config`.
    pub fn new(config: ClientConfig) -> Shared {
        let p = &config.producer;
        let txn = p
            .transactional_id
            .clone()
            .map(|id| TransactionManager::new(id, p.transaction_timeout));
        let accumulator = Accumulator::new(
            p.batch_size,
            p.batch_num_messages,
            p.compression,
            p.compression_level,
            txn.is_some(),
        );
        let memory = Arc::new(Semaphore::new(p.buffer_memory.min(Semaphore::MAX_PERMITS)));
        let chooser = PartitionChooser::new(p.partitioner, p.partitioner_ignore_keys, p.batch_size);
        let size_probe = BatchBuilder::with_capacity(p.compression, 0);
        let held = Held::new(config.retry_backoff, config.retry_backoff_max);
        Shared {
            cluster: Cluster::new(config),
            accumulator: Arc::new(Mutex::new(accumulator)),
            memory,
            pending: AtomicUsize::new(0),
            held,
            chooser,
            size_probe,
            wake: Notify::new(),
            drained: Notify::new(),
            flushing: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            producer_id: Mutex::new(None),
            needs_epoch_bump: AtomicBool::new(false),
            producer_id_history: Mutex::new((0, None)),
            txn,
        }
    }

    /// Stores a producer id / epoch InitProducerId returned, counting the assignment.
    pub fn adopt_producer_id(&self, id: (i64, i16)) {
        if let Ok(mut slot) = self.producer_id.lock() {
            *slot = Some(id);
        }
        if let Ok(mut h) = self.producer_id_history.lock() {
            h.0 += 1;
            h.1 = Some(std::time::Instant::now());
        }
    }

    /// Adopts a new producer id / epoch: every partition's sequence starts again at 0.
    pub fn set_producer_id(&self, id: (i64, i16)) {
        self.adopt_producer_id(id);
        if let Ok(mut acc) = self.accumulator.lock() {
            acc.reset_sequences();
        }
        tracing::debug!(producer_id = id.0, epoch = id.1, "producer id assigned");
        self.wake.notify_one();
    }

    /// Reports the outcomes of `n` records with `report`: they leave `pending` first, so anyone
    /// who sees an outcome also sees it gone from the count (a binding's outstanding count),
    /// and whoever waits for the producer to drain looks again after.
    pub fn settle(&self, n: usize, report: impl FnOnce()) {
        self.pending.fetch_sub(n, Ordering::AcqRel);
        report();
        self.drained.notify_waiters();
    }

    /// Waits until every record sent so far has resolved; with `flush`, queued batches are
    /// sent at once instead of after `linger.ms`.
    pub async fn wait_resolved(&self, flush: bool) {
        if flush {
            self.flushing.fetch_add(1, Ordering::AcqRel);
        }
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.pending.load(Ordering::Acquire) == 0 {
                break;
            }
            self.wake.notify_one();
            // Re-check periodically in case a wake-up raced with the count.
            let _ = tokio::time::timeout(Duration::from_millis(100), drained).await;
        }
        if flush {
            self.flushing.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
