//! The `responses` fuzz target's seed corpus, checked as a plain test.
//!
//! Each file in `fuzz/seeds/responses/` is a fuzz input: two selector bytes
//! (`protocol::client_api_at`: API index, version offset) and a response frame. Seeds are valid
//! responses and must decode as the API they select. (A crash the fuzzer finds becomes a test in
//! `hostile_responses.rs`.) `ODRADEK_WRITE_RESPONSE_SEEDS=1 cargo test -p odradek --test
//! response_corpus` rewrites the seeds from `seeds()`.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use odradek::protocol::consumer_protocol::{encode_assignment, encode_subscription, Subscription};
use odradek::protocol::messages::*;
use odradek::protocol::types::{Encodable, HeaderVersion, StrBytes};
use odradek::protocol::{
    client_api_at, client_versions, decode_response_kind, encode_response, CLIENT_APIS,
};
use odradek::records::{BatchBuilder, Compression};
use odradek::TopicPartition;

fn corpus_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join("responses")
}

fn s(v: &'static str) -> StrBytes {
    StrBytes::from_static_str(v)
}

/// One fuzz input: the selector bytes that choose `key` at `version`, then the frame.
fn input<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, body: &R) -> Vec<u8> {
    let api = CLIENT_APIS.iter().position(|&k| k == key).unwrap();
    let offset = version - client_versions(key).start();
    let mut out = vec![u8::try_from(api).unwrap(), u8::try_from(offset).unwrap()];
    out.extend_from_slice(&encode_response(version, 7, body).unwrap()[4..]);
    out
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let tp = |t: &str, p| TopicPartition {
        topic: Arc::from(t),
        partition: p,
    };
    let mut batch = BatchBuilder::new(Compression::None).base_offset(5);
    batch.append(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
    let batch = batch.build().unwrap();
    let api_versions = ApiVersionsResponse::default().with_api_keys(vec![
        api_versions_response::ApiVersion::default()
            .with_api_key(0)
            .with_max_version(12),
    ]);
    let metadata = MetadataResponse::default()
        .with_brokers(vec![metadata_response::MetadataResponseBroker::default()
            .with_host(s("localhost"))
            .with_port(9092)])
        .with_topics(vec![metadata_response::MetadataResponseTopic::default()
            .with_name(Some(TopicName(s("t"))))
            .with_partitions(vec![
                metadata_response::MetadataResponsePartition::default()
                    .with_replica_nodes(vec![BrokerId(1)])
                    .with_isr_nodes(vec![BrokerId(1)]),
            ])]);
    let produce = ProduceResponse::default().with_responses(vec![
        produce_response::TopicProduceResponse::default()
            .with_name(TopicName(s("t")))
            .with_partition_responses(vec![
                produce_response::PartitionProduceResponse::default().with_base_offset(5)
            ]),
    ]);
    let fetch = FetchResponse::default().with_responses(vec![
        fetch_response::FetchableTopicResponse::default()
            .with_topic(TopicName(s("t")))
            .with_partitions(vec![fetch_response::PartitionData::default()
                .with_high_watermark(6)
                .with_records(Some(batch))]),
    ]);
    let subscription = encode_subscription(&Subscription {
        topics: vec!["t".into()],
        owned: vec![tp("t", 0)],
        user_data: None,
    })
    .unwrap();
    let join = JoinGroupResponse::default()
        .with_member_id(s("m"))
        .with_leader(s("m"))
        .with_protocol_name(Some(s("range")))
        .with_members(vec![join_group_response::JoinGroupResponseMember::default(
        )
        .with_member_id(s("m"))
        .with_metadata(subscription)]);
    let sync = SyncGroupResponse::default()
        .with_assignment(encode_assignment(&[tp("t", 0), tp("t", 1)]).unwrap());
    let coordinator = FindCoordinatorResponse::default().with_coordinators(vec![
        find_coordinator_response::Coordinator::default()
            .with_key(s("g"))
            .with_host(s("localhost"))
            .with_port(9092),
    ]);
    let offsets = ListOffsetsResponse::default().with_topics(vec![
        list_offsets_response::ListOffsetsTopicResponse::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![
                list_offsets_response::ListOffsetsPartitionResponse::default().with_offset(5),
            ]),
    ]);
    let configs = DescribeConfigsResponse::default().with_results(vec![
        describe_configs_response::DescribeConfigsResult::default()
            .with_resource_name(s("t"))
            .with_configs(vec![
                describe_configs_response::DescribeConfigsResourceResult::default()
                    .with_name(s("retention.ms"))
                    .with_value(Some(s("1000"))),
            ]),
    ]);
    let handshake = SaslHandshakeResponse::default().with_mechanisms(vec![s("PLAIN")]);
    let authenticate = SaslAuthenticateResponse::default()
        .with_auth_bytes(Bytes::from_static(b"r=nonce,s=c2FsdA==,i=4096"));
    let producer_id = InitProducerIdResponse::default().with_producer_id(ProducerId(1));
    vec![
        (
            "api_versions_v3",
            input(ApiKey::ApiVersions, 3, &api_versions),
        ),
        (
            "api_versions_v0",
            input(ApiKey::ApiVersions, 0, &api_versions),
        ),
        ("metadata_v12", input(ApiKey::Metadata, 12, &metadata)),
        ("metadata_v1", input(ApiKey::Metadata, 1, &metadata)),
        ("produce_v9", input(ApiKey::Produce, 9, &produce)),
        ("produce_v3", input(ApiKey::Produce, 3, &produce)),
        ("fetch_v12", input(ApiKey::Fetch, 12, &fetch)),
        ("fetch_v4", input(ApiKey::Fetch, 4, &fetch)),
        ("join_group_v5", input(ApiKey::JoinGroup, 5, &join)),
        ("join_group_v9", input(ApiKey::JoinGroup, 9, &join)),
        ("sync_group_v4", input(ApiKey::SyncGroup, 4, &sync)),
        (
            "find_coordinator_v4",
            input(ApiKey::FindCoordinator, 4, &coordinator),
        ),
        ("list_offsets_v7", input(ApiKey::ListOffsets, 7, &offsets)),
        (
            "describe_configs_v4",
            input(ApiKey::DescribeConfigs, 4, &configs),
        ),
        (
            "sasl_handshake_v1",
            input(ApiKey::SaslHandshake, 1, &handshake),
        ),
        (
            "sasl_authenticate_v2",
            input(ApiKey::SaslAuthenticate, 2, &authenticate),
        ),
        (
            "init_producer_id_v4",
            input(ApiKey::InitProducerId, 4, &producer_id),
        ),
    ]
}

fn decode(data: &[u8]) -> odradek::Result<(ApiKey, ResponseKind)> {
    let (key, version) = client_api_at(data[0], data[1]);
    decode_response_kind(key, Bytes::copy_from_slice(&data[2..]), version).map(|(_, b)| (key, b))
}

#[test]
fn seeds_are_valid_responses_of_the_api_they_select() {
    let dir = corpus_dir("seeds");
    if std::env::var_os("ODRADEK_WRITE_RESPONSE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, data) in seeds() {
            std::fs::write(dir.join(name), data).unwrap();
        }
    }
    for (name, data) in seeds() {
        let on_disk = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(on_disk, data, "{name} is stale: rewrite the seeds");
        let (key, _) = decode(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = name.rsplit_once("_v").unwrap().0.replace('_', "");
        assert_eq!(format!("{key:?}").to_lowercase(), expected, "{name}");
    }
}
