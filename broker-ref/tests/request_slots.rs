//! `queued.max.requests` bounds the requests served at once, and a request that waits for other
//! clients gives its slot back: with a single slot, a long-polling Fetch does not block another
//! client's produce, and what that produce writes answers the Fetch.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{
    create_topic, fetch_request, one_record, produce_request, temp_dir, BrokerProcess, Client,
};
use kafka_protocol::messages::{FetchResponse, ProduceRequest, ProduceResponse};

fn produce_to(topic: &str) -> ProduceRequest {
    produce_request(topic, 1, one_record(b"v"))
}

#[test]
fn a_waiting_fetch_gives_its_request_slot_back() {
    let dir = temp_dir("request-slots");
    let broker = BrokerProcess::start(&dir, &[("queued.max.requests", "1")]);
    let mut admin = broker.client();
    for topic in ["waited-on", "elsewhere"] {
        create_topic(&mut admin, topic, 1, &[]);
    }
    // A fetch that waits up to a minute for data on "waited-on".
    let mut waiting = broker.client();
    let fetch = fetch_request("waited-on", 1, 60_000, 1 << 20);
    let fetch_id = waiting.send(&fetch, 12);
    std::thread::sleep(Duration::from_millis(200));
    // Another client is served meanwhile (were the slot held, this would wait a minute and
    // the client's 30 s read timeout would fail the test).
    let mut other = Client::connect(&broker.addr);
    let id = other.send(&produce_to("elsewhere"), 9);
    let (header, resp) = other.receive::<ProduceResponse>(9);
    assert_eq!(header.correlation_id, id);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    // Data on its partition answers the waiting fetch.
    let resp = other.call(&produce_to("waited-on"), 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    let (header, resp) = waiting.receive::<FetchResponse>(12);
    assert_eq!(header.correlation_id, fetch_id);
    assert!(resp.responses[0].partitions[0]
        .records
        .as_ref()
        .is_some_and(|r| !r.is_empty()));
    broker.stop();
}
