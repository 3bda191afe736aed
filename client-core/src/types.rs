//! Plain data types every part of the client shares: a topic-partition, and the consumer group
//! identity a transaction commits offsets for. They depend on nothing else in the crate, so the
//! producer, the consumer and the admin client can all use them without depending on each other.

use std::sync::Arc;

/// A topic and partition, ordered by topic then partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic-partition.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

/// The consumer group whose offsets a transaction commits, with the member's identity so the
/// group coordinator can fence a zombie that lost its partitions (KIP-447). From
/// [`crate::Consumer::consumer_group_metadata`], or [`GroupMetadata::new`] for a group id alone
/// (no fencing by generation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The member id the consumer got when it joined ("" if unknown).
    pub member_id: String,
    /// The group generation of that membership (-1 if unknown).
    pub generation_id: i32,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
}

impl GroupMetadata {
    /// Metadata carrying only the group id.
    pub fn new(group_id: impl Into<String>) -> Self {
        GroupMetadata {
            group_id: group_id.into(),
            member_id: String::new(),
            generation_id: -1,
            group_instance_id: None,
        }
    }
}
