//! The producer: `send()` enqueues a record and returns a future of its metadata.
//!
//! Flow: `send` → partition chosen (explicit, user partitioner, murmur2 of the key, or sticky) →
//! the record is appended to its partition's open batch in the accumulator (waiting up to
//! `max.block.ms` for metadata and for `buffer.memory`) → the sender task drains batches that are
//! full, lingered for `linger.ms`, or are being flushed, groups them by leader and sends one
//! ProduceRequest per broker → each response completes, retries or fails its records. Every
//! record's future resolves exactly once, with metadata or a typed error, by
//! `delivery.timeout.ms` at the latest.

mod accumulator;
mod delivery;
mod partitioner;
mod sender;
mod txn;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{oneshot, Notify, Semaphore};

pub use delivery::{DeliveryBatch, DeliveryFuture, Report, ReportQueue};
pub use partitioner::{murmur2, partition_for_key, Partitioner, StickyPartitioner};
pub use txn::{GroupMetadata, TransactionState};

use crate::cluster::Cluster;
use crate::config::{ClientConfig, PartitionerKind};
use crate::records::{BatchBuilder, Header};
use crate::{Error, Result};
use accumulator::{Accumulator, SharedAccumulator};

/// A topic and partition, ordered by topic then partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
}

/// A record to send.
#[derive(Debug, Clone, Default)]
pub struct ProducerRecord {
    /// Destination topic.
    pub topic: String,
    /// Explicit partition; `None` lets the partitioner choose.
    pub partition: Option<i32>,
    /// Key; `None` is null.
    pub key: Option<Bytes>,
    /// Value; `None` is null (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers, in order; keys may repeat.
    pub headers: Vec<Header>,
    /// Create timestamp in ms; `None` uses the current time.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value for `topic`.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            topic: topic.into(),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the partition.
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<Bytes>, value: Option<impl Into<Bytes>>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }

    /// Sets the create timestamp.
    pub fn timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }
}

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// Topic.
    pub topic: Arc<str>,
    /// Partition.
    pub partition: i32,
    /// Offset, or -1 with `acks=0`.
    pub offset: i64,
    /// The create time, or the broker's log-append time.
    pub timestamp: i64,
}

/// What [`Producer::try_send_batch`] did with the records it was given.
#[derive(Debug, Default)]
pub struct BatchAppend {
    /// Records handled from the front of the slice: appended, or refused. The rest were not
    /// looked at: the first of them would have had to wait (for the topic's metadata or for
    /// room in `buffer.memory`); send it with [`Producer::send`], which waits, then go on.
    pub consumed: usize,
    /// Records refused, by index, in ascending order (too large, unknown partition, ...).
    pub refused: Vec<(usize, Error)>,
    /// The appended records' deliveries, by index (untracked unless asked for).
    pub deliveries: DeliveryBatch,
}

/// How `append_batch` tracks the records it appends.
enum Tracking<'a> {
    /// Counted in `pending` only.
    None,
    /// One shared completion ([`DeliveryBatch`]).
    Group,
    /// Reports to a queue, by token per record index.
    Report(&'a Arc<ReportQueue>, &'a [Option<u64>]),
}

/// Per-partition counters of a statistics snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStats {
    /// Topic and partition.
    pub partition: TopicPartition,
    /// Records waiting in the accumulator.
    pub queued_records: usize,
    /// Batches handed to the network.
    pub batches_sent: u64,
    /// Batches retried.
    pub retries: u64,
    /// Batches in flight.
    pub in_flight: usize,
}

/// Per-broker counters of a statistics snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerStats {
    /// Broker address.
    pub broker: String,
    /// Requests sent.
    pub requests: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Mean round trip, microseconds.
    pub mean_latency_us: u64,
    /// Requests awaiting a response.
    pub in_flight: usize,
}

/// A statistics snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Records sent but not yet acknowledged or failed.
    pub pending_records: usize,
    /// Per partition.
    pub partitions: Vec<PartitionStats>,
    /// Per broker connection.
    pub brokers: Vec<BrokerStats>,
}

/// State shared by the producer handle and its sender task.
#[derive(Debug)]
pub(crate) struct Shared {
    cluster: Arc<Cluster>,
    accumulator: SharedAccumulator,
    memory: Arc<Semaphore>,
    /// Records sent whose futures have not resolved.
    pending: AtomicUsize,
    /// Wakes the sender (new full batch, flush, close, retry).
    wake: Notify,
    /// Signals that records resolved (flush waits on it).
    drained: Notify,
    flushing: AtomicUsize,
    closing: AtomicBool,
    /// Producer id and epoch of an idempotent producer, once InitProducerId answered.
    producer_id: Mutex<Option<(i64, i16)>>,
    /// A sequenced batch failed for good: its sequence numbers are lost, so the producer bumps
    /// its epoch and restarts every partition's sequence at 0 before sending more (KIP-360).
    /// (A transactional producer bumps in `abort_transaction` instead.)
    needs_epoch_bump: AtomicBool,
    /// The transaction manager, with `transactional.id`.
    txn: Option<txn::TransactionManager>,
}

impl Shared {
    /// Adopts a new producer id / epoch: every partition's sequence starts again at 0.
    fn set_producer_id(&self, id: (i64, i16)) {
        if let Ok(mut slot) = self.producer_id.lock() {
            *slot = Some(id);
        }
        if let Ok(mut acc) = self.accumulator.lock() {
            acc.reset_sequences();
        }
        tracing::debug!(producer_id = id.0, epoch = id.1, "producer id assigned");
        self.wake.notify_one();
    }

    /// Waits until every record sent so far has resolved; with `flush`, queued batches are
    /// sent at once instead of after `linger.ms`.
    async fn wait_resolved(&self, flush: bool) {
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

/// An asynchronous Kafka producer. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct Producer {
    shared: Arc<Shared>,
    /// An empty builder with the producer's codec, kept only to size records in `send` without
    /// allocating a builder per record.
    size_probe: BatchBuilder,
    sticky: StickyPartitioner,
    custom: Option<Arc<dyn Partitioner>>,
    sender: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Producer {
    /// Creates a producer; must be called inside a tokio runtime (the sender task runs on it).
    pub fn new(config: ClientConfig) -> Result<Producer> {
        let p = &config.producer;
        let txn = p
            .transactional_id
            .clone()
            .map(|id| txn::TransactionManager::new(id, p.transaction_timeout));
        let accumulator = Accumulator::new(
            p.batch_size,
            p.compression,
            p.compression_level,
            txn.is_some(),
        );
        let memory = Arc::new(Semaphore::new(p.buffer_memory.min(Semaphore::MAX_PERMITS)));
        let sticky = StickyPartitioner::new(p.batch_size);
        let size_probe = BatchBuilder::with_capacity(p.compression, 0);
        let shared = Arc::new(Shared {
            cluster: Cluster::new(config),
            accumulator: Arc::new(Mutex::new(accumulator)),
            memory,
            pending: AtomicUsize::new(0),
            wake: Notify::new(),
            drained: Notify::new(),
            flushing: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            producer_id: Mutex::new(None),
            needs_epoch_bump: AtomicBool::new(false),
            txn,
        });
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::config("runtime", "Producer::new must run inside a tokio runtime")
        })?;
        let sender = handle.spawn(sender::run(shared.clone()));
        Ok(Producer {
            shared,
            size_probe,
            sticky,
            custom: None,
            sender: Mutex::new(Some(sender)),
        })
    }

    /// Builds a producer from Kafka property names.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Producer> {
        Producer::new(ClientConfig::from_map(entries)?)
    }

    /// Replaces the default partitioner for records without an explicit partition.
    pub fn with_partitioner(mut self, partitioner: Arc<dyn Partitioner>) -> Self {
        self.custom = Some(partitioner);
        self
    }

    /// The cluster view (metadata, connections).
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.shared.cluster
    }

    /// Enqueues `record` and returns a future of its metadata. Waits only for what Kafka's
    /// `send()` waits for: the topic's metadata and room in `buffer.memory`, together bounded by
    /// `max.block.ms` (then `Timeout` or `QueueFull`).
    pub async fn send(&self, record: ProducerRecord) -> Result<DeliveryFuture> {
        let (tx, rx) = oneshot::channel();
        self.send_with(record, move || delivery::Completion::One(tx))
            .await?;
        Ok(DeliveryFuture::one(rx))
    }

    /// [`Producer::send`] whose outcome goes to `reports` under `token` instead of a future
    /// (nothing is reported when this returns an error).
    pub async fn send_reported(
        &self,
        record: ProducerRecord,
        reports: &Arc<ReportQueue>,
        token: u64,
    ) -> Result<()> {
        self.send_with(record, || {
            delivery::Completion::Report(delivery::ReportHandle::new(reports.clone(), token))
        })
        .await
    }

    /// `send` with the record's completion made by `completion`, called only once the record
    /// is being appended.
    async fn send_with(
        &self,
        record: ProducerRecord,
        completion: impl FnOnce() -> delivery::Completion,
    ) -> Result<()> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let config = &self.shared.cluster.config().producer;
        // The `max.block.ms` deadline, read from the clock only when something has to wait.
        let mut deadline: Option<Instant> = None;
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let size = self.check_size(&record)?;
        if let Some(txn) = &self.shared.txn {
            txn.check_send()?;
        }
        let partitions = match self.cached_partitions(&record.topic) {
            Some(n) => n,
            None => {
                let topic = self
                    .shared
                    .cluster
                    .topic(
                        &record.topic,
                        *deadline.get_or_insert_with(|| Instant::now() + config.max_block),
                    )
                    .await?;
                topic.partitions.len() as i32
            }
        };
        let partition = match record.partition {
            Some(p) if p < 0 || p >= partitions => {
                return Err(Error::Kafka(crate::ErrorCode::UnknownTopicOrPartition));
            }
            Some(p) => p,
            None => self.choose_partition(&record, partitions, size),
        };
        let permits = u32::try_from(size).unwrap_or(u32::MAX);
        // Fast path: room in buffer.memory now, so no timer and no clock read; otherwise wait
        // for room until the deadline.
        let memory = match self.shared.memory.clone().try_acquire_many_owned(permits) {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(Error::Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + config.max_block);
                let remaining = deadline.saturating_duration_since(Instant::now());
                match tokio::time::timeout(
                    remaining,
                    self.shared.memory.clone().acquire_many_owned(permits),
                )
                .await
                {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) => return Err(Error::Closed),
                    Err(_) => {
                        return Err(Error::QueueFull(format!(
                            "buffer.memory ({} bytes) stayed full for max.block.ms ({:?})",
                            config.buffer_memory, config.max_block
                        )))
                    }
                }
            }
        };
        let mut new_txn_partition = false;
        if let Some(txn) = &self.shared.txn {
            // Checked again: the transaction may have failed while this call waited.
            txn.check_send()?;
            new_txn_partition = txn.record_partition(&TopicPartition {
                topic: Arc::from(record.topic.as_str()),
                partition,
            });
        }
        let appended = {
            let mut acc = self.shared.accumulator.lock().map_err(|_| Error::Closed)?;
            acc.append(
                &record.topic,
                partition,
                timestamp,
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
                size - crate::records::RECORD_BATCH_OVERHEAD,
                memory,
                completion(),
            )?
        };
        self.shared.pending.fetch_add(1, Ordering::AcqRel);
        // The sender only needs waking when there is something new to schedule: a full batch,
        // or a new batch whose linger deadline it does not know yet.
        if appended.batch_full
            || appended.new_batch
            || new_txn_partition
            || config.linger == Duration::ZERO
        {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Appends records in order without waiting, for callers that send many at once: one clock
    /// read, one metadata lookup per topic and one accumulator lock per call (per chunk of
    /// records), and, with `track`, one shared completion for all of them instead of a channel
    /// per record. Stops before the first record that would have to wait (`consumed` says
    /// where); records refused at once are listed and skipped. Every appended record resolves
    /// exactly once, like a `send`; without `track` its outcome is only counted in `pending`.
    /// Fails as a whole (nothing appended) when the producer is closed or the transaction
    /// cannot take records.
    pub fn try_send_batch(&self, records: &[ProducerRecord], track: bool) -> Result<BatchAppend> {
        self.append_batch(
            records,
            if track {
                Tracking::Group
            } else {
                Tracking::None
            },
        )
    }

    /// [`Producer::try_send_batch`] whose appended records report to `reports`: record `i`
    /// under `tokens[i]`, or not at all when that is `None` (or missing). Refused records and
    /// records not consumed report nothing; `deliveries` of the result is empty.
    pub fn try_send_reported(
        &self,
        records: &[ProducerRecord],
        reports: &Arc<ReportQueue>,
        tokens: &[Option<u64>],
    ) -> Result<BatchAppend> {
        self.append_batch(records, Tracking::Report(reports, tokens))
    }

    fn append_batch(
        &self,
        records: &[ProducerRecord],
        tracking: Tracking<'_>,
    ) -> Result<BatchAppend> {
        /// Records appended under one accumulator lock, bounding how long the sender waits.
        const LOCK_CHUNK: usize = 1024;
        struct Prepared {
            index: usize,
            partition: i32,
            size: usize,
            memory: tokio::sync::OwnedSemaphorePermit,
        }
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(txn) = &self.shared.txn {
            txn.check_send()?;
        }
        let config = &self.shared.cluster.config().producer;
        let now = now_ms();
        let mut out = BatchAppend::default();
        let mut prepared: Vec<Prepared> = Vec::with_capacity(records.len());
        // The last topic's name and partition count: one metadata lookup per run of a topic.
        let mut known: Option<(&str, i32)> = None;
        let mut consumed = records.len();
        // Unkeyed records partitioned by the default sticky partitioner, when there are several
        // (a run takes the topic's state out of the map and puts it back: for one record a
        // plain lookup is cheaper).
        let sticky_default = records.len() > 1
            && self.custom.is_none()
            && config.partitioner == PartitionerKind::Default;
        let mut sticky: Option<(&str, partitioner::StickyRun<'_>)> = None;
        for (index, record) in records.iter().enumerate() {
            let size = match self.check_size(record) {
                Ok(s) => s,
                Err(e) => {
                    out.refused.push((index, e));
                    continue;
                }
            };
            let partitions = match known {
                Some((t, n)) if t == record.topic => n,
                _ => match self.cached_partitions(&record.topic) {
                    Some(n) => {
                        known = Some((&record.topic, n));
                        n
                    }
                    None => {
                        consumed = index;
                        break;
                    }
                },
            };
            let partition = match record.partition {
                Some(p) if p < 0 || p >= partitions => {
                    out.refused.push((
                        index,
                        Error::Kafka(crate::ErrorCode::UnknownTopicOrPartition),
                    ));
                    continue;
                }
                Some(p) => p,
                None if sticky_default
                    && (record.key.is_none() || config.partitioner_ignore_keys) =>
                {
                    // The sticky state is looked up once per run of a topic (and the
                    // partitioner stays locked meanwhile: `choose_partition` is not called
                    // for such records while the run lives).
                    if sticky.as_ref().is_none_or(|(t, _)| *t != record.topic) {
                        // The old run unlocks the partitioner before the new one locks it.
                        drop(sticky);
                        sticky = Some((&record.topic, self.sticky.run(&record.topic, partitions)));
                    }
                    match sticky.as_mut() {
                        Some((_, run)) => run.next(size),
                        None => self.choose_partition(record, partitions, size),
                    }
                }
                None => self.choose_partition(record, partitions, size),
            };
            let permits = u32::try_from(size).unwrap_or(u32::MAX);
            let memory = match self.shared.memory.clone().try_acquire_many_owned(permits) {
                Ok(p) => p,
                Err(tokio::sync::TryAcquireError::Closed) => {
                    out.refused.push((index, Error::Closed));
                    continue;
                }
                Err(tokio::sync::TryAcquireError::NoPermits) => {
                    consumed = index;
                    break;
                }
            };
            prepared.push(Prepared {
                index,
                partition,
                size,
                memory,
            });
        }
        drop(sticky);
        out.consumed = consumed;
        let group = (matches!(tracking, Tracking::Group) && !prepared.is_empty())
            .then(|| delivery::Group::new(consumed, prepared.iter().map(|p| p.index)));
        let mut new_txn_partition = false;
        if let Some(txn) = &self.shared.txn {
            let mut last: Option<(&str, i32)> = None;
            for p in &prepared {
                let topic = records[p.index].topic.as_str();
                if last != Some((topic, p.partition)) {
                    last = Some((topic, p.partition));
                    new_txn_partition |= txn.record_partition(&TopicPartition {
                        topic: Arc::from(topic),
                        partition: p.partition,
                    });
                }
            }
        }
        let mut appended_count = 0;
        let mut wake = new_txn_partition || config.linger == Duration::ZERO;
        let mut prepared = prepared.into_iter().peekable();
        while prepared.peek().is_some() {
            let mut acc = self.shared.accumulator.lock().map_err(|_| Error::Closed)?;
            // The partition's queue, looked up once per run of records for it.
            let mut run: Option<((&str, i32), accumulator::QueueRun<'_>)> = None;
            let mut chunk_appended = 0;
            for p in prepared.by_ref().take(LOCK_CHUNK) {
                let record = &records[p.index];
                let completion = match (&group, &tracking) {
                    (Some(g), _) => g.handle(p.index),
                    (None, Tracking::Report(q, tokens)) => match tokens.get(p.index) {
                        Some(Some(token)) => delivery::Completion::Report(
                            delivery::ReportHandle::new((*q).clone(), *token),
                        ),
                        _ => delivery::Completion::None,
                    },
                    (None, _) => delivery::Completion::None,
                };
                let key = (record.topic.as_str(), p.partition);
                if run.as_ref().is_none_or(|(k, _)| *k != key) {
                    drop(run);
                    run = Some((key, acc.run(key.0, key.1)));
                }
                let Some((_, queue)) = run.as_mut() else {
                    out.refused.push((p.index, Error::Closed));
                    continue;
                };
                match queue.append(
                    record.timestamp.unwrap_or(now),
                    record.key.as_deref(),
                    record.value.as_deref(),
                    &record.headers,
                    p.size - crate::records::RECORD_BATCH_OVERHEAD,
                    p.memory,
                    completion,
                ) {
                    Ok(a) => {
                        chunk_appended += 1;
                        wake |= a.batch_full || a.new_batch;
                    }
                    Err(e) => out.refused.push((p.index, e)),
                }
            }
            // Counted while the accumulator is still locked: the sender cannot settle these
            // records before they are pending.
            drop(run);
            self.shared
                .pending
                .fetch_add(chunk_appended, Ordering::AcqRel);
            appended_count += chunk_appended;
        }
        out.refused.sort_by_key(|(i, _)| *i);
        out.deliveries = DeliveryBatch::new(group);
        if appended_count > 0 && wake {
            self.shared.wake.notify_one();
        }
        Ok(out)
    }

    /// Sends `records` in order and returns each one's outcome, by index: its delivery future,
    /// or why it was refused. Like calling [`Producer::send`] for each (the same waits, bounded
    /// by `max.block.ms` per record), with the costs of [`Producer::try_send_batch`].
    pub async fn send_batch(
        &self,
        mut records: Vec<ProducerRecord>,
    ) -> Vec<Result<DeliveryFuture>> {
        let mut out: Vec<Result<DeliveryFuture>> = Vec::with_capacity(records.len());
        while out.len() < records.len() {
            let start = out.len();
            let batch = match self.try_send_batch(&records[start..], true) {
                Ok(b) => b,
                Err(e) => {
                    let n = records.len() - start;
                    out.extend((0..n).map(|_| Err(accumulator::clone_error(&e))));
                    break;
                }
            };
            let mut refused = batch.refused.into_iter().peekable();
            for i in 0..batch.consumed {
                match refused.next_if(|(j, _)| *j == i) {
                    Some((_, e)) => out.push(Err(e)),
                    None => out.push(batch.deliveries.delivery(i).ok_or(Error::Closed)),
                }
            }
            if let Some(record) = records.get_mut(out.len()) {
                // This record would wait: `send` waits for it (bounded by max.block.ms).
                let record = std::mem::take(record);
                out.push(self.send(record).await);
            }
        }
        out
    }

    /// The record's size in a batch of its own, checked against `max.request.size` and
    /// `buffer.memory` (`RecordTooLarge`): what `send` refuses before it waits for anything, for
    /// callers that queue records before sending them.
    pub fn check_size(&self, record: &ProducerRecord) -> Result<usize> {
        let config = &self.shared.cluster.config().producer;
        let size = self.size_probe.record_size(
            0,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        ) + crate::records::RECORD_BATCH_OVERHEAD;
        if size > config.max_request_size {
            return Err(Error::RecordTooLarge {
                size,
                limit_name: "max.request.size",
                limit: config.max_request_size,
            });
        }
        if size > config.buffer_memory {
            return Err(Error::RecordTooLarge {
                size,
                limit_name: "buffer.memory",
                limit: config.buffer_memory,
            });
        }
        Ok(size)
    }

    /// The topic's partition count from the metadata cache when it knows the topic and is
    /// younger than `metadata.max.age.ms`. A cache marked stale by an error is still used, as
    /// the Java client and librdkafka do: the sender refreshes it, and `send` need not wait.
    fn cached_partitions(&self, topic: &str) -> Option<i32> {
        let meta = self.shared.cluster.metadata();
        if meta.age() >= self.shared.cluster.config().metadata_max_age {
            return None;
        }
        meta.topics
            .get(topic)
            .filter(|t| t.error.is_ok() && !t.partitions.is_empty())
            .map(|t| t.partitions.len() as i32)
    }

    fn choose_partition(&self, record: &ProducerRecord, partitions: i32, size: usize) -> i32 {
        if let Some(custom) = &self.custom {
            return custom
                .partition(&record.topic, record.key.as_deref(), partitions)
                .clamp(0, partitions - 1);
        }
        let config = &self.shared.cluster.config().producer;
        let key = record
            .key
            .as_deref()
            .filter(|_| !config.partitioner_ignore_keys);
        let n = partitions.max(1);
        let hashed = |h: u32| (h % n as u32) as i32;
        match (config.partitioner, key) {
            (PartitionerKind::RoundRobin, _) => self.sticky.round_robin(&record.topic, partitions),
            (PartitionerKind::Default, Some(key)) => partition_for_key(key, partitions),
            (PartitionerKind::Murmur2, key) => {
                partition_for_key(key.unwrap_or_default(), partitions)
            }
            (PartitionerKind::Consistent, key) => {
                hashed(partitioner::crc32(key.unwrap_or_default()))
            }
            (PartitionerKind::ConsistentRandom, Some(key)) if !key.is_empty() => {
                hashed(partitioner::crc32(key))
            }
            (PartitionerKind::Fnv1a, key) => {
                hashed(partitioner::fnv1a_partition_hash(key.unwrap_or_default()))
            }
            (PartitionerKind::Fnv1aRandom, Some(key)) => {
                hashed(partitioner::fnv1a_partition_hash(key))
            }
            (PartitionerKind::Random, Some(_)) => self.sticky.random(partitions),
            (
                PartitionerKind::Default
                | PartitionerKind::ConsistentRandom
                | PartitionerKind::Fnv1aRandom
                | PartitionerKind::Random,
                _,
            ) => self.sticky.sticky(&record.topic, partitions, size),
        }
    }

    /// Sends everything queued now, without waiting for `linger.ms`, and waits until every
    /// record sent so far has resolved.
    pub async fn flush(&self) {
        self.shared.wait_resolved(true).await;
    }

    /// Records sent whose futures have not resolved yet.
    pub fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }

    /// Flushes, stops the sender and closes connections. Later sends fail with `Closed`.
    /// A transaction still open is aborted first (as the Java client does).
    pub async fn close(&self) {
        if self.transaction_state() == Some(TransactionState::InTransaction) {
            let timeout = self.shared.cluster.config().request_timeout;
            if let Err(e) = self.abort_transaction(timeout).await {
                tracing::debug!(error = %e, "aborting the open transaction on close failed");
            }
        }
        self.shared.closing.store(true, Ordering::Release);
        self.flush().await;
        self.shared.wake.notify_one();
        let handle = self.sender.lock().ok().and_then(|mut s| s.take());
        if let Some(h) = handle {
            let _ = h.await;
        }
        self.shared.cluster.close();
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> ProducerStats {
        let mut partitions = Vec::new();
        if let Ok(acc) = self.shared.accumulator.lock() {
            for (tp, q) in &acc.queues {
                partitions.push(PartitionStats {
                    partition: tp.clone(),
                    queued_records: q.batches.iter().map(|b| b.record_count()).sum(),
                    batches_sent: q.batches_sent,
                    retries: q.retries,
                    in_flight: q.in_flight,
                });
            }
        }
        partitions.sort_by(|a, b| {
            (&a.partition.topic, a.partition.partition)
                .cmp(&(&b.partition.topic, b.partition.partition))
        });
        ProducerStats {
            pending_records: self.pending(),
            partitions,
            brokers: self.shared.cluster.broker_stats(),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}
