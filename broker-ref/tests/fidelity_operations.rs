//! `authorized_operations` compared with Apache Kafka's (issue 26): Metadata (cluster and topic
//! operations), DescribeCluster and DescribeGroups ask for them, and a fresh `odradek-broker`
//! and a running Apache Kafka 4.x without an authorizer must answer the same bitmasks (and the
//! same group descriptions). The comparison with an authorizer (topic and cluster operations of
//! a super user and of a principal with some ACLs, on both brokers secured) is in the ACL
//! scenario table, `tests/security/test_acl_table.py`.
//!
//! Needs Apache Kafka: `ODRADEK_FIDELITY_KAFKA=host:port cargo test -p odradek-broker --test
//! fidelity_operations -- --ignored` (the test command runs it while its Kafka is up).

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::fidelity::{unique, Brokers};
use common::Client;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// Kafka's operation codes (`AclOperation`), for readable failures.
const OPERATIONS: &[(i32, &str)] = &[
    (3, "READ"),
    (4, "WRITE"),
    (5, "CREATE"),
    (6, "DELETE"),
    (7, "ALTER"),
    (8, "DESCRIBE"),
    (9, "CLUSTER_ACTION"),
    (10, "DESCRIBE_CONFIGS"),
    (11, "ALTER_CONFIGS"),
    (12, "IDEMPOTENT_WRITE"),
    (13, "CREATE_TOKENS"),
    (14, "DESCRIBE_TOKENS"),
    (15, "TWO_PHASE_COMMIT"),
];

/// A bitmask as operation names (`i32::MIN` is "not requested").
fn names(mask: i32) -> Vec<&'static str> {
    if mask == i32::MIN {
        return vec!["<not requested>"];
    }
    OPERATIONS
        .iter()
        .filter(|(bit, _)| mask & (1 << bit) != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn create_topic(client: &mut Client, topic: &str) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let resp = client.call(&req, 5);
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
}

/// Metadata for `topic` at `version`, asking for both operation sets; waits for a leader.
fn metadata(client: &mut Client, topic: &str, version: i16) -> MetadataResponse {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name(topic)))
            ]))
            .with_allow_auto_topic_creation(false)
            .with_include_cluster_authorized_operations(version <= 10)
            .with_include_topic_authorized_operations(true);
        let resp = client.call(&req, version);
        let ready = resp.topics[0].error_code == 0
            && resp.topics[0].partitions.iter().all(|p| p.leader_id.0 >= 0);
        if ready || Instant::now() > deadline {
            return resp;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs Apache Kafka: set ODRADEK_FIDELITY_KAFKA"]
fn metadata_operations_match_kafka() {
    let brokers = Brokers::start("fidelity-ops");
    let topic = unique("ops");
    let mut answers = Vec::new();
    for (_, addr) in brokers.both() {
        let mut client = Client::connect(addr);
        create_topic(&mut client, &topic);
        let v8 = metadata(&mut client, &topic, 8);
        let v12 = metadata(&mut client, &topic, 12);
        answers.push((
            names(v8.cluster_authorized_operations),
            names(v8.topics[0].topic_authorized_operations),
            names(v12.topics[0].topic_authorized_operations),
            v12.topics[0].error_code,
        ));
    }
    assert_eq!(
        answers[0], answers[1],
        "odradek-broker (left) and Apache Kafka (right)"
    );
    // Kafka's sets without an authorizer: everything the resource type supports.
    assert_eq!(
        answers[0].0,
        [
            "CREATE",
            "ALTER",
            "DESCRIBE",
            "CLUSTER_ACTION",
            "DESCRIBE_CONFIGS",
            "ALTER_CONFIGS",
            "IDEMPOTENT_WRITE"
        ]
    );
    assert_eq!(answers[0].1.len(), 8, "{:?}", answers[0].1);
}

#[test]
#[ignore = "needs Apache Kafka: set ODRADEK_FIDELITY_KAFKA"]
fn describe_cluster_operations_match_kafka() {
    let brokers = Brokers::start("fidelity-ops");
    let mut answers = Vec::new();
    for (_, addr) in brokers.both() {
        let mut client = Client::connect(addr);
        let asked = client.call(
            &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
            1,
        );
        let not_asked = client.call(&DescribeClusterRequest::default(), 1);
        answers.push((
            asked.error_code,
            names(asked.cluster_authorized_operations),
            not_asked.cluster_authorized_operations,
            asked.brokers.len(),
        ));
    }
    assert_eq!(
        answers[0], answers[1],
        "odradek-broker (left) and Apache Kafka (right)"
    );
    assert_eq!(answers[0].1.len(), 7, "{:?}", answers[0].1);
}

#[test]
#[ignore = "needs Apache Kafka: set ODRADEK_FIDELITY_KAFKA"]
fn describe_groups_operations_and_answers_match_kafka() {
    let brokers = Brokers::start("fidelity-ops");
    let topic = unique("group-ops");
    let group = unique("group");
    let missing = unique("no-such-group");
    let mut answers = Vec::new();
    for (_, addr) in brokers.both() {
        let mut client = Client::connect(addr);
        create_topic(&mut client, &topic);
        metadata(&mut client, &topic, 12);
        // A group that only commits offsets (a "simple" consumer group, state Empty), found
        // through its coordinator.
        let coordinator = find_coordinator(&mut client, &group);
        let mut coord = Client::connect(&coordinator);
        let commit = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.clone())))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(name(&topic))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(0)])]);
        let committed = coord.call(&commit, 8);
        assert_eq!(committed.topics[0].partitions[0].error_code, 0, "{addr}");
        let describe = DescribeGroupsRequest::default()
            .with_groups(vec![
                GroupId(StrBytes::from_string(group.clone())),
                GroupId(StrBytes::from_string(missing.clone())),
            ])
            .with_include_authorized_operations(true);
        let resp = coord.call(&describe, 5);
        let groups: Vec<_> = resp
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.to_string(),
                    g.error_code,
                    g.group_state.to_string(),
                    g.protocol_type.to_string(),
                    g.members.len(),
                    names(g.authorized_operations),
                )
            })
            .collect();
        let mut groups = groups;
        groups.sort(); // Kafka answers in its own order (by coordinator shard); clients match by id
        answers.push(groups);
    }
    assert_eq!(
        answers[0], answers[1],
        "odradek-broker (left) and Apache Kafka (right)"
    );
}

/// The address of `group`'s coordinator.
fn find_coordinator(client: &mut Client, group: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let req = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![StrBytes::from_string(group.to_string())]);
        let resp = client.call(&req, 4);
        let c = &resp.coordinators[0];
        if c.error_code == 0 {
            return format!("{}:{}", c.host, c.port);
        }
        assert!(
            Instant::now() < deadline,
            "no coordinator: {}",
            c.error_code
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
