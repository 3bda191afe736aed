//! The plain values that cross the foreign boundary, and their conversions to and from the
//! core's types. Keys, values and header values are byte arrays (Kotlin `ByteArray`): the
//! foreign package serializes.

use std::sync::Arc;

use bytes::Bytes;
use odradek_bindings::consumer::{CommitOffset, GroupMetadata as BindingGroupMetadata};

/// A topic and partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Record)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    pub(crate) fn to_core(&self) -> odradek::TopicPartition {
        odradek::TopicPartition {
            topic: Arc::from(self.topic.as_str()),
            partition: self.partition,
        }
    }

    pub(crate) fn from_core(tp: &odradek::TopicPartition) -> Self {
        TopicPartition {
            topic: tp.topic.to_string(),
            partition: tp.partition,
        }
    }
}

/// Converts a list of partitions to the core's.
pub(crate) fn to_core_list(tps: &[TopicPartition]) -> Vec<odradek::TopicPartition> {
    tps.iter().map(TopicPartition::to_core).collect()
}

/// Converts a list of the core's partitions.
pub(crate) fn from_core_list(tps: &[odradek::TopicPartition]) -> Vec<TopicPartition> {
    tps.iter().map(TopicPartition::from_core).collect()
}

/// A record header. Keys are strings, as in the Java client; values may be null.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Header {
    /// Header key.
    pub key: String,
    /// Header value (`null` is a null value).
    pub value: Option<Vec<u8>>,
}

/// A record to produce.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct OutgoingRecord {
    /// Destination topic.
    pub topic: String,
    /// Explicit partition; `null` lets the partitioner choose (murmur2 of the key, as the Java
    /// client does, or sticky for records without a key).
    pub partition: Option<i32>,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes (`null`: a tombstone on compacted topics).
    pub value: Option<Vec<u8>>,
    /// Headers in order; keys may repeat.
    pub headers: Vec<Header>,
    /// Create timestamp in ms; `null` uses the current time.
    pub timestamp: Option<i64>,
}

impl OutgoingRecord {
    pub(crate) fn into_core(self) -> odradek::ProducerRecord {
        odradek::ProducerRecord {
            topic: self.topic,
            partition: self.partition,
            key: self.key.map(Bytes::from),
            value: self.value.map(Bytes::from),
            headers: self
                .headers
                .into_iter()
                .map(|h| odradek::records::Header {
                    key: Bytes::from(h.key.into_bytes()),
                    value: h.value.map(Bytes::from),
                })
                .collect(),
            timestamp: self.timestamp,
        }
    }
}

/// A consumed record.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct IncomingRecord {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Timestamp in ms.
    pub timestamp: i64,
    /// Whether the timestamp is the broker's log-append time (else the create time).
    pub log_append_time: bool,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes.
    pub value: Option<Vec<u8>>,
    /// Headers in wire order (keys decoded as UTF-8, invalid bytes replaced).
    pub headers: Vec<Header>,
    /// Leader epoch of the record's batch, when stamped.
    pub leader_epoch: Option<i32>,
}

impl IncomingRecord {
    pub(crate) fn from_core(r: odradek::ConsumerRecord) -> Self {
        IncomingRecord {
            topic: r.topic.to_string(),
            partition: r.partition,
            offset: r.offset,
            timestamp: r.timestamp,
            log_append_time: r.timestamp_type == odradek::records::TimestampType::LogAppendTime,
            key: r.key.map(|b| b.to_vec()),
            value: r.value.map(|b| b.to_vec()),
            headers: r
                .headers
                .into_iter()
                .map(|h| Header {
                    key: String::from_utf8_lossy(&h.key).into_owned(),
                    value: h.value.map(|v| v.to_vec()),
                })
                .collect(),
            leader_epoch: r.leader_epoch,
        }
    }
}

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RecordMetadata {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset (-1 with `acks=0`).
    pub offset: i64,
    /// The create time, or the broker's log-append time.
    pub timestamp: i64,
}

/// An offset to commit: the next record to consume (a consumed record's offset + 1).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct OffsetCommit {
    /// The partition.
    pub partition: TopicPartition,
    /// The offset.
    pub offset: i64,
    /// Metadata stored with the offset.
    pub metadata: Option<String>,
}

impl OffsetCommit {
    pub(crate) fn to_binding(&self) -> CommitOffset {
        CommitOffset {
            partition: self.partition.to_core(),
            offset: self.offset,
            metadata: self.metadata.clone(),
        }
    }
}

/// A consumer's group identity, for `send_offsets_to_transaction` (KIP-447).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The member id ("" before joining).
    pub member_id: String,
    /// The generation (-1 before joining).
    pub generation_id: i32,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
}

impl GroupMetadata {
    pub(crate) fn from_binding(m: BindingGroupMetadata) -> Self {
        GroupMetadata {
            group_id: m.group_id,
            member_id: m.member_id,
            generation_id: m.generation,
            group_instance_id: m.group_instance_id,
        }
    }

    pub(crate) fn to_core(&self) -> odradek::GroupMetadata {
        odradek::GroupMetadata {
            group_id: self.group_id.clone(),
            member_id: self.member_id.clone(),
            generation_id: self.generation_id,
            group_instance_id: self.group_instance_id.clone(),
        }
    }
}
