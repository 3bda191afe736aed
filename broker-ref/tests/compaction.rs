//! Log compaction end to end: a real broker with the cleaner running every 100 ms compacts a
//! `cleanup.policy=compact` topic until a fetch from offset 0 returns exactly the latest value
//! per key, then drops tombstones once `delete.retention.ms` has passed, and keeps the result
//! across a restart.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, RecordBatches};

const TOPIC: &str = "compacted";
const SEGMENT_BYTES: usize = 1024;
const KEYS: usize = 10;
const ROUNDS: usize = 6;
const DELETED: [usize; 3] = [0, 4, 7];
const FILLER: &str = "filler";

/// One record as produced or fetched: offset, key, value.
type Rec = (i64, String, Option<String>);

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn create_topic(client: &mut Client, configs: &[(&str, &str)]) {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string(k.to_string()))
                .with_value(Some(StrBytes::from_string(v.to_string())))
        })
        .collect();
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(TOPIC))
            .with_num_partitions(1)
            .with_replication_factor(1)
            .with_configs(configs)])
        .with_timeout_ms(5000);
    let resp = client.call(&req, 7);
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
}

/// Produces one record in its own batch; returns its offset.
fn produce(client: &mut Client, codec: Compression, key: &str, value: Option<&[u8]>) -> i64 {
    let mut b = BatchBuilder::new(codec);
    b.append(now_ms(), Some(key.as_bytes()), value, &[])
        .unwrap();
    let req = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(b.build().unwrap()))])]);
    let resp = client.call(&req, 11);
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
    p.base_offset
}

/// A filler record larger than a segment: it rolls the active segment and sits alone in the
/// new one, so every record produced before it is in a sealed, cleanable segment.
fn produce_filler(client: &mut Client) -> i64 {
    produce(
        client,
        Compression::None,
        FILLER,
        Some(&vec![b'f'; SEGMENT_BYTES + 100]),
    )
}

fn fetch_at(client: &mut Client, offset: i64) -> fetch_response::PartitionData {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(10 << 20)])]);
    let resp = client.call(&req, 12);
    resp.responses[0].partitions[0].clone()
}

fn text(b: Option<Bytes>) -> Option<String> {
    b.map(|b| String::from_utf8(b.to_vec()).unwrap())
}

/// Fetches from offset 0 to the high watermark the way a consumer does (each fetch starts after
/// the last batch returned). Returns the records and whether the reader reached the high
/// watermark.
fn fetch_all(client: &mut Client) -> (Vec<Rec>, bool) {
    let mut out: Vec<Rec> = Vec::new();
    let mut offset = 0;
    loop {
        let data = fetch_at(client, offset);
        assert_eq!(data.error_code, 0);
        if offset >= data.high_watermark {
            return (out, true);
        }
        let mut progressed = false;
        for batch in RecordBatches::new(data.records.unwrap_or_default()) {
            let batch = batch.unwrap();
            batch.validate_crc().unwrap();
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                if r.offset >= offset {
                    assert!(out.last().is_none_or(|l| l.0 < r.offset));
                    out.push((r.offset, text(r.key).unwrap(), text(r.value)));
                }
            }
            offset = batch.next_offset();
            progressed = true;
        }
        if !progressed {
            return (out, false);
        }
    }
}

/// The latest record of every key, in offset order.
fn latest_per_key(produced: &[Rec]) -> Vec<Rec> {
    let mut latest = BTreeMap::new();
    for r in produced {
        latest.insert(r.1.clone(), r.clone());
    }
    let mut out: Vec<Rec> = latest.into_values().collect();
    out.sort_by_key(|r| r.0);
    out
}

/// Polls until the fetched records, filler records aside, equal `expected` (and the reader
/// reaches the high watermark); panics with the last state at the deadline.
fn wait_for(
    client: &mut Client,
    expected: &[Rec],
    what: &str,
    mut between: impl FnMut(&mut Client),
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (records, reached_end) = fetch_all(client);
        let data: Vec<Rec> = records.into_iter().filter(|r| r.1 != FILLER).collect();
        if data == expected && reached_end {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not compacted in time; fetched {data:?}, expected {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        between(client);
    }
}

#[test]
fn compacted_topic_keeps_the_latest_value_per_key_and_drops_tombstones_after_the_horizon() {
    let dir = temp_dir("compaction");
    let overrides = [("log.cleaner.backoff.ms", "100")];
    let broker = BrokerProcess::start(&dir, &overrides);
    let mut c = broker.client();
    let segment_bytes = SEGMENT_BYTES.to_string();
    create_topic(
        &mut c,
        &[
            ("cleanup.policy", "compact"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("segment.bytes", &segment_bytes),
            ("delete.retention.ms", "2000"),
        ],
    );

    // Several rounds of updates to every key, with every codec; the last round deletes some.
    let mut produced: Vec<Rec> = Vec::new();
    for round in 0..ROUNDS {
        let codec = Compression::ALL[round % Compression::ALL.len()];
        for k in 0..KEYS {
            let key = format!("key-{k}");
            let value = (round + 1 < ROUNDS || !DELETED.contains(&k))
                .then(|| format!("round-{round}-{}", "v".repeat(k * 3)));
            let offset = produce(&mut c, codec, &key, value.as_deref().map(str::as_bytes));
            produced.push((offset, key, value));
        }
    }
    let first_filler = produce_filler(&mut c);
    assert_eq!(first_filler, (ROUNDS * KEYS) as i64);

    // Phase 1: the latest value per key, tombstones included (their horizon is 2 s after the
    // cleaning that first saw them); every offset is the one the record was produced at.
    let with_tombstones = latest_per_key(&produced);
    assert_eq!(with_tombstones.len(), KEYS);
    wait_for(&mut c, &with_tombstones, "first compaction", |_| {});

    // Phase 2: tombstones go on a pass after the horizon. A pass needs new dirty data, so each
    // poll rolls another filler segment.
    let without_tombstones: Vec<Rec> = with_tombstones
        .iter()
        .filter(|r| r.2.is_some())
        .cloned()
        .collect();
    assert_eq!(without_tombstones.len(), KEYS - DELETED.len());
    wait_for(&mut c, &without_tombstones, "tombstone removal", |c| {
        produce_filler(c);
    });

    // The compacted log survives a restart unchanged (filler records aside, which the cleaner
    // may still be removing).
    drop(c);
    broker.stop();
    let broker = BrokerProcess::start(&dir, &overrides);
    let mut c = broker.client();
    let (records, reached_end) = fetch_all(&mut c);
    assert!(reached_end);
    let data: Vec<Rec> = records.into_iter().filter(|r| r.1 != FILLER).collect();
    assert_eq!(data, without_tombstones);
    let _ = std::fs::remove_dir_all(&dir);
}
