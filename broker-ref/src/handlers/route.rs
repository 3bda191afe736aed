//! Routes a decoded request body to its handler, without authorization checks (those are
//! [`super::authorize`]'s, run first when an authorizer is configured).

use kafka_protocol::messages::{RequestKind, ResponseKind};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::{
    admin_configs, admin_topics, api_versions, authz, client_quotas, cluster, cluster_admin,
    cluster_groups, describe_topic_partitions, fetch, groups, init_producer_id, list_offsets,
    metadata, produce, records_admin, security_admin, txn, write_txn_markers,
};
use crate::broker::Broker;
use crate::Error;

/// Routes a request to its handler, without authorization checks.
pub(super) async fn handle_unchecked(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: RequestKind,
) -> crate::Result<Option<ResponseKind>> {
    if let Some(refused) = cluster_groups::refuse_foreign_groups(broker, ctx, &body)? {
        return Ok(refused);
    }
    match body {
        RequestKind::ApiVersions(r) => Ok(Some(api_versions::handle(broker, ctx, &r))),
        RequestKind::Metadata(r) => {
            if let Some(node) = broker.cluster_node() {
                cluster_admin::auto_create(node, auto_create_names(broker, ctx, &r)).await;
            }
            metadata::handle(broker, ctx, r).map(Some)
        }
        RequestKind::Produce(r) => produce::handle(broker, ctx, r).await,
        RequestKind::Fetch(r) => fetch::handle(broker, ctx, r).await.map(Some),
        RequestKind::ListOffsets(r) => list_offsets::handle(broker, ctx, r).map(Some),
        RequestKind::CreateTopics(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::create_topics(broker, node, ctx, r)
                .await
                .map(Some),
            None => admin_topics::create_topics(broker, ctx, r).map(Some),
        },
        RequestKind::DeleteTopics(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::delete_topics(broker, node, r)
                .await
                .map(Some),
            None => admin_topics::delete_topics(broker, ctx, r).map(Some),
        },
        RequestKind::CreatePartitions(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::create_partitions(broker, node, r)
                .await
                .map(Some),
            None => admin_topics::create_partitions(broker, ctx, r).map(Some),
        },
        RequestKind::DescribeTopicPartitions(r) => {
            describe_topic_partitions::handle(broker, ctx, r).map(Some)
        }
        RequestKind::DescribeConfigs(r) => admin_configs::describe(broker, ctx, r).map(Some),
        RequestKind::AlterConfigs(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::alter_configs(broker, node, ctx, r)
                .await
                .map(Some),
            None => admin_configs::alter(broker, ctx, r).map(Some),
        },
        RequestKind::IncrementalAlterConfigs(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::incremental_alter_configs(broker, node, ctx, r)
                .await
                .map(Some),
            None => admin_configs::incremental_alter(broker, ctx, r).map(Some),
        },
        RequestKind::InitProducerId(r) => {
            let id = r.transactional_id.as_ref().map(|t| t.to_string());
            let answer = init_producer_id::handle(broker, ctx, r)?;
            Ok(Some(
                txn::replicated_state(broker, id.as_deref(), answer).await,
            ))
        }
        RequestKind::AddPartitionsToTxn(r) => {
            // The client form (v0-3) changes state; the brokers' verification (v4+) reads it.
            let id = (ctx.api_version <= 3).then(|| r.v3_and_below_transactional_id.to_string());
            let answer = txn::add_partitions_to_txn(broker, ctx, r)?;
            Ok(Some(
                txn::replicated_state(broker, id.as_deref(), answer).await,
            ))
        }
        RequestKind::AddOffsetsToTxn(r) => {
            let id = r.transactional_id.to_string();
            let answer = txn::add_offsets_to_txn(broker, ctx, r)?;
            Ok(Some(txn::replicated_state(broker, Some(&id), answer).await))
        }
        RequestKind::EndTxn(r) => {
            let id = r.transactional_id.to_string();
            let answer = txn::end_txn(broker, ctx, r)?;
            Ok(Some(txn::replicated_state(broker, Some(&id), answer).await))
        }
        RequestKind::TxnOffsetCommit(r) => txn::txn_offset_commit(broker, ctx, r).await.map(Some),
        RequestKind::WriteTxnMarkers(r) => {
            write_txn_markers::handle(broker, ctx, r).await.map(Some)
        }
        RequestKind::DescribeTransactions(r) => {
            txn::describe_transactions(broker, ctx, r).map(Some)
        }
        RequestKind::ListTransactions(r) => txn::list_transactions(broker, ctx, r).map(Some),
        RequestKind::DescribeProducers(r) => txn::describe_producers(broker, ctx, r).map(Some),
        RequestKind::FindCoordinator(r) => groups::find_coordinator(broker, ctx, r).map(Some),
        RequestKind::JoinGroup(r) => groups::join_group(broker, ctx, r).await.map(Some),
        RequestKind::SyncGroup(r) => {
            let group = r.group_id.to_string();
            let answer = groups::sync_group(broker, ctx, r).await?;
            Ok(Some(replicated_sync(broker, &group, answer).await))
        }
        RequestKind::Heartbeat(r) => groups::heartbeat(broker, ctx, r).map(Some),
        RequestKind::LeaveGroup(r) => groups::leave_group(broker, ctx, r).map(Some),
        RequestKind::OffsetCommit(r) => {
            let group = r.group_id.to_string();
            let answer = groups::offset_commit(broker, ctx, r)?;
            Ok(Some(replicated_commit(broker, &group, answer).await))
        }
        RequestKind::OffsetFetch(r) => groups::offset_fetch(broker, ctx, r).map(Some),
        RequestKind::DescribeGroups(r) => groups::describe_groups(broker, ctx, r).map(Some),
        RequestKind::ListGroups(r) => groups::list_groups(broker, ctx, r).map(Some),
        RequestKind::DeleteGroups(r) => groups::delete_groups(broker, ctx, r).map(Some),
        RequestKind::OffsetDelete(r) => groups::offset_delete(broker, ctx, r).map(Some),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            let group = r.group_id.to_string();
            let answer = super::consumer_groups::heartbeat(broker, ctx, r)?;
            Ok(Some(replicated_heartbeat(broker, &group, answer).await))
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            super::consumer_groups::describe(broker, ctx, r).map(Some)
        }
        RequestKind::DescribeCluster(r) => Ok(Some(cluster::describe_cluster(broker, ctx, &r))),
        RequestKind::DescribeLogDirs(r) => cluster::describe_log_dirs(broker, ctx, r).map(Some),
        RequestKind::DeleteRecords(r) => records_admin::delete_records(broker, ctx, r).map(Some),
        RequestKind::OffsetForLeaderEpoch(r) => {
            records_admin::offset_for_leader_epoch(broker, ctx, r).map(Some)
        }
        RequestKind::CreateAcls(r) => match broker.cluster_node() {
            Some(node) => super::cluster_security::create_acls(broker, node, ctx, r)
                .await
                .map(Some),
            None => security_admin::create_acls(broker, ctx, r).map(Some),
        },
        RequestKind::DescribeAcls(r) => security_admin::describe_acls(broker, ctx, r).map(Some),
        RequestKind::DeleteAcls(r) => match broker.cluster_node() {
            Some(node) => super::cluster_security::delete_acls(broker, node, ctx, r)
                .await
                .map(Some),
            None => security_admin::delete_acls(broker, ctx, r).map(Some),
        },
        RequestKind::DescribeUserScramCredentials(r) => {
            security_admin::describe_scram(broker, ctx, r).map(Some)
        }
        RequestKind::AlterUserScramCredentials(r) => match broker.cluster_node() {
            Some(node) => super::cluster_security::alter_scram(broker, node, ctx, r)
                .await
                .map(Some),
            None => security_admin::alter_scram(broker, ctx, r).map(Some),
        },
        RequestKind::DescribeClientQuotas(r) => client_quotas::describe(broker, ctx, r).map(Some),
        RequestKind::AlterClientQuotas(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::alter_client_quotas(broker, node, r)
                .await
                .map(Some),
            None => client_quotas::alter(broker, ctx, r).map(Some),
        },
        RequestKind::ElectLeaders(r) => match broker.cluster_node() {
            Some(node) => cluster_admin::elect_leaders(node, r).await.map(Some),
            None => Err(Error::kafka(
                ErrorCode::UnsupportedVersion,
                "ElectLeaders is served in cluster mode only",
            )),
        },
        RequestKind::AlterPartitionReassignments(r) => match broker.cluster_node() {
            Some(node) => super::reassignments::alter(node, r).await.map(Some),
            None => Err(Error::kafka(
                ErrorCode::UnsupportedVersion,
                "AlterPartitionReassignments is served in cluster mode only",
            )),
        },
        RequestKind::ListPartitionReassignments(r) => match broker.cluster_node() {
            Some(node) => super::reassignments::list(node, r).await.map(Some),
            None => Err(Error::kafka(
                ErrorCode::UnsupportedVersion,
                "ListPartitionReassignments is served in cluster mode only",
            )),
        },
        RequestKind::SaslHandshake(r) => Ok(Some(security_admin::sasl_handshake(ctx, r))),
        RequestKind::SaslAuthenticate(r) => Ok(Some(security_admin::sasl_authenticate(ctx, r))),
        _ => Err(Error::kafka(
            ErrorCode::UnsupportedVersion,
            "API not served",
        )),
    }
}

/// The topics a cluster broker asks the controller to auto-create for a Metadata request:
/// named, unknown to the image, valid, not internal, auto-creation allowed by the request and
/// `auto.create.topics.enable`, and the principal may describe and create them.
fn auto_create_names(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: &kafka_protocol::messages::MetadataRequest,
) -> Vec<String> {
    use crate::security::acl::{AclOperation as Op, ResourceType as Rt};
    if !r.allow_auto_topic_creation || !broker.config.bool("auto.create.topics.enable") {
        return Vec::new();
    }
    let Some(node) = broker.cluster_node() else {
        return Vec::new();
    };
    let az = authz::Authz::of(broker, ctx);
    let may_create = |name: &str| {
        az.as_ref().is_none_or(|a| {
            a.allowed(Op::Describe, Rt::Topic, name)
                && (a.cluster(Op::Create) || a.allowed(Op::Create, Rt::Topic, name))
        })
    };
    r.topics
        .iter()
        .flatten()
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .filter(|n| !node.image.read(|i| i.topics.contains_key(n)))
        .filter(|n| crate::partition::validate_topic_name(n).is_ok())
        .filter(|n| !crate::partition::INTERNAL_TOPICS.contains(&n.as_str()))
        .filter(|n| may_create(n))
        .collect()
}

/// In cluster mode an offset commit is answered once the group's `__consumer_offsets`
/// partition has it in sync (as Kafka's `offsets.commit.required.acks=-1`): a commit the
/// leader loses before that is reported failed, never silently dropped.
/// In cluster mode, waits (up to 5 s) until what the coordinator wrote for `group` is
/// replicated (the `__consumer_offsets` partition's high watermark reaches its log end), so an
/// acknowledged commit or membership change survives the coordinator's death, as Kafka answers
/// only once its write is committed. `Err` with the code to answer otherwise.
pub(super) async fn group_state_replicated(broker: &Broker, group: &str) -> Result<(), ErrorCode> {
    if broker.cluster_node().is_none() {
        return Ok(());
    }
    let partition = broker
        .topics
        .get(crate::coordinator::OFFSETS_TOPIC)
        .and_then(|t| t.partition(broker.groups.offsets_partition(group)));
    let Some(partition) = partition else {
        return Ok(());
    };
    let end = partition.follower_position().map_or(0, |(end, _)| end);
    partition
        .wait_replicated(end - 1, std::time::Duration::from_secs(5))
        .await
        .map_err(|e| match e.code() {
            ErrorCode::RequestTimedOut => ErrorCode::RequestTimedOut,
            ErrorCode::NotLeaderOrFollower => ErrorCode::NotCoordinator,
            _ => ErrorCode::CoordinatorNotAvailable,
        })
}

/// A ConsumerGroupHeartbeat answered once the membership change it wrote is replicated
/// ([`group_state_replicated`]); on failure the member is told to retry (Kafka's mapping).
async fn replicated_heartbeat(broker: &Broker, group: &str, answer: ResponseKind) -> ResponseKind {
    match answer {
        ResponseKind::ConsumerGroupHeartbeat(r) if r.error_code == 0 => {
            let refused = |code: ErrorCode| {
                ResponseKind::ConsumerGroupHeartbeat(
                    kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default()
                        .with_error_code(code.code())
                        .with_error_message(Some(
                            kafka_protocol::protocol::StrBytes::from_static_str(
                                "the group's state was not replicated in time",
                            ),
                        )),
                )
            };
            once_replicated(
                broker,
                group,
                ResponseKind::ConsumerGroupHeartbeat(r),
                refused,
            )
            .await
        }
        other => other,
    }
}

/// A SyncGroup answered once the group's state with its new assignment is replicated
/// ([`group_state_replicated`]), as Kafka answers once its GroupMetadata write is committed: a
/// coordinator that dies right after the answer leaves a successor that knows the generation.
/// On failure the member is told to find the coordinator again and rejoin.
async fn replicated_sync(broker: &Broker, group: &str, answer: ResponseKind) -> ResponseKind {
    match answer {
        ResponseKind::SyncGroup(r) if r.error_code == 0 => {
            let refused = |code: ErrorCode| {
                ResponseKind::SyncGroup(
                    kafka_protocol::messages::SyncGroupResponse::default()
                        .with_error_code(code.code()),
                )
            };
            once_replicated(broker, group, ResponseKind::SyncGroup(r), refused).await
        }
        other => other,
    }
}

/// `answer` once `group`'s state is replicated, else what `refused` makes of the error (a
/// replication that timed out is told as COORDINATOR_NOT_AVAILABLE: the member retries).
async fn once_replicated(
    broker: &Broker,
    group: &str,
    answer: ResponseKind,
    refused: impl FnOnce(ErrorCode) -> ResponseKind,
) -> ResponseKind {
    match group_state_replicated(broker, group).await {
        Ok(()) => answer,
        Err(ErrorCode::RequestTimedOut) => refused(ErrorCode::CoordinatorNotAvailable),
        Err(code) => refused(code),
    }
}

async fn replicated_commit(broker: &Broker, group: &str, answer: ResponseKind) -> ResponseKind {
    let ResponseKind::OffsetCommit(mut response) = answer else {
        return answer;
    };
    if let Err(code) = group_state_replicated(broker, group).await {
        for t in &mut response.topics {
            for p in &mut t.partitions {
                if p.error_code == 0 {
                    p.error_code = code.code();
                }
            }
        }
    }
    ResponseKind::OffsetCommit(response)
}
