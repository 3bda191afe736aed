//! The producer against a real broker: `odradek-broker` by default, Apache Kafka when
//! `ODRADEK_TEST_BOOTSTRAP` is set (the compatibility tier does that).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use odradek::producer::partition_for_key;
use odradek::records::Header;
use odradek::{Error, ErrorCode, Producer, ProducerRecord};
use odradek_suite::{create_topic, read_partition, topic_name, Target};

/// A fixed base an hour in the past: brokers reject timestamps more than an hour ahead.
fn base_ts() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    now - 3_600_000
}

fn record(topic: &str, i: usize, base: i64) -> ProducerRecord {
    ProducerRecord::new(topic, format!("value-{i}"))
        .key(format!("key-{}", i % 7))
        .header("n", Some(i.to_string()))
        .header("n", Some("dup"))
        .timestamp(base + i as i64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_and_acks_level_round_trips() {
    let target = Target::start(&[]);
    let base = base_ts();
    let codecs: Vec<String> = std::env::var("SUITE_CODECS")
        .map(|v| v.split(',').map(String::from).collect())
        .unwrap_or_else(|_| {
            ["none", "gzip", "snappy", "lz4", "zstd"]
                .map(String::from)
                .to_vec()
        });
    for codec in codecs.iter().map(String::as_str) {
        for acks in ["0", "1", "all"] {
            let topic = topic_name(&format!("{codec}-{acks}"));
            let producer = Producer::new(target.config(&[
                ("compression.type", codec),
                ("acks", acks),
                ("linger.ms", "2"),
            ]))
            .unwrap();
            create_topic(producer.cluster(), &topic, 3).await;
            let mut futures = Vec::new();
            for i in 0..300 {
                futures.push(producer.send(record(&topic, i, base)).await.unwrap());
            }
            let mut offsets: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
            for f in futures {
                let md = f.await.unwrap();
                offsets.entry(md.partition).or_default().push(md.offset);
            }
            producer.flush().await;
            let mut total = 0;
            for (&partition, sent) in &offsets {
                let stored = read_partition(producer.cluster(), &topic, partition).await;
                total += stored.len();
                if acks != "0" {
                    assert_eq!(
                        sent,
                        &(0..sent.len() as i64).collect::<Vec<_>>(),
                        "{codec}/{acks}: contiguous offsets"
                    );
                } else {
                    assert!(sent.iter().all(|&o| o == -1), "acks=0 reports offset -1");
                }
                for r in &stored {
                    let v = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
                    let i: usize = v.trim_start_matches("value-").parse().unwrap();
                    assert_eq!(r.key.as_deref(), Some(format!("key-{}", i % 7).as_bytes()));
                    assert_eq!(r.timestamp, base + i as i64);
                    assert_eq!(
                        r.headers,
                        vec![
                            Header::new("n", Some(i.to_string())),
                            Header::new("n", Some("dup"))
                        ]
                    );
                    assert_eq!(
                        partition,
                        partition_for_key(r.key.as_deref().unwrap(), 3),
                        "murmur2 partition"
                    );
                }
            }
            assert_eq!(total, 300, "{codec}/acks={acks}");
            producer.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_records_keep_their_order_and_tombstones_survive() {
    let target = Target::start(&[]);
    let producer = Producer::new(target.config(&[
        ("linger.ms", "0"),
        ("max.in.flight.requests.per.connection", "1"),
    ]))
    .unwrap();
    let topic = topic_name("order");
    create_topic(producer.cluster(), &topic, 4).await;
    let mut futures = Vec::new();
    for i in 0..500 {
        let mut r = ProducerRecord::new(&topic, format!("{i}")).key("same-key");
        if i % 50 == 49 {
            r.value = None;
        }
        futures.push(producer.send(r).await.unwrap());
    }
    futures.push(
        producer
            .send(ProducerRecord {
                topic: topic.clone(),
                value: Some(Bytes::from_static(b"nokey")),
                ..Default::default()
            })
            .await
            .unwrap(),
    );
    let mut last = -1;
    let mut partition = None;
    for f in futures.drain(..500) {
        let md = f.await.unwrap();
        assert!(md.offset > last, "offsets increase in send order");
        last = md.offset;
        assert_eq!(
            *partition.get_or_insert(md.partition),
            md.partition,
            "same key, same partition"
        );
    }
    futures.pop().unwrap().await.unwrap();
    let stored = read_partition(producer.cluster(), &topic, partition.unwrap()).await;
    let values: Vec<Option<String>> = stored
        .iter()
        .filter(|r| r.key.as_deref() == Some(b"same-key"))
        .map(|r| {
            r.value
                .as_ref()
                .map(|v| String::from_utf8(v.to_vec()).unwrap())
        })
        .collect();
    let expected: Vec<Option<String>> = (0..500)
        .map(|i| (i % 50 != 49).then(|| i.to_string()))
        .collect();
    assert_eq!(values, expected);
    producer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_records_fail_alone() {
    let target = Target::start(&[]);
    let topic = topic_name("big");
    // Client-side limit: rejected before it is queued.
    let producer = Producer::new(target.config(&[("max.request.size", "10000")])).unwrap();
    create_topic(producer.cluster(), &topic, 1).await;
    let err = producer
        .send(ProducerRecord::new(&topic, vec![0u8; 20_000]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::RecordTooLarge {
                limit_name: "max.request.size",
                ..
            }
        ),
        "{err}"
    );
    producer.close().await;
    // Broker-side limit (message.max.bytes 1048588): MESSAGE_TOO_LARGE for that record only.
    let producer =
        Producer::new(target.config(&[("max.request.size", "5000000"), ("linger.ms", "0")]))
            .unwrap();
    let before = producer
        .send(ProducerRecord::new(&topic, "before"))
        .await
        .unwrap();
    assert!(before.await.is_ok());
    let big = producer
        .send(ProducerRecord::new(&topic, vec![7u8; 1_500_000]))
        .await
        .unwrap();
    let err = big.await.unwrap_err();
    assert!(
        matches!(err, Error::Kafka(ErrorCode::MessageTooLarge)),
        "{err}"
    );
    assert!(!err.is_retriable());
    let after = producer
        .send(ProducerRecord::new(&topic, "after"))
        .await
        .unwrap();
    assert!(after.await.is_ok());
    producer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topics_follow_auto_create() {
    let target = Target::start(&[]);
    let topic = topic_name("auto");
    let producer = Producer::new(target.config(&[])).unwrap();
    let md = producer
        .send(ProducerRecord::new(&topic, "x"))
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(md.offset, 0);
    producer.close().await;
    let producer = Producer::new(target.config(&[
        ("allow.auto.create.topics", "false"),
        ("max.block.ms", "1500"),
    ]))
    .unwrap();
    let err = producer
        .send(ProducerRecord::new(topic_name("never"), "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout(_) | Error::Kafka(ErrorCode::UnknownTopicOrPartition)
        ),
        "{err}"
    );
    producer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_resolve_exactly_once_across_a_broker_restart() {
    let mut target = Target::start(&[("log.flush.interval.messages", "1")]);
    if !target.is_own_broker() {
        return; // Restarting needs our own broker process.
    }
    let producer = std::sync::Arc::new(
        Producer::new(target.config(&[
            ("linger.ms", "1"),
            ("max.in.flight.requests.per.connection", "1"),
            ("retry.backoff.ms", "50"),
            ("reconnect.backoff.ms", "20"),
            ("request.timeout.ms", "5000"),
            ("delivery.timeout.ms", "60000"),
        ]))
        .unwrap(),
    );
    let topic = topic_name("restart");
    create_topic(producer.cluster(), &topic, 2).await;
    let mut futures = Vec::new();
    for i in 0..3000 {
        futures.push(
            producer
                .send(ProducerRecord::new(&topic, format!("{i}")).key(format!("k{}", i % 2)))
                .await
                .unwrap(),
        );
        if i == 1000 || i == 2000 {
            target.restart();
        }
        if i % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let mut acked: BTreeMap<i32, Vec<(i64, usize)>> = BTreeMap::new();
    for (i, f) in futures.into_iter().enumerate() {
        let md = tokio::time::timeout(Duration::from_secs(90), f)
            .await
            .expect("every future resolves")
            .unwrap();
        acked.entry(md.partition).or_default().push((md.offset, i));
    }
    for (partition, sent) in acked {
        let stored = read_partition(producer.cluster(), &topic, partition).await;
        let by_offset: BTreeMap<i64, String> = stored
            .iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap(),
                )
            })
            .collect();
        for (offset, i) in &sent {
            assert_eq!(
                by_offset.get(offset),
                Some(&i.to_string()),
                "acknowledged record {i} at {offset}"
            );
        }
        let order: Vec<usize> = sent.iter().map(|(_, i)| *i).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted, "per-partition order follows send order");
    }
    producer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_lose_nothing() {
    let Some((_target, proxy)) = odradek_suite::Target::start_behind_proxy(&[]).await else {
        return;
    };
    let config = odradek::ClientConfig::from_map([
        ("bootstrap.servers", proxy.addr.as_str()),
        ("linger.ms", "1"),
        ("max.in.flight.requests.per.connection", "1"),
        ("retry.backoff.ms", "20"),
        ("reconnect.backoff.ms", "10"),
    ])
    .unwrap();
    let producer = Producer::new(config).unwrap();
    let topic = topic_name("proxy");
    create_topic(producer.cluster(), &topic, 1).await;
    let mut futures = Vec::new();
    for i in 0..2000 {
        futures.push(
            producer
                .send(ProducerRecord::new(&topic, format!("{i}")))
                .await
                .unwrap(),
        );
        if i % 400 == 399 {
            proxy.cut_all();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let mut acked = Vec::new();
    for f in futures {
        let md = tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("resolves")
            .unwrap();
        acked.push(md.offset);
    }
    let stored = read_partition(producer.cluster(), &topic, 0).await;
    let values: Vec<String> = stored
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect();
    for (i, offset) in acked.iter().enumerate() {
        assert_eq!(
            values.get(*offset as usize),
            Some(&i.to_string()),
            "record {i} at offset {offset}"
        );
    }
    let mut sorted = acked.clone();
    sorted.sort_unstable();
    assert_eq!(acked, sorted, "order preserved with max.in.flight=1");
    producer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_report_brokers_and_partitions() {
    let target = Target::start(&[]);
    let producer = Producer::new(target.config(&[])).unwrap();
    let topic = topic_name("stats");
    create_topic(producer.cluster(), &topic, 2).await;
    for i in 0..50 {
        producer
            .send(ProducerRecord::new(&topic, format!("{i}")).partition(i % 2))
            .await
            .unwrap();
    }
    producer.flush().await;
    let stats = producer.stats();
    assert_eq!(stats.pending_records, 0);
    assert_eq!(stats.partitions.len(), 2);
    assert!(stats.partitions.iter().all(|p| p.batches_sent >= 1));
    assert!(stats
        .brokers
        .iter()
        .any(|b| b.requests > 0 && b.bytes_sent > 0));
    producer.close().await;
}

/// The report queue (what the bindings use for delivery reports): every appended record reports
/// once under its token, with the offset it is stored at; refused records and records without a
/// token report nothing; a partition's reports come in offset order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_queue_reports_every_tokened_record_once_at_its_offset() {
    use odradek::producer::ReportQueue;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let target = Target::start(&[]);
    let producer =
        Producer::new(target.config(&[("linger.ms", "2"), ("max.request.size", "100000")]))
            .unwrap();
    let topic = topic_name("reports");
    create_topic(producer.cluster(), &topic, 3).await;
    let wakeups = Arc::new(AtomicUsize::new(0));
    let w = wakeups.clone();
    let queue = ReportQueue::new(move || {
        w.fetch_add(1, Ordering::SeqCst);
    });
    // Fill the topic's metadata cache so the non-waiting entry point takes the records.
    producer
        .send(ProducerRecord::new(&topic, "warm").partition(0))
        .await
        .unwrap()
        .await
        .unwrap();
    let mut records = Vec::new();
    let mut tokens = Vec::new();
    for i in 0..3000u64 {
        let value = if i == 17 {
            vec![b'x'; 200_000] // too large: refused, no report
        } else {
            format!("{i}").into_bytes()
        };
        records.push(ProducerRecord::new(&topic, value).key(format!("k{}", i % 5)));
        // Every third record has no token: appended, never reported.
        tokens.push((i % 3 != 2).then_some(1000 + i));
    }
    let sent = producer
        .try_send_reported(&records, &queue, &tokens)
        .unwrap();
    assert_eq!(sent.consumed, records.len());
    assert_eq!(sent.refused.len(), 1);
    assert_eq!(sent.refused[0].0, 17);
    // One more through the waiting entry point.
    producer
        .send_reported(ProducerRecord::new(&topic, "last").partition(1), &queue, 9)
        .await
        .unwrap();
    let expected = tokens
        .iter()
        .enumerate()
        .filter(|(i, t)| *i != 17 && t.is_some())
        .count()
        + 1;
    producer.flush().await;
    let mut reports = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while reports.len() < expected {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {expected} reports",
            reports.len()
        );
        queue.drain_into(&mut reports);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    queue.drain_into(&mut reports);
    assert_eq!(
        reports.len(),
        expected,
        "no report twice, none for untracked records"
    );
    assert!(wakeups.load(Ordering::SeqCst) >= 1);
    let mut last: BTreeMap<i32, i64> = BTreeMap::new();
    let mut by_partition: BTreeMap<i32, BTreeMap<i64, u64>> = BTreeMap::new();
    for (token, result) in &reports {
        let md = result.as_ref().unwrap();
        let prev = last.insert(md.partition, md.offset);
        assert!(prev.is_none_or(|p| p < md.offset), "partition order");
        by_partition
            .entry(md.partition)
            .or_default()
            .insert(md.offset, *token);
    }
    for (partition, offsets) in by_partition {
        let stored = read_partition(producer.cluster(), &topic, partition).await;
        let values: BTreeMap<i64, String> = stored
            .iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap(),
                )
            })
            .collect();
        for (offset, token) in offsets {
            let want = if token == 9 {
                "last".to_string()
            } else {
                (token - 1000).to_string()
            };
            assert_eq!(
                values.get(&offset),
                Some(&want),
                "token {token} at {partition}/{offset}"
            );
        }
    }
    producer.close().await;
}

/// Produces `records` (key, timestamp) to partition 0 of a new one-partition topic with
/// `configs`, in one batch, and returns each record's outcome in order.
async fn outcomes_of_one_batch(
    target: &Target,
    tag: &str,
    configs: &[(&str, &str)],
    records: &[(Option<&str>, i64)],
) -> Vec<std::result::Result<i64, Error>> {
    let topic = topic_name(tag);
    let admin = odradek::admin::Admin::new(target.config(&[]));
    let mut new_topic = odradek::admin::NewTopic::new(&topic).partitions(1);
    for (k, v) in configs {
        new_topic = new_topic.config(*k, *v);
    }
    let created = admin.create_topics(&[new_topic], false).await.unwrap();
    assert!(created[0].1.is_ok(), "create {topic}: {:?}", created[0].1);
    // One batch: the records wait in the accumulator until all are there.
    let producer = Producer::new(target.config(&[("linger.ms", "200"), ("retries", "0")])).unwrap();
    let mut futures = Vec::new();
    for (key, ts) in records {
        let mut r = ProducerRecord::new(&topic, "value")
            .partition(0)
            .timestamp(*ts);
        if let Some(k) = key {
            r = r.key(k.to_string());
        }
        futures.push(producer.send(r).await.unwrap());
    }
    let mut out = Vec::new();
    for f in futures {
        out.push(f.await.map(|md| md.offset));
    }
    out
}

/// The per-record outcome as a short name: the Kafka code of a listed record, "different" for
/// one refused because another record of its batch was invalid.
fn outcome_name(outcome: &std::result::Result<i64, Error>) -> String {
    match outcome {
        Ok(_) => "ok".into(),
        Err(Error::InvalidDifferentRecord { .. }) => "different".into(),
        Err(e) => e.kafka_code().name().into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_the_broker_names_invalid_fail_alone_and_the_rest_say_so() {
    // Kafka (and odradek-broker) refuse the batch and list the invalid records (KIP-467); as in
    // the Java client and librdkafka, a listed record gets the partition's code when it is the
    // only one, INVALID_RECORD when several are, and every other record of the batch is
    // refused as "a different record was invalid". The same on both brokers.
    let target = Target::start(&[]);
    let now = base_ts() + 3_600_000;
    let compacted = [("cleanup.policy", "compact")];
    let keyless = outcomes_of_one_batch(
        &target,
        "keyless",
        &compacted,
        &[
            (Some("a"), now),
            (None, now),
            (Some("b"), now),
            (None, now),
            (Some("c"), now),
        ],
    )
    .await;
    let names: Vec<String> = keyless.iter().map(outcome_name).collect();
    assert_eq!(
        names,
        [
            "different",
            "INVALID_RECORD",
            "different",
            "INVALID_RECORD",
            "different"
        ]
    );
    let Err(Error::KafkaMessage { message, .. }) = &keyless[1] else {
        panic!("{:?}", keyless[1]);
    };
    assert!(
        message.starts_with("Compacted topic cannot accept message without key"),
        "{message}"
    );
    // One bad timestamp: that record gets the partition's own code, INVALID_TIMESTAMP.
    let hour = 3_600_000;
    let timestamps = outcomes_of_one_batch(
        &target,
        "timestamps",
        &[("message.timestamp.before.max.ms", "3600000")],
        &[(None, now), (None, now - 2 * hour), (None, now)],
    )
    .await;
    let names: Vec<String> = timestamps.iter().map(outcome_name).collect();
    assert_eq!(names, ["different", "INVALID_TIMESTAMP", "different"]);
    // The producer carries on: a good batch after the refused ones is written at offset 0.
    let good = outcomes_of_one_batch(&target, "good", &compacted, &[(Some("k"), now)]).await;
    assert_eq!(good[0].as_ref().ok(), Some(&0));
}

/// Records handed over in small batches while the topic's metadata is still being fetched
/// (the first ones are held, later ones may go straight to their batch) keep their order on
/// the partition: offsets follow the order of the calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_handed_over_during_the_first_metadata_keep_their_order() {
    let target = Target::start(&[]);
    let admin = Producer::new(target.config(&[])).unwrap();
    for round in 0..40 {
        let topic = topic_name(&format!("held-order-{round}"));
        create_topic(admin.cluster(), &topic, 1).await;
        let producer = Producer::new(target.config(&[("linger.ms", "5")])).unwrap();
        let mut futures = Vec::new();
        for chunk in 0..5 {
            let records: Vec<ProducerRecord> = (chunk * 7..chunk * 7 + 7)
                .map(|i| ProducerRecord::new(&topic, format!("v{i}")).partition(0))
                .collect();
            let batch = producer.try_send_batch(&records, true).unwrap();
            assert_eq!(batch.consumed, 7);
            for i in 0..7 {
                futures.push(batch.deliveries.delivery(i).unwrap());
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        for (i, f) in futures.into_iter().enumerate() {
            let md = f.await.unwrap();
            assert_eq!(md.offset, i as i64, "round {round}: record v{i}");
        }
    }
}
