//! State that must not grow without bound, against the real broker binary: idempotent
//! producers expire after `producer.id.expiration.ms` (and stay gone after a restart), and a
//! classic group admits at most `group.max.size` members.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression};
use odradek::ErrorCode;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn create_topic(client: &mut Client, topic: &str) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    assert_eq!(client.call(&req, 7).topics[0].error_code, 0);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One record from idempotent producer `producer_id`, sequence 0, stamped now.
fn idempotent_batch(producer_id: i64) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None).producer(producer_id, 0, 0);
    b.append(now_ms(), None, Some(b"v"), &[]).unwrap();
    b.build().unwrap()
}

fn produce_request(topic: &str, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])])
}

fn producers_on(client: &mut Client, topic: &str) -> usize {
    let req = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(TopicName(sb(topic)))
        .with_partition_indexes(vec![0])]);
    let resp = client.call(&req, 0);
    let partition = &resp.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    partition.active_producers.len()
}

#[test]
fn state_of_ten_thousand_short_lived_producers_expires_and_stays_expired() {
    const PRODUCERS: i64 = 10_000;
    let dir = temp_dir("producer-expiry");
    let overrides = [
        ("producer.id.expiration.ms", "3000"),
        ("producer.id.expiration.check.interval.ms", "200"),
    ];
    let broker = BrokerProcess::start(&dir, &overrides);
    let mut c = broker.client();
    create_topic(&mut c, "short-lived");
    // Pipelined in windows of 100, so the 10,000 round trips take a moment, not minutes.
    for window in (0..PRODUCERS).collect::<Vec<_>>().chunks(100) {
        for &pid in window {
            c.send(
                &produce_request("short-lived", idempotent_batch(1_000 + pid)),
                9,
            );
        }
        for _ in window {
            let (_, resp) = c.receive::<ProduceResponse>(9);
            assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
        }
    }
    let right_after = producers_on(&mut c, "short-lived");
    assert!(
        right_after > 0,
        "every producer expired before the last was written"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while producers_on(&mut c, "short-lived") > 0 {
        assert!(Instant::now() < deadline, "producer state did not expire");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A producer that keeps writing is kept: its last batch is recent.
    let keeper = idempotent_batch(42);
    let resp = c.call(&produce_request("short-lived", keeper), 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(producers_on(&mut c, "short-lived"), 1);

    // A restart (clean: a snapshot at the log end) does not bring the expired ones back, and
    // neither does a crash (the expiry wrote a snapshot of its own; the log after it holds
    // only the keeper).
    drop(c);
    broker.kill9();
    let broker = BrokerProcess::start(&dir, &overrides);
    let mut c = broker.client();
    assert_eq!(producers_on(&mut c, "short-lived"), 1);
    broker.stop();
}

fn join(client: &mut Client, member_id: &str) -> JoinGroupResponse {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(sb("bounded")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(sb(member_id))
        .with_protocol_type(sb("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(sb("range"))
            .with_metadata(Bytes::from_static(&[0, 0, 0, 0, 0, 0]))]);
    client.call(&req, 5)
}

#[test]
fn a_group_admits_at_most_group_max_size_members() {
    let dir = temp_dir("group-max-size");
    let broker = BrokerProcess::start(
        &dir,
        &[
            ("group.max.size", "1"),
            ("group.initial.rebalance.delay.ms", "0"),
        ],
    );
    let mut first = broker.client();
    let id = join(&mut first, "").member_id.to_string();
    let joined = join(&mut first, &id);
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);

    // The group is full: a newcomer is refused before it gets a member id, as in Kafka.
    let mut second = broker.client();
    let refused = join(&mut second, "");
    assert_eq!(
        ErrorCode::from_code(refused.error_code),
        ErrorCode::GroupMaxSizeReached
    );
    assert_eq!(refused.member_id.as_str(), "");
    // The member itself is still welcome.
    assert_eq!(join(&mut first, &id).error_code, 0);
    broker.stop();
}

fn commit(client: &mut Client, version: i16, group: &str, generation: i32) -> i16 {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(sb(if generation < 0 { "" } else { "made-up-member" }))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(sb("committed")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(3)])]);
    client.call(&req, version).topics[0].partitions[0].error_code
}

fn groups(client: &mut Client) -> Vec<String> {
    let resp = client.call(&ListGroupsRequest::default(), 4);
    let mut names: Vec<String> = resp.groups.iter().map(|g| g.group_id.to_string()).collect();
    names.sort();
    names
}

#[test]
fn commits_from_made_up_members_do_not_create_groups() {
    let dir = temp_dir("commit-groups");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut client = broker.client();
    create_topic(&mut client, "committed");
    // As Kafka: a generation names group management, and the group must exist.
    for i in 0..200 {
        let code = commit(&mut client, 9, &format!("ghost-{i}"), 1);
        assert_eq!(code, ErrorCode::GroupIdNotFound.code());
    }
    assert_eq!(
        commit(&mut client, 8, "ghost-old", 1),
        ErrorCode::IllegalGeneration.code()
    );
    assert_eq!(groups(&mut client), Vec::<String>::new());
    // A commit from outside group management (generation -1) creates a simple group.
    assert_eq!(commit(&mut client, 9, "simple", -1), 0);
    assert_eq!(groups(&mut client), vec!["simple".to_string()]);
    broker.stop();
}
