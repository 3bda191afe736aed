//! kill -9 during a write stream, restart, and check that every acknowledged record survived
//! and that nothing corrupt is served. Repeated several times on the same data directory.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Produces batches of 5 records until stopped; records `offset -> value` for every ack.
fn write_stream(
    addr: String,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeMap<i64, Vec<u8>>>>,
    round: usize,
) {
    let mut client = Client::connect(&addr);
    let mut seq = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let codec = Compression::ALL[seq % 5];
        let values: Vec<Vec<u8>> = (0..5)
            .map(|i| format!("round{round}-seq{seq}-{i}-{}", "z".repeat(seq % 300)).into_bytes())
            .collect();
        let mut b = BatchBuilder::new(codec);
        for v in &values {
            b.append(now_ms(), None, Some(v), &[]).unwrap();
        }
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(name("crash"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(b.build().unwrap()))])]);
        // Any I/O failure means the broker died mid-request: that batch is not acknowledged.
        let Ok(id) = client.try_send(&req, 11) else {
            return;
        };
        let Ok(frame) = client.read_frame() else {
            return;
        };
        let (header, resp) =
            odradek::protocol::decode_response::<ProduceResponse>(frame, 11).unwrap();
        assert_eq!(header.correlation_id, id);
        let p = &resp.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0);
        let mut acked = acked.lock().unwrap();
        for (i, v) in values.into_iter().enumerate() {
            acked.insert(p.base_offset + i as i64, v);
        }
        seq += 1;
    }
}

fn read_all(client: &mut Client) -> BTreeMap<i64, Vec<u8>> {
    common::read_partition(client, "crash")
        .into_iter()
        .map(|(offset, value)| (offset, value.to_vec()))
        .collect()
}

#[test]
fn acknowledged_records_survive_kill_9() {
    let dir = temp_dir("crash");
    let overrides = [
        ("log.flush.interval.messages", "1"),
        ("log.segment.bytes", "65536"),
    ];
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    {
        let broker = BrokerProcess::start(&dir, &overrides);
        let req = CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
            .with_name(name("crash"))
            .with_num_partitions(1)
            .with_replication_factor(1)]);
        assert_eq!(broker.client().call(&req, 7).topics[0].error_code, 0);
        broker.stop();
    }
    for round in 0..6 {
        let broker = BrokerProcess::start(&dir, &overrides);
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (addr, stop, acked) = (broker.addr.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || write_stream(addr, stop, acked, round))
        };
        // Let the stream run for a while (different length each round), then kill mid-write.
        std::thread::sleep(Duration::from_millis(150 + 70 * round as u64));
        broker.kill9();
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();

        let restarted = BrokerProcess::start(&dir, &overrides);
        let stored = read_all(&mut restarted.client());
        let acked = acked.lock().unwrap();
        assert!(!acked.is_empty(), "round {round}: nothing was acknowledged");
        for (offset, value) in acked.iter() {
            assert_eq!(
                stored.get(offset),
                Some(value),
                "round {round}: acknowledged offset {offset} lost"
            );
        }
        let expected: Vec<i64> = (0..stored.len() as i64).collect();
        assert_eq!(
            stored.keys().copied().collect::<Vec<_>>(),
            expected,
            "offsets contiguous"
        );
        restarted.stop();
    }
}
