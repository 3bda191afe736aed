//! Statistics snapshots of a producer.

use crate::cluster::{BrokerSnapshot, BrokerStats};
use crate::net::WindowSnapshot;
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
    /// Records in the batches in flight.
    pub in_flight_records: u64,
    /// The partition's leader from metadata (-1: unknown).
    pub leader: i32,
    /// Bytes of the records waiting in the accumulator (batch framing included).
    pub queued_bytes: u64,
    /// Records the broker acknowledged.
    pub acked_records: u64,
    /// Bytes of the batches the broker acknowledged.
    pub acked_bytes: u64,
}

/// Per-topic windows of the batches sent since the last snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicWindows {
    /// Topic name.
    pub topic: std::sync::Arc<str>,
    /// Batch sizes, bytes.
    pub batch_bytes: WindowSnapshot,
    /// Batch sizes, records.
    pub batch_records: WindowSnapshot,
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

/// A statistics snapshot in the detail of librdkafka's statistics (see
/// [`crate::Producer::detailed_stats`]).
#[derive(Debug, Clone, Default)]
pub struct ProducerDetail {
    /// The counters of [`ProducerStats`].
    pub basic: ProducerStats,
    /// Bytes of `buffer.memory` taken by records not yet settled.
    pub buffered_bytes: u64,
    /// `buffer.memory`.
    pub buffer_memory: u64,
    /// Per topic, batches sent since the last snapshot.
    pub topics: Vec<TopicWindows>,
    /// Per leader id, how long batches waited in the accumulator (microseconds).
    pub queue_latency: Vec<(i32, WindowSnapshot)>,
    /// The idempotent producer's id and epoch, once assigned.
    pub producer_id: Option<(i64, i16)>,
    /// Producer id assignments since start (epoch bumps included).
    pub producer_id_assignments: u64,
    /// When the current producer id was assigned.
    pub producer_id_since: Option<std::time::Instant>,
    /// The transaction state (transactional producers).
    pub transaction_state: Option<super::txn::TransactionState>,
    /// Per broker, with windows (starts new rtt and throttle windows).
    pub brokers: Vec<BrokerSnapshot>,
    /// Topics in the metadata cache.
    pub metadata_topics: usize,
    /// Age of the metadata, milliseconds.
    pub metadata_age_ms: u64,
}
