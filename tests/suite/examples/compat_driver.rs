//! Compatibility-matrix driver for Odradek's Rust client (`tests/compat/run`).
//!
//! `compat_driver ACTION --bootstrap HOST:PORT [--topic T] [--codecs a,b] [--count N] ...`
//!
//! Speaks the driver protocol of `tests/compat/README.md` ("Drivers"): the last stdout line is
//! one JSON object `{"ok":..,"error":..,"detail":{..}}`; `member` prints event lines before it.
//! Built by `tests/compat/run` with `cargo build -p odradek-suite --example compat_driver`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::admin::NewTopic;
use odradek::producer::TopicPartition;
use odradek::records::Header;
use odradek::{Admin, Consumer, ErrorCode, Producer, ProducerRecord, RecordMetadata};
use serde_json::{json, Value};

const CODECS: &str = "none,gzip,snappy,lz4,zstd";

type Res<T> = std::result::Result<T, String>;

struct Ctx {
    args: HashMap<String, String>,
    /// `--security FILE`: client properties (librdkafka's names) added to every client.
    security: Vec<(String, String)>,
    deadline: Instant,
    step: Arc<Mutex<String>>,
}

/// Reads `--security FILE`: `key=value` lines with librdkafka's property names, which Odradek
/// takes as they are (README "Drivers"). The values (a password among them) are never printed.
fn read_security(path: &str) -> Res<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--security {path}: {e}"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("--security {path}: a line without '='"))?;
        out.push((k.trim().to_string(), v.to_string()));
    }
    Ok(out)
}

impl Ctx {
    fn arg(&self, k: &str, d: &str) -> String {
        self.args.get(k).cloned().unwrap_or_else(|| d.to_string())
    }
    fn num(&self, k: &str, d: usize) -> usize {
        self.args.get(k).and_then(|v| v.parse().ok()).unwrap_or(d)
    }
    fn bootstrap(&self) -> String {
        self.arg("bootstrap", "")
    }
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
    fn step(&self, s: impl Into<String>) {
        if let Ok(mut g) = self.step.lock() {
            *g = s.into();
        }
    }
    /// bootstrap.servers, the `--security` properties, then `extra`.
    fn conf(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut conf = vec![("bootstrap.servers".to_string(), self.bootstrap())];
        conf.extend(self.security.iter().cloned());
        conf.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        conf
    }
    fn producer(&self, extra: &[(&str, &str)]) -> Res<Producer> {
        let mut conf = vec![("linger.ms", "5")];
        conf.extend_from_slice(extra);
        Producer::from_map(self.conf(&conf)).map_err(|e| format!("producer config: {e}"))
    }
}

// ---- the shared data set (README "Data set") ----

fn rec_key(i: usize) -> Option<Bytes> {
    (i % 5 != 4).then(|| Bytes::from(format!("k{i}")))
}

fn rec_value(i: usize) -> Option<Bytes> {
    if i % 11 == 10 && i % 5 != 4 {
        return None;
    }
    let mut v: Vec<u8> = (0..i % 64).map(|j| ((i * 31 + j) % 256) as u8).collect();
    v.extend_from_slice(format!("#{i}").as_bytes());
    Some(Bytes::from(v))
}

fn rec_headers(i: usize) -> Vec<Header> {
    if i % 3 == 2 {
        return Vec::new();
    }
    vec![
        Header::new(Bytes::from_static(b"h"), Some(Bytes::from(format!("x{i}")))),
        Header::new(Bytes::from_static(b"h"), Some(Bytes::from_static(b"dup"))),
        Header::new(Bytes::from_static(b"empty"), Some(Bytes::new())),
    ]
}

fn show(b: &Option<Bytes>) -> String {
    b.as_ref().map_or("null".into(), |b| {
        b.iter().take(20).map(|x| format!("{x:02x}")).collect()
    })
}

fn compare(
    i: usize,
    key: &Option<Bytes>,
    value: &Option<Bytes>,
    headers: &[Header],
) -> Option<String> {
    let want_h = rec_headers(i);
    if *key == rec_key(i) && *value == rec_value(i) && headers == want_h.as_slice() {
        return None;
    }
    Some(format!(
        "record {i}: got key={} value={} headers={headers:?}, want key={} value={} headers={want_h:?}",
        show(key),
        show(value),
        show(&rec_key(i)),
        show(&rec_value(i))
    ))
}

fn record(
    topic: &str,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<Header>,
    partition: Option<i32>,
) -> ProducerRecord {
    ProducerRecord {
        topic: topic.to_string(),
        partition,
        key,
        value,
        headers,
        timestamp: None,
    }
}

/// Sends every record, then waits for all deliveries; the error names the first failure.
async fn send_all(
    ctx: &Ctx,
    p: &Producer,
    recs: Vec<ProducerRecord>,
    what: &str,
) -> Res<Vec<RecordMetadata>> {
    ctx.step(format!("{what}: sending"));
    let n = recs.len();
    let mut futs = Vec::with_capacity(n);
    for r in recs {
        futs.push(p.send(r).await.map_err(|e| format!("{what}: send: {e}"))?);
    }
    p.flush().await;
    ctx.step(format!("{what}: awaiting deliveries"));
    let mut out = Vec::with_capacity(n);
    let mut failed = 0;
    let mut first = None;
    for f in futs {
        match tokio::time::timeout(ctx.left(), f).await {
            Ok(Ok(md)) => out.push(md),
            Ok(Err(e)) => {
                failed += 1;
                first.get_or_insert_with(|| e.to_string());
            }
            Err(_) => return Err(format!("{what}: delivery not reported before the deadline")),
        }
    }
    if failed > 0 {
        return Err(format!(
            "{what}: {failed} of {n} deliveries failed, first: {}",
            first.unwrap_or_default()
        ));
    }
    Ok(out)
}

fn contiguous(md: &[RecordMetadata]) -> bool {
    md.iter()
        .enumerate()
        .all(|(i, m)| m.offset == md[0].offset + i as i64)
}

async fn read_partition(
    ctx: &Ctx,
    topic: &str,
    count: usize,
    isolation: &str,
) -> Res<Vec<odradek::ConsumerRecord>> {
    ctx.step(format!("reading {topic}-0 ({isolation})"));
    let c = Consumer::from_map(ctx.conf(&[
        ("auto.offset.reset", "earliest"),
        ("isolation.level", isolation),
    ]))
    .map_err(|e| format!("consumer config: {e}"))?;
    c.assign(&[TopicPartition {
        topic: topic.into(),
        partition: 0,
    }]);
    let mut out = Vec::new();
    while out.len() < count {
        if ctx.left().is_zero() {
            c.close().await;
            return Err(format!(
                "read {topic}-0: {} of {count} records before the deadline",
                out.len()
            ));
        }
        match c.poll(Duration::from_millis(200)).await {
            Ok(recs) => out.extend(recs),
            Err(e) => {
                c.close().await;
                return Err(format!("consume {topic}-0: {e}"));
            }
        }
    }
    c.close().await;
    out.truncate(count);
    Ok(out)
}

// ---- actions ----

async fn per_codec<F, Fut>(ctx: &Ctx, f: F) -> Value
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Res<()>>,
{
    let mut detail = serde_json::Map::new();
    let mut errors = Vec::new();
    for codec in ctx.arg("codecs", CODECS).split(',') {
        let r = f(codec.to_string()).await;
        let v = match r {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                errors.push(format!("{codec}: {e}"));
                e
            }
        };
        detail.insert(codec.to_string(), Value::String(v));
    }
    json!({"ok": errors.is_empty(), "error": if errors.is_empty() { Value::Null } else { Value::String(errors.join("; ")) }, "detail": detail})
}

async fn write(ctx: &Ctx) -> Res<Value> {
    let n = ctx.num("count", 100);
    let topic = ctx.arg("topic", "");
    Ok(per_codec(ctx, |codec| {
        let topic = format!("{topic}-{codec}");
        async move {
            let p = ctx.producer(&[("compression.type", codec.as_str())])?;
            let recs = (0..n)
                .map(|i| record(&topic, rec_key(i), rec_value(i), rec_headers(i), Some(0)))
                .collect();
            let md = send_all(ctx, &p, recs, &codec).await;
            p.close().await;
            if !contiguous(&md?) {
                return Err("offsets not contiguous".into());
            }
            Ok(())
        }
    })
    .await)
}

async fn verify(ctx: &Ctx) -> Res<Value> {
    let n = ctx.num("count", 100);
    let topic = ctx.arg("topic", "");
    Ok(per_codec(ctx, |codec| {
        let topic = format!("{topic}-{codec}");
        async move {
            let got = read_partition(ctx, &topic, n, "read_uncommitted").await?;
            for (i, r) in got.iter().enumerate() {
                if let Some(why) = compare(i, &r.key, &r.value, &r.headers) {
                    return Err(why);
                }
            }
            Ok(())
        }
    })
    .await)
}

async fn keyed(ctx: &Ctx) -> Res<Value> {
    // Odradek's default partitioner is murmur2 of the key (Java's); `murmur2` names it explicitly.
    let extra: &[(&str, &str)] = if ctx.arg("partitioner", "murmur2") == "murmur2" {
        &[("partitioner", "murmur2_random")]
    } else {
        &[]
    };
    let p = ctx.producer(extra)?;
    let topic = ctx.arg("topic", "");
    let recs = (0..ctx.num("count", 64))
        .map(|i| {
            record(
                &topic,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from_static(b"v")),
                vec![],
                None,
            )
        })
        .collect();
    let md = send_all(ctx, &p, recs, "keyed").await;
    p.close().await;
    let parts: Vec<i32> = md?.iter().map(|m| m.partition).collect();
    Ok(json!({"ok": true, "error": null, "detail": {"partitions": parts}}))
}

async fn fill(ctx: &Ctx) -> Res<Value> {
    let p = ctx.producer(&[])?;
    let topic = ctx.arg("topic", "");
    let parts = ctx.num("partitions", 4).max(1);
    let recs = (0..ctx.num("count", 100))
        .map(|i| {
            record(
                &topic,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("g{i}"))),
                vec![],
                Some((i % parts) as i32),
            )
        })
        .collect();
    let md = send_all(ctx, &p, recs, "fill").await;
    p.close().await;
    md?;
    Ok(json!({"ok": true, "error": null, "detail": {}}))
}

fn emit(v: &Value) {
    println!("{v}");
}

async fn member(ctx: &Ctx) -> Res<Value> {
    let group = ctx.arg("group", "");
    let settings: &[(&str, &str)] = if ctx.arg("protocol", "classic") == "consumer" {
        // KIP-848: the broker assigns and decides sessions and heartbeats.
        &[("group.protocol", "consumer")]
    } else {
        &[
            ("partition.assignment.strategy", "roundrobin"),
            ("heartbeat.interval.ms", "500"),
            ("session.timeout.ms", "10000"),
        ]
    };
    let mut conf = vec![
        ("group.id", group.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ];
    conf.extend_from_slice(settings);
    let c = Consumer::from_map(ctx.conf(&conf)).map_err(|e| format!("consumer config: {e}"))?;
    let topic = ctx.arg("topic", "");
    c.subscribe(&[topic.as_str()], None)
        .map_err(|e| format!("subscribe: {e}"))?;
    let stop = std::path::PathBuf::from(ctx.arg("stop", ""));
    let mut last: Option<Vec<i32>> = None;
    let result = loop {
        if stop.exists() {
            break Ok(());
        }
        if ctx.left().is_zero() {
            break Err("member: no stop signal before the deadline".to_string());
        }
        let polled = c.poll(Duration::from_millis(200)).await;
        let mut now: Vec<i32> = c.assignment().iter().map(|tp| tp.partition).collect();
        now.sort_unstable();
        if last.as_ref() != Some(&now) {
            emit(&json!({"event": "assignment", "partitions": now}));
            last = Some(now);
        }
        match polled {
            Ok(recs) => {
                for r in recs {
                    emit(&json!({"event": "record", "partition": r.partition, "offset": r.offset}));
                }
            }
            Err(e) => break Err(format!("poll: {e}")),
        }
    };
    c.close().await;
    result.map(|()| json!({"ok": true, "error": null, "detail": {}}))
}

async fn idempotence(ctx: &Ctx) -> Res<Value> {
    let n = ctx.num("count", 1000);
    let topic = ctx.arg("topic", "");
    let p = ctx.producer(&[("enable.idempotence", "true"), ("acks", "all")])?;
    let recs = (0..n)
        .map(|i| {
            record(
                &topic,
                None,
                Some(Bytes::from(format!("i{i}"))),
                vec![],
                Some(0),
            )
        })
        .collect();
    let md = send_all(ctx, &p, recs, "idempotent produce").await;
    p.close().await;
    if !contiguous(&md?) {
        return Err("delivery offsets not contiguous in send order".into());
    }
    let got = read_partition(ctx, &topic, n, "read_uncommitted").await?;
    for (i, r) in got.iter().enumerate() {
        let want = Some(Bytes::from(format!("i{i}")));
        if r.value != want {
            return Err(format!(
                "read back: record {i} is {}, want i{i}",
                show(&r.value)
            ));
        }
    }
    Ok(json!({"ok": true, "error": null, "detail": {}}))
}

async fn transactions(ctx: &Ctx) -> Res<Value> {
    let topic = ctx.arg("topic", "");
    let n = 10;
    let txn_id = format!("compat-{topic}");
    let p = ctx.producer(&[("transactional.id", txn_id.as_str())])?;
    let op_timeout = ctx
        .left()
        .saturating_sub(Duration::from_secs(5))
        .min(Duration::from_secs(30));
    let run = async {
        ctx.step("init_transactions");
        p.init_transactions(op_timeout)
            .await
            .map_err(|e| format!("init_transactions: {e}"))?;
        for (tag, commit) in [("c1", true), ("ab", false), ("c2", true)] {
            ctx.step(format!("begin_transaction ({tag})"));
            p.begin_transaction()
                .map_err(|e| format!("begin_transaction: {e}"))?;
            let mut futs = Vec::new();
            for i in 0..n {
                let r = record(
                    &topic,
                    None,
                    Some(Bytes::from(format!("{tag}-{i}"))),
                    vec![],
                    Some(0),
                );
                futs.push(p.send(r).await.map_err(|e| format!("send ({tag}): {e}"))?);
            }
            if commit {
                ctx.step(format!("commit_transaction ({tag})"));
                p.commit_transaction(op_timeout)
                    .await
                    .map_err(|e| format!("commit_transaction ({tag}): {e}"))?;
                for f in futs {
                    f.await.map_err(|e| format!("delivery ({tag}): {e}"))?;
                }
            } else {
                ctx.step(format!("abort_transaction ({tag})"));
                p.flush().await;
                p.abort_transaction(op_timeout)
                    .await
                    .map_err(|e| format!("abort_transaction: {e}"))?;
            }
        }
        Ok::<(), String>(())
    };
    let r = run.await;
    p.close().await;
    r?;
    let want: Vec<String> = (0..n)
        .map(|i| format!("c1-{i}"))
        .chain((0..n).map(|i| format!("c2-{i}")))
        .collect();
    let vals = |recs: Vec<odradek::ConsumerRecord>| -> Vec<String> {
        recs.iter()
            .map(|r| {
                r.value
                    .as_ref()
                    .map_or("null".into(), |v| String::from_utf8_lossy(v).into_owned())
            })
            .collect()
    };
    let got = vals(read_partition(ctx, &topic, 2 * n, "read_committed").await?);
    if got != want {
        return Err(format!(
            "read_committed read {got:?}, want c1-0..9 then c2-0..9"
        ));
    }
    let raw = vals(read_partition(ctx, &topic, 3 * n, "read_uncommitted").await?);
    let want_raw: Vec<String> = (0..n)
        .map(|i| format!("c1-{i}"))
        .chain((0..n).map(|i| format!("ab-{i}")))
        .chain((0..n).map(|i| format!("c2-{i}")))
        .collect();
    if raw != want_raw {
        return Err(format!(
            "read_uncommitted read {raw:?}, want c1, ab (aborted), c2"
        ));
    }
    Ok(json!({"ok": true, "error": null, "detail": {}}))
}

async fn wait_for<F, Fut>(ctx: &Ctx, what: &str, f: F) -> Res<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Res<bool>>,
{
    let mut last = String::new();
    loop {
        match f().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = e,
        }
        if ctx.left().is_zero() {
            return Err(format!("{what}: not within the deadline {last}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn admin(ctx: &Ctx) -> Res<Value> {
    let a = Admin::from_map(ctx.conf(&[])).map_err(|e| format!("admin config: {e}"))?;
    let topic = ctx.arg("topic", "");
    let new = NewTopic {
        name: topic.clone(),
        partitions: Some(3),
        replication_factor: Some(ctx.num("replication", 1).max(1) as i16),
        configs: vec![],
    };
    ctx.step("create_topics");
    let created = a
        .create_topics(std::slice::from_ref(&new), false)
        .await
        .map_err(|e| format!("create_topics: {e}"))?;
    if let Some((_, Err(e))) = created.first() {
        return Err(format!("create_topics: {e}"));
    }
    ctx.step("list_topics");
    let listed = || async {
        let l = a.list_topics().await.map_err(|e| e.to_string())?;
        Ok::<bool, String>(l.iter().any(|t| t.name == topic))
    };
    wait_for(ctx, "created topic listed", || async { listed().await }).await?;
    ctx.step("describe_topics");
    let d = a
        .describe_topics(&[topic.as_str()])
        .await
        .map_err(|e| format!("describe_topics: {e}"))?;
    match d.first() {
        Some((_, Ok(desc))) if desc.partitions.len() == 3 => {}
        Some((_, Ok(desc))) => {
            return Err(format!(
                "describe_topics: {} partitions, want 3",
                desc.partitions.len()
            ))
        }
        Some((_, Err(e))) => return Err(format!("describe_topics: {e}")),
        None => return Err("describe_topics: no result".into()),
    }
    ctx.step("create_topics again");
    let again = a
        .create_topics(std::slice::from_ref(&new), false)
        .await
        .map_err(|e| format!("create_topics: {e}"))?;
    match again.first() {
        Some((_, Err(e))) if e.kafka_code() == ErrorCode::TopicAlreadyExists => {}
        Some((_, Err(e))) => {
            return Err(format!(
                "second create_topics: {e} (want TOPIC_ALREADY_EXISTS)"
            ))
        }
        _ => return Err("second create_topics succeeded (want TOPIC_ALREADY_EXISTS)".into()),
    }
    ctx.step("delete_topics");
    let del = a
        .delete_topics(&[topic.as_str()])
        .await
        .map_err(|e| format!("delete_topics: {e}"))?;
    if let Some((_, Err(e))) = del.first() {
        return Err(format!("delete_topics: {e}"));
    }
    wait_for(ctx, "deleted topic gone from the listing", || async {
        listed().await.map(|b| !b)
    })
    .await?;
    a.close();
    Ok(json!({"ok": true, "error": null, "detail": {}}))
}

#[tokio::main]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let action = argv.first().cloned().unwrap_or_default();
    let mut args = HashMap::new();
    for kv in argv.get(1..).unwrap_or(&[]).chunks(2) {
        if let [k, v] = kv {
            args.insert(k.trim_start_matches("--").to_string(), v.clone());
        }
    }
    let timeout: f64 = args
        .get("timeout")
        .and_then(|t| t.parse().ok())
        .unwrap_or(60.0);
    let security = match args.get("security") {
        Some(path) => match read_security(path) {
            Ok(s) => s,
            Err(e) => {
                emit(&json!({"ok": false, "error": e, "detail": {}}));
                std::process::exit(0);
            }
        },
        None => Vec::new(),
    };
    let ctx = Ctx {
        args,
        security,
        deadline: Instant::now() + Duration::from_secs_f64(timeout),
        step: Arc::new(Mutex::new("start".into())),
    };
    let step = ctx.step.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs_f64(timeout + 5.0));
        let at = step.lock().map(|s| s.clone()).unwrap_or_default();
        emit(
            &json!({"ok": false, "error": format!("timeout (driver deadline {timeout:.0} s) during: {at}"), "detail": {}}),
        );
        std::process::exit(3);
    });
    let out = match action.as_str() {
        "write" => write(&ctx).await,
        "verify" => verify(&ctx).await,
        "keyed" => keyed(&ctx).await,
        "fill" => fill(&ctx).await,
        "member" => member(&ctx).await,
        "idempotence" => idempotence(&ctx).await,
        "transactions" => transactions(&ctx).await,
        "admin" => admin(&ctx).await,
        "info" => Ok(
            json!({"ok": true, "error": null, "detail": {"version": format!("odradek (Rust) {}", env!("CARGO_PKG_VERSION"))}}),
        ),
        other => Err(format!("unknown action {other}")),
    };
    emit(&out.unwrap_or_else(|e| json!({"ok": false, "error": e, "detail": {}})));
    std::process::exit(0);
}
