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
}
