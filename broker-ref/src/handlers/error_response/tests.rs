//! Every supported API, at every advertised version: the error response encodes, decodes, and
//! carries the injected code wherever the client looks for it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::protocol::StrBytes;
use odradek::protocol::{decode_response_kind, encode_response_kind};
use uuid::Uuid;

use super::*;
use crate::config::BrokerConfig;
use crate::handlers::{advertised_range, ConnectionContext};

const TOPIC_ID: Uuid = Uuid::from_u128(0x1234);

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A request with one topic / partition / key / group, shaped as a client of version `v`
/// sends it (topic ids only where that version has them).
fn request(key: ApiKey, v: i16) -> RequestKind {
    match key {
        ApiKey::Produce => {
            let t = TopicProduceData::default()
                .with_partition_data(vec![PartitionProduceData::default().with_index(0)]);
            let t = if v >= 13 {
                t.with_topic_id(TOPIC_ID)
            } else {
                t.with_name(name("t"))
            };
            RequestKind::Produce(
                ProduceRequest::default()
                    .with_acks(1)
                    .with_topic_data(vec![t]),
            )
        }
        ApiKey::Fetch => {
            let t = FetchTopic::default()
                .with_partitions(vec![FetchPartition::default().with_partition(0)]);
            let t = if v >= 13 {
                t.with_topic_id(TOPIC_ID)
            } else {
                t.with_topic(name("t"))
            };
            RequestKind::Fetch(FetchRequest::default().with_topics(vec![t]))
        }
        ApiKey::ListOffsets => RequestKind::ListOffsets(ListOffsetsRequest::default().with_topics(
            vec![ListOffsetsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![ListOffsetsPartition::default()])],
        )),
        ApiKey::Metadata => {
            RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("t"))),
            ])))
        }
        ApiKey::OffsetCommit => {
            RequestKind::OffsetCommit(OffsetCommitRequest::default().with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()]),
            ]))
        }
        ApiKey::OffsetFetch if v >= 8 => {
            RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default().with_group_id(GroupId(s("g"))),
            ]))
        }
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(
            OffsetFetchRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                    .with_name(name("t"))
                    .with_partition_indexes(vec![0, 1])])),
        ),
        ApiKey::FindCoordinator => RequestKind::FindCoordinator(if v >= 4 {
            FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g"), s("h")])
        } else {
            FindCoordinatorRequest::default().with_key(s("g"))
        }),
        ApiKey::JoinGroup => {
            RequestKind::JoinGroup(JoinGroupRequest::default().with_member_id(s("member-1")))
        }
        ApiKey::SyncGroup => RequestKind::SyncGroup(SyncGroupRequest::default()),
        ApiKey::Heartbeat => RequestKind::Heartbeat(HeartbeatRequest::default()),
        ApiKey::LeaveGroup => RequestKind::LeaveGroup(LeaveGroupRequest::default()),
        ApiKey::ConsumerGroupHeartbeat => RequestKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatRequest::default().with_member_id(s("m")),
        ),
        ApiKey::ConsumerGroupDescribe => RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s("g"))]),
        ),
        ApiKey::CreateTopics => RequestKind::CreateTopics(
            CreateTopicsRequest::default()
                .with_topics(vec![CreatableTopic::default().with_name(name("new"))]),
        ),
        ApiKey::InitProducerId => RequestKind::InitProducerId(InitProducerIdRequest::default()),
        ApiKey::AddPartitionsToTxn => {
            let topics = vec![AddPartitionsToTxnTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![0, 1])];
            RequestKind::AddPartitionsToTxn(if v <= 3 {
                AddPartitionsToTxnRequest::default().with_v3_and_below_topics(topics)
            } else {
                AddPartitionsToTxnRequest::default().with_transactions(vec![
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(s("x")))
                        .with_topics(topics),
                ])
            })
        }
        ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(AddOffsetsToTxnRequest::default()),
        ApiKey::EndTxn => RequestKind::EndTxn(EndTxnRequest::default()),
        ApiKey::TxnOffsetCommit => {
            RequestKind::TxnOffsetCommit(TxnOffsetCommitRequest::default().with_topics(vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![TxnOffsetCommitRequestPartition::default()]),
            ]))
        }
        ApiKey::WriteTxnMarkers => {
            use kafka_protocol::messages::write_txn_markers_request::{
                WritableTxnMarker, WritableTxnMarkerTopic,
            };
            RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default().with_markers(vec![
                WritableTxnMarker::default().with_topics(vec![WritableTxnMarkerTopic::default()
                    .with_name(name("t"))
                    .with_partition_indexes(vec![0, 1])]),
            ]))
        }
        ApiKey::ElectLeaders => {
            use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
            RequestKind::ElectLeaders(ElectLeadersRequest::default().with_topic_partitions(Some(
                vec![TopicPartitions::default()
                    .with_topic(name("t"))
                    .with_partitions(vec![0])],
            )))
        }
        ApiKey::AlterPartitionReassignments => {
            RequestKind::AlterPartitionReassignments(AlterPartitionReassignmentsRequest::default())
        }
        ApiKey::ListPartitionReassignments => {
            RequestKind::ListPartitionReassignments(ListPartitionReassignmentsRequest::default())
        }
        other => panic!("no test request for {other:?}"),
    }
}

/// Every error code of the response at the level a client reads for that API.
fn codes(response: &ResponseKind) -> Vec<i16> {
    match response {
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::Fetch(r) => r
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::Metadata(r) => r.topics.iter().map(|t| t.error_code).collect(),
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::OffsetFetch(r) if !r.groups.is_empty() => {
            r.groups.iter().map(|g| g.error_code).collect()
        }
        ResponseKind::OffsetFetch(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::FindCoordinator(r) if !r.coordinators.is_empty() => {
            r.coordinators.iter().map(|c| c.error_code).collect()
        }
        ResponseKind::FindCoordinator(r) => vec![r.error_code],
        ResponseKind::JoinGroup(r) => vec![r.error_code],
        ResponseKind::SyncGroup(r) => vec![r.error_code],
        ResponseKind::Heartbeat(r) => vec![r.error_code],
        ResponseKind::LeaveGroup(r) => vec![r.error_code],
        ResponseKind::ConsumerGroupHeartbeat(r) => vec![r.error_code],
        ResponseKind::ConsumerGroupDescribe(r) => r.groups.iter().map(|g| g.error_code).collect(),
        ResponseKind::CreateTopics(r) => r.topics.iter().map(|t| t.error_code).collect(),
        ResponseKind::InitProducerId(r) => vec![r.error_code],
        ResponseKind::AddPartitionsToTxn(r) => r
            .results_by_topic_v3_and_below
            .iter()
            .chain(
                r.results_by_transaction
                    .iter()
                    .flat_map(|t| &t.topic_results),
            )
            .flat_map(|t| {
                t.results_by_partition
                    .iter()
                    .map(|p| p.partition_error_code)
            })
            .collect(),
        ResponseKind::AddOffsetsToTxn(r) => vec![r.error_code],
        ResponseKind::EndTxn(r) => vec![r.error_code],
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::WriteTxnMarkers(r) => r
            .markers
            .iter()
            .flat_map(|m| &m.topics)
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::ElectLeaders(r) if r.error_code != 0 => vec![r.error_code],
        ResponseKind::ElectLeaders(r) => r
            .replica_election_results
            .iter()
            .flat_map(|t| t.partition_result.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::AlterPartitionReassignments(r) => vec![r.error_code],
        ResponseKind::ListPartitionReassignments(r) => vec![r.error_code],
        other => panic!("unexpected response {other:?}"),
    }
}

fn broker() -> (Arc<Broker>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::from_entries([("log.dirs", dir.path().to_str().unwrap())]).unwrap();
    let broker = Broker::open(config, "127.0.0.1".into(), 9092).unwrap();
    broker
        .topics
        .create("t", 2, BTreeMap::new(), false)
        .unwrap();
    (broker, dir)
}

fn ctx(conn: &ConnectionContext, key: ApiKey, version: i16) -> RequestContext<'_> {
    RequestContext {
        connection: conn,
        api_key: key,
        api_version: version,
        correlation_id: 99,
        client_id: None,
    }
}

#[test]
fn every_supported_api_and_version_round_trips_with_the_code() {
    let (broker, _dir) = broker();
    let conn = ConnectionContext::plaintext("127.0.0.1:1".parse().unwrap(), "PLAINTEXT");
    let code = ErrorCode::CoordinatorNotAvailable;
    for &key in SUPPORTED {
        // Cluster-only APIs: Kafka's range capped at the codec's, as a cluster node advertises.
        let range = advertised_range(key as i16)
            .or_else(|| {
                let kafka = crate::handlers::kafka4_api_versions::ADVERTISED
                    .iter()
                    .find(|r| r.api_key == key as i16)?;
                crate::handlers::api_versions::CLUSTER_ONLY_APIS
                    .contains(&key)
                    .then(|| crate::handlers::kafka4_api_versions::ApiRange {
                        api_key: kafka.api_key,
                        min: kafka.min,
                        max: kafka.max.min(odradek::protocol::codec_versions(key).max),
                    })
            })
            .unwrap_or_else(|| panic!("{key:?} is supported but not advertised"));
        // Versions the codec cannot decode (Produce v0-2) never reach a handler.
        let min = range.min.max(odradek::protocol::codec_versions(key).min);
        for v in min..=range.max {
            let what = format!("{key:?} v{v}");
            let response = error_response(&broker, &ctx(&conn, key, v), &request(key, v), code)
                .unwrap()
                .unwrap_or_else(|| panic!("{what}: no response"));
            let frame = encode_response_kind(key, v, 99, &response)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let (header, decoded) = decode_response_kind(key, frame.slice(4..), v)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(header.correlation_id, 99, "{what}");
            let found = codes(&decoded);
            assert!(!found.is_empty(), "{what}: the code is nowhere");
            assert!(found.iter().all(|&c| c == code.code()), "{what}: {found:?}");
        }
    }
}

#[test]
fn shapes_follow_the_request() {
    let (broker, _dir) = broker();
    let conn = ConnectionContext::plaintext("127.0.0.1:1".parse().unwrap(), "PLAINTEXT");
    let not_leader = ErrorCode::NotLeaderOrFollower;
    // acks=0: Kafka never answers a Produce, error or not.
    let fire_and_forget = RequestKind::Produce(ProduceRequest::default().with_acks(0));
    let produce_ctx = ctx(&conn, ApiKey::Produce, 9);
    assert!(
        error_response(&broker, &produce_ctx, &fire_and_forget, not_leader)
            .unwrap()
            .is_none()
    );
    // Fetch session errors are top-level, with no partitions.
    let fetch_ctx = ctx(&conn, ApiKey::Fetch, 12);
    let Some(ResponseKind::Fetch(f)) = error_response(
        &broker,
        &fetch_ctx,
        &request(ApiKey::Fetch, 12),
        ErrorCode::InvalidFetchSessionEpoch,
    )
    .unwrap() else {
        panic!("not a fetch response");
    };
    assert_eq!(f.error_code, ErrorCode::InvalidFetchSessionEpoch.code());
    assert!(f.responses.is_empty());
    let Some(ResponseKind::Fetch(f)) =
        error_response(&broker, &fetch_ctx, &request(ApiKey::Fetch, 12), not_leader).unwrap()
    else {
        panic!("not a fetch response");
    };
    assert_eq!((f.error_code, f.session_id), (0, 0));
    assert_eq!(f.responses[0].partitions[0].records, Some(Bytes::new()));
    // An all-topics Metadata lists every hosted topic with the error, and the broker itself.
    let meta_ctx = ctx(&conn, ApiKey::Metadata, 12);
    let Some(ResponseKind::Metadata(m)) = error_response(
        &broker,
        &meta_ctx,
        &RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
        ErrorCode::LeaderNotAvailable,
    )
    .unwrap() else {
        panic!("not a metadata response");
    };
    assert_eq!(m.brokers.len(), 1);
    assert_eq!(m.topics.len(), 1);
    assert_eq!(m.topics[0].name.as_ref().map(|n| n.as_str()), Some("t"));
    assert_eq!(m.topics[0].error_code, ErrorCode::LeaderNotAvailable.code());
    // APIs without a builder fail instead of answering something malformed.
    let describe_ctx = ctx(&conn, ApiKey::DescribeConfigs, 4);
    let unsupported = RequestKind::DescribeConfigs(DescribeConfigsRequest::default());
    assert!(error_response(&broker, &describe_ctx, &unsupported, not_leader).is_err());
    assert!(!supports(ApiKey::DescribeConfigs));
}
