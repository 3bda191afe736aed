//! Follower fetching for consumers (KIP-392) on a 3-node local cluster with Kafka's
//! `RackAwareReplicaSelector`: the leader points a consumer in a follower's rack to that
//! follower (no records, `preferred_read_replica`), the follower serves consumers that send
//! client metadata (Fetch v11+) up to its high watermark, refuses those that do not, and a
//! consumer in the leader's rack (or in none) reads from the leader.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::LocalCluster;
use common::{one_record, produce_request, Client};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::FetchRequest;
use kafka_protocol::protocol::StrBytes;
use odradek::records::RecordBatches;
use odradek::ErrorCode;

const TOPIC: &str = "rack";

fn fetch(client: &mut Client, version: i16, rack: &str) -> PartitionData {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_rack_id(StrBytes::from_string(rack.to_string()))
        .with_topics(vec![FetchTopic::default()
            .with_topic(common::topic_name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    client.call(&req, version).responses[0].partitions[0].clone()
}

fn records(pd: &PartitionData) -> usize {
    RecordBatches::new(pd.records.clone().unwrap_or_default())
        .map(|b| b.unwrap().records().unwrap().count())
        .sum()
}

#[test]
fn a_consumer_in_a_followers_rack_is_sent_to_that_follower_which_serves_it() {
    let cluster = LocalCluster::start(
        3,
        &[(
            "replica.selector.class",
            "org.apache.kafka.common.replica.RackAwareReplicaSelector",
        )],
    );
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let request = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(common::topic_name(TOPIC))
                .with_num_partitions(1)
                .with_replication_factor(3),
        ])
        .with_timeout_ms(30_000);
    assert_eq!(cluster.client(1).call(&request, 7).topics[0].error_code, 0);
    let state = cluster.wait_partition(1, TOPIC, 0, Duration::from_secs(10), |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = state.leader as usize;
    let follower = state
        .replicas
        .iter()
        .map(|r| *r as usize)
        .find(|r| *r != leader)
        .unwrap();
    let mut to_leader = cluster.client(leader);
    for i in 0..5 {
        let r = to_leader.call(
            &produce_request(TOPIC, -1, one_record(format!("v{i}").as_bytes())),
            9,
        );
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    let follower_rack = format!("rack-{follower}");
    // The leader names the follower once it has fetched everything (it must hold offset 0).
    let deadline = Instant::now() + Duration::from_secs(10);
    let pointed = loop {
        let pd = fetch(&mut to_leader, 12, &follower_rack);
        assert_eq!(pd.error_code, 0);
        if pd.preferred_read_replica.0 >= 0 {
            break pd;
        }
        assert!(
            Instant::now() < deadline,
            "the leader never pointed to a follower: {pd:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(pointed.preferred_read_replica.0 as usize, follower);
    assert_eq!(records(&pointed), 0, "no records with a preferred replica");
    assert_eq!(pointed.high_watermark, 5);

    // The follower serves the consumer, up to its high watermark.
    let mut to_follower = cluster.client(follower);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pd = fetch(&mut to_follower, 12, &follower_rack);
        assert_eq!(pd.error_code, 0, "{pd:?}");
        assert_eq!(pd.preferred_read_replica.0, -1, "a follower points nowhere");
        if records(&pd) == 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the follower never served all 5: {pd:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Without client metadata (before v11) only the leader serves.
    let old = fetch(&mut to_follower, 10, "");
    assert_eq!(
        ErrorCode::from_code(old.error_code),
        ErrorCode::NotLeaderOrFollower
    );
    // A consumer in the leader's rack, or in none, reads from the leader.
    for rack in [format!("rack-{leader}"), String::new()] {
        let pd = fetch(&mut to_leader, 12, &rack);
        assert_eq!(pd.preferred_read_replica.0, -1, "rack {rack:?}");
        assert_eq!(records(&pd), 5);
    }
}
