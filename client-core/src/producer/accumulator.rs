//! Per-partition queues of batches being filled or waiting to be sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use super::delivery::{Completion, Resolver};
use super::{RecordMetadata, TopicPartition};
use crate::records::{BatchBuilder, Compression, Header};
use crate::{Error, Result};

/// One record's completion.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub tx: Completion,
    pub timestamp: i64,
}

/// A batch for one partition: records appended once, encoded once, sent (and resent) as bytes.
#[derive(Debug)]
pub(crate) struct ProducerBatch {
    pub tp: TopicPartition,
    builder: Option<BatchBuilder>,
    encoded: Option<Bytes>,
    pub deliveries: Vec<Delivery>,
    pub created: Instant,
    pub attempts: u32,
    pub retry_at: Option<Instant>,
    pub bytes: usize,
    /// Base sequence, once assigned (idempotent producers).
    pub sequence: Option<i32>,
    memory: Option<OwnedSemaphorePermit>,
}

impl ProducerBatch {
    fn new(
        tp: TopicPartition,
        compression: Compression,
        level: Option<i32>,
        capacity: usize,
        transactional: bool,
    ) -> Self {
        ProducerBatch {
            tp,
            builder: Some(
                BatchBuilder::with_capacity(compression, capacity)
                    .compression_level(level)
                    .transactional(transactional),
            ),
            encoded: None,
            deliveries: Vec::new(),
            created: Instant::now(),
            attempts: 0,
            retry_at: None,
            bytes: 0,
            sequence: None,
            memory: None,
        }
    }

    /// Records in the batch.
    pub fn record_count(&self) -> usize {
        self.deliveries.len()
    }

    /// Stamps idempotence fields before the batch is sent; its sequence then stays fixed across
    /// retries, so the broker recognises them (an epoch bump clears and restamps it).
    pub fn assign_sequence(&mut self, producer_id: i64, epoch: i16, sequence: i32) {
        if self.sequence.is_some() {
            return;
        }
        self.sequence = Some(sequence);
        if let Some(b) = self.builder.take() {
            self.builder = Some(b.producer(producer_id, epoch, sequence));
        } else if let Some(encoded) = self.encoded.take() {
            // Already encoded under an earlier epoch: rewrite its header (and CRC).
            let mut bytes = bytes::BytesMut::from(&encoded[..]);
            match crate::records::restamp_producer(&mut bytes, producer_id, epoch, sequence) {
                Ok(()) => self.encoded = Some(bytes.freeze()),
                Err(_) => self.encoded = Some(encoded),
            }
        }
    }

    /// Forgets the sequence (after an epoch bump the batch is stamped again when resent).
    pub fn clear_sequence(&mut self) {
        self.sequence = None;
    }

    /// The encoded batch (encoding on first use).
    pub fn encoded(&mut self) -> Result<Bytes> {
        if let Some(b) = &self.encoded {
            return Ok(b.clone());
        }
        let builder = self
            .builder
            .take()
            .ok_or_else(|| Error::malformed("producer batch", "neither built nor buildable"))?;
        let bytes = builder.build()?;
        self.encoded = Some(bytes.clone());
        Ok(bytes)
    }

    /// Completes every record: offsets follow the base offset in append order.
    pub fn complete(self, base_offset: i64, log_append_time: i64) {
        let mut resolver = Resolver::default();
        for (i, d) in self.deliveries.into_iter().enumerate() {
            if matches!(d.tx, Completion::None) {
                continue;
            }
            resolver.resolve(
                d.tx,
                Ok(RecordMetadata {
                    topic: self.tp.topic.clone(),
                    partition: self.tp.partition,
                    offset: if base_offset >= 0 {
                        base_offset + i as i64
                    } else {
                        -1
                    },
                    timestamp: if log_append_time >= 0 {
                        log_append_time
                    } else {
                        d.timestamp
                    },
                }),
            );
        }
        resolver.finish();
    }

    /// Fails every record with a copy of `error`.
    pub fn fail(self, error: &Error) {
        let mut resolver = Resolver::default();
        for d in self.deliveries {
            if !matches!(d.tx, Completion::None) {
                resolver.resolve(d.tx, Err(clone_error(error)));
            }
        }
        resolver.finish();
    }
}

/// Errors are not `Clone` (they may hold an `io::Error`); this copies every variant (an I/O
/// error by kind and message).
pub(crate) fn clone_error(e: &Error) -> Error {
    crate::admin::duplicate_error(e)
}

/// A partition's queue.
#[derive(Debug, Default)]
pub(crate) struct PartitionQueue {
    pub batches: VecDeque<ProducerBatch>,
    /// Next base sequence to assign (idempotent producers).
    pub next_sequence: i32,
    /// The broker acknowledged a sequenced batch of this partition since sequences last
    /// started at 0. Until it has, only one batch is in flight: a broker with no state for a
    /// producer accepts any first sequence (Apache Kafka does), so a later batch overtaking a
    /// retried first one would leave a gap the first can never fill.
    pub sequence_acked: bool,
    pub in_flight: usize,
    pub retries: u64,
    pub batches_sent: u64,
}

/// What `append` did.
pub(crate) struct Appended {
    /// A batch became full: the sender should look now rather than at linger expiry.
    pub batch_full: bool,
    /// A new batch was opened: the sender must learn when its linger expires.
    pub new_batch: bool,
}

/// Batches of every partition.
#[derive(Debug)]
pub(crate) struct Accumulator {
    pub queues: HashMap<TopicPartition, PartitionQueue>,
    /// The topic name of the last append, shared by the `TopicPartition`s of later appends to
    /// the same topic instead of allocating a name per record.
    last_topic: Option<Arc<str>>,
    batch_size: usize,
    compression: Compression,
    level: Option<i32>,
    /// Batches carry the transactional attribute (a producer with `transactional.id`).
    transactional: bool,
}

impl Accumulator {
    pub fn new(
        batch_size: usize,
        compression: Compression,
        level: Option<i32>,
        transactional: bool,
    ) -> Self {
        Accumulator {
            queues: HashMap::new(),
            last_topic: None,
            batch_size,
            compression,
            level,
            transactional,
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
    ) -> Result<Appended> {
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
}

/// One partition's queue, looked up once for a run of appends ([`Accumulator::run`]).
pub(crate) struct QueueRun<'a> {
    queue: &'a mut PartitionQueue,
    tp: TopicPartition,
    batch_size: usize,
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
    ) -> Result<Appended> {
        let queue = &mut *self.queue;
        // Exact sizes keep `bytes` equal to the encoded records, so a batch never outgrows the
        // buffer reserved for `batch.size` (growing it would copy the whole batch).
        let size_in_open = queue.batches.back().and_then(|b| {
            let builder = b.builder.as_ref()?;
            let n = builder.record_size(timestamp, key, value, headers);
            (b.retry_at.is_none() && b.attempts == 0 && b.bytes + n <= self.batch_size).then_some(n)
        });
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
        let batch = queue
            .batches
            .back_mut()
            .ok_or_else(|| Error::malformed("accumulator", "no open batch"))?;
        let builder = batch
            .builder
            .as_mut()
            .ok_or_else(|| Error::malformed("accumulator", "open batch already encoded"))?;
        let exact =
            size_in_open.unwrap_or_else(|| builder.record_size(timestamp, key, value, headers));
        builder.append(timestamp, key, value, headers)?;
        batch.deliveries.push(Delivery {
            tx: completion,
            timestamp,
        });
        batch.bytes += exact;
        match &mut batch.memory {
            Some(m) => m.merge(memory),
            None => batch.memory = Some(memory),
        }
        let batch_full = batch.bytes >= self.batch_size || queue.batches.len() > 1;
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

    #[test]
    fn batch_completion_gives_each_grouped_record_its_offset() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 16, Compression::None, None, false);
        let g = Group::new(4, [0, 1, 3].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        for (i, ts) in [(0usize, 10i64), (1, 11), (3, 13)] {
            let permit = sem.clone().try_acquire_many_owned(100).unwrap();
            acc.append("t", 0, ts, None, Some(b"v"), &[], 80, permit, g.handle(i))
                .unwrap();
        }
        // A record nobody waits for, in the same batch.
        let permit = sem.clone().try_acquire_many_owned(100).unwrap();
        acc.append(
            "t",
            0,
            14,
            None,
            Some(b"v"),
            &[],
            80,
            permit,
            Completion::None,
        )
        .unwrap();
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
    fn failing_a_batch_fails_every_grouped_record() {
        let sem = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::new(1 << 16, Compression::None, None, false);
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
