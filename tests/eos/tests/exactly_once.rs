//! The exactly-once checker.
//!
//! 1. A consume-transform-produce pipeline (`eos-pipeline`, a separate process) copies a seeded
//!    input topic to an output topic transactionally while the checker SIGKILLs and restarts it
//!    several times and a Kafka-aware proxy drops all its connections periodically. Read
//!    read_committed, the output holds every input record exactly once.
//! 2. An idempotent producer sends numbered records while the broker is killed and restarted on
//!    the same data (our broker) or all connections are dropped (an external broker): every
//!    record is written once, in order per partition, with no gaps.
//!
//! Sizes: `ODRADEK_EOS_RECORDS` (default 20000; the documented full run uses 100000) and
//! `ODRADEK_EOS_KILLS` (default 4). Runs against `odradek-broker` or `ODRADEK_TEST_BOOTSTRAP`;
//! the transactional check returns early, saying why, on a broker without EndTxn.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use odradek::producer::TopicPartition;
use odradek::{Consumer, Producer, ProducerRecord};
use odradek_suite::broker_proxy::BrokerProxy;
use odradek_suite::txn::{partitions, read_to_end, supports_transactions};
use odradek_suite::{create_topic, topic_name, Target};

const PARTITIONS: i32 = 4;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn value_of(v: Option<&[u8]>) -> usize {
    std::str::from_utf8(v.unwrap_or_default())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Writes records `0..n` (value = number, partition = number % PARTITIONS).
async fn seed(target: &Target, topic: &str, n: usize) {
    let p = Producer::new(target.config(&[("linger.ms", "20")])).unwrap();
    let mut futures = Vec::with_capacity(n);
    for i in 0..n {
        let r = ProducerRecord::new(topic, i.to_string())
            .key(i.to_string())
            .partition((i % PARTITIONS as usize) as i32);
        futures.push(p.send(r).await.unwrap());
    }
    for f in futures {
        f.await.unwrap();
    }
    p.close().await;
}

/// Drops every connection through `proxy` every `period` until `stop`.
fn cut_periodically(
    proxy: BrokerProxy,
    period: Duration,
    stop: Arc<AtomicBool>,
) -> Arc<AtomicUsize> {
    let cuts = Arc::new(AtomicUsize::new(0));
    let counter = cuts.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.tick().await;
        while !stop.load(Ordering::Acquire) {
            tick.tick().await;
            proxy.cut_all();
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    cuts
}

fn spawn_pipeline(bootstrap: &str, input: &str, output: &str, group: &str, id: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_eos-pipeline"))
        .args([bootstrap, input, output, group, id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start eos-pipeline")
}

/// Offsets the group has committed, summed over the input partitions.
async fn committed_total(reader: &Consumer, tps: &[TopicPartition]) -> usize {
    match reader.committed(tps).await {
        Ok(c) => c.values().map(|o| o.unwrap_or(0).max(0) as usize).sum(),
        Err(_) => 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_pipeline_is_exactly_once_across_kills_and_drops() {
    let n = env_usize("ODRADEK_EOS_RECORDS", 20_000);
    let kills = env_usize("ODRADEK_EOS_KILLS", 4);
    let target = Target::start(&[]);
    let admin = Producer::new(target.config(&[])).unwrap();
    if !supports_transactions(admin.cluster()).await {
        return;
    }
    let input = topic_name("eos-in");
    let output = topic_name("eos-out");
    let group = topic_name("eos-group");
    let txn_id = topic_name("eos-pipeline");
    create_topic(admin.cluster(), &input, PARTITIONS).await;
    create_topic(admin.cluster(), &output, PARTITIONS).await;
    admin.close().await;
    seed(&target, &input, n).await;

    let proxy = BrokerProxy::start(&target.bootstrap);
    let stop = Arc::new(AtomicBool::new(false));
    let cuts = cut_periodically(proxy.clone(), Duration::from_millis(1500), stop.clone());
    let reader =
        Consumer::new(target.config(&[("group.id", &group), ("enable.auto.commit", "false")]))
            .unwrap();
    let tps = partitions(&input, PARTITIONS);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    let mut self_exits = 0;
    for run in 0..=kills {
        let mut child = spawn_pipeline(&proxy.bootstrap, &input, &output, &group, &txn_id);
        // Kill once the pipeline has committed its share of this run; the last run finishes.
        let goal = if run < kills {
            (run + 1) * n / (kills + 1)
        } else {
            n
        };
        loop {
            if committed_total(&reader, &tps).await >= goal {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                assert_ne!(status.code(), Some(2), "the pipeline failed fatally");
                self_exits += 1;
                eprintln!("eos: pipeline exited by itself ({status}); restarting");
                child = spawn_pipeline(&proxy.bootstrap, &input, &output, &group, &txn_id);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no progress: committed {} of {goal}",
                committed_total(&reader, &tps).await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if run < kills {
            // Vary where in its next transaction the pipeline dies (fault schedule, not a wait
            // for anything): right after a commit, or with a transaction open.
            tokio::time::sleep(Duration::from_millis((run as u64 * 97) % 300)).await;
        }
        child.kill().expect("SIGKILL the pipeline");
        let _ = child.wait();
    }
    stop.store(true, Ordering::Release);
    reader.close().await;
    let accepted = proxy.connections_accepted();
    assert!(
        accepted > kills + 1,
        "only {accepted} connections went through the proxy"
    );

    let committed = read_to_end(&target, &output, PARTITIONS, true).await;
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for r in &committed {
        *counts.entry(value_of(r.value.as_deref())).or_default() += 1;
    }
    let missing: Vec<usize> = (0..n).filter(|i| !counts.contains_key(i)).collect();
    let duplicated: Vec<(usize, usize)> = counts
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(v, c)| (*v, *c))
        .collect();
    let unknown: Vec<usize> = counts.keys().copied().filter(|v| *v >= n).collect();
    let uncommitted = read_to_end(&target, &output, PARTITIONS, false).await.len();
    eprintln!(
        "eos: {n} inputs, {} committed outputs, {uncommitted} written in all (aborted included), \
         {kills} kills, {} connection cuts ({accepted} proxied connections), {self_exits} self-exits",
        committed.len(),
        cuts.load(Ordering::Relaxed)
    );
    assert!(
        missing.is_empty(),
        "missing {} e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert!(
        duplicated.is_empty(),
        "duplicated {} e.g. {:?}",
        duplicated.len(),
        &duplicated[..duplicated.len().min(10)]
    );
    assert!(unknown.is_empty(), "unexpected values {unknown:?}");
    assert_eq!(committed.len(), n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_producer_has_no_duplicates_or_gaps_across_faults() {
    let n = env_usize("ODRADEK_EOS_RECORDS", 20_000);
    let faults = env_usize("ODRADEK_EOS_KILLS", 4);
    let mut target = Target::start(&[]);
    let topic = topic_name("idem");
    let admin = Producer::new(target.config(&[])).unwrap();
    create_topic(admin.cluster(), &topic, PARTITIONS).await;
    admin.close().await;
    let proxy = BrokerProxy::start(&target.bootstrap);
    let producer = Arc::new(
        Producer::new(target.config(&[
            ("bootstrap.servers", &proxy.bootstrap),
            ("enable.idempotence", "true"),
            ("linger.ms", "5"),
            ("reconnect.backoff.max.ms", "200"),
        ]))
        .unwrap(),
    );
    let acked = Arc::new(AtomicUsize::new(0));
    let sender = {
        let (producer, acked, topic) = (producer.clone(), acked.clone(), topic.clone());
        tokio::spawn(async move {
            let mut futures = Vec::with_capacity(n);
            for i in 0..n {
                let r = ProducerRecord::new(&topic, i.to_string())
                    .partition((i % PARTITIONS as usize) as i32);
                let f = producer.send(r).await.unwrap();
                let acked = acked.clone();
                futures.push(tokio::spawn(async move {
                    let result = f.await;
                    acked.fetch_add(1, Ordering::Relaxed);
                    result
                }));
            }
            let mut failures = Vec::new();
            for f in futures {
                if let Err(e) = f.await.unwrap() {
                    failures.push(e.to_string());
                }
            }
            failures
        })
    };
    let own = target.is_own_broker();
    for k in 0..faults {
        let goal = (k + 1) * n / (faults + 1);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while acked.load(Ordering::Relaxed) < goal {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no progress towards {goal}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if own {
            // SIGKILL and restart on the same data; the producer state is rebuilt from the log.
            tokio::task::block_in_place(|| target.restart());
        }
        proxy.cut_all();
    }
    let failures = sender.await.unwrap();
    assert!(
        failures.is_empty(),
        "{} sends failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    producer.close().await;

    let records = read_to_end(&target, &topic, PARTITIONS, false).await;
    let mut per_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for r in &records {
        per_partition
            .entry(r.partition)
            .or_default()
            .push(value_of(r.value.as_deref()));
    }
    for (p, values) in &per_partition {
        let want: Vec<usize> = (0..n)
            .filter(|i| (i % PARTITIONS as usize) as i32 == *p)
            .collect();
        assert_eq!(
            values.len(),
            want.len(),
            "partition {p}: duplicates or gaps"
        );
        assert_eq!(values, &want, "partition {p}: order, duplicates or gaps");
    }
    eprintln!(
        "idempotent: {n} records, {faults} {} without duplicates or gaps",
        if own {
            "broker restarts"
        } else {
            "connection cuts"
        }
    );
    assert_eq!(records.len(), n);
}
