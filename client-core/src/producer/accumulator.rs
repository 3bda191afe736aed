//! Per-partition queues of batches being filled or waiting to be sent.
//!
//! The accumulator owns every batch that is not in flight. Records go in through
//! [`Accumulator::run`] / [`QueueRun::append`] (the admission step); the sender takes the batches
//! that are ready, grouped by leader, from [`Accumulator::drain`] and reports back what became of
//! them ([`Accumulator::sent_settled`], [`Accumulator::requeue`]). Nothing outside this module
//! edits a queue's fields.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;

use super::batch::ProducerBatch;
use super::delivery::Completion;
use super::stats::PartitionStats;
use crate::net::Window;
use crate::records::{Compression, Header};
use crate::types::TopicPartition;
use crate::Error;

/// A partition's queue.
#[derive(Debug, Default)]
struct PartitionQueue {
    batches: VecDeque<ProducerBatch>,
    /// Next base sequence to assign (idempotent producers).
    next_sequence: i32,
    /// The broker acknowledged a sequenced batch of this partition since sequences last
    /// started at 0. Until it has, only one batch is in flight: a broker with no state for a
    /// producer accepts any first sequence (Apache Kafka does), so a later batch overtaking a
    /// retried first one would leave a gap the first can never fill.
    sequence_acked: bool,
    in_flight: usize,
    retries: u64,
    batches_sent: u64,
    /// Records in the batches in flight.
    in_flight_records: u64,
    /// Records and record bytes the broker acknowledged.
    acked_records: u64,
    acked_bytes: u64,
}

/// What `append` did.
pub(crate) struct Appended {
    /// A batch became full: the sender should look now rather than at linger expiry.
    pub batch_full: bool,
    /// A new batch was opened: the sender must learn when its linger expires.
    pub new_batch: bool,
}

/// What an append returns: on failure, the record's completion comes back with the error.
pub(crate) type AppendResult = std::result::Result<Appended, (Error, Completion)>;

/// Which partitions a transactional producer may send now.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TxnFilter<'a> {
    /// Not transactional: every partition.
    Any,
    /// Only partitions the coordinator added to the open transaction.
    Added(&'a HashSet<TopicPartition>),
    /// None (no transaction open, or AddPartitionsToTxn has not answered).
    Nothing,
}

/// What the sender knows when it asks for ready batches.
pub(crate) struct DrainParams<'a> {
    /// The time of this pass.
    pub now: Instant,
    /// Send everything queued at once, without waiting for `linger.ms` (flush, close).
    pub flushing: bool,
    /// `linger.ms`.
    pub linger: Duration,
    /// `max.request.size`: a request to one broker stops growing at this size.
    pub max_request_size: usize,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: usize,
    /// `Some` for an idempotent producer: its producer id and epoch, once initialised.
    pub idempotence: Option<Option<(i64, i16)>>,
    /// Which partitions may be sent (transactions).
    pub txn: TxnFilter<'a>,
    /// The current leader of a partition.
    pub leader: &'a (dyn Fn(&str, i32) -> Option<i32> + Sync),
}

/// The batches [`Accumulator::drain`] took, and when to look again.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// Ready batches by leader, each leader's in drain order (so in sequence order).
    pub by_leader: HashMap<i32, Vec<ProducerBatch>>,
    /// The earliest time a batch that is not ready yet will be (linger or retry backoff).
    pub next_wake: Option<Instant>,
    /// A ready batch's partition has no known leader.
    pub unknown_leader: bool,
    /// A retry waits out its backoff (a new leader in metadata would send it at once).
    pub retry_waiting: bool,
}

/// Batches of every partition.
#[derive(Debug)]
pub(crate) struct Accumulator {
    /// Keyed by the application's topics: looked up per record, with a fast hasher.
    queues: rustc_hash::FxHashMap<TopicPartition, PartitionQueue>,
    /// The topic name of the last append, shared by the `TopicPartition`s of later appends to
    /// the same topic instead of allocating a name per record.
    last_topic: Option<Arc<str>>,
    batch_size: usize,
    /// `batch.num.messages`: the most records in one batch.
    max_records: usize,
    compression: Compression,
    level: Option<i32>,
    /// Batches carry the transactional attribute (a producer with `transactional.id`).
    transactional: bool,
    /// Statistics windows of the batches handed to the network.
    windows: SendWindows,
}

/// Statistics windows of the batches handed to the network since the last snapshot.
#[derive(Debug, Default)]
pub(crate) struct SendWindows {
    /// Per topic: batch sizes in bytes and in records (librdkafka's `batchsize`/`batchcnt`).
    pub per_topic: HashMap<Arc<str>, (Window, Window)>,
    /// Per leader: how long each batch waited in the accumulator, microseconds
    /// (librdkafka's `int_latency`, measured per batch from its first record).
    pub queue_latency: HashMap<i32, Window>,
}

fn earliest(a: Option<Instant>, b: Instant) -> Option<Instant> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl Accumulator {
    pub fn new(
        batch_size: usize,
        max_records: usize,
        compression: Compression,
        level: Option<i32>,
        transactional: bool,
    ) -> Self {
        Accumulator {
            queues: rustc_hash::FxHashMap::default(),
            last_topic: None,
            batch_size,
            max_records: max_records.max(1),
            compression,
            level,
            transactional,
            windows: SendWindows::default(),
        }
    }

    /// The partition's queue, for appending a run of records with one lookup.
    pub fn run(&mut self, topic: &str, partition: i32) -> QueueRun<'_> {
        let topic = match &self.last_topic {
            Some(t) if **t == *topic => t.clone(),
            _ => {
                let t: Arc<str> = Arc::from(topic);
                self.last_topic = Some(t.clone());
                t
            }
        };
        let tp = TopicPartition { topic, partition };
        let queue = self.queues.entry(tp.clone()).or_default();
        QueueRun {
            queue,
            tp,
            batch_size: self.batch_size,
            max_records: self.max_records,
            compression: self.compression,
            level: self.level,
            transactional: self.transactional,
        }
    }

    /// Appends a record to the partition's open batch (see [`QueueRun::append`]).
    #[allow(clippy::too_many_arguments)]
    pub fn append(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
        size: usize,
        memory: OwnedSemaphorePermit,
        completion: Completion,
    ) -> AppendResult {
        self.run(topic, partition)
            .append(timestamp, key, value, headers, size, memory, completion)
    }

    /// Removes expired batches (older than `delivery.timeout.ms` and not in flight).
    pub fn expire(&mut self, now: Instant, delivery_timeout: Duration) -> Vec<ProducerBatch> {
        let mut expired = Vec::new();
        for q in self.queues.values_mut() {
            while q
                .batches
                .front()
                .is_some_and(|b| now.duration_since(b.created) >= delivery_timeout)
            {
                if let Some(b) = q.batches.pop_front() {
                    expired.push(b);
                }
            }
        }
        expired
    }

    /// Takes the batches that are ready to be sent, assigning sequence numbers to idempotent
    /// ones as they leave, grouped by leader and within each request's size limit.
    pub fn drain(&mut self, p: &DrainParams<'_>) -> Drained {
        let mut out = Drained::default();
        let mut request_bytes: HashMap<i32, usize> = HashMap::new();
        let batch_size = self.batch_size;
        let max_records = self.max_records;
        for (tp, queue) in self.queues.iter_mut() {
            let Some(front) = queue.batches.front() else {
                continue;
            };
            // At most `max.in.flight.requests.per.connection` batches of a partition are
            // unacknowledged at once (one per request, as in Kafka's clients), however long a
            // broker takes to answer or a lane to reconnect. With max.in.flight=1 that keeps
            // order under retries; with idempotence it keeps every retry within the five
            // batches a broker remembers per producer and partition: a retried batch the broker
            // wrote but no longer remembers would be refused as out of order forever.
            if queue.in_flight >= p.max_in_flight {
                continue;
            }
            // Idempotence: the first sequenced batch of a partition is confirmed before more
            // follow (see `PartitionQueue::sequence_acked`).
            if p.idempotence.is_some() && !queue.sequence_acked && queue.in_flight > 0 {
                continue;
            }
            let wake_at = match front.retry_at {
                Some(at) => at,
                None => front.created + p.linger,
            };
            let full = front.bytes >= batch_size
                || front.record_count() >= max_records
                || queue.batches.len() > 1;
            let leader_now = (p.leader)(&tp.topic, tp.partition);
            // A retry skips the rest of its backoff once the partition has a new leader.
            let moved =
                leader_now.is_some() && front.sent_to.is_some_and(|s| Some(s) != leader_now);
            let ready = match front.retry_at {
                Some(at) => at <= p.now || moved,
                None => full || p.flushing || wake_at <= p.now,
            };
            if !ready {
                out.next_wake = earliest(out.next_wake, wake_at);
                out.retry_waiting |= front.retry_at.is_some();
                continue;
            }
            match p.txn {
                TxnFilter::Any => {}
                TxnFilter::Added(added) if added.contains(tp) => {}
                // Not in the transaction yet (AddPartitionsToTxn wakes the sender), or no
                // transaction open.
                TxnFilter::Added(_) | TxnFilter::Nothing => continue,
            }
            let Some(leader) = leader_now else {
                out.unknown_leader = true;
                continue;
            };
            let used = request_bytes.entry(leader).or_default();
            if *used > 0 && *used + front.bytes > p.max_request_size {
                // This request is full; the batch goes in the next one.
                out.next_wake = earliest(out.next_wake, p.now);
                continue;
            }
            if let Some(id) = p.idempotence {
                let Some((pid, epoch)) = id else {
                    // Not initialised yet: InitProducerId wakes the sender when it is.
                    continue;
                };
                if let Some(front) = queue.batches.front_mut() {
                    if front.sequence.is_none() {
                        let seq = queue.next_sequence;
                        front.assign_sequence(pid, epoch, seq);
                        let n = front.record_count() as i64;
                        queue.next_sequence =
                            ((i64::from(seq) + n) % (i64::from(i32::MAX) + 1)) as i32;
                    }
                }
            }
            if let Some(mut batch) = queue.batches.pop_front() {
                if batch.attempts == 0 {
                    self.windows.sent(&batch, leader, p.now);
                }
                batch.sent_to = Some(leader);
                *used += batch.bytes;
                queue.in_flight += 1;
                queue.in_flight_records += batch.record_count() as u64;
                queue.batches_sent += 1;
                out.by_leader.entry(leader).or_default().push(batch);
            }
        }
        out
    }

    /// A batch that was in flight has settled (acknowledged, failed or about to be retried):
    /// its partition may send the next one. `acked` marks a sequenced batch the broker
    /// confirmed (see `PartitionQueue::sequence_acked`).
    pub fn sent_settled(&mut self, batch: &ProducerBatch, acked: bool) {
        if let Some(q) = self.queues.get_mut(&batch.tp) {
            q.in_flight = q.in_flight.saturating_sub(1);
            q.in_flight_records = q
                .in_flight_records
                .saturating_sub(batch.record_count() as u64);
            if acked {
                q.acked_records += batch.record_count() as u64;
                q.acked_bytes += batch.bytes as u64;
            }
            // Sequences restart (an epoch bump) only once nothing is in flight, so this batch
            // belongs to the current run.
            if acked && batch.sequence.is_some() {
                q.sequence_acked = true;
            }
        }
    }

    /// Batches in flight, over every partition.
    pub fn in_flight(&self) -> usize {
        self.queues.values().map(|q| q.in_flight).sum()
    }

    /// After an epoch bump: every partition starts again at sequence 0 and queued batches are
    /// stamped again when they are sent.
    pub fn reset_sequences(&mut self) {
        for q in self.queues.values_mut() {
            q.next_sequence = 0;
            q.sequence_acked = false;
            for b in q.batches.iter_mut() {
                b.clear_sequence();
            }
        }
    }

    /// Removes every batch not yet sent (a transaction being aborted or failed).
    pub fn take_unsent(&mut self) -> Vec<ProducerBatch> {
        self.queues
            .values_mut()
            .flat_map(|q| q.batches.drain(..))
            .collect()
    }

    /// Removes the batches that were never handed to the network (librdkafka's purge of the
    /// queue): retries stay, since their sequence numbers are already on the broker's books.
    pub fn take_never_sent(&mut self) -> Vec<ProducerBatch> {
        let mut out = Vec::new();
        for q in self.queues.values_mut() {
            let (keep, purge): (VecDeque<_>, VecDeque<_>) =
                q.batches.drain(..).partition(|b| !b.never_sent());
            q.batches = keep;
            out.extend(purge);
        }
        out
    }

    /// Puts a batch back at the front of its partition's queue for a retry.
    pub fn requeue(&mut self, mut batch: ProducerBatch, retry_at: Instant) {
        batch.retry_at = Some(retry_at);
        let q = self.queues.entry(batch.tp.clone()).or_default();
        q.retries += 1;
        // Retries go before unsent batches and, among themselves, in sequence order, so an
        // idempotent partition is resent without gaps.
        let at = match batch.sequence {
            Some(seq) => q
                .batches
                .iter()
                .position(|b| b.sequence.is_none_or(|s| s > seq))
                .unwrap_or(q.batches.len()),
            None => 0,
        };
        q.batches.insert(at, batch);
    }

    /// Per-partition counters, sorted by topic and partition.
    pub fn stats(&self) -> Vec<PartitionStats> {
        let mut out: Vec<PartitionStats> = self
            .queues
            .iter()
            .map(|(tp, q)| PartitionStats {
                partition: tp.clone(),
                queued_records: q.batches.iter().map(|b| b.record_count()).sum(),
                batches_sent: q.batches_sent,
                retries: q.retries,
                in_flight: q.in_flight,
                in_flight_records: q.in_flight_records,
                leader: -1,
                queued_bytes: q.batches.iter().map(|b| b.bytes as u64).sum(),
                acked_records: q.acked_records,
                acked_bytes: q.acked_bytes,
            })
            .collect();
        out.sort_by(|a, b| a.partition.cmp(&b.partition));
        out
    }
}

impl Accumulator {
    /// The statistics windows of sent batches (the snapshot takes them).
    pub fn windows(&self) -> &SendWindows {
        &self.windows
    }
}

impl SendWindows {
    /// A batch goes to the network for the first time.
    fn sent(&mut self, batch: &ProducerBatch, leader: i32, now: Instant) {
        let (bytes, records) = self.per_topic.entry(batch.tp.topic.clone()).or_default();
        bytes.record(batch.bytes as u64);
        records.record(batch.record_count() as u64);
        let waited = now.saturating_duration_since(batch.created).as_micros() as u64;
        self.queue_latency.entry(leader).or_default().record(waited);
    }
}

/// One partition's queue, looked up once for a run of appends ([`Accumulator::run`]).
pub(crate) struct QueueRun<'a> {
    queue: &'a mut PartitionQueue,
    tp: TopicPartition,
    batch_size: usize,
    max_records: usize,
    compression: Compression,
    level: Option<i32>,
    transactional: bool,
}

impl QueueRun<'_> {
    /// Appends a record to the partition's open batch, opening a new one when it would exceed
    /// `batch.size` (a record larger than `batch.size` gets a batch of its own). `size` is the
    /// record's size as the first record of a batch; within a batch its offset and timestamp
    /// deltas may take a few more bytes, and the batch counts the exact size.
    #[allow(clippy::too_many_arguments)]
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
        size: usize,
        memory: OwnedSemaphorePermit,
        completion: Completion,
    ) -> AppendResult {
        let queue = &mut *self.queue;
        // Exact sizes keep `bytes` equal to the encoded records, so a batch never outgrows the
        // buffer reserved for `batch.size` (growing it would copy the whole batch).
        let size_in_open = queue
            .batches
            .back()
            .filter(|b| b.record_count() < self.max_records)
            .and_then(|b| b.room_for(timestamp, key, value, headers, self.batch_size));
        let fits = size_in_open.is_some();
        if !fits {
            queue.batches.push_back(ProducerBatch::new(
                self.tp.clone(),
                self.compression,
                self.level,
                self.batch_size.max(size),
                self.transactional,
            ));
        }
        let Some(batch) = queue.batches.back_mut() else {
            return Err((Error::malformed("accumulator", "no open batch"), completion));
        };
        batch.push(
            timestamp,
            key,
            value,
            headers,
            size_in_open,
            memory,
            completion,
        )?;
        let batch_full = batch.bytes >= self.batch_size
            || batch.record_count() >= self.max_records
            || queue.batches.len() > 1;
        Ok(Appended {
            batch_full,
            new_batch: !fits,
        })
    }
}

/// Shared handle type.
pub(crate) type SharedAccumulator = Arc<std::sync::Mutex<Accumulator>>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::producer::delivery::{DeliveryBatch, Group};

    /// Drain parameters that send every batch now (flushing, no linger, 5 in flight).
    fn flushing_params<'a>(
        leader: &'a (dyn Fn(&str, i32) -> Option<i32> + Sync),
        idempotence: Option<Option<(i64, i16)>>,
    ) -> DrainParams<'a> {
        DrainParams {
            now: Instant::now(),
            flushing: true,
            linger: Duration::ZERO,
            max_request_size: 1 << 20,
            max_in_flight: 5,
            idempotence,
            txn: TxnFilter::Any,
            leader,
        }
    }

    /// Appends a record nobody waits for (value `v`, 80 bytes counted) to partition `t`-0.
    fn append_unwaited(acc: &mut Accumulator, sem: &Arc<tokio::sync::Semaphore>, ts: i64) {
        let permit = sem.clone().try_acquire_many_owned(100).unwrap();
        acc.append(
            "t",
            0,
            ts,
            None,
            Some(b"v"),
            &[],
            80,
            permit,
            Completion::None,
        )
        .unwrap();
    }

    #[test]
    fn batch_num_messages_caps_the_records_of_a_batch() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 16, 3, Compression::None, None, false);
        let mut full = Vec::new();
        for ts in 0..7 {
            let permit = sem.clone().try_acquire_many_owned(100).unwrap();
            let a = acc
                .append(
                    "t",
                    0,
                    ts,
                    None,
                    Some(b"v"),
                    &[],
                    80,
                    permit,
                    Completion::None,
                )
                .unwrap();
            full.push(a.batch_full);
        }
        assert_eq!(full, [false, false, true, true, true, true, true]);
        let counts: Vec<usize> = acc.take_unsent().iter().map(|b| b.record_count()).collect();
        assert_eq!(counts, [3, 3, 1]);
    }

    #[test]
    fn batch_completion_gives_each_grouped_record_its_offset() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 16, usize::MAX, Compression::None, None, false);
        let g = Group::new(4, [0, 1, 3].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        for (i, ts) in [(0usize, 10i64), (1, 11), (3, 13)] {
            let permit = sem.clone().try_acquire_many_owned(100).unwrap();
            acc.append("t", 0, ts, None, Some(b"v"), &[], 80, permit, g.handle(i))
                .unwrap();
        }
        // A record nobody waits for, in the same batch.
        append_unwaited(&mut acc, &sem, 14);
        let mut batches = acc.take_unsent();
        assert_eq!(batches.len(), 1);
        let b = batches.pop().unwrap();
        assert_eq!(b.record_count(), 4);
        b.complete(100, -1);
        let got: Vec<(i64, i64)> = [0, 1, 3]
            .iter()
            .map(|&i| {
                let m = batch.take(i).unwrap().unwrap();
                (m.offset, m.timestamp)
            })
            .collect();
        assert_eq!(got, vec![(100, 10), (101, 11), (102, 13)]);
        assert!(batch.take(2).is_none());
        assert_eq!(sem.available_permits(), 1 << 20, "memory released");
    }

    #[test]
    fn a_retry_in_backoff_goes_at_once_to_a_new_leader_and_waits_for_the_old_one() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 10, usize::MAX, Compression::None, None, false);
        append_unwaited(&mut acc, &sem, 0);
        let params = |leader: &'static (dyn Fn(&str, i32) -> Option<i32> + Sync)| {
            flushing_params(leader, None)
        };
        static OLD: fn(&str, i32) -> Option<i32> = |_, _| Some(1);
        static NEW: fn(&str, i32) -> Option<i32> = |_, _| Some(2);
        static NONE: fn(&str, i32) -> Option<i32> = |_, _| None;
        let mut sent: Vec<ProducerBatch> = acc
            .drain(&params(&OLD))
            .by_leader
            .into_values()
            .flatten()
            .collect();
        assert_eq!(sent.len(), 1);
        let batch = sent.remove(0);
        assert_eq!(batch.sent_to, Some(1));
        // The send failed: retry in a minute.
        acc.sent_settled(&batch, false);
        acc.requeue(batch, Instant::now() + Duration::from_secs(60));
        assert!(
            acc.drain(&params(&OLD)).by_leader.is_empty(),
            "same leader: backoff kept"
        );
        assert!(
            acc.drain(&params(&NONE)).by_leader.is_empty(),
            "no leader: backoff kept"
        );
        let moved = acc.drain(&params(&NEW)).by_leader;
        assert_eq!(
            moved.get(&2).map(Vec::len),
            Some(1),
            "a new leader: sent now, to it"
        );
    }

    #[test]
    fn a_partition_never_has_more_batches_in_flight_than_max_in_flight() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        // Batches of one record each: every append past the first opens a new batch.
        let mut acc = Accumulator::new(1, usize::MAX, Compression::None, None, false);
        for ts in 0..20 {
            append_unwaited(&mut acc, &sem, ts);
        }
        let leader = |_: &str, _: i32| Some(1);
        let params = flushing_params(&leader, Some(Some((7, 0))));
        // A broker that never answers: drain as often as the sender would.
        let mut sent = Vec::new();
        for _ in 0..50 {
            for (_, batches) in acc.drain(&params).by_leader {
                sent.extend(batches);
            }
        }
        assert_eq!(
            sent.len(),
            1,
            "the first sequenced batch is confirmed before more follow"
        );
        acc.sent_settled(&sent[0], true);
        for _ in 0..50 {
            for (_, batches) in acc.drain(&params).by_leader {
                sent.extend(batches);
            }
        }
        assert_eq!(
            acc.in_flight(),
            5,
            "at most max.in.flight batches unacknowledged"
        );
        assert_eq!(sent.len(), 6);
        let seqs: Vec<i32> = sent.iter().filter_map(|b| b.sequence).collect();
        assert_eq!(
            seqs,
            (0..6).collect::<Vec<_>>(),
            "sequences in order, no gaps"
        );
    }

    #[test]
    fn failing_a_batch_fails_every_grouped_record() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 16, usize::MAX, Compression::None, None, false);
        let g = Group::new(2, [0, 1].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        for i in 0..2 {
            let permit = sem.clone().try_acquire_many_owned(100).unwrap();
            acc.append("t", 1, 1, None, Some(b"v"), &[], 80, permit, g.handle(i))
                .unwrap();
        }
        for b in acc.take_unsent() {
            b.fail(&Error::Timeout("expired".into()));
        }
        for i in 0..2 {
            assert!(matches!(batch.take(i), Some(Err(Error::Timeout(_)))));
        }
    }
}
