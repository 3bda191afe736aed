//! Waiting fetches are woken per partition and do not re-read on every produce (issue 19):
//! a fetch parked on a large partition with a `min_bytes` it can never reach costs the broker
//! nothing while other clients produce elsewhere, yet still answers at its `max_wait_ms`; and a
//! fetch waiting on its own partition answers once enough bytes arrived there.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{
    cpu_time, create_topic, fetch_request, one_record, produce_request, temp_dir, BrokerProcess,
    Client,
};
use kafka_protocol::messages::FetchResponse;

fn produce(client: &mut Client, topic: &str, value: &[u8]) {
    let resp = client.call(&produce_request(topic, 1, one_record(value)), 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// A fetch of `topic` from offset 0 with room for 64 MiB.
fn fetch_all(
    topic: &str,
    min_bytes: i32,
    max_wait_ms: i32,
) -> kafka_protocol::messages::FetchRequest {
    fetch_request(topic, min_bytes, max_wait_ms, 64 << 20)
}

#[test]
fn a_parked_fetch_is_not_re_read_on_every_produce_elsewhere() {
    let dir = temp_dir("fetch-wakeups");
    let broker = BrokerProcess::start(&dir, &[("fetch.max.bytes", "67108864")]);
    let mut admin = broker.client();
    create_topic(&mut admin, "big", 1, &[]);
    create_topic(&mut admin, "busy", 1, &[]);
    // 48 MiB readable on "big".
    let chunk = vec![7u8; 900 * 1024];
    for _ in 0..54 {
        produce(&mut admin, "big", &chunk);
    }
    // A fetch that wants more than exists: it waits out its max_wait_ms.
    let mut parked = broker.client();
    let id = parked.send(&fetch_all("big", i32::MAX, 10_000), 12);

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
    create_topic(&mut admin, "own", 1, &[]);
    create_topic(&mut admin, "elsewhere", 1, &[]);
    let mut waiting = broker.client();
    // A minute of max_wait: only enough bytes on "own" can answer it in time.
    let id = waiting.send(&fetch_all("own", 1000, 60_000), 12);
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
