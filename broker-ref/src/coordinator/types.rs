//! The group coordinator's plain types: offset keys and results, a decoded transactional
//! offset commit, and the migration policy.

use odradek::ErrorCode;

use super::storage::CommittedOffset;

/// Name of the offsets topic.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// A committed offset as OffsetFetch reports it.
pub type OffsetEntry = ((String, i32), CommittedOffset);
/// A topic and partition.
pub type TopicPartitionKey = (String, i32);
/// One offset to commit: partition, offset, leader epoch, metadata.
pub type OffsetToCommit = (TopicPartitionKey, i64, i32, Option<String>);
/// Per-partition outcome.
pub type PartitionResult = (TopicPartitionKey, ErrorCode);

/// One transactional commit request, decoded.
#[derive(Debug, Clone)]
pub struct TxnCommit {
    /// Group.
    pub group_id: String,
    /// The transactional producer.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// Member id ("" when the client sends no group metadata).
    pub member_id: String,
    /// Generation (-1 when unknown).
    pub generation: i32,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// The offsets.
    pub offsets: Vec<OffsetToCommit>,
}

/// `group.consumer.migration.policy`: which conversions of groups in use are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationPolicy {
    /// Classic → consumer (`upgrade`, `bidirectional`).
    pub upgrade: bool,
    /// Consumer → classic (`downgrade`, `bidirectional`).
    pub downgrade: bool,
}

impl MigrationPolicy {
    /// Parses Kafka's values, case-insensitively: `disabled`, `upgrade`, `downgrade`,
    /// `bidirectional`.
    pub fn parse(value: &str) -> Option<MigrationPolicy> {
        let (upgrade, downgrade) = match value.trim().to_ascii_lowercase().as_str() {
            "disabled" => (false, false),
            "upgrade" => (true, false),
            "downgrade" => (false, true),
            "bidirectional" => (true, true),
            _ => return None,
        };
        Some(MigrationPolicy { upgrade, downgrade })
    }
}
