//! Cluster metadata for `list_topics`: one Metadata request for all topics or one, answered with
//! brokers, topics, partitions, leaders, replicas and ISRs (more than the core's cache keeps).

use odradek::cluster::Cluster;
use odradek::protocol::messages::metadata_request::MetadataRequestTopic;
use odradek::protocol::messages::{MetadataRequest, TopicName};
use odradek::protocol::types::StrBytes;
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

fn error_of(code: i16) -> Option<ClientError> {
    let code = ErrorCode::from_code(code);
    (!code.is_ok()).then(|| ClientError::from_core(&odradek::Error::Kafka(code), Stage::Request))
}

/// Asks any broker for metadata of `topic`, or of every topic.
pub async fn list_topics(
    cluster: &Cluster,
    topic: Option<&str>,
) -> Result<ClusterMeta, ClientError> {
    let map = |e: odradek::Error| ClientError::from_core(&e, Stage::Request);
    let mut meta = cluster.metadata();
    if meta.brokers.is_empty() {
        meta = cluster.refresh().await.map_err(map)?;
    }
    let mut ids: Vec<i32> = meta.brokers.keys().copied().collect();
    ids.sort_unstable();
    let mut last = ClientError::new(crate::codes::ALL_BROKERS_DOWN, None);
    for id in ids {
        let connection = match cluster.connection(id).await {
            Ok(c) => c,
            Err(e) => {
                last = map(e);
                continue;
            }
        };
        let request = MetadataRequest::default()
            .with_topics(topic.map(|t| {
                vec![MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))]
            }))
            .with_allow_auto_topic_creation(cluster.config().allow_auto_create_topics);
        let response = match connection.send(&request).await {
            Ok(r) => r,
            Err(e) => {
                cluster.on_error(&e);
                last = map(e);
                continue;
            }
        };
        let mut brokers: Vec<BrokerMeta> = response
            .brokers
            .iter()
            .map(|b| BrokerMeta {
                id: b.node_id.0,
                host: b.host.to_string(),
                port: b.port,
            })
            .collect();
        brokers.sort_by_key(|b| b.id);
        let topics = response
            .topics
            .iter()
            .filter_map(|t| {
                let name = t.name.as_ref()?.to_string();
                let mut partitions: Vec<PartitionMeta> = t
                    .partitions
                    .iter()
                    .map(|p| PartitionMeta {
                        id: p.partition_index,
                        leader: p.leader_id.0,
                        replicas: p.replica_nodes.iter().map(|n| n.0).collect(),
                        isrs: p.isr_nodes.iter().map(|n| n.0).collect(),
                        error: error_of(p.error_code),
                    })
                    .collect();
                partitions.sort_by_key(|p| p.id);
                Some(TopicMeta {
                    name,
                    partitions,
                    error: error_of(t.error_code),
                })
            })
            .collect();
        return Ok(ClusterMeta {
            cluster_id: response.cluster_id.as_ref().map(|c| c.to_string()),
            controller_id: response.controller_id.0,
            brokers,
            topics,
            orig_broker_id: id,
            orig_broker_name: connection.addr().to_string(),
        });
    }
    Err(last)
}
