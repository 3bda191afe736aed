//! Consumer-protocol group APIs (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe.

use kafka_protocol::messages::consumer_group_describe_response as describe;
use kafka_protocol::messages::consumer_group_heartbeat_response as hb;
use kafka_protocol::messages::*;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::coordinator::consumer::assignor::Assignment;
use crate::coordinator::consumer::group::Heartbeat;
use crate::security::acl::ResourceType as Rt;

/// Handles ConsumerGroupHeartbeat.
pub fn heartbeat(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: ConsumerGroupHeartbeatRequest,
) -> HandlerResult {
    let owned = r.topic_partitions.as_ref().map(|tps| {
        let mut a = Assignment::new();
        for tp in tps {
            a.entry(tp.topic_id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
        a.retain(|_, p| !p.is_empty());
        a
    });
    let request = Heartbeat {
        version: ctx.api_version,
        member_id: r.member_id.to_string(),
        member_epoch: r.member_epoch,
        instance_id: r.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: r.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: r.rebalance_timeout_ms,
        subscribed_topic_names: r
            .subscribed_topic_names
            .as_ref()
            .map(|ns| ns.iter().map(|n| n.to_string()).collect()),
        subscribed_topic_regex: r.subscribed_topic_regex.as_ref().map(|s| s.to_string()),
        server_assignor: r.server_assignor.as_ref().map(|s| s.to_string()),
        owned,
        client_id: ctx.client_id().to_string(),
        client_host: format!("/{}", ctx.peer().ip()),
    };
    let settings = broker.group_config(&r.group_id);
    let answer = broker.groups.consumer_heartbeat(
        &r.group_id,
        request,
        settings.consumer_session_timeout_ms,
        settings.consumer_heartbeat_interval_ms,
    );
    let assignment = answer.assignment.map(|a| {
        hb::Assignment::default().with_topic_partitions(
            a.into_iter()
                .map(|(t, ps)| {
                    hb::TopicPartitions::default()
                        .with_topic_id(t)
                        .with_partitions(ps.into_iter().collect())
                })
                .collect(),
        )
    });
    // As Kafka answers: an error carries only its code and message.
    let response = if answer.error.is_ok() {
        ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(sb(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(answer.heartbeat_interval_ms)
            .with_assignment(assignment)
    } else {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(answer.error.code())
            .with_error_message(answer.message.map(sb))
    };
    Ok(ResponseKind::ConsumerGroupHeartbeat(response))
}

fn described(broker: &Broker, a: &Assignment) -> describe::Assignment {
    describe::Assignment::default().with_topic_partitions(
        a.iter()
            .map(|(t, ps)| {
                describe::TopicPartitions::default()
                    .with_topic_id(*t)
                    .with_topic_name(TopicName(sb(broker
                        .groups
                        .topic_name(*t)
                        .unwrap_or_default())))
                    .with_partitions(ps.iter().copied().collect())
            })
            .collect(),
    )
}

/// Handles ConsumerGroupDescribe.
pub fn describe(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: ConsumerGroupDescribeRequest,
) -> HandlerResult {
    let groups = r
        .group_ids
        .iter()
        .map(|id| {
            let base = describe::DescribedGroup::default().with_group_id(id.clone());
            if id.is_empty() {
                return base
                    .with_error_code(ErrorCode::InvalidGroupId.code())
                    .with_error_message(Some(sb("Group id cannot be empty.")));
            }
            let view = match broker.groups.consumer_describe(id) {
                Ok(v) => v,
                Err(code) => {
                    let message = if broker.groups.describe(id).is_some() {
                        format!("Group {} is not a consumer group.", id.as_str())
                    } else {
                        format!("Group {} not found.", id.as_str())
                    };
                    return base
                        .with_error_code(code.code())
                        .with_error_message(Some(sb(message)));
                }
            };
            let g = view.group;
            let members = g
                .members
                .values()
                .map(|m| {
                    let target = g.target.get(&m.id).cloned().unwrap_or_default();
                    describe::Member::default()
                        .with_member_id(sb(m.id.clone()))
                        .with_instance_id(m.instance_id.clone().map(sb))
                        .with_rack_id(m.rack_id.clone().map(sb))
                        .with_member_epoch(m.current.member_epoch)
                        .with_client_id(sb(m.client_id.clone()))
                        .with_client_host(sb(m.client_host.clone()))
                        .with_subscribed_topic_names(
                            m.topic_names
                                .iter()
                                .map(|n| TopicName(sb(n.clone())))
                                .collect(),
                        )
                        .with_subscribed_topic_regex(m.topic_regex.clone().map(sb))
                        .with_assignment(described(broker, &m.current.assigned))
                        .with_target_assignment(described(broker, &target))
                        .with_member_type(1)
                })
                .collect();
            let group = base
                .with_group_state(sb(g.state().name()))
                .with_group_epoch(g.group_epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_assignor_name(sb(view.assignor))
                .with_members(members);
            if r.include_authorized_operations {
                let ops = super::authz::operations(broker, ctx, Rt::Group, id);
                group.with_authorized_operations(ops)
            } else {
                group.with_authorized_operations(i32::MIN)
            }
        })
        .collect();
    Ok(ResponseKind::ConsumerGroupDescribe(
        ConsumerGroupDescribeResponse::default().with_groups(groups),
    ))
}
