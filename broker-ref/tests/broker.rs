//! Integration tests: a real `odradek-broker` process on an ephemeral port, spoken to over TCP.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use bytes::Bytes;
use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, Header, Record, RecordBatches};
use odradek::ErrorCode;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn create_topic(client: &mut Client, topic: &str, partitions: i32) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    let resp = client.call(&req, 7);
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
}

fn batch(codec: Compression, first: usize, count: usize) -> Bytes {
    let mut b = BatchBuilder::new(codec);
    for i in first..first + count {
        let value = format!("value-{i}-{}", "x".repeat(i % 50));
        let headers = [Header::new(
            format!("h{i}").into_bytes(),
            Some(Bytes::from_static(b"v")),
        )];
        b.append(
            1_700_000_000_000 + i as i64,
            Some(format!("key-{i}").as_bytes()),
            Some(value.as_bytes()),
            &headers,
        )
        .unwrap();
    }
    b.build().unwrap()
}

fn produce(
    client: &mut Client,
    topic: &str,
    partition: i32,
    records: Bytes,
    acks: i16,
) -> produce_response::PartitionProduceResponse {
    let req = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let resp = client.call(&req, 11);
    resp.responses[0].partition_responses[0].clone()
}

fn fetch(
    client: &mut Client,
    topic: &str,
    partition: i32,
    offset: i64,
    max_wait_ms: i32,
) -> fetch_response::PartitionData {
    let req = FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(10 << 20)])]);
    let resp = client.call(&req, 12);
    resp.responses[0].partitions[0].clone()
}

fn records_of(data: Bytes) -> Vec<Record> {
    RecordBatches::new(data)
        .flat_map(|b| {
            let b = b.unwrap();
            b.validate_crc().unwrap();
            b.records().unwrap().map(Result::unwrap).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn api_versions_advertises_kafka_ranges() {
    let dir = temp_dir("apiversions");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    let resp = c.call(&ApiVersionsRequest::default(), 3);
    assert_eq!(resp.error_code, 0);
    let produce = resp.api_keys.iter().find(|k| k.api_key == 0).unwrap();
    assert_eq!((produce.min_version, produce.max_version), (0, 13));
    let fetch = resp.api_keys.iter().find(|k| k.api_key == 1).unwrap();
    assert_eq!((fetch.min_version, fetch.max_version), (4, 18));
    // A too-new ApiVersions request gets a v0 UNSUPPORTED_VERSION answer, not a closed socket.
    let mut c2 = broker.client();
    c2.send(&ApiVersionsRequest::default(), 4);
    let frame = c2.read_frame().unwrap();
    assert_eq!(
        &frame[4..6],
        &0i16.to_be_bytes(),
        "v4 is supported by the codec"
    );
}

#[test]
fn produce_and_fetch_every_codec_round_trips() {
    let dir = temp_dir("roundtrip");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "codecs", 1);
    let mut expected = Vec::new();
    let mut next = 0usize;
    for codec in Compression::ALL {
        let sent = batch(codec, next, 25);
        expected.extend(
            records_of(sent.clone())
                .into_iter()
                .map(|r| (r.key, r.value, r.headers, r.timestamp)),
        );
        let resp = produce(&mut c, "codecs", 0, sent, -1);
        assert_eq!(resp.error_code, 0, "{codec}: {:?}", resp.error_message);
        assert_eq!(resp.base_offset, next as i64, "{codec}");
        next += 25;
    }
    let data = fetch(&mut c, "codecs", 0, 0, 100);
    assert_eq!(data.error_code, 0);
    assert_eq!(data.high_watermark, next as i64);
    let got = records_of(data.records.unwrap());
    assert_eq!(got.len(), next);
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        assert_eq!(
            (
                r.key.clone(),
                r.value.clone(),
                r.headers.clone(),
                r.timestamp
            ),
            expected[i]
        );
    }
    // Fetching from the middle starts at the batch holding the offset.
    let mid = records_of(fetch(&mut c, "codecs", 0, 60, 100).records.unwrap());
    assert_eq!(mid.first().unwrap().offset, 50);
}

#[test]
fn metadata_auto_creates_only_when_allowed() {
    let dir = temp_dir("autocreate");
    let broker = BrokerProcess::start(&dir, &[("num.partitions", "3")]);
    let mut c = broker.client();
    let req = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name("auto-topic")))
        ]))
        .with_allow_auto_topic_creation(false);
    let resp = c.call(&req, 12);
    assert_eq!(
        resp.topics[0].error_code,
        ErrorCode::UnknownTopicOrPartition.code()
    );
    let resp = c.call(&req.clone().with_allow_auto_topic_creation(true), 12);
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].partitions.len(), 3);
    assert_eq!(resp.brokers.len(), 1);
    assert_eq!(
        format!("{}:{}", resp.brokers[0].host.as_str(), resp.brokers[0].port),
        broker.addr
    );
    let bad = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name("bad/name")))
        ]))
        .with_allow_auto_topic_creation(true);
    assert_eq!(
        c.call(&bad, 12).topics[0].error_code,
        ErrorCode::InvalidTopic.code()
    );

    let dir2 = temp_dir("autocreate-off");
    let off = BrokerProcess::start(&dir2, &[("auto.create.topics.enable", "false")]);
    let resp = off
        .client()
        .call(&req.with_allow_auto_topic_creation(true), 12);
    assert_eq!(
        resp.topics[0].error_code,
        ErrorCode::UnknownTopicOrPartition.code()
    );
}

#[test]
fn bad_input_closes_only_the_offending_connection() {
    let dir = temp_dir("badinput");
    let broker = BrokerProcess::start(&dir, &[("socket.request.max.bytes", "1000")]);
    let mut healthy = broker.client();
    create_topic(&mut healthy, "t", 1);
    let cases: Vec<Vec<u8>> = vec![
        vec![0, 0, 0, 4, 0, 99, 0, 0], // unknown API key, short
        vec![0x7f, 0xff, 0xff, 0xff],  // frame above the limit
        vec![0, 0, 0, 12, 0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff], // truncated Metadata v12
        vec![0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 1], // Produce v1: advertised min 0, refused like Kafka
        {
            let mut v = vec![0, 0, 0, 26, 0, 3, 0, 0, 0, 0, 0, 7, 0xff, 0xff];
            v.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]); // 2^31 topics in a tiny frame
            v.extend_from_slice(&[0; 8]);
            v
        },
    ];
    for bytes in cases {
        let mut c = broker.client();
        c.send_raw(&bytes).unwrap();
        assert!(
            c.read_frame().is_err(),
            "connection should be closed for {bytes:?}"
        );
    }
    // A corrupt batch is answered with CORRUPT_MESSAGE, not a closed connection.
    let mut corrupt = batch(Compression::None, 0, 3).to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let resp = produce(&mut healthy, "t", 0, Bytes::from(corrupt), 1);
    assert_eq!(resp.error_code, ErrorCode::CorruptMessage.code());
    // The healthy connection and the broker are unaffected.
    assert_eq!(
        produce(&mut healthy, "t", 0, batch(Compression::Lz4, 0, 3), 1).error_code,
        0
    );
    assert_eq!(
        healthy.call(&ApiVersionsRequest::default(), 3).error_code,
        0
    );
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let dir = temp_dir("pipeline");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "p", 1);
    let mut ids = Vec::new();
    for i in 0..50 {
        let req = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(name("p"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch(Compression::Snappy, i * 2, 2)))])]);
        ids.push(c.send(&req, 11));
    }
    for (i, id) in ids.into_iter().enumerate() {
        let (header, resp) = c.receive::<ProduceResponse>(11);
        assert_eq!(header.correlation_id, id);
        assert_eq!(
            resp.responses[0].partition_responses[0].base_offset,
            i as i64 * 2
        );
    }
}

#[test]
fn acks_zero_gets_no_response_but_is_appended() {
    let dir = temp_dir("acks0");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "a0", 1);
    let req = ProduceRequest::default()
        .with_acks(0)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name("a0"))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch(Compression::Gzip, 0, 4)))])]);
    c.send(&req, 11);
    // The next response on the connection answers the next request, not the produce.
    let data = fetch(&mut c, "a0", 0, 0, 1000);
    assert_eq!(records_of(data.records.unwrap()).len(), 4);
}

#[test]
fn long_poll_fetch_wakes_when_data_arrives() {
    let dir = temp_dir("longpoll");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "lp", 1);
    let addr = broker.addr.clone();
    let producer = std::thread::spawn(move || {
        let mut p = Client::connect(&addr);
        std::thread::sleep(std::time::Duration::from_millis(300));
        produce(&mut p, "lp", 0, batch(Compression::Zstd, 0, 1), 1)
    });
    let data = fetch(&mut c, "lp", 0, 0, 30_000);
    assert_eq!(
        records_of(data.records.unwrap()).len(),
        1,
        "fetch returned without data"
    );
    assert_eq!(producer.join().unwrap().error_code, 0);
}

/// A batch holding one record whose value is `size` bytes.
fn big_batch(size: usize) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None);
    b.append(1_700_000_000_000, None, Some(&vec![b'v'; size]), &[])
        .unwrap();
    b.build().unwrap()
}

/// Fetch of partition 0 from `offset` with `min_bytes` and `partition_max_bytes`; returns the
/// partition's data and how long the broker took to answer.
fn fetch_min_bytes(
    client: &mut Client,
    topic: &str,
    min_bytes: i32,
    partition_max_bytes: i32,
    max_wait_ms: i32,
) -> (fetch_response::PartitionData, std::time::Duration) {
    let req = FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(50 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(partition_max_bytes)])]);
    let started = std::time::Instant::now();
    let resp = client.call(&req, 12);
    (resp.responses[0].partitions[0].clone(), started.elapsed())
}

#[test]
fn min_bytes_counts_a_partition_stopped_by_its_limit_as_full() {
    let dir = temp_dir("minbytes");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "mb", 1);
    assert_eq!(
        produce(&mut c, "mb", 0, big_batch(300_000), 1).error_code,
        0
    );
    // One batch readable, 300 kB < min_bytes: the broker waits for more until max_wait.
    let (data, waited) = fetch_min_bytes(&mut c, "mb", 500_000, 500_000, 1500);
    assert_eq!(records_of(data.records.unwrap()).len(), 1);
    assert!(
        waited >= std::time::Duration::from_millis(1000),
        "answered after {waited:?}"
    );
    // Two more batches: only one fits under the partition's 500 kB limit, but the partition
    // has more than its limit readable, so min_bytes (= the limit) is met at once, as in Kafka.
    for _ in 0..2 {
        assert_eq!(
            produce(&mut c, "mb", 0, big_batch(300_000), 1).error_code,
            0
        );
    }
    let (data, waited) = fetch_min_bytes(&mut c, "mb", 500_000, 500_000, 30_000);
    assert_eq!(records_of(data.records.unwrap()).len(), 1);
    assert!(
        waited < std::time::Duration::from_secs(15),
        "waited {waited:?} for min_bytes the partition's limit could never reach"
    );
}

#[test]
fn list_offsets_and_delete_records() {
    let dir = temp_dir("offsets");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "o", 1);
    produce(&mut c, "o", 0, batch(Compression::None, 0, 10), 1);
    let query = |c: &mut Client, ts: i64| {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("o"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(ts)])]);
        let resp = c.call(&req, 8);
        let p = &resp.topics[0].partitions[0];
        assert_eq!(p.error_code, 0);
        (p.offset, p.timestamp)
    };
    assert_eq!(query(&mut c, -2).0, 0);
    assert_eq!(query(&mut c, -1).0, 10);
    // Every version answers (v1-v3 have no leader epoch: setting it made the response
    // unencodable and the broker closed the connection, which kafkajs and older librdkafka hit).
    for version in 1..=8 {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("o"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])]);
        let resp = c.call(&req, version);
        let p = &resp.topics[0].partitions[0];
        assert_eq!((p.error_code, p.offset), (0, 10), "ListOffsets v{version}");
    }
    assert_eq!(query(&mut c, 1_700_000_000_004), (4, 1_700_000_000_004));
    assert_eq!(query(&mut c, 1_700_000_000_009 + 1).0, -1);
    assert_eq!(query(&mut c, -3), (9, 1_700_000_000_009));
    let del = DeleteRecordsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![delete_records_request::DeleteRecordsTopic::default()
            .with_name(name("o"))
            .with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(6),
            ])]);
    let resp = c.call(&del, 2);
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
    assert_eq!(resp.topics[0].partitions[0].low_watermark, 6);
    assert_eq!(query(&mut c, -2).0, 6);
    let below = fetch(&mut c, "o", 0, 2, 0);
    assert_eq!(below.error_code, ErrorCode::OffsetOutOfRange.code());
}

#[test]
fn idempotent_batches_are_written_once_and_gaps_refused() {
    let dir = temp_dir("idempotence");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "idem", 1);
    let pid = c.call(
        &InitProducerIdRequest::default()
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
        4,
    );
    assert_eq!(pid.error_code, 0);
    let (id, epoch) = (pid.producer_id.0, pid.producer_epoch);
    let batch = |seq: i32, n: usize| {
        let mut b = BatchBuilder::new(Compression::None).producer(id, epoch, seq);
        for i in 0..n {
            b.append(
                1_700_000_000_000,
                None,
                Some(format!("s{}", seq as usize + i).as_bytes()),
                &[],
            )
            .unwrap();
        }
        b.build().unwrap()
    };
    let first = produce(&mut c, "idem", 0, batch(0, 3), -1);
    assert_eq!((first.error_code, first.base_offset), (0, 0));
    let retry = produce(&mut c, "idem", 0, batch(0, 3), -1);
    assert_eq!(
        (retry.error_code, retry.base_offset),
        (0, 0),
        "a retried batch keeps its offset"
    );
    let gap = produce(&mut c, "idem", 0, batch(5, 1), -1);
    assert_eq!(gap.error_code, ErrorCode::OutOfOrderSequenceNumber.code());
    let next = produce(&mut c, "idem", 0, batch(3, 2), -1);
    assert_eq!((next.error_code, next.base_offset), (0, 3));
    assert_eq!(
        records_of(fetch(&mut c, "idem", 0, 0, 0).records.unwrap()).len(),
        5,
        "no duplicate written"
    );
    // KIP-360: presenting the current id and epoch bumps the epoch.
    let bumped = c.call(
        &InitProducerIdRequest::default()
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch),
        4,
    );
    assert_eq!(
        (bumped.producer_id.0, bumped.producer_epoch),
        (id, epoch + 1)
    );
    // The state survives a restart: the retry is still recognised.
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    let retry = produce(&mut c, "idem", 0, batch(3, 2), -1);
    assert_eq!(
        (retry.error_code, retry.base_offset),
        (0, 3),
        "duplicate detected after restart"
    );
}

/// The coordinators' topics are created on first use, as Kafka does, so a broker that never
/// sees a group or a transaction starts without writing them; once created they survive a
/// restart.
#[test]
fn internal_topics_are_created_by_the_first_find_coordinator() {
    let dir = temp_dir("lazy-internal");
    let overrides = [
        ("offsets.topic.num.partitions", "5"),
        ("transaction.state.log.num.partitions", "3"),
    ];
    let broker = BrokerProcess::start(&dir, &overrides);
    let mut c = broker.client();
    let all = MetadataRequest::default().with_topics(None);
    let internal = |resp: &MetadataResponse| -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = resp
            .topics
            .iter()
            .filter(|t| t.is_internal)
            .map(|t| {
                (
                    t.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                    t.partitions.len(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(internal(&c.call(&all, 12)), vec![], "nothing at startup");
    let find = |key_type: i8, key: &str| {
        FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![StrBytes::from_string(key.to_string())])
    };
    let resp = c.call(&find(0, "g1"), 4);
    assert_eq!(resp.coordinators[0].error_code, 0);
    assert_eq!(
        internal(&c.call(&all, 12)),
        vec![("__consumer_offsets".to_string(), 5)]
    );
    let resp = c.call(&find(1, "t1"), 4);
    assert_eq!(resp.coordinators[0].error_code, 0);
    let expected = vec![
        ("__consumer_offsets".to_string(), 5),
        ("__transaction_state".to_string(), 3),
    ];
    assert_eq!(internal(&c.call(&all, 12)), expected);
    drop(c);
    broker.stop();
    let again = BrokerProcess::start(&dir, &overrides);
    assert_eq!(internal(&again.client().call(&all, 12)), expected);
}
