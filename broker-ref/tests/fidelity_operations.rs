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

/// One DescribeTopicPartitions page as comparable facts: per topic (name without the run's
/// prefix, error, topic id present, partition indexes, every partition led by one of its
/// replicas with ISR = replicas and empty eligible-leader lists), and the next cursor.
type Page = (
    Vec<(String, i16, bool, Vec<i32>, bool)>,
    Option<(String, i32)>,
);

fn describe_partitions(
    client: &mut Client,
    prefix: &str,
    topics: &[String],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> Page {
    use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
    let req = DescribeTopicPartitionsRequest::default()
        .with_topics(
            topics
                .iter()
                .map(|t| TopicRequest::default().with_name(name(t)))
                .collect(),
        )
        .with_response_partition_limit(limit)
        .with_cursor(cursor.map(|(t, p)| {
            Cursor::default()
                .with_topic_name(name(t))
                .with_partition_index(p)
        }));
    let resp = client.call(&req, 0);
    let short = |n: &str| n.strip_prefix(prefix).unwrap_or(n).to_string();
    let topics = resp
        .topics
        .iter()
        .map(|t| {
            let sound = t.partitions.iter().all(|p| {
                p.error_code == 0
                    && p.replica_nodes.contains(&p.leader_id)
                    && p.isr_nodes == p.replica_nodes
                    && p.offline_replicas.is_empty()
                    && p.eligible_leader_replicas.as_deref() == Some(&[])
                    && p.last_known_elr.as_deref() == Some(&[])
            });
            (
                short(t.name.as_deref().map_or("", |n| n.as_str())),
                t.error_code,
                !t.topic_id.is_nil(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
                sound,
            )
        })
        .collect();
    let next = resp
        .next_cursor
        .map(|c| (short(c.topic_name.as_str()), c.partition_index));
    (topics, next)
}

/// The pages and refusals every broker must answer alike: topics `a` (3 partitions), `b` (2)
/// and `c` (1) named out of order with an unknown and an illegal name, four partitions per
/// page; a zero and a negative limit; a cursor naming a topic the list does not hold.
fn partition_pages(client: &mut Client, prefix: &str) -> Vec<Page> {
    let named = |s: &[&str]| -> Vec<String> {
        s.iter()
            .map(|t| {
                if *t == "bad name!" {
                    t.to_string()
                } else {
                    format!("{prefix}{t}")
                }
            })
            .collect()
    };
    let all = named(&["c", "missing", "a", "bad name!", "b"]);
    let b = format!("{prefix}b");
    vec![
        describe_partitions(client, prefix, &all, 4, None),
        describe_partitions(client, prefix, &all, 4, Some((&b, 1))),
        describe_partitions(client, prefix, &all, 100, None),
        describe_partitions(client, prefix, &all, 0, None),
        describe_partitions(client, prefix, &all, -1, None),
        describe_partitions(client, prefix, &named(&["a", "c"]), 10, Some((&b, 0))),
    ]
}

fn create_partition_topics(client: &mut Client, prefix: &str) {
    for (t, n) in [("a", 3), ("b", 2), ("c", 1)] {
        common::create_topic(client, &format!("{prefix}{t}"), n, &[]);
    }
}

#[test]
fn describe_topic_partitions_pages_by_name_with_a_cursor() {
    let broker = common::BrokerProcess::start(&common::temp_dir("dtp"), &[]);
    let mut client = broker.client();
    create_partition_topics(&mut client, "t-");
    let pages = partition_pages(&mut client, "t-");
    let topic = |n: &str, code: i16, id: bool, parts: &[i32]| {
        (n.to_string(), code, id, parts.to_vec(), true)
    };
    let (a, b, c) = (
        topic("a", 0, true, &[0, 1, 2]),
        topic("b", 0, true, &[0, 1]),
        topic("c", 0, true, &[0]),
    );
    let bad = topic("bad name!", 17, false, &[]);
    let missing = topic("missing", 3, false, &[]);
    assert_eq!(
        pages[0],
        (
            vec![bad.clone(), a.clone(), topic("b", 0, true, &[0])],
            Some(("b".into(), 1))
        ),
        "first page: names in order, four partitions, the cursor inside b"
    );
    assert_eq!(
        pages[1],
        (
            vec![topic("b", 0, true, &[1]), c.clone(), missing.clone()],
            None
        ),
        "from the cursor on: the rest of b, then what follows it by name"
    );
    assert_eq!(pages[2], (vec![bad.clone(), a, b, c, missing], None));
    let one = (
        vec![bad.clone(), topic("a", 0, true, &[0])],
        Some(("a".into(), 1)),
    );
    assert_eq!(pages[3], one, "a limit of zero is a limit of one");
    assert_eq!(pages[4], one, "so is a negative limit");
    assert_eq!(
        pages[5],
        (
            vec![topic("a", 42, false, &[]), topic("c", 42, false, &[])],
            None
        ),
        "a cursor topic missing from the list: INVALID_REQUEST for every topic"
    );
    // All topics: the cursor skips every name before it; internal topics are described too.
    let (listed, _) = describe_partitions(&mut client, "t-", &[], 100, Some(("t-b", 1)));
    assert_eq!(
        listed
            .iter()
            .map(|t| (t.0.as_str(), t.3.clone()))
            .collect::<Vec<_>>(),
        [("b", vec![1]), ("c", vec![0])]
    );
    // max.request.partition.size.limit caps what a request asks for.
    let capped = common::BrokerProcess::start(
        &common::temp_dir("dtp-capped"),
        &[("max.request.partition.size.limit", "2")],
    );
    let mut small = capped.client();
    create_partition_topics(&mut small, "t-");
    let first = describe_partitions(&mut small, "t-", &["t-a".to_string()], 100, None);
    assert_eq!(
        first,
        (vec![topic("a", 0, true, &[0, 1])], Some(("a".into(), 2)))
    );
    // Advertised at Kafka 4.x's range.
    let versions = client.call(&ApiVersionsRequest::default(), 3);
    let dtp = versions.api_keys.iter().find(|k| k.api_key == 75).unwrap();
    assert_eq!((dtp.min_version, dtp.max_version), (0, 0));
}

#[test]
#[ignore = "needs Apache Kafka: set ODRADEK_FIDELITY_KAFKA"]
fn describe_topic_partitions_pages_match_kafka() {
    let brokers = Brokers::start("fidelity-dtp");
    let prefix = format!("{}-", unique("dtp"));
    let mut answers = Vec::new();
    for (_, addr) in brokers.both() {
        let mut client = Client::connect(addr);
        create_partition_topics(&mut client, &prefix);
        // Kafka describes a new topic's partitions once its leaders are known.
        metadata(&mut client, &format!("{prefix}a"), 12);
        metadata(&mut client, &format!("{prefix}b"), 12);
        metadata(&mut client, &format!("{prefix}c"), 12);
        answers.push(partition_pages(&mut client, &prefix));
    }
    assert_eq!(
        answers[0], answers[1],
        "odradek-broker (left) and Apache Kafka (right)"
    );
}
