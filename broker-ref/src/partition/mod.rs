//! Partition state: the log plus the offsets the protocol exposes (log start offset, high
//! watermark, last stable offset, leader epoch), and the registry of topics.
//!
//! On a single node every appended batch is immediately "replicated", so the high watermark
//! follows the log end offset; the fields are kept apart so replication and transactions can
//! move them independently later.

mod append;
mod descriptors;
mod markers;
mod parallel;
mod producer_state;
mod registry;
mod replica_state;
mod replication;
mod snapshot;
#[cfg(test)]
mod snapshot_tests;
mod state;
mod txn;
mod waiters;

pub use append::ValidRecordSet;
pub use markers::Marker;
pub use producer_state::{BatchRecord, ProducerState, ProducerSummary, SequenceCheck};
pub use registry::{
    validate_topic_name, write_atomically as write_meta, Topic, TopicRegistry, INTERNAL_TOPICS,
    METADATA_LOG_DIR, METADATA_TOPIC,
};
pub use replica_state::{
    Followed, IsrChange, LeaderAndIsr, ReplicaCandidate, ReplicaRead, Replication, ReplicationView,
    Role as ReplicaRole,
};
pub use state::{close_all, FetchOutcome, Partition, ProduceOutcome, Progress, LEADER_EPOCH};
