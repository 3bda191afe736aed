//! Metadata: brokers, topics, partitions and leaders; auto-creates topics when allowed.

use std::collections::BTreeMap;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, MetadataRequest, MetadataResponse, ResponseKind, TopicName,
};
use odradek::ErrorCode;
use uuid::Uuid;

use super::authz::{self, Authz};
use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::partition::{Topic, LEADER_EPOCH};
use crate::security::acl::{AclOperation as Op, ResourceType as Rt};

/// Describes one topic's partitions: in cluster mode as the metadata image has them (leader,
/// epochs, replicas, ISR, offline replicas; LEADER_NOT_AVAILABLE for a partition without a
/// leader), else this single node as every partition's only replica.
pub(crate) fn describe_topic(broker: &Broker, topic: &Topic) -> MetadataResponseTopic {
    let node = BrokerId(broker.node_id);
    if let Some(cluster) = broker.cluster_node() {
        let partitions = cluster.image.read(|image| {
            let usable: std::collections::BTreeSet<i32> =
                image.usable_brokers().map(|b| b.id).collect();
            image
                .topics
                .get(&topic.name)
                .map(|t| {
                    t.partitions
                        .iter()
                        .map(|(index, p)| {
                            let ids = |v: &[i32]| v.iter().map(|b| BrokerId(*b)).collect();
                            let offline: Vec<i32> = p
                                .replicas
                                .iter()
                                .copied()
                                .filter(|r| !usable.contains(r))
                                .collect();
                            let error = if p.leader < 0 {
                                ErrorCode::LeaderNotAvailable.code()
                            } else {
                                0
                            };
                            MetadataResponsePartition::default()
                                .with_error_code(error)
                                .with_partition_index(*index)
                                .with_leader_id(BrokerId(p.leader))
                                .with_leader_epoch(p.leader_epoch)
                                .with_replica_nodes(ids(&p.replicas))
                                .with_isr_nodes(ids(&p.isr))
                                .with_offline_replicas(ids(&offline))
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        });
        return MetadataResponseTopic::default()
            .with_name(Some(TopicName(sb(&topic.name))))
            .with_topic_id(topic.id)
            .with_is_internal(topic.is_internal())
            .with_partitions(partitions)
            .with_topic_authorized_operations(i32::MIN);
    }
    let partitions = (0..topic.partition_count())
        .map(|i| {
            MetadataResponsePartition::default()
                .with_partition_index(i)
                .with_leader_id(node)
                .with_leader_epoch(LEADER_EPOCH)
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(sb(&topic.name))))
        .with_topic_id(topic.id)
        .with_is_internal(topic.is_internal())
        .with_partitions(partitions)
        .with_topic_authorized_operations(i32::MIN)
}

fn missing_topic(name: Option<TopicName>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(name)
        .with_topic_id(id)
        .with_error_code(code.code())
}

/// A topic the principal may not DESCRIBE: its name is echoed (never its id, nor whether it
/// exists), as Kafka answers.
fn unauthorized_topic(name: Option<TopicName>, id: Uuid) -> MetadataResponseTopic {
    let by_id = name.is_none();
    MetadataResponseTopic::default()
        .with_name(name)
        .with_topic_id(if by_id { id } else { Uuid::nil() })
        .with_error_code(ErrorCode::TopicAuthorizationFailed.code())
}

/// Handles Metadata: with an authorizer, topics the principal may not DESCRIBE are left out of
/// an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs
/// CREATE on the cluster or the topic; `authorized_operations` are the principal's.
pub fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: MetadataRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let include_ops = request.include_topic_authorized_operations && version >= 8;
    let az = Authz::of(broker, ctx);
    let may = |op: Op, name: &str| az.as_ref().is_none_or(|a| a.allowed(op, Rt::Topic, name));
    let all = match &request.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    let mut topics: Vec<MetadataResponseTopic> = if all {
        broker
            .topics
            .list()
            .iter()
            .filter(|t| may(Op::Describe, &t.name))
            .map(|t| describe_topic(broker, t))
            .collect()
    } else {
        let auto_create =
            request.allow_auto_topic_creation && broker.config.bool("auto.create.topics.enable");
        let create_cluster = az.as_ref().is_none_or(|a| a.cluster(Op::Create));
        request
            .topics
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let name = match (&t.name, t.topic_id.is_nil()) {
                    (Some(n), _) => Some(n.to_string()),
                    (None, false) => broker.topics.get_by_id(t.topic_id).map(|t| t.name.clone()),
                    (None, true) => None,
                };
                match name {
                    Some(n) if !may(Op::Describe, &n) => unauthorized_topic(t.name, t.topic_id),
                    Some(n)
                        if auto_create
                            && !create_cluster
                            && broker.topics.get(&n).is_none()
                            && !may(Op::Create, &n) =>
                    {
                        unauthorized_topic(t.name, Uuid::nil()).with_is_internal(
                            crate::partition::INTERNAL_TOPICS.contains(&n.as_str()),
                        )
                    }
                    _ => lookup(broker, t.name, t.topic_id, auto_create),
                }
            })
            .collect()
    };
    if include_ops {
        for t in &mut topics {
            if t.error_code == 0 {
                if let Some(name) = &t.name {
                    t.topic_authorized_operations = authz::operations(broker, ctx, Rt::Topic, name);
                }
            }
        }
    }
    let cluster_ops =
        if request.include_cluster_authorized_operations && (8..=10).contains(&version) {
            cluster_operations(broker, ctx)
        } else {
            i32::MIN
        };
    let response = cluster_part(broker, ctx.listener())
        .with_topics(topics)
        .with_cluster_authorized_operations(cluster_ops);
    Ok(ResponseKind::Metadata(response))
}

/// The cluster's `authorized_operations`: 0 without DESCRIBE on the cluster, as Kafka answers.
pub(crate) fn cluster_operations(broker: &Broker, ctx: &RequestContext<'_>) -> i32 {
    match Authz::of(broker, ctx) {
        Some(a) if !a.cluster(Op::Describe) => 0,
        _ => authz::operations(broker, ctx, Rt::Cluster, crate::security::acl::CLUSTER_NAME),
    }
}

/// The brokers a client may use, as (id, host, port, rack) for `listener`: in cluster mode
/// every registered, unfenced broker with an endpoint on that listener; else this broker.
pub(crate) fn live_brokers(
    broker: &Broker,
    listener: &str,
) -> Vec<(i32, String, u16, Option<String>)> {
    if let Some(cluster) = broker.cluster_node() {
        return cluster.image.read(|image| {
            image
                .brokers
                .values()
                .filter(|b| !b.fenced)
                .filter_map(|b| {
                    let e = b
                        .endpoints
                        .iter()
                        .find(|e| e.name.eq_ignore_ascii_case(listener))?;
                    Some((b.id, e.host.clone(), e.port, b.rack.clone()))
                })
                .collect()
        });
    }
    let rack = broker.config.get("broker.rack");
    let (host, port) = broker.endpoint(listener);
    vec![(
        broker.node_id,
        host.to_string(),
        port,
        (!rack.is_empty()).then(|| rack.to_string()),
    )]
}

/// The id clients are told is the controller: in cluster mode a live broker (clients cannot
/// reach KRaft controllers, so Kafka names a broker), else this node.
pub(crate) fn controller_id(broker: &Broker, listener: &str) -> i32 {
    match broker.cluster_node() {
        Some(_) => live_brokers(broker, listener)
            .first()
            .map_or(-1, |(id, ..)| *id),
        None => broker.node_id,
    }
}

/// A Metadata response's cluster part: this broker, the cluster id and the controller.
pub(crate) fn cluster_part(broker: &Broker, listener: &str) -> MetadataResponse {
    if broker.cluster_node().is_some() {
        return MetadataResponse::default()
            .with_brokers(
                live_brokers(broker, listener)
                    .into_iter()
                    .map(|(id, host, port, rack)| {
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(id))
                            .with_host(sb(host))
                            .with_port(i32::from(port))
                            .with_rack(rack.map(sb))
                    })
                    .collect(),
            )
            .with_cluster_id(Some(sb(&broker.cluster_id)))
            .with_controller_id(BrokerId(controller_id(broker, listener)));
    }
    let rack = broker.config.get("broker.rack");
    let (host, port) = broker.endpoint(listener);
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(broker.node_id))
            .with_host(sb(host))
            .with_port(i32::from(port))
            .with_rack((!rack.is_empty()).then(|| sb(rack)))])
        .with_cluster_id(Some(sb(&broker.cluster_id)))
        .with_controller_id(BrokerId(broker.node_id))
}

fn lookup(
    broker: &Broker,
    name: Option<TopicName>,
    id: Uuid,
    auto_create: bool,
) -> MetadataResponseTopic {
    let Some(name) = name else {
        return match broker.topics.get_by_id(id) {
            Some(t) => describe_topic(broker, &t),
            None => missing_topic(None, id, ErrorCode::UnknownTopicId),
        };
    };
    if let Some(t) = broker.topics.get(&name) {
        return describe_topic(broker, &t);
    }
    if let Err(e) = crate::partition::validate_topic_name(&name) {
        return missing_topic(Some(name), id, e.code());
    }
    if !auto_create || crate::partition::INTERNAL_TOPICS.contains(&name.as_str()) {
        return missing_topic(Some(name), id, ErrorCode::UnknownTopicOrPartition);
    }
    if broker.cluster_node().is_some() {
        // The controller creates it (route.rs asked before this answer); until this broker's
        // image has it, clients are told to retry.
        return missing_topic(Some(name), id, ErrorCode::LeaderNotAvailable);
    }
    let partitions = broker.config.num_partitions();
    match broker
        .topics
        .create(&name, partitions, BTreeMap::new(), false)
    {
        Ok(t) => describe_topic(broker, &t),
        // Lost a race with another creator: describe what exists.
        Err(_) => match broker.topics.get(&name) {
            Some(t) => describe_topic(broker, &t),
            None => missing_topic(Some(name), id, ErrorCode::LeaderNotAvailable),
        },
    }
}
