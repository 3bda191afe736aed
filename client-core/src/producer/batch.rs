//! A batch for one partition: its records appended once, encoded once, sent (and resent) as the
//! same bytes, and completed or failed once, record by record.

use std::time::Instant;

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use super::delivery::{Completion, Resolver};
use super::record::RecordMetadata;
use crate::records::{BatchBuilder, Compression, Header};
use crate::types::TopicPartition;
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
    /// The leader the batch was last sent to: a retry waiting out its backoff goes at once
    /// when the partition's leader has changed since (KIP-951, as Java's client does).
    pub sent_to: Option<i32>,
    pub bytes: usize,
    /// Base sequence, once assigned (idempotent producers).
    pub sequence: Option<i32>,
    memory: Option<OwnedSemaphorePermit>,
}

impl ProducerBatch {
    pub(crate) fn new(
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
            sent_to: None,
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

    /// Fails each record with the error `error_of` gives for its index in the batch.
    pub fn fail_each(self, error_of: impl Fn(usize) -> Error) {
        let mut resolver = Resolver::default();
        for (i, d) in self.deliveries.into_iter().enumerate() {
            if !matches!(d.tx, Completion::None) {
                resolver.resolve(d.tx, Err(error_of(i)));
            }
        }
        resolver.finish();
    }

    /// Fails every record with a copy of `error`.
    pub fn fail(self, error: &Error) {
        let mut resolver = Resolver::default();
        for d in self.deliveries {
            if !matches!(d.tx, Completion::None) {
                resolver.resolve(d.tx, Err(error.duplicate()));
            }
        }
        resolver.finish();
    }
}

impl ProducerBatch {
    /// The exact size `record` adds to this batch, if the batch is still open for appends
    /// (never sent, not encoded) and it keeps the batch within `batch_size`.
    pub fn room_for(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
        batch_size: usize,
    ) -> Option<usize> {
        let builder = self.builder.as_ref()?;
        let n = builder.record_size(timestamp, key, value, headers);
        (self.retry_at.is_none() && self.attempts == 0 && self.bytes + n <= batch_size).then_some(n)
    }

    /// Appends a record whose exact size in this batch is `exact` (or, when `None`, computed
    /// here), taking over its `buffer.memory` permit and its completion. On failure the
    /// completion comes back, for the caller to report the error through.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
        exact: Option<usize>,
        memory: OwnedSemaphorePermit,
        completion: Completion,
    ) -> std::result::Result<(), (Error, Completion)> {
        let Some(builder) = self.builder.as_mut() else {
            let e = Error::malformed("accumulator", "open batch already encoded");
            return Err((e, completion));
        };
        let exact = exact.unwrap_or_else(|| builder.record_size(timestamp, key, value, headers));
        if let Err(e) = builder.append(timestamp, key, value, headers) {
            return Err((e, completion));
        }
        self.deliveries.push(Delivery {
            tx: completion,
            timestamp,
        });
        self.bytes += exact;
        match &mut self.memory {
            Some(m) => m.merge(memory),
            None => self.memory = Some(memory),
        }
        Ok(())
    }

    /// Whether the batch was never handed to the network (it can be purged without losing a
    /// sequence number).
    pub fn never_sent(&self) -> bool {
        self.attempts == 0 && self.sequence.is_none()
    }
}
