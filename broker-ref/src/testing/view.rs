//! One broker's [`ClusterView`]: which partitions it leads, which groups and transactional ids
//! it coordinates, which API versions it serves, and the cluster-describing responses
//! rewritten to show every broker of the test cluster.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{ApiKey, BrokerId, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

use super::node::Connections;
use super::topology::{CoordinatorKind, Topology};
use crate::broker::Broker;
use crate::handlers::kafka4_api_versions::ApiRange;
use crate::handlers::RequestContext;
use crate::server::items::Item;
use crate::server::ClusterView;

/// Reads the shared topology (a panic elsewhere cannot leave it half-updated in a way that
/// matters to a test more than the panic itself).
pub(crate) fn read(t: &RwLock<Topology>) -> RwLockReadGuard<'_, Topology> {
    t.read().unwrap_or_else(PoisonError::into_inner)
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Broker `node_id`'s view.
#[derive(Debug)]
pub(crate) struct NodeView {
    pub(crate) node_id: i32,
    pub(crate) broker: Arc<Broker>,
    pub(crate) topology: Arc<RwLock<Topology>>,
    pub(crate) connections: Arc<Connections>,
}

/// The group or transactional id a coordinator request is about.
fn coordinator_key(request: &RequestKind, version: i16) -> Option<(CoordinatorKind, String)> {
    use CoordinatorKind::{Group, Transaction};
    let key = match request {
        RequestKind::JoinGroup(r) => (Group, r.group_id.to_string()),
        RequestKind::SyncGroup(r) => (Group, r.group_id.to_string()),
        RequestKind::Heartbeat(r) => (Group, r.group_id.to_string()),
        RequestKind::LeaveGroup(r) => (Group, r.group_id.to_string()),
        RequestKind::OffsetCommit(r) => (Group, r.group_id.to_string()),
        RequestKind::TxnOffsetCommit(r) => (Group, r.group_id.to_string()),
        RequestKind::OffsetFetch(r) if version >= 8 => {
            (Group, r.groups.first()?.group_id.to_string())
        }
        RequestKind::OffsetFetch(r) => (Group, r.group_id.to_string()),
        RequestKind::InitProducerId(r) => (Transaction, r.transactional_id.as_ref()?.to_string()),
        RequestKind::AddPartitionsToTxn(r) if version <= 3 => {
            (Transaction, r.v3_and_below_transactional_id.to_string())
        }
        RequestKind::AddPartitionsToTxn(r) => (
            Transaction,
            r.transactions.first()?.transactional_id.to_string(),
        ),
        RequestKind::AddOffsetsToTxn(r) => (Transaction, r.transactional_id.to_string()),
        RequestKind::EndTxn(r) => (Transaction, r.transactional_id.to_string()),
        _ => return None,
    };
    (!key.1.is_empty()).then_some(key)
}

/// Where the test cluster places one partition: its leader (-1 when it has none up), epoch,
/// replicas, in-sync replicas and offline replicas.
struct Placement {
    leader: i32,
    epoch: i32,
    replicas: Vec<BrokerId>,
    isr: Vec<BrokerId>,
    offline: Vec<BrokerId>,
}

impl Placement {
    fn of(t: &Topology, topic: &str, partition: i32) -> Placement {
        let role = t.role(topic, partition);
        let mut replicas = Vec::new();
        if role.leader >= 0 {
            replicas.push(BrokerId(role.leader));
        }
        replicas.extend(role.follower.map(BrokerId));
        let up = role.leader >= 0 && t.is_up(role.leader);
        Placement {
            leader: if up { role.leader } else { -1 },
            epoch: role.epoch,
            isr: if up { replicas.clone() } else { Vec::new() },
            offline: if up { Vec::new() } else { replicas.clone() },
            replicas,
        }
    }
}

impl NodeView {
    fn topology(&self) -> RwLockReadGuard<'_, Topology> {
        read(&self.topology)
    }

    fn rewrite_metadata(&self, t: &Topology, r: &mut kafka_protocol::messages::MetadataResponse) {
        r.brokers = t
            .nodes()
            .iter()
            .filter(|n| n.up)
            .map(|n| {
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(n.id))
                    .with_host(sb(&n.host))
                    .with_port(i32::from(n.port))
                    .with_rack(n.rack.as_deref().map(sb))
            })
            .collect();
        r.controller_id = BrokerId(t.controller());
        for topic in &mut r.topics {
            let Some(name) = topic.name.as_ref().filter(|_| topic.error_code == 0) else {
                continue;
            };
            for p in &mut topic.partitions {
                let place = Placement::of(t, name, p.partition_index);
                p.error_code = if place.leader >= 0 {
                    0
                } else {
                    ErrorCode::LeaderNotAvailable.code()
                };
                p.leader_epoch = place.epoch;
                p.leader_id = BrokerId(place.leader);
                p.isr_nodes = place.isr;
                p.offline_replicas = place.offline;
                p.replica_nodes = place.replicas;
            }
        }
    }

    /// DescribeTopicPartitions as the test cluster places partitions (no partition error, as
    /// Kafka answers it: a partition without a live leader has leader -1).
    fn rewrite_describe_topic_partitions(
        &self,
        t: &Topology,
        r: &mut kafka_protocol::messages::DescribeTopicPartitionsResponse,
    ) {
        for topic in &mut r.topics {
            let Some(name) = topic.name.as_ref().filter(|_| topic.error_code == 0) else {
                continue;
            };
            for p in &mut topic.partitions {
                let place = Placement::of(t, name, p.partition_index);
                p.leader_epoch = place.epoch;
                p.leader_id = BrokerId(place.leader);
                p.isr_nodes = place.isr;
                p.offline_replicas = place.offline;
                p.replica_nodes = place.replicas;
            }
        }
    }

    fn rewrite_find_coordinator(
        &self,
        t: &Topology,
        request: Option<&RequestKind>,
        r: &mut kafka_protocol::messages::FindCoordinatorResponse,
        version: i16,
    ) {
        let Some(RequestKind::FindCoordinator(q)) = request else {
            return;
        };
        let Some(kind) = CoordinatorKind::from_key_type(q.key_type) else {
            return;
        };
        // (node id, host, port, error code) for a key whose lookup succeeded.
        let place = |key: &str| -> (i32, String, i32, i16) {
            let node = t.coordinator(kind, key);
            match t.node(node).filter(|n| n.up) {
                Some(n) => (n.id, n.host.clone(), i32::from(n.port), 0),
                None => (
                    -1,
                    String::new(),
                    -1,
                    ErrorCode::CoordinatorNotAvailable.code(),
                ),
            }
        };
        if version >= 4 {
            for c in r.coordinators.iter_mut().filter(|c| c.error_code == 0) {
                let (node, host, port, e) = place(&c.key);
                c.node_id = BrokerId(node);
                c.host = sb(&host);
                c.port = port;
                c.error_code = e;
            }
        } else if r.error_code == 0 {
            let (node, host, port, e) = place(&q.key);
            r.node_id = BrokerId(node);
            r.host = sb(&host);
            r.port = port;
            r.error_code = e;
        }
    }
}

impl ClusterView for NodeView {
    fn node_id(&self) -> i32 {
        self.node_id
    }

    fn version_range(&self, advertised: ApiRange) -> Option<ApiRange> {
        let Some((min, max)) = self.topology().versions(advertised.api_key) else {
            return Some(advertised);
        };
        let clamped = ApiRange {
            api_key: advertised.api_key,
            min: advertised.min.max(min),
            max: advertised.max.min(max),
        };
        (clamped.min <= clamped.max).then_some(clamped)
    }

    fn observe(&self, ctx: &RequestContext<'_>) {
        self.connections.note_client_id(ctx.peer(), ctx.client_id());
    }

    fn refuse(&self, ctx: &RequestContext<'_>, request: &RequestKind) -> Option<ErrorCode> {
        let (kind, key) = coordinator_key(request, ctx.api_version)?;
        (self.topology().coordinator(kind, &key) != self.node_id)
            .then_some(ErrorCode::NotCoordinator)
    }

    fn refuse_item(&self, api_key: ApiKey, item: &Item) -> Option<ErrorCode> {
        let topic = self.broker.topics.get(&item.topic)?;
        if item.partition < 0 || item.partition >= topic.partition_count() {
            return None;
        }
        let role = self.topology().role(&item.topic, item.partition);
        let serves = role.leader == self.node_id
            || (api_key == ApiKey::Fetch && role.follower == Some(self.node_id));
        if !serves {
            return Some(ErrorCode::NotLeaderOrFollower);
        }
        match item.current_leader_epoch {
            e if e < 0 => None,
            e if e < role.epoch => Some(ErrorCode::FencedLeaderEpoch),
            e if e > role.epoch => Some(ErrorCode::UnknownLeaderEpoch),
            _ => None,
        }
    }

    fn rewrite(
        &self,
        _broker: &Broker,
        ctx: &RequestContext<'_>,
        request: Option<&RequestKind>,
        response: &mut ResponseKind,
    ) {
        let t = self.topology();
        match response {
            ResponseKind::Metadata(r) => self.rewrite_metadata(&t, r),
            ResponseKind::DescribeTopicPartitions(r) => {
                self.rewrite_describe_topic_partitions(&t, r)
            }
            ResponseKind::DescribeCluster(r) => {
                r.brokers = t
                    .nodes()
                    .iter()
                    .filter(|n| n.up)
                    .map(|n| {
                        DescribeClusterBroker::default()
                            .with_broker_id(BrokerId(n.id))
                            .with_host(sb(&n.host))
                            .with_port(i32::from(n.port))
                            .with_rack(n.rack.as_deref().map(sb))
                    })
                    .collect();
                r.controller_id = BrokerId(t.controller());
            }
            ResponseKind::FindCoordinator(r) => {
                self.rewrite_find_coordinator(&t, request, r, ctx.api_version)
            }
            ResponseKind::ApiVersions(r) => {
                drop(t);
                r.api_keys.retain_mut(|k| {
                    let advertised = ApiRange {
                        api_key: k.api_key,
                        min: k.min_version,
                        max: k.max_version,
                    };
                    match self.version_range(advertised) {
                        Some(c) => {
                            k.min_version = c.min;
                            k.max_version = c.max;
                            true
                        }
                        None => false,
                    }
                });
            }
            ResponseKind::Fetch(r) => {
                for topic in &mut r.responses {
                    let name = if topic.topic.is_empty() {
                        match self.broker.topics.get_by_id(topic.topic_id) {
                            Some(t) => t.name.clone(),
                            None => continue,
                        }
                    } else {
                        topic.topic.to_string()
                    };
                    for p in topic.partitions.iter_mut().filter(|p| p.error_code == 0) {
                        let role = t.role(&name, p.partition_index);
                        let serves =
                            role.leader == self.node_id || role.follower == Some(self.node_id);
                        if !serves {
                            // The partition moved away while this fetch long-polled: answer
                            // as Kafka completes such a delayed fetch, with no records.
                            p.error_code = ErrorCode::NotLeaderOrFollower.code();
                            p.high_watermark = -1;
                            p.last_stable_offset = -1;
                            p.log_start_offset = -1;
                            p.aborted_transactions = None;
                            p.records = Some(bytes::Bytes::new());
                            continue;
                        }
                        if role.leader != self.node_id || ctx.api_version < 11 {
                            continue;
                        }
                        if let Some(f) = role.follower.filter(|f| t.is_up(*f)) {
                            // KIP-392: the leader names the replica to fetch from and returns
                            // no records itself.
                            p.preferred_read_replica = BrokerId(f);
                            p.records = Some(bytes::Bytes::new());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn response_delay(&self) -> Option<Duration> {
        self.topology().rtt(self.node_id)
    }
}
