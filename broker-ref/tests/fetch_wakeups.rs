//! Waiting fetches are woken per partition and do not re-read on every produce (issue 19):
//! a fetch parked on a large partition with a `min_bytes` it can never reach costs the broker
//! nothing while other clients produce elsewhere, yet still answers at its `max_wait_ms`; and a
//! fetch waiting on its own partition answers once enough bytes arrived there.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{cpu_time, temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression};

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn create(client: &mut Client, topic: &str) {
    let req = CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(1)
        .with_replication_factor(1)]);
    assert_eq!(client.call(&req, 7).topics[0].error_code, 0);
}

fn produce(client: &mut Client, topic: &str, value: &[u8]) {
    let mut b = BatchBuilder::new(Compression::None);
    b.append(0, None, Some(value), &[]).unwrap();
    let req = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(b.build().unwrap()))])]);
    let resp = client.call(&req, 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

fn fetch_request(topic: &str, min_bytes: i32, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(64 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(64 << 20)])])
}

#[test]
fn a_parked_fetch_is_not_re_read_on_every_produce_elsewhere() {
    let dir = temp_dir("fetch-wakeups");
    let broker = BrokerProcess::start(&dir, &[("fetch.max.bytes", "67108864")]);
    let mut admin = broker.client();
    create(&mut admin, "big");
    create(&mut admin, "busy");
    // 48 MiB readable on "big".
    let chunk = vec![7u8; 900 * 1024];
    for _ in 0..54 {
        produce(&mut admin, "big", &chunk);
    }
    // A fetch that wants more than exists: it waits out its max_wait_ms.
    let mut parked = broker.client();
    let id = parked.send(&fetch_request("big", i32::MAX, 10_000), 12);

    // Small produces elsewhere, one every 5 ms for two seconds. Were every produce to wake the
    // parked fetch into re-reading its 48 MiB (several ms each), the broker would spend most
    // of those two seconds copying; woken per partition, it spends a few ms per hundred
    // produces.
    let pid = broker.child.id();
    let before = cpu_time(pid);
    let started = std::time::Instant::now();
    let mut produced = 0;
    while started.elapsed() < Duration::from_secs(2) {
        produce(&mut admin, "busy", format!("small-{produced}").as_bytes());
        produced += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let spent = cpu_time(pid) - before;
    eprintln!("{produced} produces: broker CPU {spent:?}");
    assert!(
        spent < Duration::from_millis(600),
        "{produced} small produces elsewhere cost the broker {spent:?} of CPU while a fetch \
         was parked"
    );

    // The parked fetch still answers, with the data it has (min_bytes is capped at max_bytes).
    let (header, resp) = parked.receive::<FetchResponse>(12);
    assert_eq!(header.correlation_id, id);
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert!(p.records.as_ref().is_some_and(|r| r.len() > 40 << 20));
    broker.stop();
}

#[test]
fn a_waiting_fetch_answers_once_its_own_partition_has_min_bytes() {
    let dir = temp_dir("fetch-own");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut admin = broker.client();
    create(&mut admin, "own");
    create(&mut admin, "elsewhere");
    let mut waiting = broker.client();
    // A minute of max_wait: only enough bytes on "own" can answer it in time.
    let id = waiting.send(&fetch_request("own", 1000, 60_000), 12);
    for _ in 0..20 {
        produce(&mut admin, "elsewhere", &[1u8; 400]);
    }
    for _ in 0..3 {
        produce(&mut admin, "own", &[2u8; 400]);
    }
    let started = std::time::Instant::now();
    let (header, resp) = waiting.receive::<FetchResponse>(12);
    assert_eq!(header.correlation_id, id);
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "answered by min_bytes, not by max_wait"
    );
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert!(p.records.as_ref().is_some_and(|r| r.len() >= 1000));
    broker.stop();
}
