//! Chaos test for consumer groups: members crash (their runtime is torn down without a
//! LeaveGroup, like `kill -9`), leave gracefully and join while a producer keeps writing.
//! Afterwards every acknowledged record was processed at least once, ownership never overlapped,
//! no partition stayed unowned for much longer than the session timeout, and with
//! cooperative-sticky no member had a partition revoked that it kept. On the classic protocol
//! (eager and cooperative) and on KIP-848's consumer protocol (`group.protocol=consumer`, the
//! broker's session set to the same 6 s).
//!
//! Runs against `odradek-broker` (or Apache Kafka with `ODRADEK_TEST_BOOTSTRAP`, whose
//! `group.consumer.*` settings scripts/test.sh sets the same way).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odradek::consumer::RebalanceListener;
use odradek::producer::TopicPartition;
use odradek::{Consumer, Producer, ProducerRecord};
use odradek_suite::{create_topic, topic_name, Target};

const PARTITIONS: i32 = 6;
const SESSION_MS: u64 = 6000;

/// What happened to partition ownership, in one global order.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Assigned,
    Revoked,
    Lost,
    /// The member crashed or closed: whatever it owned is no longer being processed.
    Gone,
}

/// When, which member, what, which partitions.
type Event = (Instant, usize, Change, Vec<i32>);

#[derive(Debug, Default)]
struct Timeline {
    events: Mutex<Vec<Event>>,
}

impl Timeline {
    fn push(&self, member: usize, change: Change, partitions: Vec<i32>) {
        self.events
            .lock()
            .unwrap()
            .push((Instant::now(), member, change, partitions));
    }
}

#[derive(Debug)]
struct Listener {
    member: usize,
    timeline: Arc<Timeline>,
}

impl Listener {
    fn record(&self, change: Change, p: &[TopicPartition]) {
        let parts = p.iter().map(|tp| tp.partition).collect();
        self.timeline.push(self.member, change, parts);
    }
}

impl RebalanceListener for Listener {
    fn on_assigned(&self, p: &[TopicPartition]) {
        self.record(Change::Assigned, p);
    }
    fn on_revoked(&self, p: &[TopicPartition]) {
        self.record(Change::Revoked, p);
    }
    fn on_lost(&self, p: &[TopicPartition]) {
        self.record(Change::Lost, p);
    }
}

/// One group member on its own runtime, so that a crash can be simulated by dropping the
/// runtime: heartbeats stop and connections close without a LeaveGroup.
struct Member {
    id: usize,
    runtime: tokio::runtime::Runtime,
    stop: Arc<AtomicBool>,
    done: Option<tokio::task::JoinHandle<()>>,
}

/// Records by (partition, the number the producer wrote as the value): values, not offsets, so
/// a delivery acknowledged without a known offset is still accounted for.
type Processed = Arc<Mutex<BTreeSet<(i32, u64)>>>;

impl Member {
    fn start(
        id: usize,
        config: odradek::ClientConfig,
        topic: &str,
        timeline: Arc<Timeline>,
        processed: Processed,
    ) -> Member {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (topic, stop2) = (topic.to_string(), stop.clone());
        let done = runtime.spawn(async move {
            let consumer = Consumer::new(config).unwrap();
            let listener = Arc::new(Listener {
                member: id,
                timeline,
            });
            consumer.subscribe(&[&topic], Some(listener)).unwrap();
            while !stop2.load(Ordering::Acquire) {
                let records = consumer.poll(Duration::from_millis(50)).await.unwrap();
                let mut seen = processed.lock().unwrap();
                for r in records {
                    let value = r.value.as_deref().unwrap_or_default();
                    let n = std::str::from_utf8(value).unwrap().parse::<u64>().unwrap();
                    seen.insert((r.partition, n));
                }
            }
            consumer.close().await;
        });
        Member {
            id,
            runtime,
            stop,
            done: Some(done),
        }
    }

    /// Closes the consumer (commit, revoke, LeaveGroup), then stops the runtime.
    fn leave(mut self, timeline: &Timeline) {
        self.stop.store(true, Ordering::Release);
        if let Some(done) = self.done.take() {
            let _ = self.runtime.block_on(done);
        }
        timeline.push(self.id, Change::Gone, Vec::new());
        self.runtime.shutdown_background();
    }

    /// Tears the runtime down mid-flight: no commit, no LeaveGroup.
    fn crash(self, timeline: &Timeline) {
        timeline.push(self.id, Change::Gone, Vec::new());
        self.runtime.shutdown_background();
    }
}

/// Checks the ownership timeline up to `until`; returns the longest time any partition had no
/// live owner.
fn check_timeline(events: &[Event], until: Instant, cooperative: bool) -> Duration {
    let start = events.first().map(|e| e.0).unwrap_or_else(Instant::now);
    let mut owner: HashMap<i32, usize> = HashMap::new();
    let mut owned_by: HashMap<usize, BTreeSet<i32>> = HashMap::new();
    let mut unowned_since: BTreeMap<i32, Instant> = (0..PARTITIONS).map(|p| (p, start)).collect();
    let mut longest = Duration::ZERO;
    // Cooperative: a revoked partition must not come back to the same member before anyone
    // else owned it (that would be a revocation of a partition the member kept).
    let mut revoked_from: HashMap<i32, usize> = HashMap::new();
    for (at, member, change, parts) in events {
        let released: Vec<i32> = match change {
            Change::Assigned => {
                for p in parts {
                    if let Some(other) = owner.get(p) {
                        panic!("partition {p} assigned to member {member} while member {other} owns it");
                    }
                    if cooperative {
                        assert_ne!(
                            revoked_from.get(p),
                            Some(member),
                            "cooperative-sticky revoked partition {p} from member {member} and gave it back"
                        );
                    }
                    owner.insert(*p, *member);
                    owned_by.entry(*member).or_default().insert(*p);
                    revoked_from.remove(p);
                    if let Some(since) = unowned_since.remove(p) {
                        longest = longest.max(at.duration_since(since));
                    }
                }
                Vec::new()
            }
            Change::Revoked | Change::Lost => {
                if *change == Change::Revoked {
                    for p in parts {
                        revoked_from.insert(*p, *member);
                    }
                }
                parts.clone()
            }
            Change::Gone => owned_by
                .get(member)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default(),
        };
        for p in released {
            if owner.get(&p) == Some(member) {
                owner.remove(&p);
                unowned_since.insert(p, *at);
            }
            if let Some(s) = owned_by.get_mut(member) {
                s.remove(&p);
            }
        }
    }
    for since in unowned_since.values() {
        longest = longest.max(until.duration_since(*since));
    }
    longest
}

/// The consumer protocol's member settings: the broker decides sessions and heartbeats.
const KIP848: &str = "consumer-protocol";

/// The broker settings of the KIP-848 run (the classic ones take the same values per member).
const KIP848_BROKER: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.consumer.heartbeat.interval.ms", "500"),
    ("group.consumer.min.heartbeat.interval.ms", "500"),
    ("group.consumer.session.timeout.ms", "6000"),
    ("group.consumer.min.session.timeout.ms", "6000"),
];

fn member_config(target: &Target, group: &str, strategy: &str) -> odradek::ClientConfig {
    if strategy == KIP848 {
        return target.config(&[
            ("group.id", group),
            ("group.protocol", "consumer"),
            ("auto.offset.reset", "earliest"),
            ("auto.commit.interval.ms", "200"),
        ]);
    }
    target.config(&[
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("partition.assignment.strategy", strategy),
        ("session.timeout.ms", &SESSION_MS.to_string()),
        ("heartbeat.interval.ms", "300"),
        ("auto.commit.interval.ms", "200"),
    ])
}

fn chaos(strategy: &str) {
    // (A consumer-protocol member may get back a partition it was revoking when the target
    // moves again meanwhile: only cooperative-sticky's promise is checked.)
    let cooperative = strategy == "cooperative-sticky";
    let target = Target::start(KIP848_BROKER);
    let driver = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let topic = topic_name("chaos");
    let group = topic_name("g");
    let producer = driver.block_on(async {
        let p = Producer::new(target.config(&[("linger.ms", "5")])).unwrap();
        create_topic(p.cluster(), &topic, PARTITIONS).await;
        p
    });
    let producer = Arc::new(producer);

    // The producer writes one record per partition every 20 ms until told to stop.
    let acked: Processed = Arc::default();
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (p, acked, writing, topic) = (
            producer.clone(),
            acked.clone(),
            writing.clone(),
            topic.clone(),
        );
        driver.spawn(async move {
            let mut i = 0u64;
            let mut pending = Vec::new();
            while writing.load(Ordering::Acquire) {
                for part in 0..PARTITIONS {
                    let r = ProducerRecord::new(&topic, format!("{i}")).partition(part);
                    pending.push((part, i, p.send(r).await.unwrap()));
                    i += 1;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for (part, n, f) in pending {
                if f.await.is_ok() {
                    acked.lock().unwrap().insert((part, n));
                }
            }
        })
    };

    let timeline = Arc::new(Timeline::default());
    let processed: Processed = Arc::default();
    let config = member_config(&target, &group, strategy);
    let mut next_id = 0;
    let mut spawn = |members: &mut Vec<Member>| {
        members.push(Member::start(
            next_id,
            config.clone(),
            &topic,
            timeline.clone(),
            processed.clone(),
        ));
        next_id += 1;
    };
    let mut members = Vec::new();
    for _ in 0..3 {
        spawn(&mut members);
    }
    // Chaos: crash one, add one, close one gracefully, add two, crash one.
    let pause = || std::thread::sleep(Duration::from_millis(2500));
    pause();
    members.remove(0).crash(&timeline);
    pause();
    spawn(&mut members);
    pause();
    members.remove(1).leave(&timeline);
    pause();
    spawn(&mut members);
    spawn(&mut members);
    pause();
    let victim = members.len() - 1;
    members.remove(victim).crash(&timeline);
    pause();

    writing.store(false, Ordering::Release);
    driver.block_on(writer).unwrap();
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 1000,
        "producer made progress: {}",
        acked.len()
    );

    // Survivors drain what is left; every acknowledged record must be processed at least once.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let missing = acked.difference(&processed.lock().unwrap()).count();
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {} acknowledged records never processed",
            acked.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Everything was processed: judge ownership up to now, before the survivors leave.
    let drained = Instant::now();
    let events = timeline.events.lock().unwrap().clone();
    let longest = check_timeline(&events, drained, cooperative);
    eprintln!("longest unowned: {longest:?}, events: {}", events.len());
    // A crashed member's partitions wait for its session to expire (detected on the
    // broker's next check), then one rebalance in which every member rejoins.
    let bound = Duration::from_millis(SESSION_MS) + Duration::from_secs(4);
    assert!(
        longest <= bound,
        "a partition stayed unowned for {longest:?} (bound {bound:?})"
    );
    for m in members {
        m.leave(&timeline);
    }
    driver.block_on(async { producer.close().await });
}

#[test]
fn eager_group_survives_crashes_leaves_and_joins() {
    chaos("range");
}

#[test]
fn cooperative_group_survives_crashes_leaves_and_joins() {
    chaos("cooperative-sticky");
}

#[test]
fn consumer_protocol_group_survives_crashes_leaves_and_joins() {
    chaos(KIP848);
}
