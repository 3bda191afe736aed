//! Coordinators in cluster mode: a group's coordinator is the leader of its
//! `__consumer_offsets` partition, a transactional id's the leader of its
//! `__transaction_state` partition. FindCoordinator answers that broker (and asks the
//! controller to create the topic on first use, with `offsets.topic.replication.factor` /
//! `transaction.state.log.replication.factor` replicas and, for transactions,
//! `transaction.state.log.min.isr` as its `min.insync.replicas`); a broker answers
//! NOT_COORDINATOR for a group or transactional id whose partition it does not lead.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, CreateTopicsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, RequestKind, ResponseKind, TopicName,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::sb;
use crate::broker::Broker;
use crate::cluster::ClusterNode;
use crate::coordinator::storage::partition_for_group;

/// Where `key` (a group id) is coordinated: the leader's id, host and port, or why not.
fn locate(
    broker: &Broker,
    node: &Arc<ClusterNode>,
    listener: &str,
    key_type: i8,
    key: &str,
) -> Result<(i32, String, u16), (ErrorCode, String)> {
    let (name, partitions, mut overrides, rf_key) = match key_type {
        0 if key.is_empty() => return Err((ErrorCode::InvalidGroupId, "empty group id".into())),
        0 => {
            let (name, partitions, overrides) = broker.groups.offsets_topic_spec();
            (
                name,
                partitions,
                overrides,
                "offsets.topic.replication.factor",
            )
        }
        1 if key.is_empty() => {
            return Err((ErrorCode::InvalidRequest, "empty transactional id".into()))
        }
        1 => {
            let (name, partitions, overrides) = broker.txns.topic_spec();
            (
                name,
                partitions,
                overrides,
                "transaction.state.log.replication.factor",
            )
        }
        other => {
            return Err((
                ErrorCode::InvalidRequest,
                format!("unknown key type {other}"),
            ))
        }
    };
    let leader = node.image.read(|i| {
        i.topics.get(name).map(|t| {
            t.partitions
                .get(&partition_for_group(key, partitions))
                .map_or(-1, |p| p.leader)
        })
    });
    let leader = match leader {
        None => {
            if key_type == 1 {
                overrides.insert(
                    "min.insync.replicas".to_string(),
                    broker
                        .config
                        .get("transaction.state.log.min.isr")
                        .to_string(),
                );
            }
            create_internal_topic(broker, node, name, partitions, overrides, rf_key);
            return Err((
                ErrorCode::CoordinatorNotAvailable,
                format!("{name} is being created"),
            ));
        }
        Some(l) if l < 0 => {
            return Err((
                ErrorCode::CoordinatorNotAvailable,
                format!("the key's {name} partition has no leader"),
            ))
        }
        Some(l) => l,
    };
    super::metadata::live_brokers(broker, listener)
        .into_iter()
        .find(|(id, ..)| *id == leader)
        .map(|(id, host, port, _)| (id, host, port))
        .ok_or((
            ErrorCode::CoordinatorNotAvailable,
            format!("coordinator {leader} has no endpoint on this listener"),
        ))
}

/// Asks the controller, in the background, to create a coordinator's internal topic with
/// the replication factor `rf_key` sets.
fn create_internal_topic(
    broker: &Broker,
    node: &Arc<ClusterNode>,
    name: &str,
    partitions: i32,
    overrides: std::collections::BTreeMap<String, String>,
    rf_key: &str,
) {
    let rf = broker.config.int(rf_key).clamp(1, i32::from(i16::MAX)) as i16;
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(rf)
            .with_configs(
                overrides
                    .into_iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(sb(k))
                            .with_value(Some(sb(v)))
                    })
                    .collect(),
            )]);
    let node = node.clone();
    tokio::spawn(async move {
        let answer = super::cluster_admin::forward(
            &node,
            &request,
            Duration::from_secs(10),
            |r: &CreateTopicsResponse| {
                r.topics
                    .iter()
                    .any(|t| t.error_code == ErrorCode::NotController.code())
            },
        )
        .await;
        match answer {
            Ok(r) => {
                for t in r.topics.iter().filter(|t| {
                    t.error_code != 0 && t.error_code != ErrorCode::TopicAlreadyExists.code()
                }) {
                    tracing::warn!(topic = %t.name.as_str(), error = t.error_code, message = ?t.error_message, "cannot create a coordinator's internal topic");
                }
            }
            Err(e) => tracing::debug!(error = %e, "internal topic creation not forwarded"),
        }
    });
}

/// FindCoordinator in cluster mode.
pub fn find_coordinator(
    broker: &Broker,
    node: &Arc<ClusterNode>,
    ctx: &RequestContext<'_>,
    r: FindCoordinatorRequest,
) -> ResponseKind {
    let listener = ctx.listener();
    let mut resp = FindCoordinatorResponse::default();
    if ctx.api_version >= 4 {
        resp.coordinators = r
            .coordinator_keys
            .iter()
            .map(|k| {
                let c = Coordinator::default().with_key(k.clone());
                match locate(broker, node, listener, r.key_type, k) {
                    Ok((id, host, port)) => c
                        .with_node_id(BrokerId(id))
                        .with_host(sb(host))
                        .with_port(i32::from(port)),
                    Err((code, message)) => c
                        .with_error_code(code.code())
                        .with_error_message(Some(sb(message)))
                        .with_node_id(BrokerId(-1))
                        .with_port(-1),
                }
            })
            .collect();
    } else {
        resp = match locate(broker, node, listener, r.key_type, &r.key) {
            Ok((id, host, port)) => resp
                .with_node_id(BrokerId(id))
                .with_host(sb(host))
                .with_port(i32::from(port)),
            Err((code, message)) => resp
                .with_error_code(code.code())
                .with_error_message(Some(sb(message)))
                .with_node_id(BrokerId(-1))
                .with_port(-1),
        };
    }
    ResponseKind::FindCoordinator(resp)
}

/// The groups a group-coordinator request names.
fn groups_of(body: &RequestKind) -> Vec<String> {
    match body {
        RequestKind::JoinGroup(r) => vec![r.group_id.to_string()],
        RequestKind::SyncGroup(r) => vec![r.group_id.to_string()],
        RequestKind::Heartbeat(r) => vec![r.group_id.to_string()],
        RequestKind::LeaveGroup(r) => vec![r.group_id.to_string()],
        RequestKind::OffsetCommit(r) => vec![r.group_id.to_string()],
        RequestKind::OffsetDelete(r) => vec![r.group_id.to_string()],
        RequestKind::TxnOffsetCommit(r) => vec![r.group_id.to_string()],
        RequestKind::OffsetFetch(r) if r.groups.is_empty() => vec![r.group_id.to_string()],
        RequestKind::OffsetFetch(r) => r.groups.iter().map(|g| g.group_id.to_string()).collect(),
        RequestKind::DescribeGroups(r) => r.groups.iter().map(|g| g.to_string()).collect(),
        RequestKind::DeleteGroups(r) => r.groups_names.iter().map(|g| g.to_string()).collect(),
        RequestKind::ConsumerGroupHeartbeat(r) => vec![r.group_id.to_string()],
        RequestKind::ConsumerGroupDescribe(r) => {
            r.group_ids.iter().map(|g| g.to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// The transactional ids a transaction-coordinator request names.
fn transactional_ids_of(body: &RequestKind, version: i16) -> Vec<String> {
    match body {
        RequestKind::InitProducerId(r) => r
            .transactional_id
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|t| vec![t.to_string()])
            .unwrap_or_default(),
        RequestKind::AddPartitionsToTxn(r) if version <= 3 => {
            vec![r.v3_and_below_transactional_id.to_string()]
        }
        RequestKind::AddPartitionsToTxn(r) => r
            .transactions
            .iter()
            .map(|t| t.transactional_id.to_string())
            .collect(),
        RequestKind::AddOffsetsToTxn(r) => vec![r.transactional_id.to_string()],
        RequestKind::EndTxn(r) => vec![r.transactional_id.to_string()],
        _ => Vec::new(),
    }
}

/// In cluster mode, a request for a group or transactional id this broker does not
/// coordinate is answered NOT_COORDINATOR (the whole request: clients send one coordinator's
/// groups together).
pub fn refuse_foreign_groups(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: &RequestKind,
) -> crate::Result<Option<Option<ResponseKind>>> {
    if broker.cluster_node().is_none() {
        return Ok(None);
    }
    let groups = groups_of(body);
    let ids = transactional_ids_of(body, ctx.api_version);
    if groups.iter().all(|g| broker.groups.coordinates(g))
        && ids.iter().all(|t| broker.txns.coordinates(t))
    {
        return Ok(None);
    }
    super::error_response::error_response(broker, ctx, body, ErrorCode::NotCoordinator).map(Some)
}
