//! Replication on a 3-node local cluster (every node broker and controller, replication
//! factor 3, `min.insync.replicas=2`): topics created through any broker, acks=all
//! acknowledged once the ISR has the records, followers refusing client reads, a SIGKILLed
//! leader replaced by an ISR member that has every acknowledged record, acks=all going on with
//! two of three, and the killed node catching up and rejoining the ISR.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::cluster::LocalCluster;
use common::{create_topic_with, one_record, produce_request, read_partition, Client};

fn produce(client: &mut Client, topic: &str, acks: i16, value: &[u8]) -> (i16, i64) {
    let r = client.call(&produce_request(topic, acks, one_record(value)), 9);
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn values(records: &[(i64, Bytes)]) -> Vec<String> {
    records
        .iter()
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
fn a_three_node_cluster_replicates_fails_over_and_catches_up() {
    let mut cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let mut admin = cluster.client(2);
    let (code, message) = create_topic_with(&mut admin, "t", 1, &[]);
    // create_topic_with asks for replication factor 1; ask again with the default of 3.
    assert_eq!(code, 0, "{message:?}");
    let first = cluster.wait_partition(3, "t", 0, Duration::from_secs(10), |p| p.leader > 0);
    assert_eq!(first.replicas.len(), 1);

    let request = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(common::topic_name("r"))
                .with_num_partitions(1)
                .with_replication_factor(-1),
        ])
        .with_timeout_ms(30_000);
    let created = admin.call(&request, 7);
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0]);
    assert_eq!(created.topics[0].replication_factor, 3);
    let state = cluster.wait_partition(1, "r", 0, Duration::from_secs(10), |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = state.leader as usize;
    // DescribeLogDirs per broker: the partitions it is a replica of, not every directory.
    let hosting = |topic: &str| -> Vec<usize> {
        cluster
            .live()
            .into_iter()
            .filter(|id| {
                let dirs = cluster.client(*id).call(
                    &kafka_protocol::messages::DescribeLogDirsRequest::default().with_topics(None),
                    4,
                );
                dirs.results[0].topics.iter().any(|t| {
                    t.name.as_str() == topic && t.partitions.iter().any(|p| p.partition_index == 0)
                })
            })
            .collect()
    };
    assert_eq!(
        hosting("t"),
        [first.leader as usize],
        "replication factor 1"
    );
    assert_eq!(hosting("r").len(), 3, "replication factor 3");

    // acks=all is acknowledged; a follower refuses a client's produce and fetch.
    let mut to_leader = cluster.client(leader);
    for i in 0..20 {
        let (code, offset) = produce(&mut to_leader, "r", -1, format!("v{i}").as_bytes());
        assert_eq!((code, offset), (0, i), "record {i}");
    }
    let follower = *cluster.live().iter().find(|id| **id != leader).unwrap();
    let (code, _) = produce(&mut cluster.client(follower), "r", -1, b"x");
    assert_eq!(code, 6, "NOT_LEADER_OR_FOLLOWER from a follower");
    let acked: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
    assert_eq!(values(&read_partition(&mut to_leader, "r")), acked);

    // SIGKILL the leader: an ISR member takes over in a later epoch with every record.
    cluster.kill(leader);
    let other = *cluster.live().first().unwrap();
    let next = cluster.wait_partition(other, "r", 0, Duration::from_secs(20), |p| {
        p.leader > 0 && p.leader as usize != leader
    });
    assert!(next.epoch > state.epoch, "{state:?} then {next:?}");
    let new_leader = next.leader as usize;
    let mut to_new = cluster.client(new_leader);
    // Every acknowledged record is there; the last ones become readable once the new
    // leader's high watermark passes them (its follower's first fetch moves it), as in Kafka.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut read = values(&read_partition(&mut to_new, "r"));
    while read.len() < acked.len() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        read = values(&read_partition(&mut to_new, "r"));
    }
    assert_eq!(read, acked);
    // Two of three in sync: acks=all goes on (min.insync.replicas=2).
    let isr2 = cluster.wait_partition(other, "r", 0, Duration::from_secs(20), |p| p.isr.len() == 2);
    assert!(!isr2.isr.contains(&(leader as i32)), "{isr2:?}");
    let (code, offset) = produce(&mut to_new, "r", -1, b"after");
    assert_eq!((code, offset), (0, 20));
    // DescribeTopicPartitions (Kafka 4.x admin clients' describeTopics) shows the same state.
    let described = cluster.client(other).call(
        &kafka_protocol::messages::DescribeTopicPartitionsRequest::default()
            .with_topics(vec![
                kafka_protocol::messages::describe_topic_partitions_request::TopicRequest::default(
                )
                .with_name(common::topic_name("r")),
            ])
            .with_response_partition_limit(10),
        0,
    );
    let p = &described.topics[0].partitions[0];
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    assert_eq!(
        (
            p.leader_id.0,
            p.replica_nodes.len(),
            ids(&p.isr_nodes).len()
        ),
        (new_leader as i32, 3, 2),
        "{p:?}"
    );
    assert!(!ids(&p.isr_nodes).contains(&(leader as i32)), "{p:?}");

    // The killed node comes back, catches up and rejoins the ISR.
    cluster.start_node(leader);
    cluster.wait_partition(other, "r", 0, Duration::from_secs(30), |p| p.isr.len() == 3);
}

#[test]
fn acks_all_waits_for_min_insync_replicas() {
    let mut cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let request = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(common::topic_name("m"))
                .with_num_partitions(1)
                .with_replication_factor(3),
        ])
        .with_timeout_ms(30_000);
    assert_eq!(cluster.client(1).call(&request, 7).topics[0].error_code, 0);
    let state = cluster.wait_partition(1, "m", 0, Duration::from_secs(10), |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = state.leader as usize;
    // Both followers go: the ISR shrinks to the leader alone, below min.insync.replicas.
    let followers: Vec<usize> = cluster
        .live()
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    for f in &followers {
        cluster.kill(*f);
    }
    // Without a quorum of controllers the metadata cannot change; the leader's own ISR
    // shrink cannot commit either, so acks=all times out or finds too few replicas.
    let mut to_leader = cluster.client(leader);
    let request = produce_request("m", -1, one_record(b"x")).with_timeout_ms(1500);
    let r = to_leader.call(&request, 9);
    let code = r.responses[0].partition_responses[0].error_code;
    assert!(
        [7, 19, 20].contains(&code),
        "REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS or _AFTER_APPEND, got {code}"
    );
    // acks=1 is still written by the leader.
    let (code, _) = produce(&mut to_leader, "m", 1, b"y");
    assert_eq!(code, 0);
}

fn describe_topic_config(client: &mut Client, topic: &str, key: &str) -> Option<String> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::DescribeConfigsRequest;
    use kafka_protocol::protocol::StrBytes;
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configuration_keys(Some(vec![StrBytes::from_string(key.to_string())]))]);
    let r = client.call(&request, 4);
    r.results[0]
        .configs
        .iter()
        .find(|c| c.name.as_str() == key)
        .and_then(|c| c.value.as_ref().map(|v| v.to_string()))
}

#[test]
fn topic_configs_and_preferred_leaders_are_the_clusters() {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    use kafka_protocol::protocol::StrBytes;
    let mut cluster = LocalCluster::start(3, &[("leader.imbalance.check.interval.seconds", "1")]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let request = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(common::topic_name("c"))
                .with_num_partitions(1)
                .with_replication_factor(3),
        ])
        .with_timeout_ms(30_000);
    assert_eq!(cluster.client(1).call(&request, 7).topics[0].error_code, 0);
    // A config changed through node 1 is every node's (the controller writes it).
    let alter = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("c"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str("retention.ms"))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_static_str("123456")))]),
    ]);
    let r = cluster.client(1).call(&alter, 1);
    assert_eq!(r.responses[0].error_code, 0, "{:?}", r.responses[0]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen: Vec<Option<String>> = (1..=3)
            .map(|id| describe_topic_config(&mut cluster.client(id), "c", "retention.ms"))
            .collect();
        if seen.iter().all(|v| v.as_deref() == Some("123456")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A bad value is refused by the controller, naming the key.
    let bad = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("c"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str("min.insync.replicas"))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_static_str("zero")))]),
    ]);
    let r = cluster.client(2).call(&bad, 1);
    assert_ne!(r.responses[0].error_code, 0);

    // The preferred leader stops, comes back, and takes its leadership back (auto rebalance).
    let state = cluster.wait_partition(1, "c", 0, Duration::from_secs(10), |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let preferred = state.replicas[0];
    assert_eq!(state.leader, preferred);
    cluster.stop(preferred as usize);
    let other = *cluster.live().first().unwrap();
    cluster.wait_partition(other, "c", 0, Duration::from_secs(20), |p| {
        p.leader > 0 && p.leader != preferred
    });
    cluster.start_node(preferred as usize);
    cluster.wait_partition(other, "c", 0, Duration::from_secs(30), |p| {
        p.leader == preferred && p.isr.len() == 3
    });
}

#[test]
fn client_quotas_set_through_one_broker_are_every_brokers() {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
    use kafka_protocol::protocol::StrBytes;
    let cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let alter = |value: f64, remove: bool| {
        AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
            .with_entity(vec![EntityData::default()
                .with_entity_type(StrBytes::from_static_str("client-id"))
                .with_entity_name(Some(StrBytes::from_static_str("slow")))])
            .with_ops(vec![OpData::default()
                .with_key(StrBytes::from_static_str("producer_byte_rate"))
                .with_value(value)
                .with_remove(remove)])])
    };
    let r = cluster.client(1).call(&alter(4096.0, false), 1);
    assert_eq!(r.entries[0].error_code, 0, "{:?}", r.entries[0]);
    // A bad value is refused with Kafka's error, through the controller too.
    let r = cluster.client(2).call(&alter(-1.0, false), 1);
    assert_eq!(r.entries[0].error_code, 42, "INVALID_REQUEST");
    let describe =
        DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
            .with_entity_type(StrBytes::from_static_str("client-id"))
            .with_match_type(0)
            .with_match(Some(StrBytes::from_static_str("slow")))]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen: Vec<Option<f64>> = (1..=3)
            .map(|id| {
                let r = cluster.client(id).call(&describe, 1);
                r.entries
                    .unwrap_or_default()
                    .first()
                    .and_then(|e| e.values.first().map(|v| v.value))
            })
            .collect();
        if seen.iter().all(|v| *v == Some(4096.0)) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = cluster.client(3).call(&alter(0.0, true), 1);
    assert_eq!(r.entries[0].error_code, 0);
    // The broker that took the removal answered once it had applied it; the others follow.
    let r = cluster.client(3).call(&describe, 1);
    assert!(
        r.entries.unwrap_or_default().is_empty(),
        "removed on node 3"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cluster
        .client(1)
        .call(&describe, 1)
        .entries
        .unwrap_or_default()
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "still set on node 1");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn elect(client: &mut Client, topic: &str, partition: i32, unclean: bool) -> i16 {
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::messages::ElectLeadersRequest;
    let request = ElectLeadersRequest::default()
        .with_election_type(i8::from(unclean))
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(common::topic_name(topic))
            .with_partitions(vec![partition])]))
        .with_timeout_ms(10_000);
    let r = client.call(&request, 2);
    assert_eq!(r.error_code, 0);
    r.replica_election_results[0].partition_result[0].error_code
}

#[test]
fn elect_leaders_preferred_and_unclean() {
    let mut cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let request = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(common::topic_name("u"))
                .with_num_partitions(1)
                .with_replication_factor(2),
        ])
        .with_timeout_ms(30_000);
    assert_eq!(cluster.client(1).call(&request, 7).topics[0].error_code, 0);
    let state = cluster.wait_partition(1, "u", 0, Duration::from_secs(10), |p| {
        p.leader > 0 && p.isr.len() == 2
    });
    let (leader, stale) = (state.leader as usize, state.replicas[1] as usize);
    let via = *cluster
        .live()
        .iter()
        .find(|id| **id != leader && **id != stale)
        .unwrap();
    assert_eq!(
        elect(&mut cluster.client(via), "u", 0, false),
        84,
        "ELECTION_NOT_NEEDED"
    );
    // The follower goes; the leader alone takes more records; then the leader goes too.
    cluster.kill(stale);
    cluster.wait_partition(via, "u", 0, Duration::from_secs(20), |p| {
        p.isr == [leader as i32]
    });
    let mut to_leader = cluster.client(leader);
    for i in 0..5 {
        assert_eq!(
            produce(&mut to_leader, "u", 1, format!("x{i}").as_bytes()).0,
            0
        );
    }
    cluster.kill(leader);
    cluster.start_node(stale);
    // Unclean election is off: the stale replica does not lead on its own.
    let offline = cluster.wait_partition(via, "u", 0, Duration::from_secs(20), |p| p.leader < 0);
    assert_eq!(
        offline.isr,
        vec![leader as i32],
        "the last ISR member is kept"
    );
    assert_eq!(
        elect(&mut cluster.client(via), "u", 0, false),
        80,
        "PREFERRED_LEADER_NOT_AVAILABLE"
    );
    // The restarted replica may not be registered and unfenced yet: until it is, there is
    // nobody to elect (ELIGIBLE_LEADERS_NOT_AVAILABLE).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let code = elect(&mut cluster.client(via), "u", 0, true);
        if code == 0 {
            break;
        }
        assert!(
            code == 83 && std::time::Instant::now() < deadline,
            "the unclean election failed with {code}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let elected = cluster.wait_partition(stale, "u", 0, Duration::from_secs(20), |p| p.leader > 0);
    assert_eq!(elected.leader, stale as i32);
    assert_eq!(elected.isr, vec![stale as i32]);
    // Its log is what it had: the records the old leader took alone are gone.
    let mut to_stale = cluster.client(stale);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while produce(&mut to_stale, "u", 1, b"probe").0 != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the new leader never took a produce"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let records = read_partition(&mut to_stale, "u");
    assert_eq!(values(&records), vec!["probe".to_string()]);
}
