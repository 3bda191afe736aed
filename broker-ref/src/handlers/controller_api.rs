//! The requests a controller listener serves (`controller.listener.names`): the metadata
//! quorum's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch on `__cluster_metadata`,
//! FetchSnapshot and DescribeQuorum, and ApiVersions listing exactly those. Any other API on
//! a controller listener closes the connection, as Kafka's controller does for APIs it does not
//! serve.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    describe_quorum_response, AllocateProducerIdsResponse, AlterPartitionResponse, ApiKey,
    ApiVersionsResponse, BeginQuorumEpochResponse, BrokerHeartbeatResponse, BrokerId,
    BrokerRegistrationResponse, DescribeQuorumRequest, DescribeQuorumResponse,
    EndQuorumEpochResponse, FetchSnapshotResponse, RequestKind, ResponseKind, VoteResponse,
};
use odradek::ErrorCode;
use odradek_quorum::{QuorumInfo, ReplicaInfo};

use super::context::RequestContext;
use super::controller_ops;
use super::kafka4_api_versions::ApiRange;
use super::reply::sb;
use crate::cluster::quorum_wire::{self, METADATA_TOPIC};
use crate::cluster::ClusterNode;
use crate::security::acl::AclOperation;
use crate::{Error, Result};

/// The APIs and versions a controller listener serves (Fetch from v12: KRaft's fetch needs
/// `LastFetchedEpoch`).
#[rustfmt::skip]
pub const CONTROLLER_APIS: &[ApiRange] = &[
    ApiRange { api_key: 1, min: 12, max: 12 },  // Fetch (__cluster_metadata)
    ApiRange { api_key: 17, min: 0, max: 1 },   // SaslHandshake (SASL controller listeners)
    ApiRange { api_key: 18, min: 0, max: 4 },   // ApiVersions
    ApiRange { api_key: 19, min: 2, max: 7 },   // CreateTopics (forwarded by brokers)
    ApiRange { api_key: 20, min: 1, max: 6 },   // DeleteTopics (forwarded)
    ApiRange { api_key: 30, min: 1, max: 3 },   // CreateAcls (forwarded)
    ApiRange { api_key: 31, min: 1, max: 3 },   // DeleteAcls (forwarded)
    ApiRange { api_key: 36, min: 0, max: 2 },   // SaslAuthenticate
    ApiRange { api_key: 37, min: 0, max: 3 },   // CreatePartitions (forwarded)
    ApiRange { api_key: 43, min: 0, max: 2 },   // ElectLeaders (forwarded)
    ApiRange { api_key: 44, min: 0, max: 1 },   // IncrementalAlterConfigs (topics, brokers, groups; forwarded)
    ApiRange { api_key: 45, min: 0, max: 1 },   // AlterPartitionReassignments (forwarded)
    ApiRange { api_key: 46, min: 0, max: 0 },   // ListPartitionReassignments (forwarded)
    ApiRange { api_key: 49, min: 0, max: 1 },   // AlterClientQuotas (forwarded)
    ApiRange { api_key: 51, min: 0, max: 0 },   // AlterUserScramCredentials (forwarded)
    ApiRange { api_key: 52, min: 0, max: 2 },   // Vote
    ApiRange { api_key: 53, min: 0, max: 1 },   // BeginQuorumEpoch
    ApiRange { api_key: 54, min: 0, max: 1 },   // EndQuorumEpoch
    ApiRange { api_key: 55, min: 0, max: 2 },   // DescribeQuorum
    ApiRange { api_key: 56, min: 2, max: 3 },   // AlterPartition
    ApiRange { api_key: 59, min: 0, max: 1 },   // FetchSnapshot
    ApiRange { api_key: 62, min: 0, max: 4 },   // BrokerRegistration
    ApiRange { api_key: 63, min: 0, max: 1 },   // BrokerHeartbeat
    ApiRange { api_key: 67, min: 0, max: 0 },   // AllocateProducerIds
];

/// The range a controller listener serves of `api_key`, if any.
pub fn controller_range(api_key: i16) -> Option<ApiRange> {
    CONTROLLER_APIS
        .iter()
        .find(|r| r.api_key == api_key)
        .copied()
}

fn not_served(what: &str) -> Error {
    Error::kafka(
        ErrorCode::UnsupportedVersion,
        format!("{what} is not served on a controller listener"),
    )
}

/// Handles a request that arrived on a controller listener of `node`.
pub async fn handle(
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    body: RequestKind,
) -> Result<Option<ResponseKind>> {
    let cluster_id = node.settings.cluster_id.as_str();
    let quorum = &node.quorum;
    let answer = |r: Option<odradek_quorum::Response>| {
        r.ok_or_else(|| {
            Error::kafka(
                ErrorCode::NotController,
                "the metadata quorum is not running",
            )
        })
    };
    let response = match body {
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions()),
        RequestKind::Vote(r) => {
            quorum_wire::check_cluster(cluster_id, r.cluster_id.as_ref())?;
            let (from, request) = quorum_wire::vote_in(&r)?;
            ResponseKind::Vote(quorum_wire::vote_out(answer(
                quorum.request(from, request).await,
            )?))
        }
        RequestKind::BeginQuorumEpoch(r) => {
            quorum_wire::check_cluster(cluster_id, r.cluster_id.as_ref())?;
            let (from, request) = quorum_wire::begin_in(&r)?;
            ResponseKind::BeginQuorumEpoch(quorum_wire::begin_out(answer(
                quorum.request(from, request).await,
            )?))
        }
        RequestKind::EndQuorumEpoch(r) => {
            quorum_wire::check_cluster(cluster_id, r.cluster_id.as_ref())?;
            let (from, request) = quorum_wire::end_in(&r)?;
            ResponseKind::EndQuorumEpoch(quorum_wire::end_out(answer(
                quorum.request(from, request).await,
            )?))
        }
        RequestKind::Fetch(r) if quorum_wire::is_metadata_fetch(&r) => {
            quorum_wire::check_cluster(cluster_id, r.cluster_id.as_ref())?;
            let (from, request) = quorum_wire::fetch_in(&r)?;
            let response = answer(quorum.request(from, request).await)?;
            let log_start = quorum.describe().await.map_or(0, |(_, start)| start);
            ResponseKind::Fetch(quorum_wire::fetch_out(response, log_start)?)
        }
        RequestKind::FetchSnapshot(r) => {
            quorum_wire::check_cluster(cluster_id, r.cluster_id.as_ref())?;
            let (from, request) = quorum_wire::fetch_snapshot_in(&r)?;
            ResponseKind::FetchSnapshot(quorum_wire::fetch_snapshot_out(answer(
                quorum.request(from, request).await,
            )?))
        }
        RequestKind::DescribeQuorum(r) => {
            ResponseKind::DescribeQuorum(describe_quorum(node, ctx, &r).await)
        }
        RequestKind::BrokerRegistration(r) => {
            ResponseKind::BrokerRegistration(controller_ops::register(node, r).await)
        }
        RequestKind::BrokerHeartbeat(r) => {
            ResponseKind::BrokerHeartbeat(controller_ops::heartbeat(node, r).await)
        }
        RequestKind::AlterPartition(r) => {
            ResponseKind::AlterPartition(controller_ops::alter_partition(node, r).await)
        }
        RequestKind::AllocateProducerIds(r) => {
            ResponseKind::AllocateProducerIds(controller_ops::allocate_producer_ids(node, r).await)
        }
        RequestKind::CreateTopics(r) => {
            ResponseKind::CreateTopics(controller_ops::create_topics(node, ctx, r).await)
        }
        RequestKind::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(controller_ops::delete_topics(node, r).await)
        }
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(controller_ops::create_partitions(node, r).await)
        }
        RequestKind::IncrementalAlterConfigs(r) => {
            ResponseKind::IncrementalAlterConfigs(controller_ops::alter_configs(node, r).await)
        }
        RequestKind::AlterClientQuotas(r) => controller_ops::alter_client_quotas(node, r).await,
        RequestKind::ElectLeaders(r) => {
            ResponseKind::ElectLeaders(controller_ops::elect_leaders(node, r).await)
        }
        RequestKind::CreateAcls(r) => {
            super::cluster_security::create_acls_on_controller(node, ctx, r).await
        }
        RequestKind::DeleteAcls(r) => {
            super::cluster_security::delete_acls_on_controller(node, ctx, r).await
        }
        RequestKind::AlterUserScramCredentials(r) => {
            super::cluster_security::alter_scram_on_controller(node, r).await
        }
        RequestKind::ListPartitionReassignments(r) => ResponseKind::ListPartitionReassignments(
            super::reassignments::list_on_controller(node, &r),
        ),
        RequestKind::AlterPartitionReassignments(r) => ResponseKind::AlterPartitionReassignments(
            super::reassignments::alter_on_controller(controller_ops::controller(node), r).await,
        ),
        RequestKind::Fetch(_) => {
            return Err(not_served("a Fetch of anything but the metadata log"))
        }
        _ => return Err(not_served(odradek::protocol::api_name(ctx.api_key as i16))),
    };
    Ok(Some(response))
}

/// ApiVersions on a controller listener: the controller APIs only.
fn api_versions() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        CONTROLLER_APIS
            .iter()
            .map(|r| {
                ApiVersion::default()
                    .with_api_key(r.api_key)
                    .with_min_version(r.min)
                    .with_max_version(r.max)
            })
            .collect(),
    )
}

fn replica_state(
    r: &ReplicaInfo,
    now_ms: i64,
    started_ms: i64,
) -> describe_quorum_response::ReplicaState {
    // The quorum keeps times relative to its start; DescribeQuorum reports wall-clock ones.
    let wall = |t: Option<u64>| t.map_or(-1, |t| started_ms + t as i64).min(now_ms);
    describe_quorum_response::ReplicaState::default()
        .with_replica_id(BrokerId(r.id))
        .with_log_end_offset(r.log_end_offset)
        .with_last_fetch_timestamp(wall(r.last_fetch_ms))
        .with_last_caught_up_timestamp(wall(r.last_caught_up_ms))
}

/// DescribeQuorum: the leader answers with every voter's and observer's progress; another
/// controller answers NOT_LEADER_OR_FOLLOWER naming the leader it knows.
async fn describe_quorum(
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: &DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let asked = r.topics.iter().any(|t| {
        t.topic_name.0.as_str() == METADATA_TOPIC
            && t.partitions.iter().any(|p| p.partition_index == 0)
    });
    if !asked {
        return DescribeQuorumResponse::default()
            .with_error_code(ErrorCode::InvalidRequest.code())
            .with_error_message(Some(sb("DescribeQuorum is only for __cluster_metadata-0")));
    }
    let Some((info, _)) = node.quorum.describe().await else {
        return DescribeQuorumResponse::default().with_error_code(ErrorCode::NotController.code());
    };
    let QuorumInfo {
        epoch,
        leader,
        high_watermark,
        voters,
        observers,
    } = info;
    let is_leader = leader == Some(node.settings.node_id);
    let now = crate::clock::now_ms();
    let started = node.started_ms;
    let mut partition = describe_quorum_response::PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(BrokerId(leader.unwrap_or(-1)))
        .with_leader_epoch(epoch);
    if is_leader {
        partition = partition
            .with_high_watermark(high_watermark)
            .with_current_voters(
                voters
                    .iter()
                    .map(|v| replica_state(v, now, started))
                    .collect(),
            )
            .with_observers(
                observers
                    .iter()
                    .map(|o| replica_state(o, now, started))
                    .collect(),
            );
    } else {
        partition = partition
            .with_error_code(ErrorCode::NotLeaderOrFollower.code())
            .with_error_message(Some(sb("this controller is not the quorum's leader")));
    }
    let mut response = DescribeQuorumResponse::default().with_topics(vec![
        describe_quorum_response::TopicData::default()
            .with_topic_name(kafka_protocol::messages::TopicName(sb(METADATA_TOPIC)))
            .with_partitions(vec![partition]),
    ]);
    if ctx.api_version >= 2 {
        response = response.with_nodes(
            node.settings
                .voters
                .iter()
                .map(|(id, (host, port))| {
                    describe_quorum_response::Node::default()
                        .with_node_id(BrokerId(*id))
                        .with_listeners(vec![describe_quorum_response::Listener::default()
                            .with_name(sb(&node.settings.controller_listeners[0]))
                            .with_host(sb(host))
                            .with_port(*port)])
                })
                .collect(),
        );
    }
    response
}

/// Whether `api_key` is one a controller listener serves.
pub fn serves(api_key: ApiKey) -> bool {
    controller_range(api_key as i16).is_some()
}

/// What the principal of a request on a controller listener must be allowed on the cluster
/// when an authorizer is configured, as Kafka's controller checks it: nothing for ApiVersions,
/// DESCRIBE for DescribeQuorum, CLUSTER_ACTION for everything else (the requests of other
/// nodes, including the admin requests brokers forward once they authorized their client).
pub fn required_operation(body: &RequestKind) -> Option<AclOperation> {
    match body {
        RequestKind::ApiVersions(_) => None,
        RequestKind::DescribeQuorum(_) => Some(AclOperation::Describe),
        _ => Some(AclOperation::ClusterAction),
    }
}

/// The answer to a controller-listener request whose principal lacks
/// [`required_operation`]: CLUSTER_AUTHORIZATION_FAILED where the response carries an error
/// for the whole request; the connection closes for the other forwarded APIs (only a node
/// sends them, and a node without CLUSTER_ACTION is misconfigured: the log says so).
pub fn refused(
    broker: &crate::broker::Broker,
    ctx: &RequestContext<'_>,
    body: &RequestKind,
) -> Result<Option<ResponseKind>> {
    let code = ErrorCode::ClusterAuthorizationFailed;
    let e = code.code();
    tracing::warn!(
        principal = %ctx.connection.principal,
        peer = %ctx.connection.peer,
        api = odradek::protocol::api_name(ctx.api_key as i16),
        "refused on the controller listener: the principal needs CLUSTER_ACTION on the cluster \
         (put the nodes' principal in super.users or grant it)"
    );
    let response = match body {
        RequestKind::Vote(_) => ResponseKind::Vote(VoteResponse::default().with_error_code(e)),
        RequestKind::BeginQuorumEpoch(_) => {
            ResponseKind::BeginQuorumEpoch(BeginQuorumEpochResponse::default().with_error_code(e))
        }
        RequestKind::EndQuorumEpoch(_) => {
            ResponseKind::EndQuorumEpoch(EndQuorumEpochResponse::default().with_error_code(e))
        }
        RequestKind::FetchSnapshot(_) => {
            ResponseKind::FetchSnapshot(FetchSnapshotResponse::default().with_error_code(e))
        }
        RequestKind::DescribeQuorum(_) => {
            ResponseKind::DescribeQuorum(DescribeQuorumResponse::default().with_error_code(e))
        }
        RequestKind::BrokerRegistration(_) => ResponseKind::BrokerRegistration(
            BrokerRegistrationResponse::default().with_error_code(e),
        ),
        RequestKind::BrokerHeartbeat(_) => {
            ResponseKind::BrokerHeartbeat(BrokerHeartbeatResponse::default().with_error_code(e))
        }
        RequestKind::AlterPartition(_) => {
            ResponseKind::AlterPartition(AlterPartitionResponse::default().with_error_code(e))
        }
        RequestKind::AllocateProducerIds(_) => ResponseKind::AllocateProducerIds(
            AllocateProducerIdsResponse::default().with_error_code(e),
        ),
        RequestKind::Fetch(_)
        | RequestKind::CreateTopics(_)
        | RequestKind::ElectLeaders(_)
        | RequestKind::AlterPartitionReassignments(_)
        | RequestKind::ListPartitionReassignments(_) => {
            return super::error_response::error_response(broker, ctx, body, code)
        }
        _ => {
            return Err(Error::kafka(
                code,
                "the principal needs CLUSTER_ACTION on the controller listener",
            ))
        }
    };
    Ok(Some(response))
}
