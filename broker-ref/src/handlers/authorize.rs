//! Authorization of every API, as Kafka's `KafkaApis` / `ControllerApis` check it: the
//! resource and operation per API, Kafka's error per denial (TOPIC_ / GROUP_ / CLUSTER_ /
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED), whole-request denials answered in the API's own
//! error shape and per-item denials merged beside what the handler answered for the rest.
//!
//! Only used when an authorizer is configured; without one every request is handled as before
//! (Kafka's behaviour without `authorizer.class.name`). Metadata and DescribeCluster compute
//! their own `authorized_operations` ([`super::authz`]).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

use super::authz::Authz;
use super::context::RequestContext;
use super::error_response;
use crate::broker::Broker;
use crate::security::acl::{AclOperation as Op, ResourceType as Rt};
use crate::Result;

const TOPIC_DENIED: ErrorCode = ErrorCode::TopicAuthorizationFailed;

fn whole(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: &RequestKind,
    code: ErrorCode,
) -> Result<Option<ResponseKind>> {
    error_response::error_response(broker, ctx, body, code)
}

fn topic_name(broker: &Broker, name: &TopicName, id: uuid::Uuid) -> String {
    if name.is_empty() {
        broker
            .topics
            .get_by_id(id)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    } else {
        name.to_string()
    }
}

fn sb(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// Handles `body` after its authorization checks.
pub async fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    az: &Authz<'_>,
    mut body: RequestKind,
) -> Result<Option<ResponseKind>> {
    macro_rules! inner {
        ($b:expr) => {
            super::route::handle_unchecked(broker, ctx, $b).await
        };
    }
    match &mut body {
        RequestKind::Produce(r) => {
            if let Some(t) = r.transactional_id.as_ref().filter(|t| !t.is_empty()) {
                if !az.allowed(Op::Write, Rt::TransactionalId, t) {
                    return whole(
                        broker,
                        ctx,
                        &body,
                        ErrorCode::TransactionalIdAuthorizationFailed,
                    );
                }
            }
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topic_data)
                .into_iter()
                .partition(|t| {
                    !az.allowed(
                        Op::Write,
                        Rt::Topic,
                        &topic_name(broker, &t.name, t.topic_id),
                    )
                });
            r.topic_data = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::Produce(mut p) => {
                    for t in denied {
                        let parts = t
                            .partition_data
                            .iter()
                            .map(|pd| {
                                produce_response::PartitionProduceResponse::default()
                                    .with_index(pd.index)
                                    .with_error_code(TOPIC_DENIED.code())
                                    .with_base_offset(-1)
                            })
                            .collect();
                        p.responses.push(
                            produce_response::TopicProduceResponse::default()
                                .with_name(t.name)
                                .with_topic_id(t.topic_id)
                                .with_partition_responses(parts),
                        );
                    }
                    ResponseKind::Produce(p)
                }
                other => other,
            }))
        }
        RequestKind::Fetch(r) => {
            if r.replica_id.0 >= 0 || r.replica_state.replica_id.0 >= 0 {
                if !az.cluster(Op::ClusterAction) {
                    return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
                }
                return inner!(body);
            }
            let (denied, kept): (Vec<_>, Vec<_>) =
                std::mem::take(&mut r.topics).into_iter().partition(|t| {
                    !az.allowed(
                        Op::Read,
                        Rt::Topic,
                        &topic_name(broker, &t.topic, t.topic_id),
                    )
                });
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::Fetch(mut f) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                fetch_response::PartitionData::default()
                                    .with_partition_index(p.partition)
                                    .with_error_code(TOPIC_DENIED.code())
                                    .with_high_watermark(-1)
                                    .with_last_stable_offset(-1)
                                    .with_log_start_offset(-1)
                            })
                            .collect();
                        f.responses.push(
                            fetch_response::FetchableTopicResponse::default()
                                .with_topic(t.topic)
                                .with_topic_id(t.topic_id)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::Fetch(f)
                }
                other => other,
            }))
        }
        RequestKind::ListOffsets(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Describe, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::ListOffsets(mut l) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                list_offsets_response::ListOffsetsPartitionResponse::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(TOPIC_DENIED.code())
                                    .with_timestamp(-1)
                                    .with_offset(-1)
                            })
                            .collect();
                        l.topics.push(
                            list_offsets_response::ListOffsetsTopicResponse::default()
                                .with_name(t.name)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::ListOffsets(l)
                }
                other => other,
            }))
        }
        RequestKind::OffsetCommit(r) => {
            if !az.allowed(Op::Read, Rt::Group, &r.group_id) {
                return whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed);
            }
            let (denied, kept): (Vec<_>, Vec<_>) =
                std::mem::take(&mut r.topics).into_iter().partition(|t| {
                    !az.allowed(
                        Op::Read,
                        Rt::Topic,
                        &topic_name(broker, &t.name, t.topic_id),
                    )
                });
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::OffsetCommit(mut o) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                offset_commit_response::OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        o.topics.push(
                            offset_commit_response::OffsetCommitResponseTopic::default()
                                .with_name(t.name)
                                .with_topic_id(t.topic_id)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::OffsetCommit(o)
                }
                other => other,
            }))
        }
        RequestKind::OffsetFetch(r) => offset_fetch(broker, ctx, az, r).await,
        RequestKind::FindCoordinator(r) => {
            let denied = |key: &str| -> Option<ErrorCode> {
                match r.key_type {
                    0 if !az.allowed(Op::Describe, Rt::Group, key) => {
                        Some(ErrorCode::GroupAuthorizationFailed)
                    }
                    1 if !az.allowed(Op::Describe, Rt::TransactionalId, key) => {
                        Some(ErrorCode::TransactionalIdAuthorizationFailed)
                    }
                    _ => None,
                }
            };
            let single = denied(&r.key);
            let keyed: Vec<(StrBytes, Option<ErrorCode>)> = r
                .coordinator_keys
                .iter()
                .map(|k| (k.clone(), denied(k)))
                .collect();
            let version = ctx.api_version;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::FindCoordinator(mut f) => {
                    if version < 4 {
                        if let Some(code) = single {
                            f = f
                                .with_error_code(code.code())
                                .with_error_message(Some(sb(code.name())))
                                .with_node_id(BrokerId(-1))
                                .with_host(sb(""))
                                .with_port(-1);
                        }
                    } else {
                        for c in &mut f.coordinators {
                            if let Some((_, Some(code))) = keyed.iter().find(|(k, _)| *k == c.key) {
                                c.error_code = code.code();
                                c.error_message = Some(sb(code.name()));
                                c.node_id = BrokerId(-1);
                                c.host = sb("");
                                c.port = -1;
                            }
                        }
                    }
                    ResponseKind::FindCoordinator(f)
                }
                other => other,
            }))
        }
        RequestKind::JoinGroup(r) if !az.allowed(Op::Read, Rt::Group, &r.group_id) => {
            whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed)
        }
        RequestKind::SyncGroup(r) if !az.allowed(Op::Read, Rt::Group, &r.group_id) => {
            whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed)
        }
        RequestKind::Heartbeat(r) if !az.allowed(Op::Read, Rt::Group, &r.group_id) => {
            whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed)
        }
        RequestKind::LeaveGroup(r) if !az.allowed(Op::Read, Rt::Group, &r.group_id) => {
            whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed)
        }
        RequestKind::ConsumerGroupHeartbeat(r) => {
            if !az.allowed(Op::Read, Rt::Group, &r.group_id) {
                return whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed);
            }
            // Kafka refuses a subscription naming a topic the member may not describe.
            let denied = r
                .subscribed_topic_names
                .iter()
                .flatten()
                .any(|t| !az.allowed(Op::Describe, Rt::Topic, t));
            if denied {
                return whole(broker, ctx, &body, TOPIC_DENIED);
            }
            inner!(body)
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.group_ids)
                .into_iter()
                .partition(|g| !az.allowed(Op::Describe, Rt::Group, g));
            r.group_ids = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::ConsumerGroupDescribe(mut d) => {
                    for g in denied {
                        d.groups.push(
                            consumer_group_describe_response::DescribedGroup::default()
                                .with_group_id(g)
                                .with_error_code(ErrorCode::GroupAuthorizationFailed.code())
                                .with_authorized_operations(i32::MIN),
                        );
                    }
                    ResponseKind::ConsumerGroupDescribe(d)
                }
                other => other,
            }))
        }
        RequestKind::DescribeGroups(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.groups)
                .into_iter()
                .partition(|g| !az.allowed(Op::Describe, Rt::Group, g));
            r.groups = kept;
            // The handler fills the allowed groups' `authorized_operations`.
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DescribeGroups(mut d) => {
                    for g in denied {
                        d.groups.push(
                            describe_groups_response::DescribedGroup::default()
                                .with_group_id(g)
                                .with_error_code(ErrorCode::GroupAuthorizationFailed.code())
                                .with_authorized_operations(i32::MIN),
                        );
                    }
                    ResponseKind::DescribeGroups(d)
                }
                other => other,
            }))
        }
        RequestKind::ListGroups(_) => {
            let all = az.cluster(Op::Describe);
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::ListGroups(mut l) if !all => {
                    l.groups
                        .retain(|g| az.allowed(Op::Describe, Rt::Group, &g.group_id));
                    ResponseKind::ListGroups(l)
                }
                other => other,
            }))
        }
        RequestKind::DeleteGroups(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.groups_names)
                .into_iter()
                .partition(|g| !az.allowed(Op::Delete, Rt::Group, g));
            r.groups_names = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DeleteGroups(mut d) => {
                    for g in denied {
                        d.results.push(
                            delete_groups_response::DeletableGroupResult::default()
                                .with_group_id(g)
                                .with_error_code(ErrorCode::GroupAuthorizationFailed.code()),
                        );
                    }
                    ResponseKind::DeleteGroups(d)
                }
                other => other,
            }))
        }
        RequestKind::OffsetDelete(r) => {
            if !az.allowed(Op::Delete, Rt::Group, &r.group_id) {
                return Ok(Some(ResponseKind::OffsetDelete(
                    OffsetDeleteResponse::default()
                        .with_error_code(ErrorCode::GroupAuthorizationFailed.code()),
                )));
            }
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Read, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::OffsetDelete(mut o) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                offset_delete_response::OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        o.topics.push(
                            offset_delete_response::OffsetDeleteResponseTopic::default()
                                .with_name(t.name)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::OffsetDelete(o)
                }
                other => other,
            }))
        }
        RequestKind::CreateTopics(r) => {
            let cluster = az.cluster(Op::Create);
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !cluster && !az.allowed(Op::Create, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::CreateTopics(mut c) => {
                    for t in &mut c.topics {
                        if !az.allowed(Op::DescribeConfigs, Rt::Topic, &t.name) {
                            t.topic_config_error_code = TOPIC_DENIED.code();
                            t.configs = None;
                        }
                    }
                    for t in denied {
                        c.topics.push(
                            create_topics_response::CreatableTopicResult::default()
                                .with_name(t.name)
                                .with_error_code(TOPIC_DENIED.code())
                                .with_error_message(Some(sb("Authorization failed.")))
                                .with_topic_config_error_code(TOPIC_DENIED.code())
                                .with_num_partitions(-1)
                                .with_replication_factor(-1),
                        );
                    }
                    ResponseKind::CreateTopics(c)
                }
                other => other,
            }))
        }
        RequestKind::DeleteTopics(r) => {
            let mut denied = Vec::new();
            let names = std::mem::take(&mut r.topic_names);
            for n in names {
                if az.allowed(Op::Delete, Rt::Topic, &n) {
                    r.topic_names.push(n);
                } else {
                    denied.push((Some(n), uuid::Uuid::nil()));
                }
            }
            let states = std::mem::take(&mut r.topics);
            for s in states {
                let by_id = s.name.is_none();
                let name = match &s.name {
                    Some(n) => n.to_string(),
                    None => topic_name(broker, &TopicName(sb("")), s.topic_id),
                };
                if name.is_empty() {
                    r.topics.push(s);
                    continue;
                }
                if (by_id && !az.allowed(Op::Describe, Rt::Topic, &name))
                    || !az.allowed(Op::Delete, Rt::Topic, &name)
                {
                    denied.push((s.name.clone(), s.topic_id));
                } else {
                    r.topics.push(s);
                }
            }
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DeleteTopics(mut d) => {
                    for (name, id) in denied {
                        d.responses.push(
                            delete_topics_response::DeletableTopicResult::default()
                                .with_name(name)
                                .with_topic_id(id)
                                .with_error_code(TOPIC_DENIED.code())
                                .with_error_message(Some(sb("Authorization failed."))),
                        );
                    }
                    ResponseKind::DeleteTopics(d)
                }
                other => other,
            }))
        }
        RequestKind::CreatePartitions(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Alter, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::CreatePartitions(mut c) => {
                    for t in denied {
                        c.results.push(
                            create_partitions_response::CreatePartitionsTopicResult::default()
                                .with_name(t.name)
                                .with_error_code(TOPIC_DENIED.code())
                                .with_error_message(Some(sb("The topic authorization is failed."))),
                        );
                    }
                    ResponseKind::CreatePartitions(c)
                }
                other => other,
            }))
        }
        RequestKind::DeleteRecords(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Delete, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DeleteRecords(mut d) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                delete_records_response::DeleteRecordsPartitionResult::default()
                                    .with_partition_index(p.partition_index)
                                    .with_low_watermark(-1)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        d.topics.push(
                            delete_records_response::DeleteRecordsTopicResult::default()
                                .with_name(t.name)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::DeleteRecords(d)
                }
                other => other,
            }))
        }
        RequestKind::OffsetForLeaderEpoch(r) => {
            if az.cluster(Op::ClusterAction) {
                return inner!(body);
            }
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Describe, Rt::Topic, &t.topic));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::OffsetForLeaderEpoch(mut o) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                offset_for_leader_epoch_response::EpochEndOffset::default()
                                    .with_partition(p.partition)
                                    .with_error_code(TOPIC_DENIED.code())
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1)
                            })
                            .collect();
                        o.topics.push(
                            offset_for_leader_epoch_response::OffsetForLeaderTopicResult::default()
                                .with_topic(t.topic)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::OffsetForLeaderEpoch(o)
                }
                other => other,
            }))
        }
        RequestKind::DescribeConfigs(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.resources)
                .into_iter()
                .partition(|res| {
                    config_denied(
                        az,
                        Op::DescribeConfigs,
                        res.resource_type,
                        &res.resource_name,
                    )
                    .is_some()
                });
            r.resources = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DescribeConfigs(mut d) => {
                    for res in denied {
                        let code = config_denied(
                            az,
                            Op::DescribeConfigs,
                            res.resource_type,
                            &res.resource_name,
                        )
                        .unwrap_or(ErrorCode::ClusterAuthorizationFailed);
                        d.results.push(
                            describe_configs_response::DescribeConfigsResult::default()
                                .with_error_code(code.code())
                                .with_error_message(Some(sb(code.name())))
                                .with_resource_type(res.resource_type)
                                .with_resource_name(res.resource_name),
                        );
                    }
                    ResponseKind::DescribeConfigs(d)
                }
                other => other,
            }))
        }
        RequestKind::AlterConfigs(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.resources)
                .into_iter()
                .partition(|res| {
                    config_denied(az, Op::AlterConfigs, res.resource_type, &res.resource_name)
                        .is_some()
                });
            r.resources = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::AlterConfigs(mut a) => {
                    for res in denied {
                        let code = config_denied(
                            az,
                            Op::AlterConfigs,
                            res.resource_type,
                            &res.resource_name,
                        )
                        .unwrap_or(ErrorCode::ClusterAuthorizationFailed);
                        a.responses.push(
                            alter_configs_response::AlterConfigsResourceResponse::default()
                                .with_error_code(code.code())
                                .with_error_message(Some(sb(code.name())))
                                .with_resource_type(res.resource_type)
                                .with_resource_name(res.resource_name),
                        );
                    }
                    ResponseKind::AlterConfigs(a)
                }
                other => other,
            }))
        }
        RequestKind::IncrementalAlterConfigs(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.resources)
                .into_iter()
                .partition(|res| {
                    config_denied(az, Op::AlterConfigs, res.resource_type, &res.resource_name)
                        .is_some()
                });
            r.resources = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::IncrementalAlterConfigs(mut a) => {
                    for res in denied {
                        let code = config_denied(az, Op::AlterConfigs, res.resource_type, &res.resource_name)
                            .unwrap_or(ErrorCode::ClusterAuthorizationFailed);
                        a.responses.push(
                            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                                .with_error_code(code.code())
                                .with_error_message(Some(sb(code.name())))
                                .with_resource_type(res.resource_type)
                                .with_resource_name(res.resource_name),
                        );
                    }
                    ResponseKind::IncrementalAlterConfigs(a)
                }
                other => other,
            }))
        }
        RequestKind::DescribeClientQuotas(_) if !az.cluster(Op::DescribeConfigs) => {
            Ok(Some(super::client_quotas::describe_error(
                ErrorCode::ClusterAuthorizationFailed,
                "Cluster authorization failed.",
            )))
        }
        RequestKind::AlterClientQuotas(r) if !az.cluster(Op::AlterConfigs) => Ok(Some(
            super::client_quotas::alter_refused(r, ErrorCode::ClusterAuthorizationFailed),
        )),
        RequestKind::DescribeLogDirs(_) if !az.cluster(Op::Describe) => {
            Ok(Some(ResponseKind::DescribeLogDirs(
                DescribeLogDirsResponse::default()
                    .with_error_code(ErrorCode::ClusterAuthorizationFailed.code()),
            )))
        }
        RequestKind::InitProducerId(r) => {
            match r.transactional_id.as_ref().filter(|t| !t.is_empty()) {
                Some(t) if !az.allowed(Op::Write, Rt::TransactionalId, t) => {
                    return whole(
                        broker,
                        ctx,
                        &body,
                        ErrorCode::TransactionalIdAuthorizationFailed,
                    )
                }
                None if !az.cluster(Op::IdempotentWrite) && !az.by_type(Op::Write, Rt::Topic) => {
                    return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed)
                }
                _ => {}
            }
            inner!(body)
        }
        RequestKind::AddPartitionsToTxn(r) => {
            if ctx.api_version >= 4 {
                if !az.cluster(Op::ClusterAction) {
                    return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
                }
                return inner!(body);
            }
            if !az.allowed(
                Op::Write,
                Rt::TransactionalId,
                &r.v3_and_below_transactional_id,
            ) {
                return whole(
                    broker,
                    ctx,
                    &body,
                    ErrorCode::TransactionalIdAuthorizationFailed,
                );
            }
            let any_denied = r
                .v3_and_below_topics
                .iter()
                .any(|t| !az.allowed(Op::Write, Rt::Topic, &t.name));
            if !any_denied {
                return inner!(body);
            }
            let results = r
                .v3_and_below_topics
                .iter()
                .map(|t| {
                    let code = if az.allowed(Op::Write, Rt::Topic, &t.name) {
                        ErrorCode::OperationNotAttempted
                    } else {
                        TOPIC_DENIED
                    };
                    add_partitions_to_txn_response::AddPartitionsToTxnTopicResult::default()
                        .with_name(t.name.clone())
                        .with_results_by_partition(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult::default()
                                        .with_partition_index(*p)
                                        .with_partition_error_code(code.code())
                                })
                                .collect(),
                        )
                })
                .collect();
            Ok(Some(ResponseKind::AddPartitionsToTxn(
                AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results),
            )))
        }
        RequestKind::AddOffsetsToTxn(r) => {
            if !az.allowed(Op::Write, Rt::TransactionalId, &r.transactional_id) {
                return whole(
                    broker,
                    ctx,
                    &body,
                    ErrorCode::TransactionalIdAuthorizationFailed,
                );
            }
            if !az.allowed(Op::Read, Rt::Group, &r.group_id) {
                return whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed);
            }
            inner!(body)
        }
        RequestKind::EndTxn(r)
            if !az.allowed(Op::Write, Rt::TransactionalId, &r.transactional_id) =>
        {
            whole(
                broker,
                ctx,
                &body,
                ErrorCode::TransactionalIdAuthorizationFailed,
            )
        }
        RequestKind::TxnOffsetCommit(r) => {
            if !az.allowed(Op::Write, Rt::TransactionalId, &r.transactional_id) {
                return whole(
                    broker,
                    ctx,
                    &body,
                    ErrorCode::TransactionalIdAuthorizationFailed,
                );
            }
            if !az.allowed(Op::Read, Rt::Group, &r.group_id) {
                return whole(broker, ctx, &body, ErrorCode::GroupAuthorizationFailed);
            }
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Read, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::TxnOffsetCommit(mut o) => {
                    for t in denied {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| {
                                txn_offset_commit_response::TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        o.topics.push(
                            txn_offset_commit_response::TxnOffsetCommitResponseTopic::default()
                                .with_name(t.name)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::TxnOffsetCommit(o)
                }
                other => other,
            }))
        }
        RequestKind::DescribeTransactions(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.transactional_ids)
                .into_iter()
                .partition(|t| !az.allowed(Op::Describe, Rt::TransactionalId, t));
            r.transactional_ids = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DescribeTransactions(mut d) => {
                    for s in &mut d.transaction_states {
                        s.topics
                            .retain(|t| az.allowed(Op::Describe, Rt::Topic, &t.topic));
                    }
                    for t in denied {
                        d.transaction_states.push(
                            describe_transactions_response::TransactionState::default()
                                .with_transactional_id(t)
                                .with_error_code(
                                    ErrorCode::TransactionalIdAuthorizationFailed.code(),
                                )
                                .with_producer_id(ProducerId(-1))
                                .with_producer_epoch(-1),
                        );
                    }
                    ResponseKind::DescribeTransactions(d)
                }
                other => other,
            }))
        }
        RequestKind::ListTransactions(_) => {
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::ListTransactions(mut l) => {
                    l.transaction_states.retain(|t| {
                        az.allowed(Op::Describe, Rt::TransactionalId, &t.transactional_id)
                    });
                    ResponseKind::ListTransactions(l)
                }
                other => other,
            }))
        }
        RequestKind::DescribeProducers(r) => {
            let (denied, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut r.topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Read, Rt::Topic, &t.name));
            r.topics = kept;
            let out = inner!(body)?;
            Ok(out.map(|resp| match resp {
                ResponseKind::DescribeProducers(mut d) => {
                    for t in denied {
                        let parts = t
                            .partition_indexes
                            .iter()
                            .map(|p| {
                                describe_producers_response::PartitionResponse::default()
                                    .with_partition_index(*p)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        d.topics.push(
                            describe_producers_response::TopicResponse::default()
                                .with_name(t.name)
                                .with_partitions(parts),
                        );
                    }
                    ResponseKind::DescribeProducers(d)
                }
                other => other,
            }))
        }
        RequestKind::AlterPartitionReassignments(_) => {
            if !az.cluster(Op::Alter) {
                return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
            }
            inner!(body)
        }
        RequestKind::ListPartitionReassignments(_) => {
            if !az.cluster(Op::Describe) {
                return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
            }
            inner!(body)
        }
        RequestKind::WriteTxnMarkers(_) => {
            if !az.cluster(Op::ClusterAction) {
                return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
            }
            inner!(body)
        }
        RequestKind::ElectLeaders(_) => {
            if !az.cluster(Op::Alter) {
                return whole(broker, ctx, &body, ErrorCode::ClusterAuthorizationFailed);
            }
            inner!(body)
        }
        _ => inner!(body),
    }
}

/// The error for a config resource the principal may not `op`, or `None` when allowed.
fn config_denied(az: &Authz<'_>, op: Op, resource_type: i8, name: &str) -> Option<ErrorCode> {
    match resource_type {
        2 => (!az.allowed(op, Rt::Topic, name)).then_some(TOPIC_DENIED),
        4 | 8 => (!az.cluster(op)).then_some(ErrorCode::ClusterAuthorizationFailed),
        32 => (!az.allowed(op, Rt::Group, name)).then_some(ErrorCode::GroupAuthorizationFailed),
        _ => None,
    }
}

async fn offset_fetch(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    az: &Authz<'_>,
    r: &mut OffsetFetchRequest,
) -> Result<Option<ResponseKind>> {
    if ctx.api_version < 8 {
        if !az.allowed(Op::Describe, Rt::Group, &r.group_id) {
            return Ok(Some(ResponseKind::OffsetFetch(
                OffsetFetchResponse::default()
                    .with_error_code(ErrorCode::GroupAuthorizationFailed.code()),
            )));
        }
        let mut denied = Vec::new();
        if let Some(topics) = r.topics.as_mut() {
            let (d, kept): (Vec<_>, Vec<_>) = std::mem::take(topics)
                .into_iter()
                .partition(|t| !az.allowed(Op::Describe, Rt::Topic, &t.name));
            *topics = kept;
            denied = d;
        }
        let out = super::route::handle_unchecked(broker, ctx, RequestKind::OffsetFetch(r.clone()))
            .await?;
        return Ok(out.map(|resp| match resp {
            ResponseKind::OffsetFetch(mut o) => {
                o.topics
                    .retain(|t| az.allowed(Op::Describe, Rt::Topic, &t.name));
                for t in denied {
                    let parts = t
                        .partition_indexes
                        .iter()
                        .map(|p| {
                            offset_fetch_response::OffsetFetchResponsePartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(-1)
                                .with_committed_leader_epoch(-1)
                                .with_error_code(TOPIC_DENIED.code())
                        })
                        .collect();
                    o.topics.push(
                        offset_fetch_response::OffsetFetchResponseTopic::default()
                            .with_name(t.name)
                            .with_partitions(parts),
                    );
                }
                ResponseKind::OffsetFetch(o)
            }
            other => other,
        }));
    }
    let groups = std::mem::take(&mut r.groups);
    let mut denied_groups = Vec::new();
    let mut denied_topics = Vec::new();
    for mut g in groups {
        if !az.allowed(Op::Describe, Rt::Group, &g.group_id) {
            denied_groups.push(g.group_id);
            continue;
        }
        if let Some(topics) = g.topics.as_mut() {
            let (d, kept): (Vec<_>, Vec<_>) = std::mem::take(topics).into_iter().partition(|t| {
                !az.allowed(
                    Op::Describe,
                    Rt::Topic,
                    &topic_name(broker, &t.name, t.topic_id),
                )
            });
            *topics = kept;
            denied_topics.push((g.group_id.clone(), d));
        }
        r.groups.push(g);
    }
    let out = if r.groups.is_empty() {
        Some(ResponseKind::OffsetFetch(OffsetFetchResponse::default()))
    } else {
        super::route::handle_unchecked(broker, ctx, RequestKind::OffsetFetch(r.clone())).await?
    };
    Ok(out.map(|resp| match resp {
        ResponseKind::OffsetFetch(mut o) => {
            for g in &mut o.groups {
                g.topics.retain(|t| {
                    az.allowed(
                        Op::Describe,
                        Rt::Topic,
                        &topic_name(broker, &t.name, t.topic_id),
                    )
                });
                if let Some((_, denied)) = denied_topics.iter().find(|(id, _)| *id == g.group_id) {
                    for t in denied {
                        let parts = t
                            .partition_indexes
                            .iter()
                            .map(|p| {
                                offset_fetch_response::OffsetFetchResponsePartitions::default()
                                    .with_partition_index(*p)
                                    .with_committed_offset(-1)
                                    .with_committed_leader_epoch(-1)
                                    .with_error_code(TOPIC_DENIED.code())
                            })
                            .collect();
                        g.topics.push(
                            offset_fetch_response::OffsetFetchResponseTopics::default()
                                .with_name(t.name.clone())
                                .with_topic_id(t.topic_id)
                                .with_partitions(parts),
                        );
                    }
                }
            }
            for id in denied_groups {
                o.groups.push(
                    offset_fetch_response::OffsetFetchResponseGroup::default()
                        .with_group_id(id)
                        .with_error_code(ErrorCode::GroupAuthorizationFailed.code()),
                );
            }
            ResponseKind::OffsetFetch(o)
        }
        other => other,
    }))
}
