//! `queued.max.requests` bounds the requests served at once, and a request that waits for other
//! clients gives its slot back: with a single slot, a long-polling Fetch does not block another
//! client's produce, and what that produce writes answers the Fetch.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression};

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn produce_request(topic: &str) -> ProduceRequest {
    let mut b = BatchBuilder::new(Compression::None);
    b.append(0, None, Some(b"v"), &[]).unwrap();
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(b.build().unwrap()))])])
}

#[test]
fn a_waiting_fetch_gives_its_request_slot_back() {
    let dir = temp_dir("request-slots");
    let broker = BrokerProcess::start(&dir, &[("queued.max.requests", "1")]);
    let mut admin = broker.client();
    for topic in ["waited-on", "elsewhere"] {
        let req = CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)]);
        assert_eq!(admin.call(&req, 7).topics[0].error_code, 0);
    }
    // A fetch that waits up to a minute for data on "waited-on".
    let mut waiting = broker.client();
    let fetch = FetchRequest::default()
        .with_max_wait_ms(60_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name("waited-on"))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let fetch_id = waiting.send(&fetch, 12);
    std::thread::sleep(Duration::from_millis(200));
    // Another client is served meanwhile (were the slot held, this would wait a minute and
    // the client's 30 s read timeout would fail the test).
    let mut other = Client::connect(&broker.addr);
    let id = other.send(&produce_request("elsewhere"), 9);
    let (header, resp) = other.receive::<ProduceResponse>(9);
    assert_eq!(header.correlation_id, id);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    // Data on its partition answers the waiting fetch.
    let resp = other.call(&produce_request("waited-on"), 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    let (header, resp) = waiting.receive::<FetchResponse>(12);
    assert_eq!(header.correlation_id, fetch_id);
    assert!(resp.responses[0].partitions[0]
        .records
        .as_ref()
        .is_some_and(|r| !r.is_empty()));
    broker.stop();
}
