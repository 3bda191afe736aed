//! DescribeTopicPartitions (API 75, KIP-966): the paginated topic description Kafka 4.x's
//! admin client uses for `describeTopics`. Topics come in name order, at most
//! `min(max.request.partition.size.limit, response_partition_limit)` (at least one) partitions
//! per answer, and `next_cursor` names the topic and partition the next page starts at, as
//! Kafka's `KRaftMetadataCache` pages them.

use std::collections::BTreeSet;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition as PartitionOut,
    DescribeTopicPartitionsResponseTopic as TopicOut,
};
use kafka_protocol::messages::metadata_response::MetadataResponsePartition;
use kafka_protocol::messages::{
    DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, ResponseKind, TopicName,
};
use odradek::ErrorCode;
use uuid::Uuid;

use super::authz::{self, Authz};
use super::context::RequestContext;
use super::metadata::describe_topic;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::partition::{validate_topic_name, INTERNAL_TOPICS};
use crate::security::acl::{AclOperation as Op, ResourceType as Rt};

/// Handles DescribeTopicPartitions. With an authorizer, topics the principal may not DESCRIBE
/// are left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED (after the
/// others, without their id) when named.
pub fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: DescribeTopicPartitionsRequest,
) -> HandlerResult {
    let fetch_all = request.topics.is_empty();
    let cursor = request
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.to_string(), c.partition_index));
    if let Some((topic, index)) = &cursor {
        if *index < 0 {
            return Ok(refused(
                &request,
                "the cursor's partition index is negative",
            ));
        }
        if !fetch_all && !request.topics.iter().any(|t| t.name.as_str() == topic) {
            return Ok(refused(
                &request,
                "the topic list must contain the cursor's topic",
            ));
        }
    }
    let cursor_topic = cursor.as_ref().map_or("", |c| c.0.as_str());
    let names: BTreeSet<String> = if fetch_all {
        broker
            .topics
            .list()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    } else {
        request.topics.iter().map(|t| t.name.to_string()).collect()
    };
    let az = Authz::of(broker, ctx);
    let mut denied = Vec::new();
    let allowed: Vec<String> = names
        .into_iter()
        .filter(|n| n.as_str() >= cursor_topic)
        .filter(|n| {
            let ok = az
                .as_ref()
                .is_none_or(|a| a.allowed(Op::Describe, Rt::Topic, n));
            if !ok && !fetch_all {
                denied.push(
                    TopicOut::default()
                        .with_error_code(ErrorCode::TopicAuthorizationFailed.code())
                        .with_name(Some(TopicName(sb(n)))),
                );
            }
            ok
        })
        .collect();
    // Kafka 4.x answers a zero or negative limit as a limit of one.
    let limit = broker
        .config
        .int("max.request.partition.size.limit")
        .min(request.response_partition_limit)
        .max(1);
    let mut remaining = i64::from(limit);
    let mut topics = Vec::new();
    let mut next_cursor = None;
    for name in allowed {
        if remaining == 0 {
            // Every partition of the topics before fitted: the next page starts here.
            next_cursor = Some(cursor_at(&name, 0));
            break;
        }
        let Some(topic) = broker.topics.get(&name) else {
            if !fetch_all {
                topics.push(unknown_topic(&name));
            }
            continue;
        };
        let start = if name == cursor_topic {
            cursor.as_ref().map_or(0, |c| c.1)
        } else {
            0
        };
        let described = describe_topic(broker, &topic);
        let count = described.partitions.len() as i64;
        let upper = count.min(i64::from(start) + remaining);
        let partitions: Vec<PartitionOut> = described
            .partitions
            .into_iter()
            .filter(|p| (i64::from(start)..upper).contains(&i64::from(p.partition_index)))
            .map(partition_out)
            .collect();
        let taken = partitions.len() as i64;
        topics.push(
            TopicOut::default()
                .with_name(Some(TopicName(sb(&name))))
                .with_topic_id(topic.id)
                .with_is_internal(topic.is_internal())
                .with_partitions(partitions)
                .with_topic_authorized_operations(authz::operations(broker, ctx, Rt::Topic, &name)),
        );
        if upper < count {
            next_cursor = Some(cursor_at(&name, upper as i32));
            break;
        }
        remaining -= taken;
    }
    topics.extend(denied);
    Ok(ResponseKind::DescribeTopicPartitions(
        DescribeTopicPartitionsResponse::default()
            .with_topics(topics)
            .with_next_cursor(next_cursor),
    ))
}

/// A partition as DescribeTopicPartitions reports it: no error even without a leader (the
/// leader is then -1), and empty eligible-leader lists (this broker has no KIP-966 ELR).
fn partition_out(p: MetadataResponsePartition) -> PartitionOut {
    PartitionOut::default()
        .with_partition_index(p.partition_index)
        .with_leader_id(p.leader_id)
        .with_leader_epoch(p.leader_epoch)
        .with_replica_nodes(p.replica_nodes)
        .with_isr_nodes(p.isr_nodes)
        .with_eligible_leader_replicas(Some(Vec::new()))
        .with_last_known_elr(Some(Vec::new()))
        .with_offline_replicas(p.offline_replicas)
}

fn cursor_at(topic: &str, partition: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(TopicName(sb(topic)))
        .with_partition_index(partition)
}

/// A named topic that does not exist: INVALID_TOPIC_EXCEPTION for an illegal name, else
/// UNKNOWN_TOPIC_OR_PARTITION.
fn unknown_topic(name: &str) -> TopicOut {
    let code = match validate_topic_name(name) {
        Ok(()) => ErrorCode::UnknownTopicOrPartition,
        Err(e) => e.code(),
    };
    TopicOut::default()
        .with_error_code(code.code())
        .with_name(Some(TopicName(sb(name))))
        .with_is_internal(INTERNAL_TOPICS.contains(&name))
}

/// Kafka's answer to a request it refuses as a whole: INVALID_REQUEST on every named topic.
fn refused(request: &DescribeTopicPartitionsRequest, why: &str) -> ResponseKind {
    tracing::debug!(why, "DescribeTopicPartitions refused");
    ResponseKind::DescribeTopicPartitions(
        DescribeTopicPartitionsResponse::default().with_topics(
            request
                .topics
                .iter()
                .map(|t| {
                    TopicOut::default()
                        .with_error_code(ErrorCode::InvalidRequest.code())
                        .with_name(Some(t.name.clone()))
                        .with_topic_id(Uuid::nil())
                })
                .collect(),
        ),
    )
}
