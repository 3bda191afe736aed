//! Statistics snapshots as JSON (`statistics.interval.ms` + `stats_cb`).
//!
//! Our own schema, not librdkafka's: a `type`, a millisecond timestamp `ts`, and the counters the
//! core keeps. Field names are stable; new fields may be added.

use serde_json::{json, Value};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A producer snapshot.
pub fn producer_json(core: &odradek::Producer) -> String {
    let s = core.stats();
    let partitions: Vec<Value> = s
        .partitions
        .iter()
        .map(|p| {
            json!({
                "topic": &*p.partition.topic,
                "partition": p.partition.partition,
                "queued_records": p.queued_records,
                "batches_sent": p.batches_sent,
                "retries": p.retries,
                "in_flight": p.in_flight,
            })
        })
        .collect();
    json!({
        "type": "producer",
        "client_id": core.cluster().config().client_id,
        "ts": now_ms(),
        "pending_records": s.pending_records,
        "held_records": s.held_records,
        "partitions": partitions,
        "brokers": brokers(&s.brokers),
    })
    .to_string()
}

/// A consumer snapshot.
pub fn consumer_json(core: &odradek::Consumer, buffered: usize) -> String {
    let assignment: Vec<Value> = core
        .assignment()
        .iter()
        .map(|tp| json!({"topic": &*tp.topic, "partition": tp.partition}))
        .collect();
    let paused: Vec<Value> = core
        .paused()
        .iter()
        .map(|tp| json!({"topic": &*tp.topic, "partition": tp.partition}))
        .collect();
    json!({
        "type": "consumer",
        "client_id": core.cluster().config().client_id,
        "ts": now_ms(),
        "assignment": assignment,
        "paused": paused,
        "buffered_records": buffered,
        "brokers": brokers(&core.cluster().broker_stats()),
    })
    .to_string()
}

fn brokers(b: &[odradek::producer::BrokerStats]) -> Vec<Value> {
    b.iter()
        .map(|b| {
            json!({
                "broker": b.broker,
                "requests": b.requests,
                "bytes_sent": b.bytes_sent,
                "bytes_received": b.bytes_received,
                "mean_latency_us": b.mean_latency_us,
                "in_flight": b.in_flight,
                "nodeid": b.node_id,
                // librdkafka's per-broker throttle window (milliseconds): every response with
                // a non-zero throttle time since the connection opened.
                "throttle": {
                    "cnt": b.throttled,
                    "sum": b.throttle_ms_total,
                    "min": b.throttle_ms_min,
                    "max": b.throttle_ms_max,
                    "avg": b.throttle_ms_total.checked_div(b.throttled).unwrap_or(0),
                },
            })
        })
        .collect()
}
