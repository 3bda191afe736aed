//! Consumer-group APIs (classic protocol): FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete.

use std::time::Duration;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::coordinator::group::JoinParams;
use crate::coordinator::OffsetEntry;
use crate::security::acl::ResourceType as Rt;

fn opt(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(|s| s.to_string())
}

/// Handles FindCoordinator: this broker coordinates every group and every transactional id.
pub fn find_coordinator(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: FindCoordinatorRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    // The coordinators' topics are created on the first FindCoordinator that needs them.
    let ready = |created: crate::error::Result<()>| match created {
        Ok(()) => (ErrorCode::NoError, None),
        Err(e) => (
            ErrorCode::CoordinatorNotAvailable,
            Some(format!("creating the coordinator's topic: {e}")),
        ),
    };
    let answer = |key: &str| -> (ErrorCode, Option<String>) {
        match r.key_type {
            0 if !key.is_empty() => ready(broker.groups.ensure_topic()),
            0 => (ErrorCode::InvalidGroupId, Some("empty group id".into())),
            1 if !key.is_empty() => ready(broker.txns.ensure_topic()),
            1 => (
                ErrorCode::InvalidRequest,
                Some("empty transactional id".into()),
            ),
            other => (
                ErrorCode::InvalidRequest,
                Some(format!("unknown key type {other}")),
            ),
        }
    };
    if let Some(cluster) = broker.cluster_node() {
        return Ok(super::cluster_groups::find_coordinator(
            broker, cluster, ctx, r,
        ));
    }
    let node = BrokerId(broker.node_id);
    let (host, port) = broker.endpoint(ctx.listener());
    let (host, port) = (sb(host), i32::from(port));
    let mut resp = FindCoordinatorResponse::default();
    if version >= 4 {
        resp.coordinators = r
            .coordinator_keys
            .iter()
            .map(|k| {
                let (code, msg) = answer(k);
                let c = Coordinator::default()
                    .with_key(k.clone())
                    .with_error_code(code.code())
                    .with_error_message(msg.map(sb));
                if code.is_ok() {
                    c.with_node_id(node).with_host(host.clone()).with_port(port)
                } else {
                    c.with_node_id(BrokerId(-1)).with_port(-1)
                }
            })
            .collect();
    } else {
        let (code, msg) = answer(&r.key);
        resp = resp
            .with_error_code(code.code())
            .with_error_message(msg.map(sb));
        resp = if code.is_ok() {
            resp.with_node_id(node).with_host(host).with_port(port)
        } else {
            resp.with_node_id(BrokerId(-1)).with_port(-1)
        };
    }
    Ok(ResponseKind::FindCoordinator(resp))
}

/// Handles JoinGroup (waits for the rebalance).
pub async fn join_group(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: JoinGroupRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let params = JoinParams {
        member_id: r.member_id.to_string(),
        instance_id: opt(&r.group_instance_id),
        client_id: ctx.client_id().to_string(),
        // As Kafka reports it: the peer's address with a leading slash.
        client_host: format!("/{}", ctx.peer().ip()),
        session_timeout: Duration::from_millis(r.session_timeout_ms.max(0) as u64),
        rebalance_timeout: Duration::from_millis(
            if version >= 1 {
                r.rebalance_timeout_ms
            } else {
                r.session_timeout_ms
            }
            .max(0) as u64,
        ),
        protocol_type: r.protocol_type.to_string(),
        protocols: r
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
        require_known_member: version >= 4,
        version,
    };
    // A join may wait for the rest of the group: the request slot goes back meanwhile.
    crate::request_slots::release_while_waiting();
    let a = broker.groups.join(&r.group_id, params).await;
    let members = a
        .members
        .into_iter()
        .map(|(id, inst, meta)| {
            JoinGroupResponseMember::default()
                .with_member_id(sb(id))
                .with_group_instance_id(inst.map(sb))
                .with_metadata(meta)
        })
        .collect();
    let resp = JoinGroupResponse::default()
        .with_error_code(a.error.code())
        .with_generation_id(a.generation)
        .with_protocol_type(a.protocol_type.map(sb))
        .with_protocol_name(a.protocol.map(sb))
        .with_leader(sb(a.leader))
        .with_member_id(sb(a.member_id))
        .with_skip_assignment(a.skip_assignment)
        .with_members(members);
    Ok(ResponseKind::JoinGroup(resp))
}

/// Handles SyncGroup (followers wait for the leader's assignment).
pub async fn sync_group(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: SyncGroupRequest,
) -> HandlerResult {
    let assignments = r
        .assignments
        .iter()
        .map(|a| (a.member_id.to_string(), a.assignment.clone()))
        .collect();
    // A follower waits for the leader's assignment: the request slot goes back meanwhile.
    crate::request_slots::release_while_waiting();
    let a = broker
        .groups
        .sync(
            &r.group_id,
            &r.member_id,
            r.generation_id,
            r.group_instance_id.as_deref(),
            r.protocol_type.as_deref(),
            r.protocol_name.as_deref(),
            assignments,
        )
        .await;
    Ok(ResponseKind::SyncGroup(
        SyncGroupResponse::default()
            .with_error_code(a.error.code())
            .with_protocol_type(a.protocol_type.map(sb))
            .with_protocol_name(a.protocol.map(sb))
            .with_assignment(a.assignment),
    ))
}

/// Handles Heartbeat.
pub fn heartbeat(broker: &Broker, _ctx: &RequestContext<'_>, r: HeartbeatRequest) -> HandlerResult {
    let code = broker.groups.heartbeat(
        &r.group_id,
        &r.member_id,
        r.generation_id,
        r.group_instance_id.as_deref(),
    );
    Ok(ResponseKind::Heartbeat(
        HeartbeatResponse::default().with_error_code(code.code()),
    ))
}

/// Handles LeaveGroup (single member before v3, batched from v3).
pub fn leave_group(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: LeaveGroupRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        r.members
            .iter()
            .map(|m| (m.member_id.to_string(), opt(&m.group_instance_id)))
            .collect()
    } else {
        vec![(r.member_id.to_string(), None)]
    };
    let resp = match broker.groups.leave(&r.group_id, &members) {
        Err(code) => LeaveGroupResponse::default().with_error_code(code.code()),
        Ok(codes) if version >= 3 => LeaveGroupResponse::default().with_members(
            members
                .iter()
                .zip(codes)
                .map(|((m, i), c)| {
                    MemberResponse::default()
                        .with_member_id(sb(m.clone()))
                        .with_group_instance_id(i.clone().map(sb))
                        .with_error_code(c.code())
                })
                .collect(),
        ),
        Ok(codes) => {
            LeaveGroupResponse::default().with_error_code(codes.first().map_or(0, |c| c.code()))
        }
    };
    Ok(ResponseKind::LeaveGroup(resp))
}

/// Handles OffsetCommit.
pub fn offset_commit(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: OffsetCommitRequest,
) -> HandlerResult {
    let mut offsets = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            offsets.push((
                (t.name.to_string(), p.partition_index),
                p.committed_offset,
                p.committed_leader_epoch,
                opt(&p.committed_metadata),
            ));
        }
    }
    let results = broker.groups.commit(
        ctx.api_version,
        &r.group_id,
        &r.member_id,
        r.generation_id_or_member_epoch,
        r.group_instance_id.as_deref(),
        offsets,
    );
    let mut topics: Vec<OffsetCommitResponseTopic> = Vec::new();
    for ((topic, partition), code) in results {
        let p = OffsetCommitResponsePartition::default()
            .with_partition_index(partition)
            .with_error_code(code.code());
        match topics.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                OffsetCommitResponseTopic::default()
                    .with_name(TopicName(sb(topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    Ok(ResponseKind::OffsetCommit(
        OffsetCommitResponse::default().with_topics(topics),
    ))
}

/// A committed offset as the response lists it: partition, offset, leader epoch, metadata.
type PartitionOffset = (i32, i64, i32, String);

fn group_by_topic(entries: Vec<OffsetEntry>) -> Vec<(String, Vec<PartitionOffset>)> {
    let mut out: Vec<(String, Vec<PartitionOffset>)> = Vec::new();
    for ((topic, partition), c) in entries {
        let item = (partition, c.offset, c.leader_epoch, c.metadata);
        match out.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, v)) => v.push(item),
            None => out.push((topic, vec![item])),
        }
    }
    out
}

/// The partitions whose offsets are pending in an open transaction, when the request asks for
/// stable offsets only (OffsetFetch v7+, KIP-447): they answer UNSTABLE_OFFSET_COMMIT.
fn unstable_set(
    broker: &Broker,
    group_id: &str,
    require_stable: bool,
) -> std::collections::HashSet<(String, i32)> {
    if require_stable {
        broker.groups.unstable_partitions(group_id)
    } else {
        Default::default()
    }
}

/// Handles OffsetFetch (one group before v8, several from v8).
pub fn offset_fetch(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: OffsetFetchRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    if version >= 8 {
        let groups = r
            .groups
            .iter()
            .map(|g| {
                let wanted: Option<Vec<(String, i32)>> = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.to_string(), *p)))
                        .collect()
                });
                // v9: a consumer-protocol member names itself and its epoch.
                let member = g.member_id.as_ref().map(|m| m.as_str());
                if let Err(code) = broker
                    .groups
                    .validate_fetch(&g.group_id, member, g.member_epoch)
                {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id.clone())
                        .with_error_code(code.code());
                }
                let entries = broker.groups.fetch_offsets(&g.group_id, wanted.as_deref());
                let unstable = unstable_set(broker, &g.group_id, r.require_stable);
                let topics = group_by_topic(entries)
                    .into_iter()
                    .map(|(t, ps)| {
                        let partitions = ps
                            .into_iter()
                            .map(|(p, o, e, m)| {
                                let resp = OffsetFetchResponsePartitions::default()
                                    .with_partition_index(p);
                                if unstable.contains(&(t.clone(), p)) {
                                    return resp
                                        .with_committed_offset(-1)
                                        .with_committed_leader_epoch(-1)
                                        .with_error_code(ErrorCode::UnstableOffsetCommit.code());
                                }
                                resp.with_committed_offset(o)
                                    .with_committed_leader_epoch(e)
                                    .with_metadata(Some(sb(m)))
                            })
                            .collect();
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(sb(t)))
                            .with_partitions(partitions)
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(topics)
            })
            .collect();
        return Ok(ResponseKind::OffsetFetch(
            OffsetFetchResponse::default().with_groups(groups),
        ));
    }
    let wanted: Option<Vec<(String, i32)>> = r.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.to_string(), *p)))
            .collect()
    });
    let entries = broker.groups.fetch_offsets(&r.group_id, wanted.as_deref());
    let unstable = unstable_set(broker, &r.group_id, r.require_stable);
    let topics = group_by_topic(entries)
        .into_iter()
        .map(|(t, ps)| {
            let partitions = ps
                .into_iter()
                .map(|(p, o, e, m)| {
                    let resp = OffsetFetchResponsePartition::default().with_partition_index(p);
                    if unstable.contains(&(t.clone(), p)) {
                        return resp
                            .with_committed_offset(-1)
                            .with_committed_leader_epoch(-1)
                            .with_error_code(ErrorCode::UnstableOffsetCommit.code());
                    }
                    resp.with_committed_offset(o)
                        .with_committed_leader_epoch(e)
                        .with_metadata(Some(sb(m)))
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(sb(t)))
                .with_partitions(partitions)
        })
        .collect();
    Ok(ResponseKind::OffsetFetch(
        OffsetFetchResponse::default().with_topics(topics),
    ))
}

/// Handles DescribeGroups.
pub fn describe_groups(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: DescribeGroupsRequest,
) -> HandlerResult {
    let groups = r
        .groups
        .iter()
        .map(|id| match broker.groups.describe(id) {
            // Kafka answers DescribeGroups for classic groups only: a consumer group is "Dead",
            // with GROUP_ID_NOT_FOUND from v6.
            Some(s) if s.group_type == "consumer" && ctx.api_version >= 6 => {
                DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_group_state(sb("Dead"))
                    .with_error_code(ErrorCode::GroupIdNotFound.code())
                    .with_error_message(Some(sb(format!(
                        "Group {} is not a classic group.",
                        id.as_str()
                    ))))
            }
            Some(s) if s.group_type == "consumer" => DescribedGroup::default()
                .with_group_id(id.clone())
                .with_group_state(sb("Dead")),
            None => DescribedGroup::default()
                .with_group_id(id.clone())
                .with_group_state(sb("Dead"))
                .with_error_code(if id.is_empty() {
                    ErrorCode::InvalidGroupId.code()
                } else {
                    0
                }),
            Some(s) => DescribedGroup::default()
                .with_group_id(id.clone())
                .with_group_state(sb(s.state_name))
                .with_protocol_type(sb(s.protocol_type))
                .with_protocol_data(sb(s.protocol))
                .with_members(
                    s.members
                        .into_iter()
                        .map(|(mid, inst, cid, host, meta, asg)| {
                            DescribedGroupMember::default()
                                .with_member_id(sb(mid))
                                .with_group_instance_id(inst.map(sb))
                                .with_client_id(sb(cid))
                                .with_client_host(sb(host))
                                .with_member_metadata(meta)
                                .with_member_assignment(asg)
                        })
                        .collect(),
                ),
        })
        .map(|g: DescribedGroup| {
            // Kafka fills `authorized_operations` (v3+, when asked) for every group answered
            // without an error, "Dead" ones included; the full set without an authorizer.
            if r.include_authorized_operations && g.error_code == 0 {
                let ops = super::authz::operations(broker, ctx, Rt::Group, &g.group_id);
                g.with_authorized_operations(ops)
            } else {
                g
            }
        })
        .collect();
    Ok(ResponseKind::DescribeGroups(
        DescribeGroupsResponse::default().with_groups(groups),
    ))
}

/// Handles ListGroups (state filter from v4, type filter from v5).
pub fn list_groups(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: ListGroupsRequest,
) -> HandlerResult {
    let states: Vec<String> = r.states_filter.iter().map(|s| s.to_lowercase()).collect();
    let types: Vec<String> = r.types_filter.iter().map(|s| s.to_lowercase()).collect();
    let groups = broker
        .groups
        .list()
        .into_iter()
        .filter(|g| states.is_empty() || states.contains(&g.state_name.to_lowercase()))
        .filter(|g| types.is_empty() || types.contains(&g.group_type.to_string()))
        .map(|g| {
            ListedGroup::default()
                .with_group_id(GroupId(sb(g.group_id)))
                .with_protocol_type(sb(g.protocol_type))
                .with_group_state(sb(g.state_name))
                .with_group_type(sb(g.group_type))
        })
        .collect();
    Ok(ResponseKind::ListGroups(
        ListGroupsResponse::default().with_groups(groups),
    ))
}

/// Handles DeleteGroups.
pub fn delete_groups(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: DeleteGroupsRequest,
) -> HandlerResult {
    let results = r
        .groups_names
        .iter()
        .map(|g| {
            DeletableGroupResult::default()
                .with_group_id(g.clone())
                .with_error_code(broker.groups.delete_group(g).code())
        })
        .collect();
    Ok(ResponseKind::DeleteGroups(
        DeleteGroupsResponse::default().with_results(results),
    ))
}

/// Handles OffsetDelete.
pub fn offset_delete(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: OffsetDeleteRequest,
) -> HandlerResult {
    let partitions: Vec<(String, i32)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index))
        })
        .collect();
    let resp = match broker.groups.delete_offsets(&r.group_id, &partitions) {
        Err(code) => OffsetDeleteResponse::default().with_error_code(code.code()),
        Ok(results) => {
            let mut topics: Vec<OffsetDeleteResponseTopic> = Vec::new();
            for ((t, p), code) in results {
                let item = OffsetDeleteResponsePartition::default()
                    .with_partition_index(p)
                    .with_error_code(code.code());
                match topics.iter_mut().find(|x| x.name.as_str() == t) {
                    Some(x) => x.partitions.push(item),
                    None => topics.push(
                        OffsetDeleteResponseTopic::default()
                            .with_name(TopicName(sb(t)))
                            .with_partitions(vec![item]),
                    ),
                }
            }
            OffsetDeleteResponse::default().with_topics(topics)
        }
    };
    Ok(ResponseKind::OffsetDelete(resp))
}
