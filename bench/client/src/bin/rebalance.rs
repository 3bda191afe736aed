//! Rebalance time: odradek's consumer next to librdkafka's (rdkafka crate) and, with
//! `--java-member`, the Java client's, in the same group shapes on the same broker in one run.
//!
//! Each measurement is a fresh group of `--members` consumers on one topic that a producer in
//! this process keeps writing to (one small record to every partition every 5 ms). Once the
//! group has settled, two events are timed, each after a wait that puts it at a different phase
//! of the heartbeats in each repeat (the same waits for every client):
//! - **leave**: member 0 closes gracefully; the clock starts as it is told to close;
//! - **join**: a new member starts; the clock starts as it subscribes.
//!
//! For each event two times are reported: `owned_ms`, until the members' assignments again
//! cover every partition exactly once, balanced (owned counts differ by at most one); and
//! `fetching_ms`, until, in addition, every partition has delivered a record to its current
//! owner since that owner got it and since the event (every partition owned *and fetching
//! again*). Strategies: eager (`range`) and cooperative (`cooperative-sticky`) classic
//! protocols, every client with session 10 s and heartbeat 500 ms; and KIP-848's consumer
//! protocol (`consumer`: `group.protocol=consumer`; the broker assigns and sets the heartbeat
//! interval: run it with `group.consumer.heartbeat.interval.ms=500` to compare like with like).
//!
//! Prints one JSON line per event:
//! `{"client":..,"strategy":..,"event":..,"repeat":..,"covered":..,"owned_ms":..,"fetching_ms":..}`.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::Message as _;

/// Settings every client's classic members get: Kafka's defaults would make the heartbeat
/// interval (3 s) the whole measurement.
const CLASSIC: &[(&str, &str)] = &[
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "500"),
];

/// Apache Kafka's `group.consumer.assignment.interval.ms` default (4.3+): the least time
/// between two target assignments of a consumer-protocol group.
const ASSIGNMENT_INTERVAL: Duration = Duration::from_millis(1200);

/// How often the background producer writes one record to every partition.
const PRODUCE_EVERY: Duration = Duration::from_millis(5);

/// The librdkafka-property group settings of `strategy`: a classic assignor with [`CLASSIC`],
/// or (`consumer`) KIP-848's protocol, which takes neither an assignor nor session / heartbeat
/// settings. Members start at the end of the log (`latest`): the producer never stops, and a
/// fresh group should not read the backlog of earlier measurements.
fn group_settings(strategy: &str) -> Vec<(&'static str, String)> {
    let mut out = vec![("auto.offset.reset", "latest".to_string())];
    if strategy == "consumer" {
        out.push(("group.protocol", "consumer".into()));
    } else {
        out.extend(CLASSIC.iter().map(|(k, v)| (*k, v.to_string())));
        out.push(("partition.assignment.strategy", strategy.into()));
    }
    out
}

/// What the members report, each from its own poll loop (or, for Java, its output reader).
#[derive(Default)]
struct Observed {
    /// Each member's current assignment, and when it got each partition.
    owned: HashMap<usize, HashMap<i32, Instant>>,
    /// When each member last received a record from each partition.
    received: HashMap<usize, HashMap<i32, Instant>>,
    /// When each member subscribed.
    subscribed: HashMap<usize, Instant>,
}

impl Observed {
    fn set_assignment(&mut self, id: usize, parts: BTreeSet<i32>) {
        let now = Instant::now();
        let owned = self.owned.entry(id).or_default();
        owned.retain(|p, _| parts.contains(p));
        for p in parts {
            owned.entry(p).or_insert(now);
        }
    }

    fn received_from(&mut self, id: usize, parts: impl IntoIterator<Item = i32>) {
        let now = Instant::now();
        let received = self.received.entry(id).or_default();
        for p in parts {
            received.insert(p, now);
        }
    }

    /// Whether `ids` own every partition exactly once, balanced, each at least one.
    fn covered(&self, ids: &[usize], partitions: i32) -> bool {
        let mut union = BTreeSet::new();
        let (mut total, mut least, mut most) = (0, usize::MAX, 0);
        for id in ids {
            let n = self.owned.get(id).map_or(0, |o| o.len());
            total += n;
            least = least.min(n);
            most = most.max(n);
            union.extend(
                self.owned
                    .get(id)
                    .into_iter()
                    .flat_map(|o| o.keys().copied()),
            );
        }
        least > 0 && most - least <= 1 && total == partitions as usize && union.len() == total
    }

    /// Whether every partition `ids` own delivered a record to its owner since the owner got it
    /// and since `event`.
    fn fetching(&self, ids: &[usize], event: Instant) -> bool {
        ids.iter().all(|id| {
            self.owned.get(id).into_iter().flatten().all(|(p, got)| {
                self.received
                    .get(id)
                    .and_then(|r| r.get(p))
                    .is_some_and(|at| *at > *got && *at > event)
            })
        })
    }
}

type Shared = Arc<Mutex<Observed>>;

fn with<T>(shared: &Shared, f: impl FnOnce(&mut Observed) -> T) -> T {
    let mut guard = match shared.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    f(&mut guard)
}

/// A running member: `stop` makes it close gracefully; `done` ends once it has.
struct Member {
    stop: Box<dyn FnOnce() + Send>,
    done: JoinHandle<()>,
}

impl Member {
    fn in_thread(body: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Member {
        let flag = Arc::new(AtomicBool::new(false));
        let seen = flag.clone();
        Member {
            stop: Box::new(move || flag.store(true, Ordering::Release)),
            done: std::thread::spawn(move || body(seen)),
        }
    }

    fn close(self) {
        (self.stop)();
        let _ = self.done.join();
    }
}

/// Where the members connect and what they consume.
#[derive(Clone)]
struct Target {
    bootstrap: String,
    topic: String,
    group: String,
    strategy: String,
}

/// A runtime for one thread of this process (`None`, reported, if it cannot be made).
fn thread_runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| eprintln!("runtime: {e}"))
        .ok()
}

fn odradek_member(id: usize, t: Target, shared: Shared) -> Member {
    let mut conf: Vec<(String, String)> = group_settings(&t.strategy)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    conf.push(("bootstrap.servers".into(), t.bootstrap.clone()));
    conf.push(("group.id".into(), t.group.clone()));
    Member::in_thread(move |stop| {
        let Some(rt) = thread_runtime() else { return };
        rt.block_on(async move {
            let consumer =
                match odradek::ClientConfig::from_map(conf).and_then(odradek::Consumer::new) {
                    Ok(c) => c,
                    Err(e) => return eprintln!("odradek consumer: {e}"),
                };
            with(&shared, |o| o.subscribed.insert(id, Instant::now()));
            if let Err(e) = consumer.subscribe(&[t.topic.as_str()], None) {
                return eprintln!("subscribe: {e}");
            }
            while !stop.load(Ordering::Acquire) {
                let records = consumer
                    .poll(Duration::from_millis(10))
                    .await
                    .unwrap_or_default();
                let parts = consumer
                    .assignment()
                    .iter()
                    .map(|tp| tp.partition)
                    .collect();
                with(&shared, |o| {
                    o.received_from(id, records.iter().map(|r| r.partition));
                    o.set_assignment(id, parts);
                });
            }
            consumer.close().await;
        });
    })
}

fn rdkafka_member(id: usize, t: Target, shared: Shared) -> Member {
    let mut conf = rdkafka::ClientConfig::new();
    for (k, v) in group_settings(&t.strategy) {
        conf.set(k, v);
    }
    conf.set("bootstrap.servers", &t.bootstrap)
        .set("group.id", &t.group);
    Member::in_thread(move |stop| {
        let consumer: BaseConsumer = match conf.create() {
            Ok(c) => c,
            Err(e) => return eprintln!("rdkafka consumer: {e}"),
        };
        with(&shared, |o| o.subscribed.insert(id, Instant::now()));
        if let Err(e) = consumer.subscribe(&[&t.topic]) {
            return eprintln!("subscribe: {e}");
        }
        while !stop.load(Ordering::Acquire) {
            let from = match consumer.poll(Duration::from_millis(10)) {
                Some(Ok(m)) => Some(m.partition()),
                _ => None,
            };
            let parts = consumer
                .assignment()
                .map(|l| l.elements().iter().map(|e| e.partition()).collect())
                .unwrap_or_default();
            with(&shared, |o| {
                o.received_from(id, from);
                o.set_assignment(id, parts);
            });
        }
        // Dropping closes the consumer: it revokes and leaves the group.
        drop(consumer);
    })
}

/// A Java client member: `java_cmd` runs bench/RebalanceMember.java, whose output lines are
/// timestamped here as they arrive.
fn java_member(id: usize, t: Target, shared: Shared, java_cmd: &[String]) -> Member {
    let spawned = Command::new(&java_cmd[0])
        .args(&java_cmd[1..])
        .args([&t.bootstrap, &t.topic, &t.group, &t.strategy])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            eprintln!("java member: {e}");
            return Member::in_thread(|_| {});
        }
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let done = std::thread::spawn(move || {
        let parse = |list: &str| -> BTreeSet<i32> {
            list.split(',')
                .filter_map(|p| p.trim().parse().ok())
                .collect()
        };
        for line in stdout
            .map(BufReader::new)
            .into_iter()
            .flat_map(|r| r.lines())
        {
            let Ok(line) = line else { break };
            with(&shared, |o| match line.split_at(line.len().min(2)) {
                ("S", _) => {
                    o.subscribed.insert(id, Instant::now());
                }
                ("A ", list) => o.set_assignment(id, parse(list)),
                ("R ", list) => o.received_from(id, parse(list)),
                _ => {}
            });
        }
        let _ = child.wait();
    });
    Member {
        stop: Box::new(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(b"close\n");
            }
        }),
        done,
    }
}

/// Polls `observed` until `ids` are covered (and, for the second time, fetching) after `event`;
/// returns both times in ms, or `None` past `limit`.
fn wait_for(shared: &Shared, ids: &[usize], partitions: i32, event: Instant) -> Option<(f64, f64)> {
    let limit = Duration::from_secs(60);
    let mut owned = None;
    while event.elapsed() < limit {
        let (covered, fetching) = with(shared, |o| {
            let covered = o.covered(ids, partitions);
            (covered, covered && o.fetching(ids, event))
        });
        let now = event.elapsed().as_secs_f64() * 1e3;
        if covered && owned.is_none() {
            owned = Some(now);
        }
        if fetching {
            return Some((owned.unwrap_or(now), now));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// Writes one small record to every partition every [`PRODUCE_EVERY`] until `stop`.
fn producer(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    let conf = vec![
        ("bootstrap.servers".to_string(), bootstrap.to_string()),
        ("linger.ms".to_string(), "0".to_string()),
    ];
    let topic = topic.to_string();
    std::thread::spawn(move || {
        let Some(rt) = thread_runtime() else { return };
        rt.block_on(async move {
            let producer =
                match odradek::ClientConfig::from_map(conf).and_then(odradek::Producer::new) {
                    Ok(p) => p,
                    Err(e) => return eprintln!("producer: {e}"),
                };
            while !stop.load(Ordering::Acquire) {
                for p in 0..partitions {
                    let record =
                        odradek::ProducerRecord::new(topic.clone(), &b"tick"[..]).partition(p);
                    if let Err(e) = producer.send(record).await {
                        eprintln!("produce: {e}");
                    }
                }
                tokio::time::sleep(PRODUCE_EVERY).await;
            }
            let _ = producer.flush().await;
        });
    })
}

/// The wait before event `event` of repeat `repeat`: spread evenly over 0-1 s (two heartbeat
/// intervals) across repeats, so events meet the heartbeats at every phase; the same for every
/// client, so each is measured at the same phases.
fn phase(repeat: usize, event: usize) -> Duration {
    // A golden-ratio sequence: evenly spread for any number of repeats.
    let x = ((repeat * 2 + event + 1) as f64 * 0.618_033_988_75).fract();
    Duration::from_secs_f64(x)
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn row(client: &str, strategy: &str, event: &str, repeat: usize, times: Option<(f64, f64)>) {
    let (owned, fetching) = times.unwrap_or((f64::NAN, f64::NAN));
    let num = |v: f64| {
        if v.is_nan() {
            "null".to_string()
        } else {
            format!("{v:.1}")
        }
    };
    println!(
        "{{\"client\":\"{client}\",\"strategy\":\"{strategy}\",\"event\":\"{event}\",\
         \"repeat\":{repeat},\"covered\":{},\"owned_ms\":{},\"fetching_ms\":{}}}",
        times.is_some(),
        num(owned),
        num(fetching)
    );
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
    let strategies = arg(&args, "--strategies", "range,cooperative-sticky,consumer");
    // The command that runs bench/RebalanceMember.java, its words separated by tabs.
    let java_cmd: Vec<String> = arg(&args, "--java-member", "")
        .split('\t')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let stop_producing = Arc::new(AtomicBool::new(false));
    let producing = producer(&bootstrap, &topic, partitions, stop_producing.clone());
    let run_id = std::process::id();
    for repeat in 0..repeats {
        for strategy in strategies.split(',') {
            // Interleaved: each repeat measures every client once, rotating who goes first.
            let mut order: Vec<&str> = clients.split(',').collect();
            let len = order.len().max(1);
            order.rotate_left(repeat % len);
            for client in order {
                if client == "java" && java_cmd.is_empty() {
                    eprintln!("client java needs --java-member");
                    continue;
                }
                let target = Target {
                    bootstrap: bootstrap.clone(),
                    topic: topic.clone(),
                    group: format!("rb-{run_id}-{repeat}-{strategy}-{client}"),
                    strategy: strategy.to_string(),
                };
                let shared: Shared = Arc::default();
                let start = |id: usize| match client {
                    "odradek" => odradek_member(id, target.clone(), shared.clone()),
                    "java" => java_member(id, target.clone(), shared.clone(), &java_cmd),
                    _ => rdkafka_member(id, target.clone(), shared.clone()),
                };
                let mut group: Vec<Member> = (0..members).map(start).collect();
                let ids: Vec<usize> = (0..members).collect();
                if wait_for(&shared, &ids, partitions, Instant::now()).is_none() {
                    eprintln!("{client} {strategy}: the group never settled");
                }
                // The group settles right after a round of heartbeats: an event at once would
                // always meet the members a whole interval before their next one. Each event
                // waits a phase that spreads over two intervals, the same for every client.
                std::thread::sleep(phase(repeat, 0));
                // Leave: member 0 closes.
                let leaver = group.remove(0);
                let event = Instant::now();
                (leaver.stop)();
                let rest: Vec<usize> = (1..members).collect();
                row(
                    client,
                    strategy,
                    "leave",
                    repeat,
                    wait_for(&shared, &rest, partitions, event),
                );
                let _ = leaver.done.join();
                // Join: a new member subscribes, once Kafka would compute a new target
                // assignment again (4.3+ computes one at most every
                // `group.consumer.assignment.interval.ms`, 1 s by default, so a join right
                // after the leave's change would wait for the leave's interval to pass).
                std::thread::sleep(ASSIGNMENT_INTERVAL + phase(repeat, 1));
                group.push(start(members));
                let all: Vec<usize> = (1..=members).collect();
                let joined = loop {
                    if let Some(at) = with(&shared, |o| o.subscribed.get(&members).copied()) {
                        break Some(at);
                    }
                    if group.last().is_some_and(|m| m.done.is_finished()) {
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                };
                let times = joined.and_then(|at| wait_for(&shared, &all, partitions, at));
                row(client, strategy, "join", repeat, times);
                for m in group {
                    m.close();
                }
            }
        }
    }
    stop_producing.store(true, Ordering::Release);
    let _ = producing.join();
}
