//! The client's view of the cluster: brokers, topics, partitions, leaders and leader epochs, and
//! one connection per broker.
//!
//! Metadata is refreshed when it is older than `metadata.max.age.ms`, when a caller reports an
//! error that invalidates it (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, …, or a lost
//! connection), and for topics not yet known. Concurrent refreshes are merged: a caller that
//! arrives while one is running waits for it instead of sending another. A partition's leader
//! epoch never moves backwards (KIP-320): an answer from a broker with staler metadata keeps the
//! newer entry.

pub(crate) mod backoff;
mod coordinator;
mod describe;
mod error_events;
mod health;
mod metadata;
mod slot_key;
mod stats;
mod view;

pub use coordinator::CoordinatorType;
pub use describe::{MetadataDetail, PartitionDetail, TopicDetail};
pub use error_events::ErrorListener;
pub use metadata::{BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo};
pub use stats::BrokerSnapshot;
pub use view::{BrokerStats, Cluster};
