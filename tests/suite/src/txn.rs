//! Helpers for the transaction tests: the broker capability check and reading a topic to its
//! end with either isolation level.

use std::time::Duration;

use odradek::cluster::Cluster;
use odradek::producer::TopicPartition;
use odradek::protocol::messages::ApiKey;
use odradek::{Consumer, ConsumerRecord};

use crate::Target;

/// Whether the broker serves transactions (advertises EndTxn in ApiVersions). Transaction
/// tests return early, saying so, when it does not.
pub async fn supports_transactions(cluster: &Cluster) -> bool {
    let meta = cluster.refresh().await.expect("metadata");
    let node = *meta.brokers.keys().next().expect("a broker");
    let conn = cluster.connection(node).await.expect("connection");
    let supported = conn.versions().broker_range(ApiKey::EndTxn).is_some();
    if !supported {
        eprintln!("skipped: the broker does not advertise EndTxn (no transaction support)");
    }
    supported
}

/// Every partition of `topic` (`partitions` of them).
pub fn partitions(topic: &str, partitions: i32) -> Vec<TopicPartition> {
    (0..partitions)
        .map(|p| TopicPartition {
            topic: topic.into(),
            partition: p,
        })
        .collect()
}

/// Reads `topic` from the beginning to its end as of now (the last stable offset with
/// `read_committed`, the high watermark otherwise), in partition order.
pub async fn read_to_end(
    target: &Target,
    topic: &str,
    partition_count: i32,
    read_committed: bool,
) -> Vec<ConsumerRecord> {
    read_to_end_at(&target.bootstrap, topic, partition_count, read_committed).await
}

/// [`read_to_end`] from the cluster at `bootstrap` (a list of `host:port`).
pub async fn read_to_end_at(
    bootstrap: &str,
    topic: &str,
    partition_count: i32,
    read_committed: bool,
) -> Vec<ConsumerRecord> {
    let isolation = if read_committed {
        "read_committed"
    } else {
        "read_uncommitted"
    };
    let consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", isolation),
    ])
    .expect("consumer");
    let tps = partitions(topic, partition_count);
    consumer.assign(&tps);
    let mut ends = Vec::new();
    for tp in &tps {
        ends.push(consumer.fetch_watermarks(tp).await.expect("watermarks").1);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    loop {
        let mut done = true;
        for (tp, end) in tps.iter().zip(&ends) {
            if consumer.position(tp).await.expect("position") < *end {
                done = false;
            }
        }
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reading {topic} to {ends:?} timed out after {} records",
            out.len()
        );
        out.extend(
            consumer
                .poll(Duration::from_millis(200))
                .await
                .expect("poll"),
        );
    }
    consumer.close().await;
    out.sort_by_key(|r| (r.partition, r.offset));
    out
}

/// The record values as UTF-8 strings.
pub fn values(records: &[ConsumerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

/// Calls a transactional operation again while it times out (it goes on in the background;
/// calling again waits for the same one), up to four more times.
pub async fn retry_timeouts<F, Fut>(mut call: F) -> odradek::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = odradek::Result<()>>,
{
    let mut attempts = 0;
    loop {
        match call().await {
            Err(odradek::Error::Timeout(m)) if attempts < 4 => {
                attempts += 1;
                eprintln!("transactions: timed out ({m}); waiting again");
            }
            other => return other,
        }
    }
}

/// Moves every assigned partition back to the group's committed offset (after an abort, what
/// was consumed in the aborted transaction must be processed again).
pub async fn rewind(consumer: &Consumer) -> odradek::Result<()> {
    let assignment = consumer.assignment();
    let committed = consumer.committed(&assignment).await?;
    for tp in &assignment {
        match committed.get(tp).copied().flatten() {
            Some(offset) => consumer.seek(tp, offset)?,
            None => consumer.seek_to_beginning(std::slice::from_ref(tp))?,
        }
    }
    Ok(())
}
