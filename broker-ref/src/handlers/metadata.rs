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

use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::partition::{Topic, LEADER_EPOCH};

/// Every operation bit of Kafka's ACL operations (what an all-allowed principal gets).
pub(crate) const ALL_TOPIC_OPERATIONS: i32 = 0b1101_1111_1000;
const ALL_CLUSTER_OPERATIONS: i32 = 0b1111_1111_1000_0000;

/// Describes one topic's partitions.
pub(crate) fn describe_topic(
    broker: &Broker,
    topic: &Topic,
    include_ops: bool,
) -> MetadataResponseTopic {
    let node = BrokerId(broker.node_id);
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
        .with_topic_authorized_operations(if include_ops {
            ALL_TOPIC_OPERATIONS
        } else {
            i32::MIN
        })
}

fn missing_topic(name: Option<TopicName>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(name)
        .with_topic_id(id)
        .with_error_code(code.code())
}

/// Handles Metadata.
pub fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: MetadataRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let include_ops = request.include_topic_authorized_operations;
    let all = match &request.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    let topics = if all {
        broker
            .topics
            .list()
            .iter()
            .map(|t| describe_topic(broker, t, include_ops))
            .collect()
    } else {
        let auto_create =
            request.allow_auto_topic_creation && broker.config.bool("auto.create.topics.enable");
        request
            .topics
            .unwrap_or_default()
            .into_iter()
            .map(|t| lookup(broker, t.name, t.topic_id, auto_create, include_ops))
            .collect()
    };
    let response = cluster_part(broker, ctx.listener())
        .with_topics(topics)
        .with_cluster_authorized_operations(if request.include_cluster_authorized_operations {
            ALL_CLUSTER_OPERATIONS
        } else {
            i32::MIN
        });
    Ok(ResponseKind::Metadata(response))
}

/// A Metadata response's cluster part: this broker, the cluster id and the controller.
pub(crate) fn cluster_part(broker: &Broker, listener: &str) -> MetadataResponse {
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
    include_ops: bool,
) -> MetadataResponseTopic {
    let Some(name) = name else {
        return match broker.topics.get_by_id(id) {
            Some(t) => describe_topic(broker, &t, include_ops),
            None => missing_topic(None, id, ErrorCode::UnknownTopicId),
        };
    };
    if let Some(t) = broker.topics.get(&name) {
        return describe_topic(broker, &t, include_ops);
    }
    if let Err(e) = crate::partition::validate_topic_name(&name) {
        return missing_topic(Some(name), id, e.code());
    }
    if !auto_create || crate::partition::INTERNAL_TOPICS.contains(&name.as_str()) {
        return missing_topic(Some(name), id, ErrorCode::UnknownTopicOrPartition);
    }
    let partitions = broker.config.num_partitions();
    match broker
        .topics
        .create(&name, partitions, BTreeMap::new(), false)
    {
        Ok(t) => describe_topic(broker, &t, include_ops),
        // Lost a race with another creator: describe what exists.
        Err(_) => match broker.topics.get(&name) {
            Some(t) => describe_topic(broker, &t, include_ops),
            None => missing_topic(Some(name), id, ErrorCode::LeaderNotAvailable),
        },
    }
}
