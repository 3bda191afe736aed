//! Partition reassignment (KIP-455) on a 3-node local cluster: a move to a broker that is down
//! stays in flight (ListPartitionReassignments shows it) and can be cancelled back to the
//! original replicas; once the broker is up the move completes (the new replica caught up,
//! the leaving leader handed over, its data deleted) with every record kept; Kafka's errors
//! for bad requests.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::LocalCluster;
use common::{one_record, produce_request, read_partition, Client};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kafka_protocol::messages::list_partition_reassignments_response::OngoingPartitionReassignment;
use kafka_protocol::messages::*;
use odradek::ErrorCode;

const TOPIC: &str = "mv";

fn reassign(client: &mut Client, partition: i32, target: Option<&[i32]>) -> ErrorCode {
    let req = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_allow_replication_factor_change(true)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(
                    target.map(|t| t.iter().map(|b| BrokerId(*b)).collect()),
                )])]);
    let r = client.call(&req, 0);
    assert_eq!(r.error_code, 0, "{r:?}");
    ErrorCode::from_code(r.responses[0].partitions[0].error_code)
}

fn in_flight(client: &mut Client) -> Vec<OngoingPartitionReassignment> {
    let r = client.call(
        &ListPartitionReassignmentsRequest::default().with_timeout_ms(10_000),
        0,
    );
    assert_eq!(r.error_code, 0);
    r.topics.into_iter().flat_map(|t| t.partitions).collect()
}

fn ids(list: &[BrokerId]) -> Vec<i32> {
    list.iter().map(|b| b.0).collect()
}

#[test]
fn a_partition_moves_between_brokers_and_a_stuck_move_can_be_cancelled() {
    let mut cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(vec![BrokerId(1), BrokerId(2)])])]);
    assert_eq!(cluster.client(1).call(&create, 7).topics[0].error_code, 0);
    let state = cluster.wait_partition(1, TOPIC, 0, Duration::from_secs(10), |p| {
        p.leader == 1 && p.isr.len() == 2
    });
    assert_eq!(state.replicas, [1, 2]);
    let mut leader = cluster.client(1);
    for i in 0..20 {
        let r = leader.call(
            &produce_request(TOPIC, -1, one_record(format!("v{i}").as_bytes())),
            9,
        );
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }

    // Kafka's errors.
    let mut admin = cluster.client(2);
    assert_eq!(
        reassign(&mut admin, 0, Some(&[2, 2])),
        ErrorCode::InvalidReplicaAssignment
    );
    assert_eq!(
        reassign(&mut admin, 0, Some(&[2, 9])),
        ErrorCode::InvalidReplicaAssignment
    );
    assert_eq!(
        reassign(&mut admin, 5, Some(&[2, 3])),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        reassign(&mut admin, 0, None),
        ErrorCode::NoReassignmentInProgress
    );

    // Broker 3 is down: the move to it stays in flight, and is cancelled.
    cluster.kill(3);
    assert_eq!(reassign(&mut admin, 0, Some(&[3, 2])), ErrorCode::NoError);
    let ongoing = in_flight(&mut admin);
    assert_eq!(ongoing.len(), 1, "{ongoing:?}");
    assert_eq!(
        ids(&ongoing[0].replicas),
        [3, 2, 1],
        "target first, then the leaving"
    );
    assert_eq!(ids(&ongoing[0].adding_replicas), [3]);
    assert_eq!(ids(&ongoing[0].removing_replicas), [1]);
    let p = cluster.partition(2, TOPIC, 0).unwrap();
    assert_eq!(
        p.leader, 1,
        "the leader stays while the new replica catches up"
    );
    assert_eq!(reassign(&mut admin, 0, None), ErrorCode::NoError);
    assert!(in_flight(&mut admin).is_empty());
    // (Metadata follows the controller's change once node 2 applied it.)
    cluster.wait_partition(2, TOPIC, 0, Duration::from_secs(10), |p| {
        p.replicas == [2, 1]
    });

    // With broker 3 back the move completes.
    cluster.start_node(3);
    cluster.wait_brokers(2, 3, Duration::from_secs(30));
    assert_eq!(reassign(&mut admin, 0, Some(&[3, 2])), ErrorCode::NoError);
    let done = cluster.wait_partition(2, TOPIC, 0, Duration::from_secs(30), |p| {
        p.replicas == [3, 2] && p.isr.len() == 2 && p.leader > 1
    });
    assert!(in_flight(&mut admin).is_empty());
    assert_eq!(
        done.leader, 3,
        "the first in-sync target replica took over from 1"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let values = loop {
        let read = read_partition(&mut cluster.client(done.leader as usize), TOPIC);
        if read.len() == 20 || Instant::now() > deadline {
            break read;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(values.len(), 20, "every record moved");
    // Broker 1 left: it no longer reports the partition, and its data is gone.
    let dirs = cluster
        .client(1)
        .call(&DescribeLogDirsRequest::default().with_topics(None), 4);
    assert!(
        dirs.results[0]
            .topics
            .iter()
            .all(|t| t.name.as_str() != TOPIC),
        "{dirs:?}"
    );
    let mut old = cluster.client(1);
    let fetch = old.call(&common::fetch_request(TOPIC, 0, 0, 1 << 20), 12);
    assert_eq!(
        ErrorCode::from_code(fetch.responses[0].partitions[0].error_code),
        ErrorCode::NotLeaderOrFollower
    );

    // CreatePartitions with explicit assignments (checked as Kafka checks them).
    use kafka_protocol::messages::create_partitions_request::{
        CreatePartitionsAssignment, CreatePartitionsTopic,
    };
    let grow = |count: i32, assignments: Option<Vec<Vec<i32>>>, twice: bool| {
        let topic = CreatePartitionsTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_count(count)
            .with_assignments(assignments.map(|list| {
                list.into_iter()
                    .map(|ids| {
                        CreatePartitionsAssignment::default()
                            .with_broker_ids(ids.into_iter().map(BrokerId).collect())
                    })
                    .collect()
            }));
        let topics = if twice {
            vec![topic.clone(), topic]
        } else {
            vec![topic]
        };
        let r = cluster.client(2).call(
            &CreatePartitionsRequest::default()
                .with_timeout_ms(10_000)
                .with_topics(topics),
            3,
        );
        r.results
            .iter()
            .map(|x| ErrorCode::from_code(x.error_code))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        grow(2, None, true),
        [ErrorCode::InvalidRequest],
        "named twice: one answer"
    );
    assert_eq!(
        grow(3, Some(vec![vec![3, 1]]), false),
        [ErrorCode::InvalidReplicaAssignment],
        "two new partitions, one assignment"
    );
    assert_eq!(
        grow(2, Some(vec![vec![3]]), false),
        [ErrorCode::InvalidReplicaAssignment],
        "the topic's replication factor is 2"
    );
    assert_eq!(
        grow(2, Some(vec![vec![3, 9]]), false),
        [ErrorCode::InvalidReplicaAssignment],
        "broker 9 is unknown"
    );
    assert_eq!(grow(2, Some(vec![vec![1, 3]]), false), [ErrorCode::NoError]);
    let added = cluster.wait_partition(2, TOPIC, 1, Duration::from_secs(10), |p| p.leader > 0);
    assert_eq!(added.replicas, [1, 3]);

    // DeleteTopics v1 (names in the v0-5 field) through a broker deletes on every node.
    let deleted = cluster.client(3).call(
        &DeleteTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topic_names(vec![common::topic_name(TOPIC)]),
        1,
    );
    assert_eq!(deleted.responses.len(), 1, "{deleted:?}");
    assert_eq!(deleted.responses[0].error_code, 0, "{deleted:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster.metadata(2, &[TOPIC]).topics[0].error_code == 0 {
        assert!(
            Instant::now() < deadline,
            "the topic is still listed by node 2"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sets `configs` on `resource` (2 topic, 4 broker) through `client`.
fn alter_configs(client: &mut Client, resource_type: i8, name: &str, configs: &[(&str, &str)]) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(kafka_protocol::protocol::StrBytes::from_string(
                name.to_string(),
            ))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(kafka_protocol::protocol::StrBytes::from_string(
                                k.to_string(),
                            ))
                            .with_config_operation(0)
                            .with_value(Some(kafka_protocol::protocol::StrBytes::from_string(
                                v.to_string(),
                            )))
                    })
                    .collect(),
            ),
    ]);
    let r = client.call(&req, 1);
    assert_eq!(r.responses[0].error_code, 0, "{r:?}");
}

/// Creates `topic` with one partition on broker 1 alone, holding `records` records of 1 KiB.
fn one_replica_topic(cluster: &LocalCluster, topic: &str, records: usize) {
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name(topic))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(vec![BrokerId(1)])])]);
    assert_eq!(cluster.client(1).call(&create, 7).topics[0].error_code, 0);
    cluster.wait_partition(1, topic, 0, Duration::from_secs(10), |p| p.leader == 1);
    let mut leader = cluster.client(1);
    let value = vec![b'x'; 1024];
    for _ in 0..records {
        let r = leader.call(&produce_request(topic, 1, one_record(&value)), 9);
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
}

/// Adds broker `to` as a replica of `topic`-0 and returns how long until it is in sync.
fn add_replica_and_time(cluster: &LocalCluster, topic: &str, to: i32) -> Duration {
    let req = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_allow_replication_factor_change(true)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(common::topic_name(topic))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![BrokerId(1), BrokerId(to)]))])]);
    let started = Instant::now();
    let r = cluster.client(2).call(&req, 0);
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{r:?}");
    cluster.wait_partition(2, topic, 0, Duration::from_secs(60), |p| {
        p.replicas == [1, to] && p.isr.len() == 2
    });
    started.elapsed()
}

#[test]
fn throttled_replicas_catch_up_at_the_throttled_rate() {
    // Small replica fetches and short quota windows make the rate bite after a few fetches.
    let cluster = LocalCluster::start(
        3,
        &[
            ("replica.fetch.max.bytes", "8192"),
            ("replication.quota.window.num", "2"),
            ("replication.quota.window.size.seconds", "1"),
        ],
    );
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    // 200 KiB at 40 KiB/s: at least ~4 s; unthrottled it takes a fraction of a second.
    let rate = "40960";
    one_replica_topic(&cluster, "lead", 200);
    alter_configs(
        &mut cluster.client(1),
        2,
        "lead",
        &[("leader.replication.throttled.replicas", "0:1")],
    );
    alter_configs(
        &mut cluster.client(1),
        4,
        "1",
        &[("leader.replication.throttled.rate", rate)],
    );
    let took = add_replica_and_time(&cluster, "lead", 2);
    assert!(
        took >= Duration::from_millis(2500),
        "the leader-side throttle held the new replica back only {took:?}"
    );

    one_replica_topic(&cluster, "follow", 200);
    alter_configs(
        &mut cluster.client(1),
        2,
        "follow",
        &[("follower.replication.throttled.replicas", "0:3")],
    );
    alter_configs(
        &mut cluster.client(3),
        4,
        "3",
        &[("follower.replication.throttled.rate", rate)],
    );
    let took = add_replica_and_time(&cluster, "follow", 3);
    assert!(
        took >= Duration::from_millis(2500),
        "the follower-side throttle held the new replica back only {took:?}"
    );
    let read = read_partition(&mut cluster.client(1), "follow");
    assert_eq!(read.len(), 200);

    // A malformed replica list is refused, naming the key.
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let bad = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(kafka_protocol::protocol::StrBytes::from_static_str(
                "follow",
            ))
            .with_configs(vec![AlterableConfig::default()
                .with_name(kafka_protocol::protocol::StrBytes::from_static_str(
                    "leader.replication.throttled.replicas",
                ))
                .with_config_operation(0)
                .with_value(Some(
                    kafka_protocol::protocol::StrBytes::from_static_str("0-1"),
                ))]),
    ]);
    let r = cluster.client(1).call(&bad, 1);
    assert_eq!(
        ErrorCode::from_code(r.responses[0].error_code),
        ErrorCode::InvalidConfig
    );
    assert!(
        r.responses[0]
            .error_message
            .as_deref()
            .is_some_and(|m| m.contains("leader.replication.throttled.replicas")),
        "{r:?}"
    );
}
