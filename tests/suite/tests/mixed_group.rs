//! Mixed consumer groups: Odradek's consumer and a librdkafka (confluent-kafka) consumer in one
//! group share the partitions (same subscription and assignment encodings, same assignors), each
//! partition owned by exactly one of them; when the librdkafka member leaves, ours takes over.
//!
//! Runs against `odradek-broker` (or Apache Kafka with `ODRADEK_TEST_BOOTSTRAP`); skipped, saying
//! so, without the compatibility tier's confluent-kafka venv.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odradek::consumer::RebalanceListener;
use odradek::producer::TopicPartition;
use odradek::{Consumer, Producer, ProducerRecord};
use odradek_suite::peer::peer_python;
use odradek_suite::{create_topic, topic_name, Target};
use serde_json::Value;

const PARTITIONS: i32 = 6;

/// The librdkafka member: a child process printing JSON events, read by a thread.
struct RdkafkaMember {
    child: Child,
    events: Arc<Mutex<Vec<Value>>>,
}

impl RdkafkaMember {
    fn start(python: &PathBuf, bootstrap: &str, group: &str, topic: &str, strategy: &str) -> Self {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/rdkafka_group_member.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([bootstrap, group, topic, strategy])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (out, sink) = (child.stdout.take().unwrap(), events.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        RdkafkaMember { child, events }
    }

    /// Partitions it owns now, replaying its assign/revoke/lost events (eager callbacks carry
    /// the whole assignment, cooperative ones the increments: both replay the same way).
    fn owned(&self) -> BTreeSet<i32> {
        let mut owned = BTreeSet::new();
        for e in self.events.lock().unwrap().iter() {
            let parts = e["partitions"].as_array().cloned().unwrap_or_default();
            let parts = parts.iter().filter_map(|p| p.as_i64()).map(|p| p as i32);
            match e["event"].as_str() {
                Some("assigned") => owned.extend(parts),
                Some("revoked") | Some("lost") => {
                    for p in parts {
                        owned.remove(&p);
                    }
                }
                _ => {}
            }
        }
        owned
    }

    fn records(&self) -> BTreeSet<(i32, i64)> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "record")
            .map(|e| {
                (
                    e["partition"].as_i64().unwrap() as i32,
                    e["offset"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    fn errors(&self) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "error")
            .cloned()
            .collect()
    }

    fn saw(&self, event: &str) -> bool {
        self.events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e["event"] == event)
    }

    /// Closes its stdin: it closes its consumer (commit, LeaveGroup) and exits.
    fn leave(&mut self) {
        drop(self.child.stdin.take());
    }
}

impl Drop for RdkafkaMember {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Our member's ownership, from its rebalance listener.
#[derive(Debug, Default)]
struct Owned(Mutex<BTreeSet<i32>>);

impl RebalanceListener for Owned {
    fn on_assigned(&self, p: &[TopicPartition]) {
        self.0
            .lock()
            .unwrap()
            .extend(p.iter().map(|tp| tp.partition));
    }
    fn on_revoked(&self, p: &[TopicPartition]) {
        let mut owned = self.0.lock().unwrap();
        for tp in p {
            owned.remove(&tp.partition);
        }
    }
    fn on_lost(&self, p: &[TopicPartition]) {
        self.on_revoked(p);
    }
}

async fn produce(target: &Target, topic: &str, from: usize, to: usize) {
    let p = Producer::new(target.config(&[("linger.ms", "2")])).unwrap();
    let mut acks = Vec::new();
    for i in from..to {
        let part = (i % PARTITIONS as usize) as i32;
        acks.push(
            p.send(ProducerRecord::new(topic, format!("{i}")).partition(part))
                .await
                .unwrap(),
        );
    }
    for a in acks {
        a.await.unwrap();
    }
    p.close().await;
}

async fn mixed_group(strategy: &str) {
    let Some(python) = peer_python() else {
        eprintln!("skipped: no confluent-kafka venv (run tests/compat/python-peers.sh install)");
        return;
    };
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("mixed");
    let group = topic_name("g");
    let ours = Consumer::new(target.config(&[
        ("group.id", group.as_str()),
        ("partition.assignment.strategy", strategy),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "10000"),
        ("heartbeat.interval.ms", "300"),
        ("auto.commit.interval.ms", "200"),
    ]))
    .unwrap();
    create_topic(ours.cluster(), &topic, PARTITIONS).await;
    produce(&target, &topic, 0, 300).await;
    let owned = Arc::new(Owned::default());
    ours.subscribe(&[&topic], Some(owned.clone())).unwrap();
    let mut theirs = RdkafkaMember::start(&python, &target.bootstrap, &group, &topic, strategy);

    // Both members get a share, the shares are disjoint and complete, and together they read
    // every record.
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();
    let mut read: BTreeSet<(i32, i64)> = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        for r in ours.poll(Duration::from_millis(50)).await.unwrap() {
            read.insert((r.partition, r.offset));
        }
        let (mine, its) = (owned.0.lock().unwrap().clone(), theirs.owned());
        let union: BTreeSet<i32> = mine.union(&its).copied().collect();
        let everything: BTreeSet<(i32, i64)> = read.union(&theirs.records()).copied().collect();
        let balanced = !mine.is_empty()
            && !its.is_empty()
            && mine.is_disjoint(&its)
            && union == all
            && mine == ours.assignment().iter().map(|tp| tp.partition).collect();
        if balanced && everything.len() == 300 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not shared: ours {mine:?}, librdkafka {its:?}, {} of 300 read, peer errors {:?}",
            everything.len(),
            theirs.errors()
        );
    }
    // New records are read by whichever member owns their partition.
    let (mine, its) = (owned.0.lock().unwrap().clone(), theirs.owned());
    let before_ours = read.clone();
    let before_theirs = theirs.records();
    produce(&target, &topic, 300, 360).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        for r in ours.poll(Duration::from_millis(50)).await.unwrap() {
            read.insert((r.partition, r.offset));
        }
        let new_ours: BTreeSet<i32> = read.difference(&before_ours).map(|r| r.0).collect();
        let theirs_now = theirs.records();
        let new_theirs: BTreeSet<i32> =
            theirs_now.difference(&before_theirs).map(|r| r.0).collect();
        if new_ours == mine && new_theirs == its {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "new records: ours read partitions {new_ours:?} (owns {mine:?}), librdkafka \
             {new_theirs:?} (owns {its:?})"
        );
    }

    // The librdkafka member leaves: ours owns everything and reads what comes next.
    theirs.leave();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !theirs.saw("closed") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the librdkafka member did not close"
        );
        let _ = ours.poll(Duration::from_millis(50)).await.unwrap();
    }
    produce(&target, &topic, 360, 420).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut new_values = BTreeSet::new();
    loop {
        for r in ours.poll(Duration::from_millis(50)).await.unwrap() {
            let v: usize = std::str::from_utf8(&r.value.unwrap_or_default())
                .unwrap()
                .parse()
                .unwrap();
            if v >= 360 {
                new_values.insert(v);
            }
        }
        let mine = owned.0.lock().unwrap().clone();
        if mine == all && new_values.len() == 60 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "after the librdkafka member left: ours owns {mine:?}, read {} of 60 new",
            new_values.len()
        );
    }
    ours.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odradek_and_librdkafka_share_a_group_eager() {
    mixed_group("range").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odradek_and_librdkafka_share_a_group_cooperative() {
    mixed_group("cooperative-sticky").await;
}
