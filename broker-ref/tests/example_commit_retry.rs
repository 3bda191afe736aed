//! Test your consumer's retry logic against a broker that fails the first two commits
//! (the Rust example of docs/testing.md).

// A panic is the assertion.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use odradek::producer::TopicPartition;
use odradek::{Consumer, ErrorCode, Producer, ProducerRecord};
use odradek_broker::testing::Cluster;

// ---- the application code under test --------------------------------------------------------

/// Commits the consumer's positions, retrying errors Kafka calls retriable; returns the
/// attempts used.
async fn commit_with_retry(consumer: &Consumer, attempts: u32) -> odradek::Result<u32> {
    let mut attempt = 1;
    loop {
        match consumer.commit_sync(None).await {
            Ok(()) => return Ok(attempt),
            Err(e) if e.is_retriable() && attempt < attempts => {
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads `count` records, then commits them.
async fn process_batch(consumer: &Consumer, count: usize) -> odradek::Result<(Vec<String>, u32)> {
    let mut values = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while values.len() < count && Instant::now() < deadline {
        for r in consumer.poll(Duration::from_millis(100)).await? {
            values.push(String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned());
        }
    }
    let attempts = commit_with_retry(consumer, 5).await?;
    Ok((values, attempts))
}

// ---- the test -----------------------------------------------------------------------------------

#[tokio::test]
async fn the_consumer_retries_two_failed_commits() {
    let cluster = Cluster::builder()
        .topic("orders", 1)
        .record_requests(true)
        .start()
        .unwrap();
    let producer = Producer::from_map([("bootstrap.servers", cluster.bootstrap())]).unwrap();
    for i in 0..3 {
        let delivery = producer
            .send(ProducerRecord::new("orders", format!("order-{i}")))
            .await
            .unwrap();
        delivery.await.unwrap();
    }
    producer.close().await;

    // The broker refuses the next two OffsetCommit requests, as a coordinator that is moving.
    cluster
        .push_request_errors(
            ApiKey::OffsetCommit,
            [ErrorCode::CoordinatorNotAvailable; 2],
        )
        .unwrap();

    let consumer = Consumer::from_map([
        ("bootstrap.servers", cluster.bootstrap()),
        ("group.id", "billing"),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
    ])
    .unwrap();
    consumer.subscribe(&["orders"], None).unwrap();
    let (values, attempts) = process_batch(&consumer, 3).await.unwrap();
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let committed = consumer.committed(std::slice::from_ref(&tp)).await.unwrap();
    consumer.close().await;

    assert_eq!(values, ["order-0", "order-1", "order-2"]);
    assert_eq!(committed[&tp], Some(3));
    // odradek's commit_sync leaves coordinator errors to the application: it took 3 attempts.
    assert_eq!(attempts, 3);
    let commits: Vec<_> = cluster
        .requests()
        .into_iter()
        .filter(|r| r.api_key == ApiKey::OffsetCommit)
        .collect();
    assert_eq!(commits.len(), 3, "{commits:?}");
}
