//! The one way a record enters the producer.
//!
//! Every entry point — [`crate::Producer::send`], the batch calls, the bindings' `produce` —
//! runs the same step for each record: size check against `max.request.size` and
//! `buffer.memory` → the topic's partition count from the metadata cache → room in
//! `buffer.memory` → partition choice → registration with the open transaction → append to the
//! partition's open batch → wake the sender when it has something new to schedule.
//!
//! A record whose topic has no metadata yet is *held* (with its room in `buffer.memory`) when
//! the caller's [`HoldPolicy`] says so, and *stopped* at otherwise; a record for which
//! `buffer.memory` has no room is always stopped at. Held records live in [`super::held`] until
//! [`pump`] (run by the sender task) moves them into batches, in order, or fails them at their
//! deadline; a stopped record is handed back to the caller, which waits (`send`, bounded by
//! `max.block.ms`) or refuses it (`QUEUE_FULL`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, TryAcquireError};

use super::delivery::{self, Completion, DeliveryBatch, ReportQueue};
use super::held::{HeldQueues, HeldRecord};
use super::partitioner::StickyRun;
use super::record::{HoldPolicy, ProducerRecord};
use super::settle::fail_held;
use super::shared::Shared;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

/// What a non-waiting send did with the records it was given.
#[derive(Debug, Default)]
pub struct BatchAppend {
    /// Records handled from the front of the slice: appended, held or refused. The rest were
    /// not looked at: the first of them would have had to wait (for room in `buffer.memory`, or
    /// for the topic's metadata when the [`HoldPolicy`] said not to hold it).
    pub consumed: usize,
    /// Of `consumed`, records held until their topic's metadata arrives (see [`HoldPolicy`]).
    pub held: usize,
    /// Records refused, by index, in ascending order (too large, unknown partition, ...).
    pub refused: Vec<(usize, Error)>,
    /// The appended and held records' deliveries, by index (untracked unless asked for).
    pub deliveries: DeliveryBatch,
}

/// How the records of one call report their outcomes.
pub(crate) enum Tracking<'a> {
    /// Counted in `pending` only.
    None,
    /// One shared completion ([`DeliveryBatch`]).
    Group,
    /// Reports to a queue, by token per record index.
    Report(&'a Arc<ReportQueue>, &'a [Option<u64>]),
}

/// What a record is waiting for when it can be neither appended nor held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// Its topic's metadata.
    Metadata,
    /// Room in `buffer.memory`.
    Memory,
}

/// The admission step's decision for one record.
enum Verdict {
    /// Append to `partition` now.
    Append {
        partition: i32,
        memory: OwnedSemaphorePermit,
    },
    /// Hold, with its room in `buffer.memory`.
    Hold { memory: OwnedSemaphorePermit },
    /// Refused at once.
    Refuse(Error),
    /// Stop here: the caller waits for this, or refuses the record.
    Stop(Blocked),
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The record's size in a batch of its own, checked against `max.request.size` and
/// `buffer.memory` (`RecordTooLarge`).
pub(crate) fn check_size(shared: &Shared, record: &ProducerRecord) -> Result<usize> {
    let config = &shared.cluster.config().producer;
    let size = shared.size_probe.record_size(
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

/// The topic's partition count from the metadata cache, if it knows the topic with partitions.
/// A cache marked stale, or older than `metadata.max.age.ms`, is still used, as the Java client
/// and librdkafka do: the sender refreshes it, and nobody need wait.
pub(crate) fn cached_partitions(shared: &Shared, topic: &str) -> Option<i32> {
    shared
        .cluster
        .metadata()
        .topics
        .get(topic)
        .filter(|t| t.error.is_ok() && !t.partitions.is_empty())
        .map(|t| t.partitions.len() as i32)
}

/// When a record held now fails if it is still held.
fn hold_deadline(shared: &Shared, now: Instant) -> Instant {
    let p = &shared.cluster.config().producer;
    now + p.max_block.min(p.delivery_timeout)
}

fn try_memory(shared: &Shared, size: usize) -> std::result::Result<OwnedSemaphorePermit, Verdict> {
    let permits = u32::try_from(size).unwrap_or(u32::MAX);
    match shared.memory.clone().try_acquire_many_owned(permits) {
        Ok(p) => Ok(p),
        Err(TryAcquireError::Closed) => Err(Verdict::Refuse(Error::Closed)),
        Err(TryAcquireError::NoPermits) => Err(Verdict::Stop(Blocked::Memory)),
    }
}

/// Per-call state of the admission step: caches that make a run of records cost one lookup.
struct Classifier<'s> {
    shared: &'s Shared,
    hold: HoldPolicy,
    /// The last topic's name and partition count.
    known: Option<(&'s str, i32)>,
    /// Topics that got a `Hold` verdict in this call (their later records are held too).
    held_here: Vec<&'s str>,
    /// Sticky partitioning state of the current topic run, when runs apply.
    sticky: Option<(&'s str, StickyRun<'s>)>,
    sticky_runs: bool,
}

impl<'s> Classifier<'s> {
    fn new(shared: &'s Shared, hold: HoldPolicy, batch: bool) -> Self {
        Classifier {
            shared,
            hold,
            known: None,
            held_here: Vec::new(),
            sticky: None,
            sticky_runs: batch && shared.chooser.sticky_runs(),
        }
    }

    /// A record that must be held: it takes its room in `buffer.memory` now, or stops.
    fn hold(&self, size: usize, memory: Option<OwnedSemaphorePermit>) -> Verdict {
        match memory.map_or_else(|| try_memory(self.shared, size), Ok) {
            Ok(memory) => Verdict::Hold { memory },
            Err(v) => v,
        }
    }

    /// Decides what happens to `record` (of `size` bytes), using `memory` if the caller already
    /// acquired its room.
    fn classify(
        &mut self,
        record: &'s ProducerRecord,
        size: usize,
        memory: Option<OwnedSemaphorePermit>,
    ) -> Verdict {
        let topic = record.topic.as_str();
        let held_before = self.held_here.contains(&topic)
            || (!self.shared.held.is_empty() && self.shared.held.lock().holds(topic));
        if held_before {
            return self.hold(size, memory);
        }
        let partitions = match self.known {
            Some((t, n)) if t == topic => n,
            _ => match cached_partitions(self.shared, topic) {
                Some(n) => {
                    self.known = Some((topic, n));
                    n
                }
                None if self.hold.metadata => return self.hold(size, memory),
                None => return Verdict::Stop(Blocked::Metadata),
            },
        };
        if let Some(p) = record.partition {
            if p < 0 || p >= partitions {
                return Verdict::Refuse(Error::Kafka(ErrorCode::UnknownTopicOrPartition));
            }
        }
        let memory = match memory.map_or_else(|| try_memory(self.shared, size), Ok) {
            Ok(m) => m,
            Err(v) => return v,
        };
        let partition = match record.partition {
            Some(p) => p,
            None if self.sticky_runs && self.shared.chooser.is_sticky(record.key.as_deref()) => {
                // The sticky state is looked up once per run of a topic (and stays locked
                // meanwhile: `choose` is not called for such records while the run lives).
                if self.sticky.as_ref().is_none_or(|(t, _)| *t != topic) {
                    // The old run unlocks the partitioner before the new one locks it.
                    self.sticky = None;
                    self.sticky = Some((topic, self.shared.chooser.run(topic, partitions)));
                }
                match self.sticky.as_mut() {
                    Some((_, run)) => run.next(size),
                    None => self.choose(record, partitions, size),
                }
            }
            None => self.choose(record, partitions, size),
        };
        Verdict::Append { partition, memory }
    }

    fn choose(&self, record: &ProducerRecord, partitions: i32, size: usize) -> i32 {
        self.shared
            .chooser
            .choose(&record.topic, record.key.as_deref(), partitions, size)
    }
}

/// Registers `tp` with the open transaction; true if AddPartitionsToTxn must run for it.
fn register_txn_partition(shared: &Shared, topic: &str, partition: i32) -> bool {
    shared.txn.as_ref().is_some_and(|txn| {
        txn.record_partition(&TopicPartition {
            topic: Arc::from(topic),
            partition,
        })
    })
}

fn check_open(shared: &Shared) -> Result<()> {
    if shared.closing.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    if let Some(txn) = &shared.txn {
        txn.check_send()?;
    }
    Ok(())
}

/// Holds `record` (cloned out of the caller's slice) in its topic's queue.
fn push_held(
    shared: &Shared,
    queues: &mut HeldQueues,
    record: ProducerRecord,
    size: usize,
    memory: OwnedSemaphorePermit,
    completion: Completion,
    now: (i64, Instant),
) {
    let timestamp = record.timestamp.unwrap_or(now.0);
    let topic = record.topic.clone();
    let held = HeldRecord {
        record,
        timestamp,
        size,
        memory,
        completion,
        deadline: hold_deadline(shared, now.1),
    };
    shared.held.push(queues, &topic, held);
}

/// Admits one record with its completion made by `completion` (called only when the record is
/// appended or held). `Ok(None)`: it was appended or held. `Ok(Some(blocked))`: the caller
/// must wait for `blocked` and call again (with the room it acquired, for `Memory`); the
/// record is untouched.
pub(crate) fn admit_one(
    shared: &Shared,
    record: &ProducerRecord,
    memory: Option<OwnedSemaphorePermit>,
    hold: HoldPolicy,
    completion: impl FnOnce() -> Completion,
) -> Result<Option<Blocked>> {
    check_open(shared)?;
    let size = check_size(shared, record)?;
    let mut classifier = Classifier::new(shared, hold, false);
    match classifier.classify(record, size, memory) {
        Verdict::Refuse(e) => Err(e),
        Verdict::Stop(blocked) => Ok(Some(blocked)),
        Verdict::Hold { memory } => {
            drop(classifier);
            let mut queues = shared.held.lock();
            shared.pending.fetch_add(1, Ordering::AcqRel);
            push_held(
                shared,
                &mut queues,
                record.clone(),
                size,
                memory,
                completion(),
                (now_ms(), Instant::now()),
            );
            drop(queues);
            shared.wake.notify_one();
            Ok(None)
        }
        Verdict::Append { partition, memory } => {
            drop(classifier);
            // Checked again: the transaction may have failed while the caller waited.
            if let Some(txn) = &shared.txn {
                txn.check_send()?;
            }
            let new_txn_partition = register_txn_partition(shared, &record.topic, partition);
            let appended = {
                let mut acc = shared.accumulator.lock().map_err(|_| Error::Closed)?;
                let appended = acc
                    .append(
                        &record.topic,
                        partition,
                        record.timestamp.unwrap_or_else(now_ms),
                        record.key.as_deref(),
                        record.value.as_deref(),
                        &record.headers,
                        size - crate::records::RECORD_BATCH_OVERHEAD,
                        memory,
                        completion(),
                    )
                    .map_err(|(e, _)| e)?;
                // Counted while the accumulator is still locked: the sender cannot settle the
                // record before it is pending.
                shared.pending.fetch_add(1, Ordering::AcqRel);
                appended
            };
            // The sender only needs waking when there is something new to schedule: a full
            // batch, or a new batch whose linger deadline it does not know yet.
            if appended.batch_full
                || appended.new_batch
                || new_txn_partition
                || shared.cluster.config().producer.linger == Duration::ZERO
            {
                shared.wake.notify_one();
            }
            Ok(None)
        }
    }
}

/// A record of a batch call after classification.
struct Prepared {
    index: usize,
    size: usize,
    verdict: Verdict,
}

/// Admits records in order: one clock read, one metadata lookup per topic run and one
/// accumulator lock per chunk of records, and, with [`Tracking::Group`], one shared completion
/// for all of them. Stops before the first record that would wait and the `hold` policy does
/// not hold (`consumed` says where); records refused at once are listed and skipped. Fails as a
/// whole (nothing admitted) when the producer is closed or the transaction cannot take records.
pub(crate) fn admit_batch(
    shared: &Shared,
    records: &[ProducerRecord],
    tracking: Tracking<'_>,
    hold: HoldPolicy,
) -> Result<BatchAppend> {
    /// Records appended under one accumulator lock, bounding how long the sender waits.
    const LOCK_CHUNK: usize = 1024;
    check_open(shared)?;
    let config = &shared.cluster.config().producer;
    let now = now_ms();
    let mut out = BatchAppend::default();
    let mut prepared: Vec<Prepared> = Vec::with_capacity(records.len());
    let mut consumed = records.len();
    {
        let mut classifier = Classifier::new(shared, hold, records.len() > 1);
        for (index, record) in records.iter().enumerate() {
            let size = match check_size(shared, record) {
                Ok(s) => s,
                Err(e) => {
                    out.refused.push((index, e));
                    continue;
                }
            };
            match classifier.classify(record, size, None) {
                Verdict::Refuse(e) => out.refused.push((index, e)),
                Verdict::Stop(_) => {
                    consumed = index;
                    break;
                }
                verdict => {
                    if matches!(verdict, Verdict::Hold { .. })
                        && !classifier.held_here.contains(&record.topic.as_str())
                    {
                        classifier.held_here.push(record.topic.as_str());
                    }
                    prepared.push(Prepared {
                        index,
                        size,
                        verdict,
                    });
                }
            }
        }
    }
    out.consumed = consumed;
    let group = (matches!(tracking, Tracking::Group) && !prepared.is_empty())
        .then(|| delivery::Group::new(consumed, prepared.iter().map(|p| p.index)));
    let completion_of = |index: usize| match (&group, &tracking) {
        (Some(g), _) => g.handle(index),
        (None, Tracking::Report(q, tokens)) => match tokens.get(index) {
            Some(Some(token)) => {
                Completion::Report(delivery::ReportHandle::new((*q).clone(), *token))
            }
            _ => Completion::None,
        },
        (None, _) => Completion::None,
    };
    let mut wake = config.linger == Duration::ZERO;
    if shared.txn.is_some() {
        let mut last: Option<(&str, i32)> = None;
        for p in &prepared {
            if let Verdict::Append { partition, .. } = p.verdict {
                let topic = records[p.index].topic.as_str();
                if last != Some((topic, partition)) {
                    last = Some((topic, partition));
                    wake |= register_txn_partition(shared, topic, partition);
                }
            }
        }
    }
    let mut held: Vec<Prepared> = Vec::new();
    let mut prepared = prepared.into_iter().peekable();
    while prepared.peek().is_some() {
        let mut acc = shared.accumulator.lock().map_err(|_| Error::Closed)?;
        // The partition's queue, looked up once per run of records for it.
        let mut run: Option<((&str, i32), super::accumulator::QueueRun<'_>)> = None;
        let mut chunk_appended = 0;
        for p in prepared.by_ref().take(LOCK_CHUNK) {
            let Verdict::Append { partition, .. } = p.verdict else {
                held.push(p);
                continue;
            };
            let Verdict::Append { memory, .. } = p.verdict else {
                continue;
            };
            let record = &records[p.index];
            let key = (record.topic.as_str(), partition);
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
                memory,
                completion_of(p.index),
            ) {
                Ok(a) => {
                    chunk_appended += 1;
                    wake |= a.batch_full || a.new_batch;
                }
                // The completion is dropped: a tracked record reports `Closed` (the caller
                // learns the real error from `refused`).
                Err((e, _)) => out.refused.push((p.index, e)),
            }
        }
        // Counted while the accumulator is still locked: the sender cannot settle these
        // records before they are pending.
        drop(run);
        shared.pending.fetch_add(chunk_appended, Ordering::AcqRel);
    }
    if !held.is_empty() {
        let mut queues = shared.held.lock();
        let clock = (now, Instant::now());
        shared.pending.fetch_add(held.len(), Ordering::AcqRel);
        out.held = held.len();
        for p in held {
            let Verdict::Hold { memory } = p.verdict else {
                continue;
            };
            push_held(
                shared,
                &mut queues,
                records[p.index].clone(),
                p.size,
                memory,
                completion_of(p.index),
                clock,
            );
        }
        wake = true;
    }
    out.refused.sort_by_key(|(i, _)| *i);
    out.deliveries = DeliveryBatch::new(group);
    if wake {
        shared.wake.notify_one();
    }
    Ok(out)
}

/// Why a held record that reached its deadline failed.
fn expiry_error(shared: &Shared, record: &HeldRecord) -> Error {
    let config = &shared.cluster.config().producer;
    let waited = config.max_block.min(config.delivery_timeout);
    let topic = &record.record.topic;
    match shared.cluster.metadata().topics.get(topic.as_str()) {
        Some(t) if t.error == ErrorCode::UnknownTopicOrPartition || t.error.is_ok() => {
            Error::UnknownTopic {
                topic: topic.clone(),
                detail: format!(
                    "the cluster reported no such topic for {waited:?} (max.block.ms / delivery.timeout.ms)"
                ),
            }
        }
        Some(t) => Error::Kafka(t.error),
        None => Error::Timeout(format!(
            "topic `{topic}` not in the metadata after {waited:?} (max.block.ms / delivery.timeout.ms)"
        )),
    }
}

/// Moves held records whose topic's metadata is there into their batches, in order, and fails
/// those past their deadline. Asks for the metadata of topics
/// still unknown (with backoff). Returns when to look again. Runs on the sender task.
pub(crate) fn pump(shared: &Arc<Shared>, now: Instant) -> Option<Instant> {
    if shared.held.is_empty() {
        return None;
    }
    let mut failed: Vec<(HeldRecord, Error)> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut appended_any = false;
    let next = {
        let mut queues = shared.held.lock();
        let topics: Vec<Arc<str>> = queues.topics().cloned().collect();
        for topic in topics {
            let partitions = cached_partitions(shared, &topic);
            let Some(queue) = queues.queue_mut(&topic) else {
                continue;
            };
            while let Some(front) = queue.front() {
                if front.deadline <= now {
                    if let Some(r) = queue.pop_front() {
                        shared.held.popped();
                        let e = expiry_error(shared, &r);
                        failed.push((r, e));
                    }
                    continue;
                }
                let Some(n) = partitions else {
                    unknown.push(topic.to_string());
                    break;
                };
                let Some(r) = queue.pop_front() else { break };
                // Counted out only once it is in its batch: a send that sees nothing held
                // skips the queues' lock and appends at once, so it must not overtake it.
                appended_any |= append_held(shared, r, n);
                shared.held.popped();
            }
        }
        queues.tidy();
        queues.next_deadline()
    };
    for (r, e) in failed {
        fail_held(shared, r, e);
    }
    if unknown.is_empty() {
        shared.held.metadata_resolved();
    } else {
        shared.cluster.add_interest(&unknown);
        if shared.held.metadata_due(now) {
            let shared = shared.clone();
            tokio::spawn(async move {
                if let Err(e) = shared.cluster.refresh().await {
                    tracing::debug!(error = %e, "metadata for held records failed");
                    if e.is_authentication() {
                        // Waiting longer would fail the same way: the held records fail now.
                        let held = shared.held.lock().take_all();
                        for record in held {
                            shared.held.popped();
                            fail_held(&shared, record, e.duplicate());
                        }
                    }
                }
                shared.wake.notify_one();
            });
        }
    }
    if appended_any {
        shared.wake.notify_one();
    }
    let retry = (!unknown.is_empty())
        .then(|| shared.held.metadata_retry_at())
        .flatten();
    match (next, retry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Appends a held record to a partition of its topic, which has `partitions` partitions now;
/// fails it if it cannot go.
fn append_held(shared: &Shared, held: HeldRecord, partitions: i32) -> bool {
    let record = &held.record;
    let partition = match record.partition {
        Some(p) if p < 0 || p >= partitions => {
            fail_held(
                shared,
                held,
                Error::Kafka(ErrorCode::UnknownTopicOrPartition),
            );
            return false;
        }
        Some(p) => p,
        None => shared
            .chooser
            .choose(&record.topic, record.key.as_deref(), partitions, held.size),
    };
    register_txn_partition(shared, &record.topic, partition);
    let HeldRecord {
        record,
        timestamp,
        size,
        memory,
        completion,
        ..
    } = held;
    let Ok(mut acc) = shared.accumulator.lock() else {
        fail_completion(shared, completion, Error::Closed);
        return false;
    };
    let appended = acc.append(
        &record.topic,
        partition,
        timestamp,
        record.key.as_deref(),
        record.value.as_deref(),
        &record.headers,
        size - crate::records::RECORD_BATCH_OVERHEAD,
        memory,
        completion,
    );
    drop(acc);
    match appended {
        Ok(_) => true,
        Err((e, completion)) => {
            fail_completion(shared, completion, e);
            false
        }
    }
}

/// Reports `error` through the completion of a record that never joined a batch.
fn fail_completion(shared: &Shared, completion: Completion, error: Error) {
    if let Some(txn) = &shared.txn {
        txn.batch_failed(&error, false);
    }
    shared.settle(1, || completion.send(Err(error)));
}
