//! Rebalance time: odradek's consumer vs librdkafka's (rdkafka crate), same broker, same run.
//!
//! For each repeat, `--members` consumers of a fresh group subscribe to one topic and settle;
//! then one member closes gracefully and the clock runs until the remaining members' assignments
//! again cover every partition (the new assignment is in effect). Eager (`range`) and cooperative
//! (`cooperative-sticky`) classic protocols, both clients with the same session and heartbeat
//! settings, and KIP-848's consumer protocol (strategy `consumer`: `group.protocol=consumer`,
//! the broker decides heartbeats and assigns; run the broker with
//! `group.consumer.heartbeat.interval.ms=500` to compare like with like).
//!
//! Prints one JSON line per measurement:
//! `{"client":..,"strategy":..,"repeat":..,"settle_ms":..,"rebalance_ms":..}`.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};

/// Settings both clients get: Kafka's defaults would make the heartbeat interval (3 s) the
/// whole measurement.
const COMMON: &[(&str, &str)] = &[
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "500"),
    ("auto.offset.reset", "earliest"),
];

/// The group settings of `strategy`: a classic assignor with [`COMMON`], or (`consumer`) KIP-848's
/// protocol, which takes neither an assignor nor session / heartbeat settings.
fn group_settings(strategy: &str) -> Vec<(&'static str, String)> {
    if strategy == "consumer" {
        return vec![
            ("group.protocol", "consumer".into()),
            ("auto.offset.reset", "earliest".into()),
        ];
    }
    let mut out: Vec<(&'static str, String)> =
        COMMON.iter().map(|(k, v)| (*k, v.to_string())).collect();
    out.push(("partition.assignment.strategy", strategy.into()));
    out
}

/// Assignment of every member, updated by the member's own poll loop.
type Assignments = Arc<Mutex<HashMap<usize, BTreeSet<i32>>>>;

struct Member {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

fn odradek_member(
    id: usize,
    bootstrap: &str,
    group: &str,
    topic: &str,
    strategy: &str,
    seen: Assignments,
) -> Member {
    let stop = Arc::new(AtomicBool::new(false));
    let mut conf: Vec<(String, String)> = group_settings(strategy)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    conf.push(("bootstrap.servers".into(), bootstrap.into()));
    conf.push(("group.id".into(), group.into()));
    let (topic, stop2) = (topic.to_string(), stop.clone());
    let thread = std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return eprintln!("runtime: {e}"),
        };
        rt.block_on(async move {
            let consumer =
                match odradek::ClientConfig::from_map(conf).and_then(odradek::Consumer::new) {
                    Ok(c) => c,
                    Err(e) => return eprintln!("odradek consumer: {e}"),
                };
            if let Err(e) = consumer.subscribe(&[&topic], None) {
                return eprintln!("subscribe: {e}");
            }
            while !stop2.load(Ordering::Acquire) {
                let _ = consumer.poll(Duration::from_millis(10)).await;
                let parts = consumer
                    .assignment()
                    .iter()
                    .map(|tp| tp.partition)
                    .collect();
                if let Ok(mut s) = seen.lock() {
                    s.insert(id, parts);
                }
            }
            consumer.close().await;
        });
    });
    Member { stop, thread }
}

fn rdkafka_member(
    id: usize,
    bootstrap: &str,
    group: &str,
    topic: &str,
    strategy: &str,
    seen: Assignments,
) -> Member {
    let stop = Arc::new(AtomicBool::new(false));
    let mut conf = rdkafka::ClientConfig::new();
    for (k, v) in group_settings(strategy) {
        conf.set(k, v);
    }
    conf.set("bootstrap.servers", bootstrap).set("group.id", group);
    let (topic, stop2) = (topic.to_string(), stop.clone());
    let thread = std::thread::spawn(move || {
        let consumer: BaseConsumer = match conf.create() {
            Ok(c) => c,
            Err(e) => return eprintln!("rdkafka consumer: {e}"),
        };
        if let Err(e) = consumer.subscribe(&[&topic]) {
            return eprintln!("subscribe: {e}");
        }
        while !stop2.load(Ordering::Acquire) {
            let _ = consumer.poll(Duration::from_millis(10));
            let parts = consumer
                .assignment()
                .map(|l| l.elements().iter().map(|e| e.partition()).collect())
                .unwrap_or_default();
            if let Ok(mut s) = seen.lock() {
                s.insert(id, parts);
            }
        }
        // Dropping closes the consumer: it revokes and leaves the group.
        drop(consumer);
    });
    Member { stop, thread }
}

/// Waits until the members in `ids` together own every partition, each exactly once, and each
/// member owns at least one.
fn wait_covered(seen: &Assignments, ids: &[usize], partitions: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let all: BTreeSet<i32> = (0..partitions).collect();
    while Instant::now() < deadline {
        if let Ok(s) = seen.lock() {
            let mut union = BTreeSet::new();
            let mut total = 0;
            let mut each = true;
            for id in ids {
                let parts = s.get(id).cloned().unwrap_or_default();
                each &= !parts.is_empty();
                total += parts.len();
                union.extend(parts);
            }
            if each && union == all && total == all.len() {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn main() {
    if std::env::var_os("ODRADEK_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("ODRADEK_LOG"))
            .with_writer(std::io::stderr)
            .try_init();
    }
    let args: Vec<String> = std::env::args().collect();
    let bootstrap = arg(&args, "--bootstrap", "127.0.0.1:9092");
    let topic = arg(&args, "--topic", "rebalance-bench");
    let members: usize = arg(&args, "--members", "3").parse().unwrap_or(3);
    let partitions: i32 = arg(&args, "--partitions", "12").parse().unwrap_or(12);
    let repeats: usize = arg(&args, "--repeats", "5").parse().unwrap_or(5);
    let clients = arg(&args, "--clients", "odradek,rdkafka");
    let strategies = arg(&args, "--strategies", "range,cooperative-sticky");
    let run_id = std::process::id();
    for repeat in 0..repeats {
        for strategy in strategies.split(',') {
            // Interleaved: each repeat measures every client once, alternating who goes first.
            let mut order: Vec<&str> = clients.split(',').collect();
            if repeat % 2 == 1 {
                order.reverse();
            }
            for client in order {
                let group = format!("rb-{run_id}-{repeat}-{strategy}-{client}");
                let seen: Assignments = Arc::default();
                let mut all: Vec<Member> = (0..members)
                    .map(|id| {
                        let make = if client == "odradek" {
                            odradek_member
                        } else {
                            rdkafka_member
                        };
                        make(id, &bootstrap, &group, &topic, strategy, seen.clone())
                    })
                    .collect();
                let ids: Vec<usize> = (0..members).collect();
                let started = Instant::now();
                let settled = wait_covered(&seen, &ids, partitions, Duration::from_secs(60));
                let settle_ms = started.elapsed().as_secs_f64() * 1e3;
                let leaver = all.remove(0);
                let t0 = Instant::now();
                leaver.stop.store(true, Ordering::Release);
                let rest: Vec<usize> = (1..members).collect();
                let covered = wait_covered(&seen, &rest, partitions, Duration::from_secs(60));
                let rebalance_ms = t0.elapsed().as_secs_f64() * 1e3;
                let _ = leaver.thread.join();
                for m in &all {
                    m.stop.store(true, Ordering::Release);
                }
                for m in all {
                    let _ = m.thread.join();
                }
                println!(
                    "{{\"client\":\"{client}\",\"strategy\":\"{strategy}\",\"repeat\":{repeat},\
                     \"settled\":{settled},\"settle_ms\":{settle_ms:.1},\"covered\":{covered},\
                     \"rebalance_ms\":{rebalance_ms:.1}}}"
                );
            }
        }
    }
}
