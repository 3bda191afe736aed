//! Statistics snapshots of a producer.

use crate::cluster::BrokerStats;
use crate::types::TopicPartition;

/// Per-partition counters of a statistics snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStats {
    /// Topic and partition.
    pub partition: TopicPartition,
    /// Records waiting in the accumulator.
    pub queued_records: usize,
    /// Batches handed to the network.
    pub batches_sent: u64,
    /// Batches retried.
    pub retries: u64,
    /// Batches in flight.
    pub in_flight: usize,
}

/// A statistics snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Records sent but not yet acknowledged or failed (held records included).
    pub pending_records: usize,
    /// Records held until their topic's metadata or room in `buffer.memory` arrives.
    pub held_records: usize,
    /// Per partition.
    pub partitions: Vec<PartitionStats>,
    /// Per broker connection.
    pub brokers: Vec<BrokerStats>,
}
