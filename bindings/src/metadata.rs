//! Cluster metadata for `list_topics`: the core's [`Cluster::describe_metadata`] (brokers,
//! topics, partitions, leaders, replicas and ISRs) with errors in the shells' form.

use odradek::cluster::{Cluster, MetadataDetail};
use odradek::ErrorCode;

use crate::{ClientError, Stage};

/// A broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMeta {
    /// Node id.
    pub id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
}

/// A partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    /// Partition index.
    pub id: i32,
    /// Leader node id (-1 when none).
    pub leader: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isrs: Vec<i32>,
    /// Partition-level error.
    pub error: Option<ClientError>,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// Name.
    pub name: String,
    /// Partitions in index order.
    pub partitions: Vec<PartitionMeta>,
    /// Topic-level error (`UNKNOWN_TOPIC_OR_PART` for a topic that does not exist).
    pub error: Option<ClientError>,
}

/// What `list_topics` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMeta {
    /// Cluster id.
    pub cluster_id: Option<String>,
    /// Controller node id (-1 when unknown).
    pub controller_id: i32,
    /// Brokers.
    pub brokers: Vec<BrokerMeta>,
    /// Topics.
    pub topics: Vec<TopicMeta>,
    /// The broker that answered.
    pub orig_broker_id: i32,
    /// Its address.
    pub orig_broker_name: String,
}

fn error_of(code: ErrorCode) -> Option<ClientError> {
    (!code.is_ok()).then(|| ClientError::from_core(&odradek::Error::Kafka(code), Stage::Request))
}

fn convert(detail: MetadataDetail) -> ClusterMeta {
    ClusterMeta {
        cluster_id: detail.cluster_id,
        controller_id: detail.controller,
        brokers: detail
            .brokers
            .into_iter()
            .map(|b| BrokerMeta {
                id: b.node_id,
                host: b.host,
                port: b.port,
            })
            .collect(),
        topics: detail
            .topics
            .into_iter()
            .map(|t| TopicMeta {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionMeta {
                        id: p.partition,
                        leader: p.leader,
                        replicas: p.replicas,
                        isrs: p.isr,
                        error: error_of(p.error),
                    })
                    .collect(),
                error: error_of(t.error),
            })
            .collect(),
        orig_broker_id: detail.answered_by.0,
        orig_broker_name: detail.answered_by.1,
    }
}

/// Asks any broker for metadata of `topic`, or of every topic (`_ALL_BROKERS_DOWN` when no
/// broker is known).
pub async fn list_topics(
    cluster: &Cluster,
    topic: Option<&str>,
) -> Result<ClusterMeta, ClientError> {
    match cluster.describe_metadata(topic).await {
        Ok(detail) => Ok(convert(detail)),
        Err(odradek::Error::Kafka(ErrorCode::BrokerNotAvailable)) => {
            Err(ClientError::new(crate::codes::ALL_BROKERS_DOWN, None))
        }
        Err(e) => Err(ClientError::from_core(&e, Stage::Request)),
    }
}
