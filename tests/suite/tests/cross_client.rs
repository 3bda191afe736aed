//! Transactions across clients: librdkafka's transactional producer read by our
//! read_committed consumer, ours read by librdkafka's, and zombie fencing in both directions.
//! Needs the compatibility tier's confluent-kafka venv and a broker that advertises EndTxn;
//! each test returns early, saying why, without them.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use odradek::producer::TransactionState;
use odradek::{Producer, ProducerRecord};
use odradek_suite::peer::RdkafkaPeer;
use odradek_suite::txn::{read_to_end, supports_transactions, values};
use odradek_suite::{create_topic, topic_name, Target};
use serde_json::json;

const T: Duration = Duration::from_secs(30);
const MARKER: &str = "END-OF-TEST";

fn range(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// A transactional producer of ours, initialised; `None` when the broker has no transactions.
async fn ours(target: &Target, id: &str) -> Option<Producer> {
    let p = Producer::new(target.config(&[("transactional.id", id), ("linger.ms", "5")])).unwrap();
    if !supports_transactions(p.cluster()).await {
        return None;
    }
    p.init_transactions(T).await.unwrap();
    Some(p)
}

async fn send(p: &Producer, topic: &str, partitions: usize, values: Vec<String>) {
    let mut futures = Vec::new();
    for (i, v) in values.into_iter().enumerate() {
        let r = ProducerRecord::new(topic, v).partition((i % partitions) as i32);
        futures.push(p.send(r).await.unwrap());
    }
    for f in futures {
        f.await.unwrap();
    }
}

/// A plain (non-transactional) marker record at the end of every partition: librdkafka's
/// reader stops at it, and read_committed only reaches it once every transaction before it
/// is resolved.
async fn write_markers(target: &Target, topic: &str, partitions: i32) {
    let p = Producer::new(target.config(&[])).unwrap();
    for partition in 0..partitions {
        p.send(ProducerRecord::new(topic, MARKER).partition(partition))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    p.close().await;
}

fn without_markers(v: Vec<String>) -> Vec<String> {
    v.into_iter().filter(|v| v != MARKER).collect()
}

fn send_cmd(topic: &str, partition: i32, values: &[String]) -> serde_json::Value {
    json!({"op": "send", "topic": topic, "partition": partition, "values": values})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_transactions_read_by_our_consumer() {
    let target = Target::start(&[]);
    let Some(probe) = ours(&target, &topic_name("x-probe")).await else {
        return;
    };
    probe.close().await;
    let Some(mut peer) = RdkafkaPeer::start() else {
        return;
    };
    let topic = topic_name("x-rdk");
    let admin = Producer::new(target.config(&[])).unwrap();
    create_topic(admin.cluster(), &topic, 2).await;
    admin.close().await;
    peer.transactional_producer(&target.bootstrap, &topic_name("x-rdk-tx"));
    for (prefix, commit) in [("a", true), ("b", false), ("c", true)] {
        peer.must(json!({"op": "begin"}));
        for partition in 0..2 {
            let vals = range(&format!("{prefix}{partition}"), 25);
            peer.must(send_cmd(&topic, partition, &vals));
        }
        peer.must(json!({"op": if commit { "commit" } else { "abort" }}));
    }
    write_markers(&target, &topic, 2).await;

    let committed = without_markers(values(&read_to_end(&target, &topic, 2, true).await));
    let mut want = Vec::new();
    for prefix in ["a0", "a1", "c0", "c1"] {
        want.extend(range(prefix, 25));
    }
    assert_eq!(sorted(committed), sorted(want));
    let everything = without_markers(values(&read_to_end(&target, &topic, 2, false).await));
    assert_eq!(
        everything.len(),
        150,
        "read_uncommitted sees the aborted records too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_transactions_read_by_librdkafka() {
    let target = Target::start(&[]);
    let Some(p) = ours(&target, &topic_name("x-ours-tx")).await else {
        return;
    };
    let Some(mut peer) = RdkafkaPeer::start() else {
        return;
    };
    let topic = topic_name("x-ours");
    create_topic(p.cluster(), &topic, 2).await;
    for (prefix, commit) in [("a", true), ("b", false), ("c", true)] {
        p.begin_transaction().unwrap();
        send(&p, &topic, 2, range(prefix, 50)).await;
        if commit {
            p.commit_transaction(T).await.unwrap();
        } else {
            p.abort_transaction(T).await.unwrap();
        }
    }
    p.close().await;
    write_markers(&target, &topic, 2).await;
    let reply = peer.must(
        json!({"op": "consume", "bootstrap": target.bootstrap, "topic": topic,
        "partitions": 2, "isolation": "read_committed", "markers": MARKER}),
    );
    let mut want = range("a", 50);
    want.extend(range("c", 50));
    assert_eq!(sorted(reply.values()), sorted(want));
    let reply = peer.must(
        json!({"op": "consume", "bootstrap": target.bootstrap, "topic": topic,
        "partitions": 2, "isolation": "read_uncommitted", "markers": MARKER}),
    );
    assert_eq!(reply.values().len(), 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_producer_fences_a_librdkafka_zombie() {
    let target = Target::start(&[]);
    let id = topic_name("x-fence-rdk");
    let Some(probe) = ours(&target, &topic_name("x-probe")).await else {
        return;
    };
    probe.close().await;
    let Some(mut peer) = RdkafkaPeer::start() else {
        return;
    };
    let topic = topic_name("x-fence1");
    let admin = Producer::new(target.config(&[])).unwrap();
    create_topic(admin.cluster(), &topic, 2).await;
    admin.close().await;
    peer.transactional_producer(&target.bootstrap, &id);
    peer.must(json!({"op": "begin"}));
    peer.must(send_cmd(&topic, 0, &range("zombie", 10)));

    let Some(fresh) = ours(&target, &id).await else {
        return;
    };
    fresh.begin_transaction().unwrap();
    send(&fresh, &topic, 2, range("fresh", 10)).await;
    fresh.commit_transaction(T).await.unwrap();

    let reply = peer.call(json!({"op": "commit"}));
    assert!(!reply.ok() && reply.fatal(), "zombie commit: {:?}", reply.0);
    fresh.close().await;
    write_markers(&target, &topic, 2).await;
    let committed = without_markers(values(&read_to_end(&target, &topic, 2, true).await));
    assert_eq!(sorted(committed), sorted(range("fresh", 10)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_fences_our_zombie() {
    let target = Target::start(&[]);
    let id = topic_name("x-fence-ours");
    let Some(zombie) = ours(&target, &id).await else {
        return;
    };
    let Some(mut peer) = RdkafkaPeer::start() else {
        return;
    };
    let topic = topic_name("x-fence2");
    create_topic(zombie.cluster(), &topic, 2).await;
    zombie.begin_transaction().unwrap();
    send(&zombie, &topic, 2, range("zombie", 10)).await;

    peer.transactional_producer(&target.bootstrap, &id);
    peer.must(json!({"op": "begin"}));
    peer.must(send_cmd(&topic, 1, &range("fresh", 10)));
    peer.must(json!({"op": "commit"}));

    let err = zombie.commit_transaction(T).await.unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert_eq!(
        zombie.transaction_state(),
        Some(TransactionState::FatalError)
    );
    zombie.close().await;
    write_markers(&target, &topic, 2).await;
    let reply = peer.must(
        json!({"op": "consume", "bootstrap": target.bootstrap, "topic": topic,
        "partitions": 2, "isolation": "read_committed", "markers": MARKER}),
    );
    assert_eq!(sorted(reply.values()), sorted(range("fresh", 10)));
}
