//! Incremental fetch sessions (KIP-227) against a real `odradek-broker` process.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, RecordBatches};
use odradek::ErrorCode;
use uuid::Uuid;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Creates a topic and returns its id.
fn create_topic(client: &mut Client, topic: &str, partitions: i32) -> Uuid {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    let resp = client.call(&req, 7);
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
    assert!(!resp.topics[0].topic_id.is_nil());
    resp.topics[0].topic_id
}

fn batch(first: usize, count: usize) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None);
    for i in first..first + count {
        b.append(
            1_700_000_000_000 + i as i64,
            Some(format!("key-{i}").as_bytes()),
            Some(format!("value-{i}").as_bytes()),
            &[],
        )
        .unwrap();
    }
    b.build().unwrap()
}

fn produce(client: &mut Client, topic: &str, partition: i32, records: Bytes) {
    let req = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let resp = client.call(&req, 11);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

fn part(partition: i32, offset: i64) -> FetchPartition {
    FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1 << 20)
}

/// A Fetch request by topic name (v7-v12).
fn by_name(topic: &str, partitions: Vec<FetchPartition>) -> FetchTopic {
    FetchTopic::default()
        .with_topic(name(topic))
        .with_partitions(partitions)
}

/// A Fetch request by topic id (v13+).
fn by_id(id: Uuid, partitions: Vec<FetchPartition>) -> FetchTopic {
    FetchTopic::default()
        .with_topic_id(id)
        .with_partitions(partitions)
}

fn request(session_id: i32, epoch: i32, max_wait_ms: i32, topics: Vec<FetchTopic>) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_session_id(session_id)
        .with_session_epoch(epoch)
        .with_topics(topics)
}

/// `(topic name, partition index)` of every partition in a response, in order.
fn listed(resp: &FetchResponse) -> Vec<(String, i32)> {
    resp.responses
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic.as_str().to_string(), p.partition_index))
        })
        .collect()
}

fn record_count(p: &PartitionData) -> usize {
    RecordBatches::new(p.records.clone().unwrap_or_default())
        .map(|b| b.unwrap().record_count() as usize)
        .sum()
}

fn only_partition(resp: &FetchResponse) -> &PartitionData {
    assert_eq!(resp.responses.len(), 1, "{resp:?}");
    assert_eq!(resp.responses[0].partitions.len(), 1, "{resp:?}");
    &resp.responses[0].partitions[0]
}

#[test]
fn incremental_fetch_returns_only_partitions_with_news() {
    let dir = temp_dir("fetch-sessions");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "s", 3);

    // Full fetch with epoch 0 creates a session and answers every partition.
    let full = c.call(
        &request(
            0,
            0,
            0,
            vec![by_name("s", vec![part(0, 0), part(1, 0), part(2, 0)])],
        ),
        12,
    );
    assert_eq!(full.error_code, 0);
    let session = full.session_id;
    assert_ne!(session, 0, "a session should be created");
    assert_eq!(
        listed(&full),
        vec![("s".into(), 0), ("s".into(), 1), ("s".into(), 2)]
    );

    // Nothing changed: the incremental response lists nothing.
    let started = Instant::now();
    let idle = c.call(&request(session, 1, 200, vec![]), 12);
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!((idle.error_code, idle.session_id), (0, session));
    assert!(idle.responses.is_empty(), "{idle:?}");

    // Data on one partition: only that partition comes back.
    produce(&mut c, "s", 1, batch(0, 3));
    let resp = c.call(&request(session, 2, 5000, vec![]), 12);
    assert_eq!((resp.error_code, resp.session_id), (0, session));
    assert_eq!(listed(&resp), vec![("s".into(), 1)]);
    let p1 = only_partition(&resp);
    assert_eq!(record_count(p1), 3);
    assert_eq!(p1.high_watermark, 3);

    // The fetcher moves partition 1 on; nothing new anywhere, so nothing is listed.
    let resp = c.call(
        &request(session, 3, 200, vec![by_name("s", vec![part(1, 3)])]),
        12,
    );
    assert_eq!(resp.error_code, 0);
    assert!(resp.responses.is_empty(), "{resp:?}");

    // The long poll watches every partition of the session, not only the request's: data on
    // partition 2 (not in the request) ends the wait.
    let addr = broker.addr.clone();
    let producer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        produce(&mut Client::connect(&addr), "s", 2, batch(0, 2));
    });
    let started = Instant::now();
    let resp = c.call(&request(session, 4, 30_000, vec![]), 12);
    producer.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "long poll did not wake"
    );
    assert_eq!(listed(&resp), vec![("s".into(), 2)]);
    assert_eq!(record_count(only_partition(&resp)), 2);

    // Forgetting partition 2: later data there is not reported.
    let forget = request(session, 5, 0, vec![by_name("s", vec![part(2, 2)])])
        .with_forgotten_topics_data(vec![ForgottenTopic::default()
            .with_topic(name("s"))
            .with_partitions(vec![2])]);
    let resp = c.call(&forget, 12);
    assert_eq!(resp.error_code, 0);
    assert!(resp.responses.is_empty(), "{resp:?}");
    produce(&mut c, "s", 2, batch(2, 4));
    let resp = c.call(&request(session, 6, 300, vec![]), 12);
    assert_eq!(resp.error_code, 0);
    assert!(resp.responses.is_empty(), "{resp:?}");
    // Adding it back (at its old offset) returns the data.
    let resp = c.call(
        &request(session, 7, 1000, vec![by_name("s", vec![part(2, 2)])]),
        12,
    );
    assert_eq!(listed(&resp), vec![("s".into(), 2)]);
    assert_eq!(record_count(only_partition(&resp)), 4);

    // Wrong epoch, then an unknown session: top-level errors with no partitions.
    let resp = c.call(&request(session, 7, 0, vec![]), 12);
    assert_eq!(
        resp.error_code,
        ErrorCode::InvalidFetchSessionEpoch.code(),
        "{resp:?}"
    );
    assert_eq!(resp.session_id, 0);
    assert!(resp.responses.is_empty());
    let resp = c.call(&request(session.wrapping_add(1).max(1), 1, 0, vec![]), 12);
    assert_eq!(
        resp.error_code,
        ErrorCode::FetchSessionIdNotFound.code(),
        "{resp:?}"
    );
    assert!(resp.responses.is_empty());
    // The session survived the bad requests.
    let resp = c.call(&request(session, 8, 0, vec![]), 12);
    assert_eq!((resp.error_code, resp.session_id), (0, session));

    // Epoch -1 closes the session and is answered sessionless.
    let resp = c.call(
        &request(session, -1, 0, vec![by_name("s", vec![part(0, 0)])]),
        12,
    );
    assert_eq!((resp.error_code, resp.session_id), (0, 0));
    assert_eq!(listed(&resp), vec![("s".into(), 0)]);
    let resp = c.call(&request(session, 9, 0, vec![]), 12);
    assert_eq!(resp.error_code, ErrorCode::FetchSessionIdNotFound.code());
}

#[test]
fn epoch_zero_replaces_a_session_and_errors_are_always_reported() {
    let dir = temp_dir("fetch-sessions-replace");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "r", 1);
    let first = c.call(&request(0, 0, 0, vec![by_name("r", vec![part(0, 0)])]), 12);
    assert_ne!(first.session_id, 0);
    let second = c.call(
        &request(
            first.session_id,
            0,
            0,
            vec![
                by_name("r", vec![part(0, 0)]),
                by_name("missing", vec![part(0, 0)]),
            ],
        ),
        12,
    );
    assert_ne!(second.session_id, 0);
    assert_ne!(second.session_id, first.session_id);
    let resp = c.call(&request(first.session_id, 1, 0, vec![]), 12);
    assert_eq!(resp.error_code, ErrorCode::FetchSessionIdNotFound.code());
    // The unknown topic is in the session and reported on every fetch; the healthy partition
    // is not, since nothing changed there.
    for epoch in 1..=2 {
        let resp = c.call(&request(second.session_id, epoch, 0, vec![]), 12);
        assert_eq!(resp.error_code, 0);
        assert_eq!(listed(&resp), vec![("missing".into(), 0)]);
        assert_eq!(
            only_partition(&resp).error_code,
            ErrorCode::UnknownTopicOrPartition.code()
        );
    }
    // A request made with topic ids cannot use a session made with names.
    let resp = c.call(&request(second.session_id, 3, 0, vec![]), 13);
    assert_eq!(resp.error_code, ErrorCode::FetchSessionTopicIdError.code());
}

#[test]
fn v13_sessions_use_topic_ids() {
    let dir = temp_dir("fetch-sessions-v13");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    let a = create_topic(&mut c, "ida", 2);
    let b = create_topic(&mut c, "idb", 1);
    let unknown = Uuid::new_v4();
    let full = c.call(
        &request(
            0,
            0,
            0,
            vec![
                by_id(a, vec![part(0, 0), part(1, 0)]),
                by_id(b, vec![part(0, 0)]),
                by_id(unknown, vec![part(0, 0)]),
            ],
        ),
        13,
    );
    let session = full.session_id;
    assert_ne!(session, 0);
    let ids: Vec<(Uuid, i32, i16)> = full
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index, p.error_code))
        })
        .collect();
    assert_eq!(
        ids,
        vec![
            (a, 0, 0),
            (a, 1, 0),
            (b, 0, 0),
            (unknown, 0, ErrorCode::UnknownTopicId.code())
        ]
    );

    // Forget the unknown topic, then data on one partition is all that comes back.
    let forget =
        request(session, 1, 0, vec![]).with_forgotten_topics_data(vec![ForgottenTopic::default()
            .with_topic_id(unknown)
            .with_partitions(vec![0])]);
    let resp = c.call(&forget, 13);
    assert_eq!(resp.error_code, 0);
    assert!(resp.responses.is_empty(), "{resp:?}");
    produce(&mut c, "idb", 0, batch(0, 5));
    let resp = c.call(&request(session, 2, 5000, vec![]), 16);
    assert_eq!((resp.error_code, resp.session_id), (0, session));
    assert_eq!(resp.responses.len(), 1);
    assert_eq!(resp.responses[0].topic_id, b);
    assert_eq!(record_count(only_partition(&resp)), 5);

    // An incremental request may add an unknown topic id: UNKNOWN_TOPIC_ID for that partition.
    let resp = c.call(
        &request(
            session,
            3,
            0,
            vec![by_id(b, vec![part(0, 5)]), by_id(unknown, vec![part(3, 0)])],
        ),
        13,
    );
    assert_eq!(resp.responses.len(), 1, "{resp:?}");
    assert_eq!(resp.responses[0].topic_id, unknown);
    assert_eq!(
        only_partition(&resp).error_code,
        ErrorCode::UnknownTopicId.code()
    );
    // Names cannot be used on an id session.
    let resp = c.call(&request(session, 4, 0, vec![]), 12);
    assert_eq!(resp.error_code, ErrorCode::FetchSessionTopicIdError.code());
}
