//! Statistics snapshots as JSON (`statistics.interval.ms` + `stats_cb`).
//!
//! Our own schema, not librdkafka's: a `type`, a millisecond timestamp `ts`, and the counters the
//! core keeps. Field names are stable; new fields may be added. Each snapshot takes and resets
//! the per-broker throttle windows, so build them only for the statistics emission.

use odradek::net::ThrottleWindow;
use serde_json::{json, Value};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A producer snapshot (starts new throttle windows).
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
        "brokers": brokers(&core.cluster().take_throttle_windows()),
    })
    .to_string()
}

/// A consumer snapshot (starts new throttle windows).
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
        "brokers": brokers(&core.cluster().take_throttle_windows()),
    })
    .to_string()
}

fn brokers(b: &[(odradek::producer::BrokerStats, ThrottleWindow)]) -> Vec<Value> {
    b.iter()
        .map(|(b, throttle)| {
            json!({
                "broker": b.broker,
                "requests": b.requests,
                "bytes_sent": b.bytes_sent,
                "bytes_received": b.bytes_received,
                "mean_latency_us": b.mean_latency_us,
                "in_flight": b.in_flight,
                "nodeid": b.node_id,
                "throttle": throttle_json(throttle),
            })
        })
        .collect()
}

/// librdkafka's per-broker throttle window (milliseconds): the responses with a non-zero
/// throttle time since the previous statistics emission.
fn throttle_json(w: &ThrottleWindow) -> Value {
    json!({
        "cnt": w.count,
        "sum": w.sum_ms,
        "min": w.min_ms,
        "max": w.max_ms,
        "avg": w.avg_ms(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_object_is_the_window_given() {
        let w = ThrottleWindow {
            count: 4,
            sum_ms: 100,
            min_ms: 10,
            max_ms: 40,
        };
        assert_eq!(
            throttle_json(&w),
            json!({"cnt": 4, "sum": 100, "min": 10, "max": 40, "avg": 25})
        );
        assert_eq!(
            throttle_json(&ThrottleWindow::default()),
            json!({"cnt": 0, "sum": 0, "min": 0, "max": 0, "avg": 0})
        );
    }
}
