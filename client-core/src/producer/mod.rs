//! The producer: `send()` enqueues a record and returns a future of its metadata.
//!
//! Flow: every entry point (`send`, the batch calls, the bindings' `produce`) runs one
//! admission step per record (`admission`: size check → partition count from the metadata
//! cache → room in `buffer.memory` → partition choice → transaction registration → append to
//! the partition's open batch). A record that cannot be appended yet is held inside the producer
//! (`held`: no metadata for its topic, or no room, as the caller's [`HoldPolicy`] allows) or
//! handed back to a caller that waits (`send`, bounded by `max.block.ms`). The sender task moves
//! held records into batches as their metadata and room arrive, takes ready batches (full,
//! lingered for `linger.ms`, or flushed) per leader from the accumulator and sends one
//! ProduceRequest per broker; each response completes, retries or fails its records
//! (`settle`). Every record resolves exactly once, with metadata or a typed error, by
//! `delivery.timeout.ms` at the latest.

mod accumulator;
mod admission;
mod batch;
mod delivery;
mod held;
mod partitioner;
mod record;
mod sender;
mod settle;
mod shared;
mod stats;
mod txn;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::oneshot;

pub use crate::cluster::BrokerStats;
pub use crate::types::{GroupMetadata, TopicPartition};
pub use admission::BatchAppend;
pub use delivery::{DeliveryBatch, DeliveryFuture, Report, ReportQueue};
pub use partitioner::{murmur2, partition_for_key, Partitioner, StickyPartitioner};
pub use record::{HoldPolicy, ProducerRecord, RecordMetadata};
pub use stats::{PartitionStats, ProducerDetail, ProducerStats, TopicWindows};
pub use txn::TransactionState;

use admission::{Blocked, Tracking};
use shared::Shared;

use crate::cluster::Cluster;
use crate::config::ClientConfig;
use crate::{Error, Result};

/// An asynchronous Kafka producer. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct Producer {
    shared: Arc<Shared>,
    sender: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Producer {
    /// Creates a producer; must be called inside a tokio runtime (the sender task runs on it).
    pub fn new(config: ClientConfig) -> Result<Producer> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::config("runtime", "Producer::new must run inside a tokio runtime")
        })?;
        let shared = Arc::new(Shared::new(config));
        let sender = handle.spawn(sender::run(shared.clone()));
        Ok(Producer {
            shared,
            sender: Mutex::new(Some(sender)),
        })
    }

    /// Builds a producer from Kafka property names.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Producer> {
        Producer::new(ClientConfig::from_map(entries)?)
    }

    /// Replaces the configured partitioner for records without an explicit partition.
    pub fn with_partitioner(self, partitioner: Arc<dyn Partitioner>) -> Self {
        self.shared.chooser.set_custom(partitioner);
        self
    }

    /// The cluster view (metadata, connections).
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.shared.cluster
    }

    /// Enqueues `record` and returns a future of its metadata. Waits only for what Kafka's
    /// `send()` waits for: the topic's metadata and room in `buffer.memory`, together bounded by
    /// `max.block.ms` (then `Timeout` or `QueueFull`). A record of a topic whose earlier records
    /// the producer holds (see [`HoldPolicy`]) is held behind them instead of waiting.
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
    /// is appended or held: the admission step, waiting (up to `max.block.ms` in all) for what
    /// it stopped at.
    async fn send_with(
        &self,
        record: ProducerRecord,
        completion: impl FnOnce() -> delivery::Completion,
    ) -> Result<()> {
        let config = &self.shared.cluster.config().producer;
        // The `max.block.ms` deadline, read from the clock only when something has to wait.
        let mut deadline: Option<Instant> = None;
        let mut memory = None;
        let mut completion = Some(completion);
        loop {
            let make = || {
                completion
                    .take()
                    .map_or(delivery::Completion::None, |c| c())
            };
            let blocked =
                admission::admit_one(&self.shared, &record, memory.take(), HoldPolicy::NONE, make)?;
            let Some(blocked) = blocked else {
                return Ok(());
            };
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + config.max_block);
            match blocked {
                Blocked::Metadata => {
                    self.shared.cluster.topic(&record.topic, deadline).await?;
                }
                Blocked::Memory => {
                    let size = admission::check_size(&self.shared, &record)?;
                    let permits = u32::try_from(size).unwrap_or(u32::MAX);
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    let acquire = self.shared.memory.clone().acquire_many_owned(permits);
                    match tokio::time::timeout(remaining, acquire).await {
                        Ok(Ok(p)) => memory = Some(p),
                        Ok(Err(_)) => return Err(Error::Closed),
                        Err(_) => {
                            return Err(Error::QueueFull(format!(
                                "buffer.memory ({} bytes) stayed full for max.block.ms ({:?})",
                                config.buffer_memory, config.max_block
                            )))
                        }
                    }
                }
            }
        }
    }

    /// Appends records in order without waiting, for callers that send many at once: one clock
    /// read, one metadata lookup per topic and one accumulator lock per call (per chunk of
    /// records), and, with `track`, one shared completion for all of them instead of a channel
    /// per record. Records whose topic has no metadata yet are held ([`HoldPolicy::METADATA`]);
    /// the call stops before the first record for which `buffer.memory` has no room
    /// (`consumed` says where); records refused at once are listed and skipped. Every appended
    /// or held record resolves exactly once, like a `send`; without `track` its outcome is only
    /// counted in `pending`. Fails as a whole (nothing appended) when the producer is closed or
    /// the transaction cannot take records.
    pub fn try_send_batch(&self, records: &[ProducerRecord], track: bool) -> Result<BatchAppend> {
        self.try_send_batch_with(records, track, HoldPolicy::METADATA)
    }

    /// [`Producer::try_send_batch`] with an explicit [`HoldPolicy`].
    pub fn try_send_batch_with(
        &self,
        records: &[ProducerRecord],
        track: bool,
        hold: HoldPolicy,
    ) -> Result<BatchAppend> {
        let tracking = if track {
            Tracking::Group
        } else {
            Tracking::None
        };
        admission::admit_batch(&self.shared, records, tracking, hold)
    }

    /// [`Producer::try_send_batch`] whose appended and held records report to `reports`: record
    /// `i` under `tokens[i]`, or not at all when that is `None` (or missing). Refused records and
    /// records not consumed report nothing; `deliveries` of the result is empty.
    pub fn try_send_reported(
        &self,
        records: &[ProducerRecord],
        reports: &Arc<ReportQueue>,
        tokens: &[Option<u64>],
    ) -> Result<BatchAppend> {
        self.try_send_reported_with(records, reports, tokens, HoldPolicy::METADATA)
    }

    /// [`Producer::try_send_reported`] with an explicit [`HoldPolicy`].
    pub fn try_send_reported_with(
        &self,
        records: &[ProducerRecord],
        reports: &Arc<ReportQueue>,
        tokens: &[Option<u64>],
        hold: HoldPolicy,
    ) -> Result<BatchAppend> {
        admission::admit_batch(
            &self.shared,
            records,
            Tracking::Report(reports, tokens),
            hold,
        )
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
            let batch = match admission::admit_batch(
                &self.shared,
                &records[start..],
                Tracking::Group,
                HoldPolicy::NONE,
            ) {
                Ok(b) => b,
                Err(e) => {
                    let n = records.len() - start;
                    out.extend((0..n).map(|_| Err(e.duplicate())));
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
        admission::check_size(&self.shared, record)
    }

    /// Sends everything queued now, without waiting for `linger.ms`, and waits until every
    /// record sent so far has resolved.
    pub async fn flush(&self) {
        self.shared.wait_resolved(true).await;
    }

    /// Records sent whose futures have not resolved yet (held records included).
    pub fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }

    /// Records held until their topic's metadata or room in `buffer.memory` arrives.
    pub fn held(&self) -> usize {
        self.shared.held.len()
    }

    /// Fails every record that was never handed to the network — held records and batches
    /// not yet sent — with [`Error::Purged`] (librdkafka's `purge(PURGE_F_QUEUE)`). Batches in
    /// flight, and retries whose sequence numbers the broker has seen, are left alone. Returns
    /// how many records were purged.
    pub fn purge_queued(&self) -> usize {
        let held = self.shared.held.lock().take_all();
        let mut purged = held.len();
        for record in held {
            self.shared.held.popped();
            settle::fail_held(&self.shared, record, Error::Purged);
        }
        let batches = self
            .shared
            .accumulator
            .lock()
            .map(|mut acc| acc.take_never_sent())
            .unwrap_or_default();
        for batch in batches {
            purged += batch.record_count();
            settle::fail_unsent(&self.shared, batch, &Error::Purged);
        }
        self.shared.wake.notify_one();
        purged
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
        let mut partitions = self
            .shared
            .accumulator
            .lock()
            .map(|acc| acc.stats())
            .unwrap_or_default();
        let metadata = self.shared.cluster.metadata();
        for p in &mut partitions {
            p.leader = metadata
                .leader(&p.partition.topic, p.partition.partition)
                .unwrap_or(-1);
        }
        ProducerStats {
            pending_records: self.pending(),
            held_records: self.held(),
            partitions,
            brokers: self.shared.cluster.broker_stats(),
        }
    }

    /// A snapshot with everything librdkafka's statistics report: [`Producer::stats`], the
    /// batch-size and queue-latency windows, the idempotence and transaction state, and the
    /// brokers' windows. Starts new windows, so it is for the statistics emitter alone.
    pub fn detailed_stats(&self) -> ProducerDetail {
        let basic = self.stats();
        let (topics, queue_latency) = self
            .shared
            .accumulator
            .lock()
            .map(|acc| {
                let w = acc.windows();
                let mut topics: Vec<TopicWindows> = w
                    .per_topic
                    .iter()
                    .map(|(topic, (bytes, records))| TopicWindows {
                        topic: topic.clone(),
                        batch_bytes: bytes.take(),
                        batch_records: records.take(),
                    })
                    .collect();
                topics.sort_by(|a, b| a.topic.cmp(&b.topic));
                let latency = w
                    .queue_latency
                    .iter()
                    .map(|(id, l)| (*id, l.take()))
                    .collect();
                (topics, latency)
            })
            .unwrap_or_default();
        let metadata = self.shared.cluster.metadata();
        let buffer_memory = self.shared.cluster.config().producer.buffer_memory;
        let free = self.shared.memory.available_permits();
        let (producer_id_assignments, producer_id_since) = self
            .shared
            .producer_id_history
            .lock()
            .map(|h| *h)
            .unwrap_or_default();
        ProducerDetail {
            basic,
            buffered_bytes: buffer_memory.saturating_sub(free) as u64,
            buffer_memory: buffer_memory as u64,
            topics,
            queue_latency,
            producer_id: self.shared.producer_id.lock().ok().and_then(|p| *p),
            producer_id_assignments,
            producer_id_since,
            transaction_state: self.shared.txn.as_ref().map(|t| t.state()),
            brokers: self.shared.cluster.broker_snapshots(),
            metadata_topics: metadata.topics.len(),
            metadata_age_ms: metadata.age().as_millis() as u64,
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}
