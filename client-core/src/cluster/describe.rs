//! A full Metadata answer (replicas, ISR, offline replicas, controller) for callers that show
//! it — librdkafka's `rd_kafka_metadata`, confluent-kafka's `list_topics` — rather than use
//! it for routing, which the cache in [`super::ClusterMetadata`] serves.

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::metadata::BrokerInfo;
use super::view::Cluster;
use crate::{Error, ErrorCode, Result};

/// A partition as one Metadata response describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDetail {
    /// Partition index.
    pub partition: i32,
    /// Leader node id (-1 when none).
    pub leader: i32,
    /// Leader epoch (-1 when not reported).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
    /// Offline replica node ids.
    pub offline: Vec<i32>,
    /// Partition-level error.
    pub error: ErrorCode,
}

/// A topic as one Metadata response describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDetail {
    /// Name.
    pub name: String,
    /// Topic id.
    pub id: Uuid,
    /// Whether the topic is internal (`__consumer_offsets`, ...).
    pub internal: bool,
    /// Partitions in index order.
    pub partitions: Vec<PartitionDetail>,
    /// Topic-level error (`UNKNOWN_TOPIC_OR_PARTITION` for a topic that does not exist).
    pub error: ErrorCode,
}

/// One broker's whole Metadata answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataDetail {
    /// Cluster id.
    pub cluster_id: Option<String>,
    /// Controller node id (-1 when unknown).
    pub controller: i32,
    /// Brokers by ascending node id.
    pub brokers: Vec<BrokerInfo>,
    /// Topics, in the order the broker listed them.
    pub topics: Vec<TopicDetail>,
    /// The node that answered, and its address.
    pub answered_by: (i32, String),
}

fn detail(response: &MetadataResponse, answered_by: (i32, String)) -> MetadataDetail {
    let mut brokers: Vec<BrokerInfo> = response
        .brokers
        .iter()
        .map(|b| BrokerInfo {
            node_id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(|r| r.to_string()),
        })
        .collect();
    brokers.sort_by_key(|b| b.node_id);
    let topics = response
        .topics
        .iter()
        .filter_map(|t| {
            let name = t.name.as_ref()?.to_string();
            let mut partitions: Vec<PartitionDetail> = t
                .partitions
                .iter()
                .map(|p| PartitionDetail {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|n| n.0).collect(),
                    isr: p.isr_nodes.iter().map(|n| n.0).collect(),
                    offline: p.offline_replicas.iter().map(|n| n.0).collect(),
                    error: ErrorCode::from_code(p.error_code),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            Some(TopicDetail {
                name,
                id: t.topic_id,
                internal: t.is_internal,
                partitions,
                error: ErrorCode::from_code(t.error_code),
            })
        })
        .collect();
    MetadataDetail {
        cluster_id: response.cluster_id.as_ref().map(|c| c.to_string()),
        controller: response.controller_id.0,
        brokers,
        topics,
        answered_by,
    }
}

impl Cluster {
    /// Asks the known brokers, in node id order, for the metadata of `topic` (or of every topic
    /// when `None`; auto-creating `topic` where `allow.auto.create.topics` and the broker allow)
    /// and returns the first whole answer. Fails with the last broker's error when none answers,
    /// or `BROKER_NOT_AVAILABLE` when no broker is known even after a refresh.
    pub async fn describe_metadata(&self, topic: Option<&str>) -> Result<MetadataDetail> {
        let mut meta = self.metadata();
        if meta.brokers.is_empty() {
            meta = self.refresh().await?;
        }
        let mut ids: Vec<i32> = meta.brokers.keys().copied().collect();
        ids.sort_unstable();
        let request = MetadataRequest::default()
            .with_topics(topic.map(|t| {
                vec![MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))]
            }))
            .with_allow_auto_topic_creation(self.config().allow_auto_create_topics);
        let mut last = Error::Kafka(ErrorCode::BrokerNotAvailable);
        for id in ids {
            let connection = match self.connection(id).await {
                Ok(c) => c,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            match connection.send(&request).await {
                Ok(response) => {
                    return Ok(detail(&response, (id, connection.addr().to_string())));
                }
                Err(e) => {
                    self.on_error(&e);
                    last = e;
                }
            }
        }
        Err(last)
    }
}
