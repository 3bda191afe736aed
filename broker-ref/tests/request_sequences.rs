//! The `broker_sequences` fuzz target's seed corpus, checked as a plain test.
//!
//! Each file in `fuzz/seeds/broker_sequences/` is one fuzz input: request frames (without their
//! size prefix), each preceded by its length as a big-endian u16, sent in order on one
//! connection. Seeds are valid conversations (produce then fetch with a session, a transaction,
//! a group's join/sync/commit/leave, SASL on a plaintext listener, create then delete); here
//! every request of every seed must get a response from the real dispatcher, and the same
//! seeds mutated (truncated frames, swapped order) must not panic or hang the broker.
//! `ODRADEK_WRITE_SEQUENCE_SEEDS=1 cargo test -p odradek-broker --test request_sequences`
//! rewrites the seeds.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Request, StrBytes};
use odradek::protocol::encode_request;
use odradek::records::{BatchBuilder, Compression};
use odradek_broker::broker::Broker;
use odradek_broker::config::BrokerConfig;
use odradek_broker::handlers::ConnectionContext;
use odradek_broker::server::{dispatch, Interceptor, Reply};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn topic(v: &str) -> TopicName {
    TopicName(s(v))
}

/// One request frame, without its size prefix.
fn frame<R: Request>(version: i16, correlation: i32, body: &R) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(s("seq")));
    encode_request(&header, body).unwrap().to_vec()
}

/// Frames joined as the fuzz target reads them.
fn input(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        out.extend_from_slice(&u16::try_from(f.len()).unwrap().to_be_bytes());
        out.extend_from_slice(f);
    }
    out
}

fn records(producer: Option<(i64, i16, i32)>, transactional: bool) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None);
    if let Some((id, epoch, seq)) = producer {
        b = b.producer(id, epoch, seq);
    }
    if transactional {
        b = b.transactional(true);
    }
    b.append(0, Some(b"k"), Some(b"v"), &[]).unwrap();
    b.build().unwrap()
}

fn produce(name: &str, records: Bytes, txn: Option<&str>) -> ProduceRequest {
    ProduceRequest::default()
        .with_transactional_id(txn.map(|t| TransactionalId(s(t))))
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic(name))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])])
}

fn fetch(name: &str, session_id: i32, epoch: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(session_id)
        .with_session_epoch(epoch)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic(name))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])])
}

fn seeds() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let metadata = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic("seq")))
        ]))
        .with_allow_auto_topic_creation(true);
    let join = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(s("seq-group")))
            .with_session_timeout_ms(6000)
            .with_rebalance_timeout_ms(6000)
            .with_member_id(s(member))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(&[
                    0, 1, 0, 0, 0, 0, 255, 255, 255, 255,
                ]))])
    };
    vec![
        (
            "produce_fetch_session",
            vec![
                frame(
                    3,
                    1,
                    &ApiVersionsRequest::default()
                        .with_client_software_name(s("seq"))
                        .with_client_software_version(s("1")),
                ),
                frame(12, 2, &metadata),
                frame(9, 3, &produce("seq", records(None, false), None)),
                frame(12, 4, &fetch("seq", 0, 0)),
                frame(12, 5, &fetch("seq", 1, 1)),
                frame(12, 6, &fetch("seq", 1, -1)),
            ],
        ),
        (
            "transaction",
            vec![
                frame(12, 1, &metadata),
                frame(
                    4,
                    2,
                    &InitProducerIdRequest::default()
                        .with_transactional_id(Some(TransactionalId(s("seq-txn"))))
                        .with_transaction_timeout_ms(10_000)
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                ),
                frame(
                    3,
                    3,
                    &AddPartitionsToTxnRequest::default()
                        .with_v3_and_below_transactional_id(TransactionalId(s("seq-txn")))
                        .with_v3_and_below_producer_id(ProducerId(0))
                        .with_v3_and_below_producer_epoch(0)
                        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                            .with_name(topic("seq"))
                            .with_partitions(vec![0])]),
                ),
                frame(
                    9,
                    4,
                    &produce("seq", records(Some((0, 0, 0)), true), Some("seq-txn")),
                ),
                frame(
                    3,
                    5,
                    &EndTxnRequest::default()
                        .with_transactional_id(TransactionalId(s("seq-txn")))
                        .with_producer_id(ProducerId(0))
                        .with_producer_epoch(0)
                        .with_committed(true),
                ),
                frame(12, 6, &fetch("seq", 0, -1).with_isolation_level(1)),
            ],
        ),
        (
            "group",
            vec![
                frame(
                    4,
                    1,
                    &FindCoordinatorRequest::default()
                        .with_key_type(0)
                        .with_coordinator_keys(vec![s("seq-group")]),
                ),
                frame(9, 2, &join("")),
                frame(9, 3, &join("seq-member")),
                frame(
                    5,
                    4,
                    &SyncGroupRequest::default()
                        .with_group_id(GroupId(s("seq-group")))
                        .with_generation_id(1)
                        .with_member_id(s("seq-member"))
                        .with_protocol_type(Some(s("consumer")))
                        .with_protocol_name(Some(s("range"))),
                ),
                frame(
                    4,
                    5,
                    &HeartbeatRequest::default()
                        .with_group_id(GroupId(s("seq-group")))
                        .with_generation_id(1)
                        .with_member_id(s("seq-member")),
                ),
                frame(
                    8,
                    6,
                    &OffsetCommitRequest::default()
                        .with_group_id(GroupId(s("seq-group")))
                        .with_generation_id_or_member_epoch(1)
                        .with_member_id(s("seq-member"))
                        .with_topics(vec![OffsetCommitRequestTopic::default()
                            .with_name(topic("seq"))
                            .with_partitions(vec![OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(1)])]),
                ),
                frame(
                    4,
                    7,
                    &LeaveGroupRequest::default()
                        .with_group_id(GroupId(s("seq-group")))
                        .with_members(vec![leave_group_request::MemberIdentity::default()
                            .with_member_id(s("seq-member"))]),
                ),
            ],
        ),
        (
            "sasl_on_plaintext",
            vec![
                frame(
                    1,
                    1,
                    &SaslHandshakeRequest::default().with_mechanism(s("PLAIN")),
                ),
                frame(
                    2,
                    2,
                    &SaslAuthenticateRequest::default()
                        .with_auth_bytes(Bytes::from_static(b"\0user\0password")),
                ),
                frame(12, 3, &metadata),
            ],
        ),
        (
            "create_delete_fetch",
            vec![
                frame(
                    7,
                    1,
                    &CreateTopicsRequest::default()
                        .with_topics(vec![CreatableTopic::default()
                            .with_name(topic("seq-gone"))
                            .with_num_partitions(1)
                            .with_replication_factor(1)])
                        .with_timeout_ms(1000),
                ),
                frame(9, 2, &produce("seq-gone", records(None, false), None)),
                frame(
                    6,
                    3,
                    &DeleteTopicsRequest::default()
                        .with_topic_names(vec![topic("seq-gone")])
                        .with_timeout_ms(1000),
                ),
                frame(12, 4, &fetch("seq-gone", 0, -1)),
            ],
        ),
    ]
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/broker_sequences")
}

/// Sends `frames` on one fresh connection; returns how many got a response frame.
fn run(
    runtime: &tokio::runtime::Runtime,
    broker: &Arc<Broker>,
    interceptor: &Interceptor,
    frames: &[&[u8]],
) -> usize {
    let connection = ConnectionContext::plaintext(([127, 0, 0, 1], 40002).into(), "PLAINTEXT");
    runtime.block_on(async {
        let mut answered = 0;
        for f in frames {
            let reply = tokio::time::timeout(
                Duration::from_secs(10),
                dispatch(broker, &connection, interceptor, Bytes::copy_from_slice(f)),
            )
            .await
            .expect("a request in a sequence never hangs");
            if matches!(reply, Reply::Frame(_) | Reply::Chunks(_)) {
                answered += 1;
            }
        }
        answered
    })
}

#[test]
fn every_seed_is_answered_and_its_mutations_do_not_break_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::from_entries([
        ("log.dirs", dir.path().display().to_string()),
        ("group.initial.rebalance.delay.ms", "0".to_string()),
    ])
    .unwrap();
    let broker = Broker::open(config, "127.0.0.1".into(), 9092).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let interceptor = Interceptor::new();
    let write = std::env::var_os("ODRADEK_WRITE_SEQUENCE_SEEDS").is_some();
    for (name, frames) in seeds() {
        let path = corpus_dir().join(name);
        let bytes = input(&frames);
        if write {
            std::fs::create_dir_all(corpus_dir()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (rewrite the seeds)", path.display()));
        assert_eq!(
            stored, bytes,
            "{name}: the stored seed is stale (rewrite the seeds)"
        );
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        assert_eq!(
            run(&runtime, &broker, &interceptor, &refs),
            frames.len(),
            "{name}: every request is answered"
        );
        // Mutations: reversed order, and every frame cut in half.
        let reversed: Vec<&[u8]> = refs.iter().rev().copied().collect();
        run(&runtime, &broker, &interceptor, &reversed);
        let halves: Vec<&[u8]> = refs.iter().map(|f| &f[..f.len() / 2]).collect();
        run(&runtime, &broker, &interceptor, &halves);
    }
    // The broker still serves a well-formed conversation afterwards.
    let (_, first) = &seeds()[0];
    let refs: Vec<&[u8]> = first.iter().map(Vec::as_slice).collect();
    assert_eq!(run(&runtime, &broker, &interceptor, &refs), first.len());
}
