//! Statistics snapshots as JSON in librdkafka's schema (STATISTICS.md), for
//! `statistics.interval.ms` + `stats_cb` / the `stats` event.
//!
//! Every field librdkafka documents is present with its meaning and unit, so exporters and
//! dashboards written for librdkafka keep working. A few fields count internals Odradek does not
//! have; they are reported as 0 and listed in `docs/statistics.md` (`zbuf_grow`, `buf_grow`,
//! `wakeups`, `outbuf_*`, `rx_ver_drops`, ...). Each snapshot starts new window statistics
//! (rtt, throttle, batch sizes, queue latency), so build them only for the statistics emission.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use odradek::cluster::BrokerSnapshot;
use odradek::consumer::{ConsumerDetail, PartitionDetail};
use odradek::net::WindowSnapshot;
use odradek::producer::{ProducerDetail, TransactionState};
use odradek::TopicPartition;
use serde_json::{json, Map, Value};

/// What the shell adds to the core's snapshot.
#[derive(Debug, Clone)]
pub struct Emitter {
    /// `odradek#producer-1`, `odradek#consumer-2`, ...
    name: String,
    started: Instant,
}

impl Emitter {
    /// A new instance name of `kind` (`producer` or `consumer`), numbered per process per kind
    /// as librdkafka numbers its handles.
    pub fn new(kind: &str) -> Self {
        static PRODUCERS: AtomicU64 = AtomicU64::new(0);
        static CONSUMERS: AtomicU64 = AtomicU64::new(0);
        let counter = if kind == "producer" {
            &PRODUCERS
        } else {
            &CONSUMERS
        };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        Emitter {
            name: format!("odradek#{kind}-{n}"),
            started: Instant::now(),
        }
    }

    fn top(&self, kind: &str, client_id: &str, replyq: usize) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("client_id".into(), json!(client_id));
        m.insert("type".into(), json!(kind));
        m.insert("ts".into(), json!(monotonic_us()));
        m.insert("time".into(), json!(wall_seconds()));
        m.insert(
            "age".into(),
            json!(self.started.elapsed().as_micros() as u64),
        );
        m.insert("replyq".into(), json!(replyq));
        m
    }
}

/// Microseconds on a process-wide monotonic clock (librdkafka's `ts`).
fn monotonic_us() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u64
}

fn wall_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a producer shell knows beyond the core.
#[derive(Debug, Clone, Copy)]
pub struct ProducerShell {
    /// Events waiting for the application's `poll` (delivery reports, errors, statistics).
    pub replyq: usize,
    /// `queue.buffering.max.messages`.
    pub msg_max: usize,
}

/// A producer snapshot in librdkafka's schema.
pub fn producer_json(emitter: &Emitter, core: &odradek::Producer, shell: ProducerShell) -> String {
    let d = core.detailed_stats();
    let client_id = core.cluster().config().client_id.clone();
    producer_value(emitter, &client_id, &d, shell).to_string()
}

fn producer_value(
    emitter: &Emitter,
    client_id: &str,
    d: &ProducerDetail,
    shell: ProducerShell,
) -> Value {
    let mut top = emitter.top("producer", client_id, shell.replyq);
    let acked_records: u64 = d.basic.partitions.iter().map(|p| p.acked_records).sum();
    let acked_bytes: u64 = d.basic.partitions.iter().map(|p| p.acked_bytes).sum();
    let latency: HashMap<i32, WindowSnapshot> = d.queue_latency.iter().copied().collect();
    let mut toppars_by_leader: HashMap<i32, Vec<TopicPartition>> = HashMap::new();
    let mut topics: Map<String, Value> = Map::new();
    for t in &d.topics {
        topics.insert(
            t.topic.to_string(),
            topic_value(
                &t.topic,
                d.metadata_age_ms,
                window(&t.batch_bytes),
                window(&t.batch_records),
            ),
        );
    }
    for p in &d.basic.partitions {
        let tp = &p.partition;
        let leader = p.leader;
        toppars_by_leader
            .entry(leader)
            .or_default()
            .push(tp.clone());
        let entry = topics
            .entry(tp.topic.to_string())
            .or_insert_with(|| empty_topic(&tp.topic, d.metadata_age_ms));
        let partition = json!({
            "partition": tp.partition,
            "broker": leader,
            "leader": leader,
            "desired": false,
            "unknown": leader < 0,
            "msgq_cnt": p.queued_records,
            "msgq_bytes": p.queued_bytes,
            "xmit_msgq_cnt": 0,
            "xmit_msgq_bytes": 0,
            "fetchq_cnt": 0,
            "fetchq_size": 0,
            "fetch_state": "none",
            "query_offset": -1001,
            "next_offset": 0,
            "app_offset": -1001,
            "stored_offset": -1001,
            "stored_leader_epoch": -1,
            "commited_offset": -1001,
            "committed_offset": -1001,
            "committed_leader_epoch": -1,
            "eof_offset": -1001,
            "lo_offset": -1,
            "hi_offset": -1,
            "ls_offset": -1,
            "consumer_lag": -1,
            "consumer_lag_stored": -1,
            "leader_epoch": -1,
            "txmsgs": p.acked_records,
            "txbytes": p.acked_bytes,
            "rxmsgs": 0,
            "rxbytes": 0,
            "msgs": p.acked_records + p.queued_records as u64,
            "rx_ver_drops": 0,
            "msgs_inflight": p.in_flight_records,
            "next_ack_seq": 0,
            "next_err_seq": 0,
            "acked_msgid": 0,
        });
        insert_partition(entry, tp.partition, partition);
    }
    let brokers = brokers_value(&d.brokers, &latency, &toppars_by_leader);
    top.insert("msg_cnt".into(), json!(d.basic.pending_records));
    top.insert("msg_size".into(), json!(d.buffered_bytes));
    top.insert("msg_max".into(), json!(shell.msg_max));
    top.insert("msg_size_max".into(), json!(d.buffer_memory));
    traffic_totals(&mut top, &d.brokers);
    top.insert("txmsgs".into(), json!(acked_records));
    top.insert("txmsg_bytes".into(), json!(acked_bytes));
    top.insert("rxmsgs".into(), json!(0));
    top.insert("rxmsg_bytes".into(), json!(0));
    top.insert("simple_cnt".into(), json!(0));
    top.insert("metadata_cache_cnt".into(), json!(d.metadata_topics));
    top.insert("brokers".into(), brokers);
    top.insert("topics".into(), Value::Object(topics));
    top.insert("eos".into(), eos_value(d));
    Value::Object(top)
}

fn eos_value(d: &ProducerDetail) -> Value {
    let (idemp_state, pid, epoch) = match d.producer_id {
        Some((pid, epoch)) => ("Assigned", pid, i64::from(epoch)),
        None => ("Init", -1, -1),
    };
    let age_ms = d
        .producer_id_since
        .map_or(0, |t| t.elapsed().as_millis() as u64);
    let txn_state = d.transaction_state.map_or("Init", txn_state_name);
    json!({
        "idemp_state": idemp_state,
        "idemp_stateage": age_ms,
        "txn_state": txn_state,
        "txn_stateage": 0,
        "txn_may_enq": d.transaction_state == Some(TransactionState::InTransaction),
        "producer_id": pid,
        "producer_epoch": epoch,
        "epoch_cnt": d.producer_id_assignments,
    })
}

/// librdkafka's name of a transaction state.
fn txn_state_name(s: TransactionState) -> &'static str {
    match s {
        TransactionState::Uninitialized => "Init",
        TransactionState::Initializing => "WaitPID",
        TransactionState::Ready => "Ready",
        TransactionState::InTransaction => "InTransaction",
        TransactionState::Committing => "CommittingTransaction",
        TransactionState::Aborting => "AbortingTransaction",
        TransactionState::AbortableError => "AbortableError",
        TransactionState::FatalError => "FatalError",
    }
}

/// What a consumer shell knows beyond the core.
pub struct ConsumerShell<'a> {
    /// Records and events waiting for the application's `poll`.
    pub replyq: usize,
    /// The offset stored for a partition (`store_offsets` / `enable.auto.offset.store`).
    pub stored: &'a dyn Fn(&TopicPartition) -> Option<i64>,
}

/// A consumer snapshot in librdkafka's schema.
pub fn consumer_json(emitter: &Emitter, core: &odradek::Consumer, shell: ConsumerShell) -> String {
    let d = core.detailed_stats();
    let client_id = core.cluster().config().client_id.clone();
    consumer_value(emitter, &client_id, &d, &shell).to_string()
}

fn consumer_value(
    emitter: &Emitter,
    client_id: &str,
    d: &ConsumerDetail,
    shell: &ConsumerShell,
) -> Value {
    let mut top = emitter.top("consumer", client_id, shell.replyq);
    let mut topics: Map<String, Value> = Map::new();
    let mut toppars_by_leader: HashMap<i32, Vec<TopicPartition>> = HashMap::new();
    let (mut rx_records, mut rx_bytes) = (0u64, 0u64);
    for p in &d.partitions {
        let tp = &p.partition;
        rx_records += p.rx_records;
        rx_bytes += p.rx_bytes;
        toppars_by_leader
            .entry(p.leader)
            .or_default()
            .push(tp.clone());
        let entry = topics
            .entry(tp.topic.to_string())
            .or_insert_with(|| empty_topic(&tp.topic, d.metadata_age_ms));
        insert_partition(
            entry,
            tp.partition,
            consumer_partition(p, (shell.stored)(tp), d.read_committed),
        );
    }
    let brokers = brokers_value(&d.brokers, &HashMap::new(), &toppars_by_leader);
    top.insert("msg_cnt".into(), json!(0));
    top.insert("msg_size".into(), json!(0));
    top.insert("msg_max".into(), json!(0));
    top.insert("msg_size_max".into(), json!(0));
    traffic_totals(&mut top, &d.brokers);
    top.insert("txmsgs".into(), json!(0));
    top.insert("txmsg_bytes".into(), json!(0));
    top.insert("rxmsgs".into(), json!(rx_records));
    top.insert("rxmsg_bytes".into(), json!(rx_bytes));
    top.insert("simple_cnt".into(), json!(0));
    top.insert("metadata_cache_cnt".into(), json!(d.metadata_topics));
    top.insert("brokers".into(), brokers);
    top.insert("topics".into(), Value::Object(topics));
    if let Some(g) = &d.group {
        let ms = |t: Option<Instant>| t.map_or(0, |t| t.elapsed().as_millis() as u64);
        let joined = g.member_since.is_some();
        top.insert(
            "cgrp".into(),
            json!({
                "state": if joined { "up" } else { "init" },
                "stateage": ms(g.member_since),
                "join_state": if joined { "steady" } else { "init" },
                "rebalance_age": ms(g.last),
                "rebalance_cnt": g.count,
                "rebalance_reason": g.reason,
                "assignment_size": d.partitions.len(),
            }),
        );
    }
    Value::Object(top)
}

fn consumer_partition(p: &PartitionDetail, stored: Option<i64>, read_committed: bool) -> Value {
    let stored = stored.unwrap_or(-1001);
    json!({
        "partition": p.partition.partition,
        "broker": p.leader,
        "leader": p.leader,
        "desired": true,
        "unknown": p.leader < 0,
        "msgq_cnt": 0,
        "msgq_bytes": 0,
        "xmit_msgq_cnt": 0,
        "xmit_msgq_bytes": 0,
        "fetchq_cnt": p.buffered_chunks,
        "fetchq_size": p.buffered_bytes,
        "fetch_state": if p.paused { "stopped" } else { p.fetch_state },
        "query_offset": -1001,
        "next_offset": p.next_offset,
        "app_offset": p.app_offset,
        "stored_offset": stored,
        "stored_leader_epoch": -1,
        "commited_offset": p.committed_offset,
        "committed_offset": p.committed_offset,
        "committed_leader_epoch": -1,
        "eof_offset": -1001,
        "lo_offset": p.lo_offset,
        "hi_offset": p.hi_offset,
        "ls_offset": p.ls_offset,
        "consumer_lag": p.lag_from(p.committed_offset, read_committed),
        "consumer_lag_stored": p.lag_from(stored, read_committed),
        "leader_epoch": p.leader_epoch,
        "txmsgs": 0,
        "txbytes": 0,
        "rxmsgs": p.rx_records,
        "rxbytes": p.rx_bytes,
        "msgs": p.rx_records,
        "rx_ver_drops": 0,
        "msgs_inflight": 0,
        "next_ack_seq": 0,
        "next_err_seq": 0,
        "acked_msgid": 0,
    })
}

fn topic_value(topic: &str, metadata_age_ms: u64, batchsize: Value, batchcnt: Value) -> Value {
    json!({
        "topic": topic,
        "age": 0,
        "metadata_age": metadata_age_ms,
        "batchsize": batchsize,
        "batchcnt": batchcnt,
        "partitions": {},
    })
}

/// A topic entry without batch windows (a consumer's, or no batch sent since the last one).
fn empty_topic(topic: &str, metadata_age_ms: u64) -> Value {
    let none = window(&WindowSnapshot::default());
    topic_value(topic, metadata_age_ms, none.clone(), none)
}

fn insert_partition(topic: &mut Value, partition: i32, value: Value) {
    if let Some(parts) = topic.get_mut("partitions").and_then(Value::as_object_mut) {
        parts.insert(partition.to_string(), value);
    }
}

/// The top-level request and byte totals, summed over the brokers.
fn traffic_totals(top: &mut Map<String, Value>, brokers: &[BrokerSnapshot]) {
    let sum = |f: fn(&BrokerSnapshot) -> u64| brokers.iter().map(f).sum::<u64>();
    top.insert("tx".into(), json!(sum(|b| b.tx)));
    top.insert("tx_bytes".into(), json!(sum(|b| b.txbytes)));
    top.insert("rx".into(), json!(sum(|b| b.rx)));
    top.insert("rx_bytes".into(), json!(sum(|b| b.rxbytes)));
}

fn brokers_value(
    brokers: &[BrokerSnapshot],
    queue_latency: &HashMap<i32, WindowSnapshot>,
    toppars_by_leader: &HashMap<i32, Vec<TopicPartition>>,
) -> Value {
    let mut out = Map::new();
    for b in brokers {
        let plain = b.source == "learned";
        let toppars: Map<String, Value> = if plain {
            toppars_by_leader
                .get(&b.node_id)
                .map(|tps| {
                    tps.iter()
                        .map(|tp| {
                            (
                                format!("{}-{}", tp.topic, tp.partition),
                                json!({"topic": &*tp.topic, "partition": tp.partition}),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Map::new()
        };
        let int_latency = if plain {
            queue_latency.get(&b.node_id).copied().unwrap_or_default()
        } else {
            WindowSnapshot::default()
        };
        let req: Map<String, Value> = b
            .requests_by_api
            .iter()
            .map(|(name, n)| ((*name).to_string(), json!(n)))
            .collect();
        out.insert(
            b.name.clone(),
            json!({
                "name": b.name,
                "nodeid": b.node_id,
                "nodename": b.nodename,
                "source": b.source,
                "state": b.state,
                "stateage": b.state_age_us,
                "outbuf_cnt": 0,
                "outbuf_msg_cnt": 0,
                "waitresp_cnt": b.waitresp_cnt,
                "waitresp_msg_cnt": 0,
                "tx": b.tx,
                "txbytes": b.txbytes,
                "txerrs": 0,
                "txretries": 0,
                "txidle": -1,
                "req_timeouts": b.req_timeouts,
                "rx": b.rx,
                "rxbytes": b.rxbytes,
                "rxerrs": 0,
                "rxcorriderrs": 0,
                "rxpartial": 0,
                "rxidle": -1,
                "zbuf_grow": 0,
                "buf_grow": 0,
                "wakeups": 0,
                "connects": b.connects,
                "disconnects": b.disconnects,
                "int_latency": window(&int_latency),
                "outbuf_latency": window(&WindowSnapshot::default()),
                "rtt": window(&b.rtt),
                "throttle": window(&b.throttle),
                "req": req,
                "toppars": toppars,
            }),
        );
    }
    Value::Object(out)
}

/// librdkafka's window-stats object.
fn window(w: &WindowSnapshot) -> Value {
    json!({
        "min": w.min,
        "max": w.max,
        "avg": w.avg,
        "sum": w.sum,
        "cnt": w.cnt,
        "stddev": w.stddev,
        "hdrsize": w.hdrsize,
        "p50": w.p50,
        "p75": w.p75,
        "p90": w.p90,
        "p95": w.p95,
        "p99": w.p99,
        "p99_99": w.p99_99,
        "outofrange": w.outofrange,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_object_has_librdkafkas_fields() {
        let w = WindowSnapshot {
            min: 1,
            max: 9,
            avg: 5,
            sum: 10,
            cnt: 2,
            ..WindowSnapshot::default()
        };
        let v = window(&w);
        for key in [
            "min",
            "max",
            "avg",
            "sum",
            "cnt",
            "stddev",
            "hdrsize",
            "p50",
            "p75",
            "p90",
            "p95",
            "p99",
            "p99_99",
            "outofrange",
        ] {
            assert!(v.get(key).is_some(), "{key} missing");
        }
        assert_eq!(v["max"], 9);
    }

    #[test]
    fn instance_names_count_per_kind() {
        let a = Emitter::new("producer");
        let b = Emitter::new("producer");
        assert_ne!(a.name, b.name);
        assert!(a.name.starts_with("odradek#producer-"), "{}", a.name);
    }

    #[test]
    fn transaction_states_use_librdkafkas_names() {
        assert_eq!(
            txn_state_name(TransactionState::InTransaction),
            "InTransaction"
        );
        assert_eq!(txn_state_name(TransactionState::Uninitialized), "Init");
    }
}
