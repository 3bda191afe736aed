//! Error responses shaped like the real ones, built from the request alone: what the
//! interception point answers when a test injects an error code (`server::intercept`).
//!
//! Each builder puts the code where a client looks for it in that API: on every partition of a
//! Produce, Fetch, ListOffsets, OffsetCommit, TxnOffsetCommit or AddPartitionsToTxn, on every
//! topic of a Metadata or CreateTopics, on every key of a batched FindCoordinator, and in the
//! top-level field of the rest. Ids and epochs in the response are -1, as a broker answers an
//! error. A Fetch carries session id 0 and puts the session errors (FETCH_SESSION_ID_NOT_FOUND,
//! INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) at the top level, every other code
//! on the partitions: the client then starts a new session, as after a real error.

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::metadata::cluster_part;
use crate::broker::Broker;
use crate::{Error, Result};

/// The APIs an error can be injected into.
pub const SUPPORTED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
    ApiKey::CreateTopics,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::WriteTxnMarkers,
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
];

/// Whether [`error_response`] can answer `api_key`.
pub fn supports(api_key: ApiKey) -> bool {
    SUPPORTED.contains(&api_key)
}

/// The response a broker sends when `request` fails with `code`; `Ok(None)` for a Produce with
/// acks=0 (no response is ever sent). Fails for an API not in [`SUPPORTED`].
pub fn error_response(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: &RequestKind,
    code: ErrorCode,
) -> Result<Option<ResponseKind>> {
    let e = code.code();
    let version = ctx.api_version;
    let response = match request {
        RequestKind::Produce(r) if r.acks == 0 => return Ok(None),
        RequestKind::Produce(r) => ResponseKind::Produce(produce(r, e)),
        RequestKind::Fetch(r) => ResponseKind::Fetch(fetch(r, code)),
        RequestKind::ListOffsets(r) => ResponseKind::ListOffsets(list_offsets(r, e)),
        RequestKind::Metadata(r) => {
            ResponseKind::Metadata(metadata(broker, ctx.listener(), r, version, e))
        }
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(offset_commit(r, e)),
        RequestKind::OffsetFetch(r) => ResponseKind::OffsetFetch(offset_fetch(r, version, e)),
        RequestKind::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(find_coordinator(r, version, e))
        }
        RequestKind::JoinGroup(r) => ResponseKind::JoinGroup(
            JoinGroupResponse::default()
                .with_error_code(e)
                .with_generation_id(-1)
                // Nullable only from v7.
                .with_protocol_name((version < 7).then(|| super::reply::sb("")))
                .with_member_id(r.member_id.clone()),
        ),
        RequestKind::SyncGroup(_) => {
            ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(e))
        }
        RequestKind::Heartbeat(_) => {
            ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(e))
        }
        RequestKind::LeaveGroup(_) => {
            ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(e))
        }
        RequestKind::ConsumerGroupHeartbeat(_) => ResponseKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatResponse::default()
                .with_error_code(e)
                .with_member_epoch(-1),
        ),
        RequestKind::ConsumerGroupDescribe(r) => ResponseKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeResponse::default().with_groups(
                r.group_ids
                    .iter()
                    .map(|g| {
                        consumer_group_describe_response::DescribedGroup::default()
                            .with_group_id(g.clone())
                            .with_error_code(e)
                            .with_authorized_operations(i32::MIN)
                    })
                    .collect(),
            ),
        ),
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(create_topics(r, e)),
        RequestKind::InitProducerId(_) => ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(e)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ),
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(add_partitions_to_txn(r, version, e))
        }
        RequestKind::AddOffsetsToTxn(_) => {
            ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(e))
        }
        RequestKind::EndTxn(_) => ResponseKind::EndTxn(
            EndTxnResponse::default()
                .with_error_code(e)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ),
        RequestKind::TxnOffsetCommit(r) => ResponseKind::TxnOffsetCommit(txn_offset_commit(r, e)),
        RequestKind::WriteTxnMarkers(r) => ResponseKind::WriteTxnMarkers(write_txn_markers(r, e)),
        RequestKind::ElectLeaders(r) => ResponseKind::ElectLeaders(elect_leaders(r, version, e)),
        RequestKind::AlterPartitionReassignments(r) => ResponseKind::AlterPartitionReassignments(
            AlterPartitionReassignmentsResponse::default()
                .with_allow_replication_factor_change(r.allow_replication_factor_change)
                .with_error_code(e),
        ),
        RequestKind::ListPartitionReassignments(_) => ResponseKind::ListPartitionReassignments(
            ListPartitionReassignmentsResponse::default().with_error_code(e),
        ),
        _ => {
            return Err(Error::Intercept(format!(
                "no error response for {:?}",
                ctx.api_key
            )))
        }
    };
    Ok(Some(response))
}

fn produce(r: &ProduceRequest, e: i16) -> ProduceResponse {
    let responses = r
        .topic_data
        .iter()
        .map(|t| {
            let partitions = t
                .partition_data
                .iter()
                .map(|p| {
                    PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_error_code(e)
                        .with_base_offset(-1)
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(t.name.clone())
                .with_topic_id(t.topic_id)
                .with_partition_responses(partitions)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// Errors about the fetch session itself, which Kafka reports at the top level.
const SESSION_ERRORS: &[ErrorCode] = &[
    ErrorCode::FetchSessionIdNotFound,
    ErrorCode::InvalidFetchSessionEpoch,
    ErrorCode::FetchSessionTopicIdError,
];

fn fetch(r: &FetchRequest, code: ErrorCode) -> FetchResponse {
    let response = FetchResponse::default().with_session_id(0);
    if SESSION_ERRORS.contains(&code) {
        return response.with_error_code(code.code());
    }
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_error_code(code.code())
                        .with_high_watermark(-1)
                        .with_records(Some(bytes::Bytes::new()))
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(partitions)
        })
        .collect();
    response.with_responses(topics)
}

fn list_offsets(r: &ListOffsetsRequest, e: i16) -> ListOffsetsResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(e)
                        .with_timestamp(-1)
                        .with_offset(-1)
                        .with_leader_epoch(-1)
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// Brokers and cluster as usual (so the client keeps a valid view), every topic with the error:
/// those the request names, or every hosted topic for an all-topics request.
fn metadata(
    broker: &Broker,
    listener: &str,
    r: &MetadataRequest,
    version: i16,
    e: i16,
) -> MetadataResponse {
    let all = match &r.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    let topics = if all {
        broker
            .topics
            .list()
            .iter()
            .map(|t| {
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(super::reply::sb(&t.name))))
                    .with_topic_id(t.id)
                    .with_error_code(e)
            })
            .collect()
    } else {
        r.topics
            .iter()
            .flatten()
            .map(|t| {
                MetadataResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_topic_id(t.topic_id)
                    .with_error_code(e)
            })
            .collect()
    };
    cluster_part(broker, listener).with_topics(topics)
}

fn offset_commit(r: &OffsetCommitRequest, e: i16) -> OffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(e)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

/// Per group from v8; before, the top-level code (v2+) and every requested partition.
fn offset_fetch(r: &OffsetFetchRequest, version: i16, e: i16) -> OffsetFetchResponse {
    if version >= 8 {
        let groups = r
            .groups
            .iter()
            .map(|g| {
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_error_code(e)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let topics = r
        .topics
        .iter()
        .flatten()
        .map(|t| {
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&p| {
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(p)
                        .with_committed_offset(-1)
                        .with_committed_leader_epoch(-1)
                        .with_error_code(e)
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    let response = OffsetFetchResponse::default().with_topics(topics);
    if version >= 2 {
        response.with_error_code(e)
    } else {
        response
    }
}

/// One result per key from v4 (batched); the top-level fields before.
fn find_coordinator(r: &FindCoordinatorRequest, version: i16, e: i16) -> FindCoordinatorResponse {
    if version >= 4 {
        let coordinators = r
            .coordinator_keys
            .iter()
            .map(|k| {
                Coordinator::default()
                    .with_key(k.clone())
                    .with_node_id(BrokerId(-1))
                    .with_port(-1)
                    .with_error_code(e)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    FindCoordinatorResponse::default()
        .with_error_code(e)
        .with_node_id(BrokerId(-1))
        .with_port(-1)
}

fn create_topics(r: &CreateTopicsRequest, e: i16) -> CreateTopicsResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            CreatableTopicResult::default()
                .with_name(t.name.clone())
                .with_error_code(e)
                .with_num_partitions(-1)
                .with_replication_factor(-1)
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

fn txn_topic_results<'a>(
    topics: impl Iterator<Item = (&'a TopicName, &'a [i32])>,
    e: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .map(|(name, partitions)| {
            let results = partitions
                .iter()
                .map(|&p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(p)
                        .with_partition_error_code(e)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(name.clone())
                .with_results_by_partition(results)
        })
        .collect()
}

/// Per partition: in the v0-3 client form, or per transaction in the v4+ batched form.
fn add_partitions_to_txn(
    r: &AddPartitionsToTxnRequest,
    version: i16,
    e: i16,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let topics = r
            .v3_and_below_topics
            .iter()
            .map(|t| (&t.name, t.partitions.as_slice()));
        return AddPartitionsToTxnResponse::default()
            .with_results_by_topic_v3_and_below(txn_topic_results(topics, e));
    }
    let results = r
        .transactions
        .iter()
        .map(|t| {
            let topics = t.topics.iter().map(|t| (&t.name, t.partitions.as_slice()));
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(txn_topic_results(topics, e))
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

fn txn_offset_commit(r: &TxnOffsetCommitRequest, e: i16) -> TxnOffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(e)
                })
                .collect();
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// ElectLeaders: the top-level code from v1; v0 has only per-partition results.
fn elect_leaders(r: &ElectLeadersRequest, version: i16, e: i16) -> ElectLeadersResponse {
    use kafka_protocol::messages::elect_leaders_response::{
        PartitionResult, ReplicaElectionResult,
    };
    let results = r
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| {
            ReplicaElectionResult::default()
                .with_topic(t.topic.clone())
                .with_partition_result(
                    t.partitions
                        .iter()
                        .map(|p| {
                            PartitionResult::default()
                                .with_partition_id(*p)
                                .with_error_code(e)
                        })
                        .collect(),
                )
        })
        .collect();
    let response = ElectLeadersResponse::default().with_replica_election_results(results);
    if version >= 1 {
        response.with_error_code(e)
    } else {
        response
    }
}

fn write_txn_markers(r: &WriteTxnMarkersRequest, e: i16) -> WriteTxnMarkersResponse {
    use kafka_protocol::messages::write_txn_markers_response::{
        WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
    };
    let markers = r
        .markers
        .iter()
        .map(|m| {
            let topics = m
                .topics
                .iter()
                .map(|t| {
                    WritableTxnMarkerTopicResult::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partition_indexes
                                .iter()
                                .map(|p| {
                                    WritableTxnMarkerPartitionResult::default()
                                        .with_partition_index(*p)
                                        .with_error_code(e)
                                })
                                .collect(),
                        )
                })
                .collect();
            WritableTxnMarkerResult::default()
                .with_producer_id(m.producer_id)
                .with_topics(topics)
        })
        .collect();
    WriteTxnMarkersResponse::default().with_markers(markers)
}

#[cfg(test)]
mod tests;
