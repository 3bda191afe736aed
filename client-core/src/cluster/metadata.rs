//! An immutable metadata snapshot and the rules for merging a Metadata response into it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::MetadataResponse;
use uuid::Uuid;

use crate::ErrorCode;

/// A broker's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// Node id.
    pub node_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Rack, if configured.
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// The brokers a response lists in `node_endpoints` for its leader hints (KIP-951), from
    /// `(node id, host, port, rack)` of each.
    pub(crate) fn hinted<'a>(
        nodes: impl Iterator<Item = (i32, &'a str, i32, Option<&'a str>)>,
    ) -> Vec<BrokerInfo> {
        nodes
            .map(|(node_id, host, port, rack)| BrokerInfo {
                node_id,
                host: host.to_string(),
                port,
                rack: rack.map(str::to_string),
            })
            .collect()
    }
}

/// One partition's leadership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Partition index.
    pub partition: i32,
    /// Leader node id, or -1 when unknown.
    pub leader: i32,
    /// Leader epoch (-1 when unknown).
    pub leader_epoch: i32,
    /// Partition-level error from the broker.
    pub error: ErrorCode,
}

/// One topic.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicInfo {
    /// Name.
    pub name: String,
    /// Topic id.
    pub id: Uuid,
    /// Partitions in index order.
    pub partitions: Vec<PartitionInfo>,
    /// Topic-level error.
    pub error: ErrorCode,
}

/// A metadata snapshot.
#[derive(Debug, Clone)]
pub struct ClusterMetadata {
    /// Cluster id.
    pub cluster_id: Option<String>,
    /// Controller node id.
    pub controller: i32,
    /// Brokers by node id.
    pub brokers: HashMap<i32, BrokerInfo>,
    /// Topics by name.
    pub topics: HashMap<String, TopicInfo>,
    fetched_at: Instant,
}

impl Default for ClusterMetadata {
    fn default() -> Self {
        ClusterMetadata {
            cluster_id: None,
            controller: -1,
            brokers: HashMap::new(),
            topics: HashMap::new(),
            fetched_at: Instant::now() - Duration::from_secs(1 << 30),
        }
    }
}

impl ClusterMetadata {
    /// Time since this snapshot was fetched.
    pub fn age(&self) -> Duration {
        self.fetched_at.elapsed()
    }

    /// The leader of `topic`/`partition`, if known.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.topics
            .get(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)
            .map(|p| p.leader)
            .filter(|&l| l >= 0)
    }

    /// A new snapshot: this one with a response merged in. Brokers are replaced; each topic in
    /// the response replaces ours, except that a partition whose cached leader epoch is newer
    /// than the response's keeps the cached entry (KIP-320).
    pub fn merge(&self, response: &MetadataResponse) -> ClusterMetadata {
        let brokers = response
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    BrokerInfo {
                        node_id: b.node_id.0,
                        host: b.host.to_string(),
                        port: b.port,
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                    },
                )
            })
            .collect();
        let mut topics = self.topics.clone();
        for t in &response.topics {
            let Some(name) = t.name.as_ref().map(|n| n.to_string()) else {
                continue;
            };
            let mut partitions: Vec<PartitionInfo> = t
                .partitions
                .iter()
                .map(|p| PartitionInfo {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    error: ErrorCode::from_code(p.error_code),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            if let Some(old) = self.topics.get(&name) {
                for p in partitions.iter_mut() {
                    if let Some(prev) = old.partitions.iter().find(|o| o.partition == p.partition) {
                        if prev.leader_epoch > p.leader_epoch && p.leader_epoch >= 0 {
                            *p = *prev;
                        }
                    }
                }
            }
            topics.insert(
                name.clone(),
                TopicInfo {
                    name,
                    id: t.topic_id,
                    partitions,
                    error: ErrorCode::from_code(t.error_code),
                },
            );
        }
        ClusterMetadata {
            cluster_id: response.cluster_id.as_ref().map(|c| c.to_string()),
            controller: response.controller_id.0,
            brokers,
            topics,
            fetched_at: Instant::now(),
        }
    }

    /// This snapshot with a partition's new leader from an error response's hint (KIP-951:
    /// Produce and Fetch answer NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the current
    /// leader and its endpoint), or `None` when the hint is unusable: the partition is unknown,
    /// the hint's epoch is not newer than ours (KIP-320: epochs never go back), or the leader's
    /// address is neither known nor in `endpoints`. The snapshot keeps its age, so the regular
    /// refresh still happens on time.
    pub fn with_leader_hint(
        &self,
        topic: &str,
        partition: i32,
        leader: i32,
        leader_epoch: i32,
        endpoints: &[BrokerInfo],
    ) -> Option<ClusterMetadata> {
        if leader < 0 || leader_epoch < 0 {
            return None;
        }
        let current = self
            .topics
            .get(topic)?
            .partitions
            .iter()
            .find(|p| p.partition == partition)?;
        if leader_epoch <= current.leader_epoch {
            return None;
        }
        let mut brokers = self.brokers.clone();
        for b in endpoints {
            brokers.entry(b.node_id).or_insert_with(|| b.clone());
        }
        if !brokers.contains_key(&leader) {
            return None;
        }
        let mut topics = self.topics.clone();
        let info = topics.get_mut(topic)?;
        let p = info
            .partitions
            .iter_mut()
            .find(|p| p.partition == partition)?;
        p.leader = leader;
        p.leader_epoch = leader_epoch;
        p.error = ErrorCode::NoError;
        Some(ClusterMetadata {
            cluster_id: self.cluster_id.clone(),
            controller: self.controller,
            brokers,
            topics,
            fetched_at: self.fetched_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn response(leader: i32, epoch: i32) -> MetadataResponse {
        MetadataResponse::default()
            .with_brokers(vec![MetadataResponseBroker::default()
                .with_node_id(BrokerId(leader))
                .with_host(StrBytes::from_static_str("h"))
                .with_port(9092)])
            .with_topics(vec![MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                .with_partitions(vec![MetadataResponsePartition::default()
                    .with_partition_index(0)
                    .with_leader_id(BrokerId(leader))
                    .with_leader_epoch(epoch)])])
    }

    #[test]
    fn newer_epoch_replaces_older_never_the_reverse() {
        let m = ClusterMetadata::default().merge(&response(1, 5));
        assert_eq!(m.leader("t", 0), Some(1));
        let newer = m.merge(&response(2, 6));
        assert_eq!(newer.leader("t", 0), Some(2));
        let stale = newer.merge(&response(1, 4));
        assert_eq!(
            stale.leader("t", 0),
            Some(2),
            "stale epoch 4 must not overwrite 6"
        );
        assert_eq!(stale.topics["t"].partitions[0].leader_epoch, 6);
        assert_eq!(stale.leader("t", 7), None);
    }

    #[test]
    fn leader_hints_move_a_partition_only_forward_and_to_a_known_address() {
        let m = ClusterMetadata::default().merge(&response(1, 5));
        let b2 = BrokerInfo {
            node_id: 2,
            host: "h2".into(),
            port: 9093,
            rack: None,
        };
        // Newer epoch with the new leader's endpoint: applied, endpoint learned.
        let moved = m
            .with_leader_hint("t", 0, 2, 6, std::slice::from_ref(&b2))
            .unwrap();
        assert_eq!(moved.leader("t", 0), Some(2));
        assert_eq!(moved.topics["t"].partitions[0].leader_epoch, 6);
        assert_eq!(moved.brokers[&2].host, "h2");
        // Not newer, unknown leader address, unknown partition or topic, no hint: ignored.
        assert!(moved.with_leader_hint("t", 0, 1, 6, &[]).is_none());
        assert!(moved.with_leader_hint("t", 0, 1, 5, &[]).is_none());
        assert!(m.with_leader_hint("t", 0, 3, 7, &[]).is_none());
        assert!(m
            .with_leader_hint("t", 9, 2, 7, std::slice::from_ref(&b2))
            .is_none());
        assert!(m.with_leader_hint("nope", 0, 2, 7, &[b2]).is_none());
        assert!(m.with_leader_hint("t", 0, -1, -1, &[]).is_none());
        // A known broker needs no endpoint.
        let back = moved.with_leader_hint("t", 0, 1, 7, &[]).unwrap();
        assert_eq!(back.leader("t", 0), Some(1));
    }
}
