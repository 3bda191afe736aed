//! The `quotas` scenario of the compatibility matrix (`tests/compat/run`) for Odradek's Rust
//! client: the `quota_produce` and `quota_consume` actions of the driver protocol
//! (`tests/compat/README.md`, "Drivers"). The other actions are in the Rust client's main
//! driver, `tests/suite/examples/compat_driver.rs`; `run` sends these two here.
//!
//! `compat_quota_driver quota_produce --bootstrap HOST:PORT --topic T --client-id ID
//!     [--seconds 23] [--warmup 3] [--size 8192] [--timeout S]`
//! `compat_quota_driver quota_consume --bootstrap HOST:PORT --topic T --client-id ID
//!     --fetch-bytes F --count N [--seconds 23] [--warmup 3] [--timeout S]`
//!
//! The last stdout line is one JSON object `{"ok":..,"error":..,"detail":{..}}`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::producer::TopicPartition;
use odradek::{Consumer, Producer, ProducerRecord};
use serde_json::{json, Value};

type Res<T> = std::result::Result<T, String>;

struct Args(HashMap<String, String>);

impl Args {
    fn get(&self, k: &str) -> Res<String> {
        self.0
            .get(k)
            .cloned()
            .ok_or_else(|| format!("--{k} is required"))
    }
    fn num(&self, k: &str, d: f64) -> f64 {
        self.0.get(k).and_then(|v| v.parse().ok()).unwrap_or(d)
    }
}

/// Responses with a throttle time the client saw, over every broker.
fn throttled(cluster: &odradek::cluster::Cluster) -> u64 {
    cluster.broker_stats().iter().map(|b| b.throttled).sum()
}

/// Produces `--size`-byte values to partition 0 as fast as the client is let for `--seconds`;
/// counts the payload of the records acknowledged in `[warmup, seconds)`.
async fn quota_produce(a: &Args) -> Res<Value> {
    let size = a.num("size", 8192.0) as usize;
    let run = Duration::from_secs_f64(a.num("seconds", 23.0));
    let warmup = Duration::from_secs_f64(a.num("warmup", 3.0));
    let topic = a.get("topic")?;
    let client_id = a.get("client-id")?;
    let p = Arc::new(
        Producer::from_map([
            ("bootstrap.servers", a.get("bootstrap")?.as_str()),
            ("client.id", client_id.as_str()),
            ("batch.size", "32768"),
            ("linger.ms", "0"),
            ("buffer.memory", "1048576"),
        ])
        .map_err(|e| format!("producer config: {e}"))?,
    );
    let value = Bytes::from(vec![b'q'; size]);
    let started = Instant::now();
    let acked = Arc::new(AtomicU64::new(0));
    let records = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(std::sync::Mutex::new(None::<String>));
    let mut pending = tokio::task::JoinSet::new();
    while started.elapsed() < run {
        let record = ProducerRecord {
            topic: topic.clone(),
            partition: Some(0),
            key: None,
            value: Some(value.clone()),
            headers: vec![],
            timestamp: None,
        };
        let f = match tokio::time::timeout(run.saturating_sub(started.elapsed()), p.send(record))
            .await
        {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => return Err(format!("send: {e}")),
            Err(_) => break, // still waiting for buffer room at the end of the run
        };
        let (acked, records, failed) = (acked.clone(), records.clone(), failed.clone());
        pending.spawn(async move {
            match f.await {
                Ok(_) => {
                    let at = started.elapsed();
                    if at >= warmup && at < run {
                        acked.fetch_add(size as u64, Ordering::Relaxed);
                        records.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) => {
                    if let Ok(mut g) = failed.lock() {
                        g.get_or_insert_with(|| e.to_string());
                    }
                }
            }
        });
        while pending.len() > 512 {
            pending.join_next().await;
        }
        while pending.try_join_next().is_some() {}
    }
    if let Some(e) = failed.lock().ok().and_then(|g| g.clone()) {
        return Err(format!("a delivery failed: {e}"));
    }
    let throttles = throttled(p.cluster());
    Ok(json!({"ok": true, "error": null, "detail": {
        "bytes": acked.load(Ordering::Relaxed),
        "records": records.load(Ordering::Relaxed),
        "window": (run - warmup).as_secs_f64(),
        "throttled": throttles > 0,
        "throttle_report": format!("broker_stats(): {throttles} throttled responses"),
    }}))
}

/// Reads partition 0 from offset 0 with per-partition and per-response fetch limits of
/// `--fetch-bytes`; from the first record on, counts the value bytes received in
/// `[warmup, seconds)`.
async fn quota_consume(a: &Args) -> Res<Value> {
    let run = Duration::from_secs_f64(a.num("seconds", 23.0));
    let warmup = Duration::from_secs_f64(a.num("warmup", 3.0));
    let count = a.num("count", f64::MAX) as u64;
    let topic = a.get("topic")?;
    let client_id = a.get("client-id")?;
    let fetch = a.get("fetch-bytes")?;
    let c = Consumer::from_map([
        ("bootstrap.servers", a.get("bootstrap")?.as_str()),
        ("client.id", client_id.as_str()),
        ("auto.offset.reset", "earliest"),
        ("max.partition.fetch.bytes", fetch.as_str()),
        ("fetch.max.bytes", fetch.as_str()),
    ])
    .map_err(|e| format!("consumer config: {e}"))?;
    c.assign(&[TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    }]);
    let deadline = Instant::now() + Duration::from_secs_f64(a.num("timeout", 60.0) - 2.0);
    let mut first: Option<Instant> = None;
    let (mut bytes, mut records, mut total) = (0u64, 0u64, 0u64);
    let mut exhausted = false;
    loop {
        if first.is_some_and(|t| t.elapsed() >= run) {
            break;
        }
        if Instant::now() >= deadline {
            c.close().await;
            return Err(format!("{total} records read before the deadline"));
        }
        let recs = match c.poll(Duration::from_millis(50)).await {
            Ok(r) => r,
            Err(e) => {
                c.close().await;
                return Err(format!("poll: {e}"));
            }
        };
        for r in recs {
            let t0 = *first.get_or_insert_with(Instant::now);
            let at = t0.elapsed();
            total += 1;
            if at >= warmup && at < run {
                bytes += r.value.as_ref().map_or(0, |v| v.len() as u64);
                records += 1;
            }
        }
        if total >= count && first.is_some_and(|t| t.elapsed() < run) {
            exhausted = true;
            break;
        }
    }
    let throttles = throttled(c.cluster());
    c.close().await;
    Ok(json!({"ok": true, "error": null, "detail": {
        "bytes": bytes,
        "records": records,
        "window": (run - warmup).as_secs_f64(),
        "exhausted": exhausted,
        "throttled": throttles > 0,
        "throttle_report": format!("broker_stats(): {throttles} throttled responses"),
    }}))
}

#[tokio::main]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let action = argv.first().cloned().unwrap_or_default();
    let mut map = HashMap::new();
    for kv in argv.get(1..).unwrap_or(&[]).chunks(2) {
        if let [k, v] = kv {
            map.insert(k.trim_start_matches("--").to_string(), v.clone());
        }
    }
    let a = Args(map);
    let timeout = a.num("timeout", 60.0);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs_f64(timeout + 5.0));
        println!(
            "{}",
            json!({"ok": false, "error": format!("timeout (driver deadline {timeout:.0} s) during: {action}"), "detail": {}})
        );
        std::process::exit(3);
    });
    let out = match argv.first().map(String::as_str) {
        Some("quota_produce") => quota_produce(&a).await,
        Some("quota_consume") => quota_consume(&a).await,
        Some("info") => Ok(json!({"ok": true, "error": null, "detail": {
            "version": format!("odradek (Rust) {}", env!("CARGO_PKG_VERSION"))}})),
        other => Err(format!("unknown action {other:?}")),
    };
    println!(
        "{}",
        out.unwrap_or_else(|e| json!({"ok": false, "error": e, "detail": {}}))
    );
    // Records still buffered at the end of a produce run are not waited for.
    std::process::exit(0);
}
