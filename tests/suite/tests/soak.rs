//! Soak: a mixed workload against `odradek-broker` for a fixed time, reporting the broker's
//! resident memory and open file descriptors after a warm-up and at the end (issue 19). Both
//! must stay flat: whatever a cycle of the workload allocates or opens, it gives back.
//!
//! Each cycle: a long-lived idempotent producer writes; a short-lived idempotent producer
//! starts, writes and closes (its producer state must expire, its connections close); a
//! transactional producer commits one transaction and aborts every fourth; a short-lived
//! consumer joins the group of two long-lived members and leaves (two rebalances); every tenth
//! cycle a topic is created and deleted. Afterwards every acknowledged or committed record was
//! read by the group.
//!
//! The test command runs 20 s (`ODRADEK_SOAK_SECS`); the documented soak runs 300 s:
//! `ODRADEK_SOAK_SECS=300 cargo test -p odradek-suite --test soak -- --nocapture`.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odradek::admin::{Admin, NewTopic};
use odradek::{Consumer, Producer, ProducerRecord};
use odradek_suite::{create_topic, topic_name, Target};

const PARTITIONS: i32 = 4;
const T: Duration = Duration::from_secs(30);

/// Resident memory (KiB) and open descriptors of `pid`.
fn usage(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

type Seen = Arc<Mutex<BTreeSet<String>>>;

/// A long-lived group member that records every value it reads.
fn member(
    target: &Target,
    topic: &str,
    group: &str,
    seen: Seen,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let config = target.config(&[
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
        ("session.timeout.ms", "6000"),
        ("heartbeat.interval.ms", "500"),
    ]);
    let topic = topic.to_string();
    tokio::spawn(async move {
        let consumer = Consumer::new(config).unwrap();
        consumer.subscribe(&[&topic], None).unwrap();
        while !stop.load(Ordering::Acquire) {
            for r in consumer.poll(Duration::from_millis(100)).await.unwrap() {
                let v =
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
                seen.lock().unwrap().insert(v);
            }
        }
        consumer.close().await;
    })
}

/// Sends `n` values `{prefix}-{i}`, each acknowledged before the next, and expects them.
async fn send_values(
    producer: &Producer,
    topic: &str,
    prefix: &str,
    n: usize,
    expected: &mut BTreeSet<String>,
) {
    for i in 0..n {
        let v = format!("{prefix}-{i}");
        producer
            .send(ProducerRecord::new(topic, v.clone()))
            .await
            .unwrap()
            .await
            .unwrap();
        expected.insert(v);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_memory_and_descriptors_stay_flat_under_a_mixed_workload() {
    let target = Target::start(&[
        ("group.initial.rebalance.delay.ms", "0"),
        // Short-lived producers' state expires within the run.
        ("producer.id.expiration.ms", "5000"),
        ("producer.id.expiration.check.interval.ms", "1000"),
    ]);
    let Some(pid) = target.broker_pid() else {
        return; // only meaningful against our own broker process
    };
    let secs: u64 = std::env::var("ODRADEK_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let topic = topic_name("soak");
    let group = topic_name("soak-g");
    let steady =
        Producer::new(target.config(&[("enable.idempotence", "true"), ("linger.ms", "5")]))
            .unwrap();
    create_topic(steady.cluster(), &topic, PARTITIONS).await;
    let admin = Admin::new(target.config(&[]));
    let txn = Producer::new(target.config(&[
        ("transactional.id", &topic_name("soak-tx")),
        ("transaction.timeout.ms", "30000"),
    ]))
    .unwrap();
    txn.init_transactions(T).await.unwrap();

    let seen: Seen = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let members: Vec<_> = (0..2)
        .map(|_| member(&target, &topic, &group, seen.clone(), stop.clone()))
        .collect();
    let mut expected: BTreeSet<String> = BTreeSet::new();
    let started = Instant::now();
    let warm_up = Duration::from_secs((secs / 5).max(5));
    let mut baseline = None;
    let mut samples = Vec::new();
    let mut cycle = 0u64;
    while started.elapsed() < Duration::from_secs(secs) + warm_up {
        if baseline.is_none() && started.elapsed() >= warm_up {
            baseline = Some(usage(pid));
        }
        // The long-lived producer, and a short-lived idempotent one.
        send_values(
            &steady,
            &topic,
            &format!("steady-{cycle}"),
            50,
            &mut expected,
        )
        .await;
        let short = Producer::new(target.config(&[("enable.idempotence", "true")])).unwrap();
        send_values(&short, &topic, &format!("short-{cycle}"), 20, &mut expected).await;
        short.close().await;
        // A transaction: committed, or every fourth aborted.
        txn.begin_transaction().unwrap();
        let mut values = Vec::new();
        for i in 0..10 {
            let v = format!("txn-{cycle}-{i}");
            txn.send(ProducerRecord::new(&topic, v.clone()))
                .await
                .unwrap();
            values.push(v);
        }
        if cycle % 4 == 3 {
            txn.abort_transaction(T).await.unwrap();
        } else {
            txn.commit_transaction(T).await.unwrap();
            expected.extend(values);
        }
        // A member joins and leaves.
        if cycle % 3 == 0 {
            let visitor = member(
                &target,
                &topic,
                &group,
                seen.clone(),
                Arc::new(AtomicBool::new(true)),
            );
            visitor.await.unwrap();
        }
        // A topic comes and goes.
        if cycle % 10 == 0 {
            let temp = topic_name("soak-temp");
            let created = admin
                .create_topics(&[NewTopic::new(&temp).partitions(2)], false)
                .await
                .unwrap();
            assert!(created.iter().all(|(_, r)| r.is_ok()), "{created:?}");
            let deleted = admin.delete_topics(&[&temp]).await.unwrap();
            assert!(deleted.iter().all(|(_, r)| r.is_ok()), "{deleted:?}");
        }
        if cycle % 20 == 0 {
            samples.push((started.elapsed(), usage(pid)));
        }
        cycle += 1;
    }
    let end = usage(pid);
    // Everything acknowledged or committed is read (aborted records never).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let missing = expected.difference(&seen.lock().unwrap()).count();
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {} records never read",
            expected.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !seen.lock().unwrap().iter().any(|v| {
            v.strip_prefix("txn-")
                .and_then(|r| r.split('-').next())
                .and_then(|c| c.parse::<u64>().ok())
                .is_some_and(|c| c % 4 == 3)
        }),
        "an aborted record was read"
    );
    stop.store(true, Ordering::Release);
    for m in members {
        m.await.unwrap();
    }
    let (rss0, fds0) = baseline.unwrap();
    let (rss1, fds1) = end;
    eprintln!(
        "soak: {cycle} cycles, {} records in {secs} s after a {warm_up:?} warm-up",
        expected.len()
    );
    eprintln!("soak: broker RSS {rss0} KiB -> {rss1} KiB, descriptors {fds0} -> {fds1}");
    for (at, (rss, fds)) in &samples {
        eprintln!(
            "soak:   at {:>6.1} s: RSS {rss} KiB, descriptors {fds}",
            at.as_secs_f64()
        );
    }
    assert!(
        rss1 <= rss0 + rss0 / 2 + 16 * 1024,
        "broker RSS grew from {rss0} KiB to {rss1} KiB"
    );
    assert!(
        fds1 <= fds0 + 8,
        "broker descriptors grew from {fds0} to {fds1}"
    );
    steady.close().await;
    txn.close().await;
}
