//! Client quotas on a broker process: the configured quotas survive a restart, and a throttled
//! client gets `throttle_time_ms` at once and then nothing read from its connection for that
//! long (KIP-219), while its metrics count the throttle.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{create_topic, one_record, produce_request, temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, ApiVersionsRequest, DescribeClientQuotasRequest, ProduceResponse,
};
use kafka_protocol::protocol::StrBytes;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn alter(client: &mut Client, entity: &[(&str, Option<&str>)], key: &str, value: Option<f64>) {
    let request = AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(sb(t))
                        .with_entity_name(n.map(sb))
                })
                .collect(),
        )
        .with_ops(vec![OpData::default()
            .with_key(sb(key))
            .with_value(value.unwrap_or(0.0))
            .with_remove(value.is_none())])]);
    let response = client.call(&request, 1);
    assert_eq!(
        response.entries[0].error_code, 0,
        "{:?}",
        response.entries[0]
    );
}

/// An entity's (type, name) components and its (key, value) quotas.
type DescribedEntry = (Vec<(String, Option<String>)>, Vec<(String, f64)>);

fn described(client: &mut Client) -> Vec<DescribedEntry> {
    let response = client.call(&DescribeClientQuotasRequest::default(), 1);
    assert_eq!(response.error_code, 0);
    let mut out: Vec<_> = response
        .entries
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.entity
                    .iter()
                    .map(|c| {
                        (
                            c.entity_type.to_string(),
                            c.entity_name.as_ref().map(|n| n.to_string()),
                        )
                    })
                    .collect::<Vec<_>>(),
                e.values
                    .iter()
                    .map(|v| (v.key.to_string(), v.value))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    out.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    out
}

#[test]
fn configured_quotas_survive_a_restart() {
    let dir = temp_dir("quota-restart");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut client = broker.client();
    alter(
        &mut client,
        &[("user", Some("alice"))],
        "producer_byte_rate",
        Some(1024.0),
    );
    alter(
        &mut client,
        &[("client-id", None)],
        "consumer_byte_rate",
        Some(2048.0),
    );
    alter(
        &mut client,
        &[("ip", Some("10.1.2.3"))],
        "connection_creation_rate",
        Some(5.0),
    );
    let before = described(&mut client);
    assert_eq!(before.len(), 3, "{before:?}");
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[]);
    let mut client = broker.client();
    assert_eq!(described(&mut client), before);
    broker.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_throttled_producer_is_answered_at_once_and_then_muted() {
    let dir = temp_dir("quota-mute");
    let broker = BrokerProcess::start(&dir, &[("quota.window.num", "2")]);
    let mut client = broker.client();
    create_topic(&mut client, "throttled", 1, &[]);
    // The test client's id; 10 KiB/s, and a 30 KiB produce request: 3× the quota over the one
    // window the rate is measured on, so about 2 s of throttle.
    alter(
        &mut client,
        &[("client-id", Some("odradek-it"))],
        "producer_byte_rate",
        Some(10240.0),
    );
    let request = produce_request("throttled", 1, one_record(&vec![7u8; 30 * 1024]));
    let started = Instant::now();
    let response: ProduceResponse = client.call(&request, 9);
    let answered = started.elapsed();
    let partition = &response.responses[0].partition_responses[0];
    assert_eq!(partition.error_code, 0);
    assert!(
        (1_500..=2_500).contains(&response.throttle_time_ms),
        "throttle {} ms",
        response.throttle_time_ms
    );
    assert!(
        answered < Duration::from_millis(1_000),
        "the response itself waited {answered:?}"
    );
    // Muted: the next request is read only once the throttle time has passed.
    let started = Instant::now();
    let _ = client.call(&ApiVersionsRequest::default(), 0);
    let muted = answered + started.elapsed();
    assert!(
        muted >= Duration::from_millis(u64::try_from(response.throttle_time_ms).unwrap() - 100),
        "the connection was read again after {muted:?}"
    );
    alter(
        &mut client,
        &[("client-id", Some("odradek-it"))],
        "producer_byte_rate",
        None,
    );
    broker.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn throttling_is_counted_per_entity_in_the_broker_metrics() {
    let cluster = odradek_broker::testing::Cluster::builder()
        .config("quota.window.num", "2")
        .start()
        .unwrap();
    let mut client = Client::connect(cluster.bootstrap());
    create_topic(&mut client, "metered", 1, &[]);
    alter(
        &mut client,
        &[("client-id", None)],
        "producer_byte_rate",
        Some(10240.0),
    );
    let request = produce_request("metered", 1, one_record(&vec![7u8; 30 * 1024]));
    let response: ProduceResponse = client.call(&request, 9);
    assert!(response.throttle_time_ms > 0);
    let metrics = cluster
        .broker_state()
        .quotas
        .metrics(odradek_broker::clock::now_ms());
    let produce: Vec<_> = metrics
        .iter()
        .filter(|m| m.kind == odradek_broker::quota::QuotaKind::Produce)
        .collect();
    assert_eq!(produce.len(), 1, "{metrics:?}");
    let m = produce[0];
    // The default client-id quota: one sensor per client id, no user tag.
    assert_eq!((m.user.as_str(), m.client_id.as_str()), ("", "odradek-it"));
    assert_eq!(m.limit, 10240.0);
    assert_eq!(m.throttled, 1);
    assert_eq!(
        m.throttle_ms_max,
        u64::try_from(response.throttle_time_ms).unwrap()
    );
}
