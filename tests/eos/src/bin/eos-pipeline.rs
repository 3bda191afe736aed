//! The exactly-once pipeline the checker kills and restarts: consume the input topic
//! (read_committed, in a group with static membership), copy each record to the output topic's
//! same partition, and commit the consumed offsets in the same transaction.
//!
//! ```text
//! eos-pipeline BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID
//! ```
//!
//! Runs until killed. An abortable error aborts the transaction and rewinds to the committed
//! offsets; anything else ends the process (exit 2 for fatal errors, 1 otherwise).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use odradek::producer::TopicPartition;
use odradek::{Consumer, Error, Producer, ProducerRecord, Result};
use odradek_suite::txn::{retry_timeouts, rewind};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    if std::env::var_os("ODRADEK_CLIENT_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("odradek=debug"))
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bootstrap, input, output, group, txn_id] = args.as_slice() else {
        eprintln!("usage: eos-pipeline BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID");
        return ExitCode::from(64);
    };
    match run(bootstrap, input, output, group, txn_id).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eos-pipeline: {e}");
            ExitCode::from(if e.is_fatal() { 2 } else { 1 })
        }
    }
}

async fn run(bootstrap: &str, input: &str, output: &str, group: &str, txn_id: &str) -> Result<()> {
    let consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("group.id", group),
        // Static membership: a restarted pipeline takes the killed one's place at once.
        ("group.instance.id", txn_id),
        ("isolation.level", "read_committed"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "10000"),
    ])?;
    let producer = Producer::from_map([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", txn_id),
        ("transaction.timeout.ms", "10000"),
        ("linger.ms", "5"),
    ])?;
    // Fences the killed instance and aborts the transaction it left open.
    retry_timeouts(|| producer.init_transactions(CALL_TIMEOUT)).await?;
    consumer.subscribe(&[input], None)?;
    loop {
        let records = consumer.poll(Duration::from_millis(200)).await?;
        if records.is_empty() {
            continue;
        }
        producer.begin_transaction()?;
        let mut offsets: BTreeMap<TopicPartition, i64> = BTreeMap::new();
        let outcome = async {
            for r in records {
                let tp = TopicPartition {
                    topic: r.topic.clone(),
                    partition: r.partition,
                };
                offsets.insert(tp, r.offset + 1);
                let out = ProducerRecord {
                    topic: output.to_string(),
                    partition: Some(r.partition),
                    key: r.key,
                    value: r.value,
                    headers: r.headers,
                    timestamp: None,
                };
                // Deliveries are settled by the commit (a failed one fails it).
                drop(producer.send(out).await?);
            }
            let offsets: Vec<(TopicPartition, i64)> = offsets.into_iter().collect();
            let group = consumer
                .consumer_group_metadata()
                .await
                .ok_or_else(|| Error::State("no group".into()))?;
            producer
                .send_offsets_to_transaction(&offsets, &group)
                .await?;
            retry_timeouts(|| producer.commit_transaction(CALL_TIMEOUT)).await
        }
        .await;
        match outcome {
            Ok(()) => {}
            Err(e) if e.is_abortable() => {
                eprintln!("eos-pipeline: aborting: {e}");
                retry_timeouts(|| producer.abort_transaction(CALL_TIMEOUT)).await?;
                rewind(&consumer).await?;
            }
            Err(e) => return Err(e),
        }
    }
}
