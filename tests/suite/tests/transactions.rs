//! The transactional producer and read_committed consumer against a real broker. Every test
//! first checks that the broker advertises EndTxn and returns early (printing why) if not, so
//! the file runs against `odradek-broker` before it serves transactions and against Apache
//! Kafka in the compatibility tier.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use odradek::producer::{GroupMetadata, TopicPartition, TransactionState};
use odradek::{Consumer, Error, ErrorCode, Producer, ProducerRecord};
use odradek_suite::txn::{read_to_end, supports_transactions, values};
use odradek_suite::{create_topic, topic_name, Target};

const T: Duration = Duration::from_secs(30);

fn txn_producer(target: &Target, id: &str) -> Producer {
    Producer::new(target.config(&[
        ("transactional.id", id),
        ("linger.ms", "5"),
        ("transaction.timeout.ms", "30000"),
    ]))
    .unwrap()
}

/// Sends `values` round robin over `partitions` partitions and waits for every delivery.
async fn send_all(p: &Producer, topic: &str, partitions: usize, values: Vec<String>) {
    let mut futures = Vec::new();
    for (i, v) in values.into_iter().enumerate() {
        let r = ProducerRecord::new(topic, v).partition((i % partitions) as i32);
        futures.push(p.send(r).await.unwrap());
    }
    for f in futures {
        f.await.unwrap();
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn range(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_records_are_visible_and_aborted_ones_are_not() {
    let target = Target::start(&[]);
    let p = txn_producer(&target, &topic_name("tx-basic"));
    if !supports_transactions(p.cluster()).await {
        return;
    }
    let topic = topic_name("txn-basic");
    create_topic(p.cluster(), &topic, 2).await;
    assert!(matches!(
        p.send(ProducerRecord::new(&topic, "early")).await,
        Err(Error::State(_))
    ));
    p.init_transactions(T).await.unwrap();
    assert_eq!(p.transaction_state(), Some(TransactionState::Ready));
    assert!(matches!(
        p.send(ProducerRecord::new(&topic, "outside")).await,
        Err(Error::State(_))
    ));

    p.begin_transaction().unwrap();
    send_all(&p, &topic, 2, range("a", 40)).await;
    p.commit_transaction(T).await.unwrap();

    p.begin_transaction().unwrap();
    send_all(&p, &topic, 2, range("b", 30)).await;
    p.abort_transaction(T).await.unwrap();

    // Aborted without waiting for delivery: queued records fail, none become visible.
    p.begin_transaction().unwrap();
    let mut pending = Vec::new();
    for v in range("c", 20) {
        pending.push(p.send(ProducerRecord::new(&topic, v)).await.unwrap());
    }
    p.abort_transaction(T).await.unwrap();
    for f in pending {
        if let Err(e) = f.await {
            assert!(e.is_abortable(), "{e}");
        }
    }

    p.begin_transaction().unwrap();
    send_all(&p, &topic, 2, range("d", 10)).await;
    p.commit_transaction(T).await.unwrap();

    // An empty transaction commits without a request.
    p.begin_transaction().unwrap();
    p.commit_transaction(T).await.unwrap();
    p.close().await;

    let committed = values(&read_to_end(&target, &topic, 2, true).await);
    let mut want = range("a", 40);
    want.extend(range("d", 10));
    assert_eq!(sorted(committed), sorted(want));

    let everything = values(&read_to_end(&target, &topic, 2, false).await);
    assert!(everything.iter().any(|v| v.starts_with("b-")));
    assert!(everything.len() >= 80, "{}", everything.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_stops_at_an_open_transaction() {
    let target = Target::start(&[]);
    let p = txn_producer(&target, &topic_name("tx-lso"));
    if !supports_transactions(p.cluster()).await {
        return;
    }
    let topic = topic_name("txn-lso");
    create_topic(p.cluster(), &topic, 1).await;
    p.init_transactions(T).await.unwrap();
    p.begin_transaction().unwrap();
    let mut futures = Vec::new();
    for v in range("open", 5) {
        futures.push(
            p.send(ProducerRecord::new(&topic, v).partition(0))
                .await
                .unwrap(),
        );
    }
    for f in futures {
        f.await.unwrap();
    }
    let consumer = Consumer::new(target.config(&[
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
    ]))
    .unwrap();
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    consumer.assign(std::slice::from_ref(&tp));
    // Written but not committed: the last stable offset stays at 0.
    assert_eq!(consumer.fetch_watermarks(&tp).await.unwrap().1, 0);
    assert!(consumer
        .poll(Duration::from_millis(500))
        .await
        .unwrap()
        .is_empty());
    p.commit_transaction(T).await.unwrap();
    let deadline = tokio::time::Instant::now() + T;
    let mut got = Vec::new();
    while got.len() < 5 && tokio::time::Instant::now() < deadline {
        got.extend(consumer.poll(Duration::from_millis(200)).await.unwrap());
    }
    assert_eq!(values(&got), range("open", 5));
    consumer.close().await;
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_producer_fences_the_zombie() {
    let target = Target::start(&[]);
    let id = topic_name("tx-zombie");
    let zombie = txn_producer(&target, &id);
    if !supports_transactions(zombie.cluster()).await {
        return;
    }
    let topic = topic_name("txn-zombie");
    create_topic(zombie.cluster(), &topic, 2).await;
    zombie.init_transactions(T).await.unwrap();
    zombie.begin_transaction().unwrap();
    send_all(&zombie, &topic, 2, range("zombie", 10)).await;

    // The new instance's InitProducerId bumps the epoch and aborts the zombie's transaction.
    let fresh = txn_producer(&target, &id);
    fresh.init_transactions(T).await.unwrap();
    fresh.begin_transaction().unwrap();
    send_all(&fresh, &topic, 2, range("fresh", 10)).await;
    fresh.commit_transaction(T).await.unwrap();

    let err = zombie.commit_transaction(T).await.unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert!(
        matches!(
            err.kafka_code(),
            ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch
        ),
        "{err}"
    );
    assert_eq!(
        zombie.transaction_state(),
        Some(TransactionState::FatalError)
    );
    let again = zombie.send(ProducerRecord::new(&topic, "late")).await;
    assert!(again.is_err_and(|e| e.is_fatal()));
    zombie.close().await;
    fresh.close().await;

    let committed = values(&read_to_end(&target, &topic, 2, true).await);
    assert_eq!(sorted(committed), sorted(range("fresh", 10)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_send_makes_the_transaction_abortable() {
    let target = Target::start(&[]);
    // The broker's limit is 1 MiB (message.max.bytes); the client allows more, so the
    // broker refuses the batch and the transaction cannot commit.
    let p = Producer::new(target.config(&[
        ("transactional.id", &topic_name("tx-abortable")),
        ("max.request.size", "4000000"),
        ("buffer.memory", "16000000"),
    ]))
    .unwrap();
    if !supports_transactions(p.cluster()).await {
        return;
    }
    let topic = topic_name("txn-abortable");
    create_topic(p.cluster(), &topic, 1).await;
    p.init_transactions(T).await.unwrap();
    p.begin_transaction().unwrap();
    let ok = p
        .send(ProducerRecord::new(&topic, "before").partition(0))
        .await
        .unwrap();
    ok.await.unwrap();
    let big = p
        .send(ProducerRecord::new(&topic, vec![7u8; 2_000_000]).partition(0))
        .await
        .unwrap();
    let err = big.await.unwrap_err();
    assert!(!err.is_retriable(), "{err}");
    let err = p.commit_transaction(T).await.unwrap_err();
    assert!(err.is_abortable() && !err.is_fatal(), "{err}");
    assert_eq!(
        p.transaction_state(),
        Some(TransactionState::AbortableError)
    );
    let err = p
        .send(ProducerRecord::new(&topic, "more"))
        .await
        .unwrap_err();
    assert!(err.is_abortable(), "{err}");
    p.abort_transaction(T).await.unwrap();

    p.begin_transaction().unwrap();
    send_all(&p, &topic, 1, vec!["after".to_string()]).await;
    p.commit_transaction(T).await.unwrap();
    p.close().await;
    let committed = values(&read_to_end(&target, &topic, 1, true).await);
    assert_eq!(committed, vec!["after".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_commit_with_the_transaction() {
    let target = Target::start(&[]);
    let p = txn_producer(&target, &topic_name("tx-offsets"));
    if !supports_transactions(p.cluster()).await {
        return;
    }
    let input = topic_name("txn-in");
    let output = topic_name("txn-out");
    create_topic(p.cluster(), &input, 1).await;
    create_topic(p.cluster(), &output, 2).await;
    let group = topic_name("txn-group");
    let consumer = Consumer::new(target.config(&[
        ("group.id", &group),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
    ]))
    .unwrap();
    let tp = TopicPartition {
        topic: input.as_str().into(),
        partition: 0,
    };
    p.init_transactions(T).await.unwrap();
    p.begin_transaction().unwrap();
    send_all(&p, &input, 1, range("in", 10)).await;
    p.commit_transaction(T).await.unwrap();

    // An aborted transaction's offsets are not committed.
    p.begin_transaction().unwrap();
    p.send_offsets_to_transaction(&[(tp.clone(), 3)], &GroupMetadata::new(&group))
        .await
        .unwrap();
    p.abort_transaction(T).await.unwrap();
    let committed = consumer.committed(std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(committed.get(&tp), Some(&None));

    p.begin_transaction().unwrap();
    send_all(&p, &output, 2, vec!["out".to_string()]).await;
    p.send_offsets_to_transaction(&[(tp.clone(), 5)], &GroupMetadata::new(&group))
        .await
        .unwrap();
    // Committed offsets are fetched stable (KIP-447): while the transaction is open the fetch
    // keeps retrying UNSTABLE_OFFSET_COMMIT, and returns the offset once it commits.
    let started = tokio::time::Instant::now();
    let ((fetched, fetched_at), committed) = tokio::join!(
        async {
            let r = consumer.committed(std::slice::from_ref(&tp)).await;
            (r, tokio::time::Instant::now())
        },
        async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            p.commit_transaction(T).await
        }
    );
    committed.unwrap();
    assert_eq!(fetched.unwrap().get(&tp), Some(&Some(5)));
    assert!(
        fetched_at - started >= Duration::from_millis(400),
        "the fetch waited for the open transaction"
    );

    // With the member's identity (KIP-447): a consumer in the group, then a stale generation.
    consumer.subscribe(&[input.as_str()], None).unwrap();
    let deadline = tokio::time::Instant::now() + T;
    let mut got = Vec::new();
    while got.len() < 5 && tokio::time::Instant::now() < deadline {
        got.extend(consumer.poll(Duration::from_millis(200)).await.unwrap());
    }
    assert_eq!(
        got.first().map(|r| r.offset),
        Some(5),
        "resumes at the commit"
    );
    let meta = consumer.consumer_group_metadata().await.unwrap();
    assert!(
        meta.generation_id >= 0 && !meta.member_id.is_empty(),
        "{meta:?}"
    );
    p.begin_transaction().unwrap();
    p.send_offsets_to_transaction(&[(tp.clone(), 10)], &meta)
        .await
        .unwrap();
    p.commit_transaction(T).await.unwrap();
    let stale = GroupMetadata {
        generation_id: meta.generation_id + 7,
        ..meta.clone()
    };
    p.begin_transaction().unwrap();
    let err = p
        .send_offsets_to_transaction(&[(tp.clone(), 10)], &stale)
        .await
        .unwrap_err();
    assert!(err.is_abortable(), "{err}");
    assert_eq!(err.kafka_code(), ErrorCode::IllegalGeneration, "{err}");
    p.abort_transaction(T).await.unwrap();
    consumer.close().await;
    p.close().await;
}
