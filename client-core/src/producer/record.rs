//! The producer's public data types: the record an application sends, where it was written,
//! and what a non-waiting send may do with records that cannot be batched yet.

use std::sync::Arc;

use bytes::Bytes;

use crate::records::Header;

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

/// What a non-waiting send ([`crate::Producer::try_send_batch`] and its siblings) does with a
/// record whose topic has no metadata yet.
///
/// A *held* record stays inside the producer (librdkafka's "unassigned partition" queue), in
/// order behind the records of its topic held before it, while the metadata is fetched in the
/// background (creating the topic where the broker auto-creates topics); it then joins its
/// batch like any other. It takes its room in `buffer.memory` while it waits, counts in
/// [`crate::Producer::pending`] (so `flush` waits for it), and fails, like every record, by its
/// deadline: `max.block.ms` or `delivery.timeout.ms` after it was sent, whichever comes first,
/// with [`crate::Error::UnknownTopic`] (the cluster reported no such topic) or [`crate::Error::Timeout`] (no
/// answer). A record for which `buffer.memory` has no room is never held: the call stops before
/// it (librdkafka's `QUEUE_FULL`), and a waiting caller ([`crate::Producer::send`]) waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldPolicy {
    /// Hold records whose topic has no metadata yet; otherwise the call stops before such a
    /// record (unless earlier records of its topic are held: then it is held behind them).
    pub metadata: bool,
}

impl HoldPolicy {
    /// Stop before any record that would wait (the caller waits, or refuses it).
    pub const NONE: HoldPolicy = HoldPolicy { metadata: false };
    /// Hold records that wait for metadata; stop when `buffer.memory` is full: the policy of
    /// librdkafka's `produce()`, which never blocks and answers `QUEUE_FULL`.
    pub const METADATA: HoldPolicy = HoldPolicy { metadata: true };
}
