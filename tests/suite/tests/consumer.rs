//! The consumer against a real broker (`odradek-broker`, or Apache Kafka with
//! `ODRADEK_TEST_BOOTSTRAP`).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use odradek::producer::TopicPartition;
use odradek::{ClientConfig, Consumer, ConsumerRecord, Error, ErrorCode, Producer, ProducerRecord};
use odradek_suite::broker_proxy::{BrokerProxy, FetchSeen};
use odradek_suite::{create_topic, topic_name, Target};

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

async fn produce(
    target: &Target,
    topic: &str,
    partition: i32,
    range: std::ops::Range<usize>,
    codec: &str,
) {
    let producer =
        Producer::new(target.config(&[("compression.type", codec), ("linger.ms", "1")])).unwrap();
    let mut futures = Vec::new();
    for i in range {
        let r = ProducerRecord::new(topic, format!("v{i}"))
            .key(format!("k{i}"))
            .partition(partition);
        futures.push(producer.send(r).await.unwrap());
    }
    for f in futures {
        f.await.unwrap();
    }
    producer.close().await;
}

/// Polls until `n` records arrived (or 30 s passed).
async fn consume_n(consumer: &Consumer, n: usize) -> Vec<ConsumerRecord> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while out.len() < n && tokio::time::Instant::now() < deadline {
        out.extend(consumer.poll(Duration::from_millis(200)).await.unwrap());
    }
    out
}

fn values(records: &[ConsumerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_every_codec_in_order_from_the_beginning() {
    let target = Target::start(&[]);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = topic_name(&format!("c-{codec}"));
        let consumer = Consumer::new(target.config(&[
            ("auto.offset.reset", "earliest"),
            ("max.poll.records", "37"),
        ]))
        .unwrap();
        create_topic(consumer.cluster(), &topic, 2).await;
        produce(&target, &topic, 0, 0..400, codec).await;
        produce(&target, &topic, 1, 400..650, codec).await;
        consumer.assign(&[tp(&topic, 0), tp(&topic, 1)]);
        let got = consume_n(&consumer, 650).await;
        assert_eq!(got.len(), 650, "{codec}");
        let mut per_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
        for r in &got {
            per_partition.entry(r.partition).or_default().push(r.offset);
            let i: usize = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap()[1..]
                .parse()
                .unwrap();
            assert_eq!(r.key.as_deref(), Some(format!("k{i}").as_bytes()));
        }
        assert_eq!(
            per_partition[&0],
            (0..400).collect::<Vec<i64>>(),
            "{codec} p0 in order"
        );
        assert_eq!(
            per_partition[&1],
            (0..250).collect::<Vec<i64>>(),
            "{codec} p1 in order"
        );
        assert_eq!(consumer.position(&tp(&topic, 0)).await.unwrap(), 400);
        consumer.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_watermarks_and_offsets_for_times() {
    let target = Target::start(&[]);
    let topic = topic_name("seek");
    let consumer = Consumer::new(target.config(&[("auto.offset.reset", "earliest")])).unwrap();
    create_topic(consumer.cluster(), &topic, 1).await;
    let producer = Producer::new(target.config(&[("linger.ms", "0")])).unwrap();
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 100_000;
    for i in 0..100 {
        producer
            .send(ProducerRecord::new(&topic, format!("v{i}")).timestamp(base + i * 10))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    producer.close().await;
    let p0 = tp(&topic, 0);
    consumer.assign(std::slice::from_ref(&p0));
    assert_eq!(consumer.fetch_watermarks(&p0).await.unwrap(), (0, 100));
    let times = consumer
        .offsets_for_times(&[(p0.clone(), base + 255)])
        .await
        .unwrap();
    assert_eq!(times[&p0], Some((26, base + 260)));
    let after = consumer
        .offsets_for_times(&[(p0.clone(), base + 10_000)])
        .await
        .unwrap();
    assert_eq!(after[&p0], None);

    consumer.seek(&p0, 42).unwrap();
    let got = consume_n(&consumer, 5).await;
    assert_eq!(got[0].offset, 42);
    assert_eq!(got[0].timestamp, base + 420);
    consumer.seek_to_end(std::slice::from_ref(&p0)).unwrap();
    assert_eq!(consumer.position(&p0).await.unwrap(), 100);
    assert!(consumer
        .poll(Duration::from_millis(300))
        .await
        .unwrap()
        .is_empty());
    consumer
        .seek_to_beginning(std::slice::from_ref(&p0))
        .unwrap();
    let got = consume_n(&consumer, 100).await;
    assert_eq!(got.first().unwrap().offset, 0);
    assert_eq!(values(&got).len(), 100);
    consumer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume() {
    let target = Target::start(&[]);
    let topic = topic_name("pause");
    let consumer = Consumer::new(target.config(&[("auto.offset.reset", "earliest")])).unwrap();
    create_topic(consumer.cluster(), &topic, 2).await;
    produce(&target, &topic, 0, 0..50, "lz4").await;
    produce(&target, &topic, 1, 50..100, "lz4").await;
    consumer.assign(&[tp(&topic, 0), tp(&topic, 1)]);
    consumer.pause(&[tp(&topic, 0)]).unwrap();
    assert_eq!(consumer.paused(), vec![tp(&topic, 0)]);
    let got = consume_n(&consumer, 50).await;
    assert!(
        got.iter().all(|r| r.partition == 1),
        "paused partition returned records"
    );
    assert!(consumer
        .poll(Duration::from_millis(300))
        .await
        .unwrap()
        .is_empty());
    consumer.resume(&[tp(&topic, 0)]).unwrap();
    let got = consume_n(&consumer, 50).await;
    assert_eq!(got.len(), 50);
    assert!(got.iter().all(|r| r.partition == 0));
    consumer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_policies() {
    let target = Target::start(&[]);
    let topic = topic_name("reset");
    let latest = Consumer::new(target.config(&[("auto.offset.reset", "latest")])).unwrap();
    create_topic(latest.cluster(), &topic, 1).await;
    produce(&target, &topic, 0, 0..10, "none").await;
    let p0 = tp(&topic, 0);
    latest.assign(std::slice::from_ref(&p0));
    assert_eq!(latest.position(&p0).await.unwrap(), 10);
    produce(&target, &topic, 0, 10..15, "none").await;
    let got = consume_n(&latest, 5).await;
    assert_eq!(values(&got), ["v10", "v11", "v12", "v13", "v14"]);
    latest.close().await;

    let none = Consumer::new(target.config(&[("auto.offset.reset", "none")])).unwrap();
    none.assign(std::slice::from_ref(&p0));
    let err = none.poll(Duration::from_millis(200)).await.unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err}");
    none.seek(&p0, 1000).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match none.poll(Duration::from_millis(200)).await {
            Err(e) => break e,
            Ok(r) => assert!(r.is_empty() && tokio::time::Instant::now() < deadline),
        }
    };
    assert!(
        matches!(err, Error::Kafka(ErrorCode::OffsetOutOfRange)),
        "{err}"
    );
    none.close().await;

    let earliest = Consumer::new(target.config(&[("auto.offset.reset", "earliest")])).unwrap();
    earliest.assign(std::slice::from_ref(&p0));
    earliest.seek(&p0, 1000).unwrap();
    let got = consume_n(&earliest, 15).await;
    assert_eq!(
        got.first().unwrap().offset,
        0,
        "out of range resets to earliest"
    );
    earliest.close().await;
}

/// Per-topic `auto.offset.reset` (KafkaJS's per-subscription `fromBeginning`): the rule's
/// topics start at the beginning, the others at the end; out of range follows the rule too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_topic_reset_policies() {
    let target = Target::start(&[]);
    let early = topic_name("reset-early");
    let late = topic_name("reset-late");
    let consumer = Consumer::new(target.config(&[("auto.offset.reset", "latest")])).unwrap();
    create_topic(consumer.cluster(), &early, 1).await;
    create_topic(consumer.cluster(), &late, 1).await;
    produce(&target, &early, 0, 0..5, "none").await;
    produce(&target, &late, 0, 0..5, "none").await;
    consumer.set_topic_offset_resets(vec![(
        odradek::consumer::TopicMatch::Name(early.clone()),
        odradek::config::OffsetReset::Earliest,
    )]);
    consumer.assign(&[tp(&early, 0), tp(&late, 0)]);
    assert_eq!(consumer.position(&tp(&early, 0)).await.unwrap(), 0);
    assert_eq!(consumer.position(&tp(&late, 0)).await.unwrap(), 5);
    produce(&target, &late, 0, 5..6, "none").await;
    let got = consume_n(&consumer, 6).await;
    let early_values: Vec<String> = values(&got[..]).into_iter().filter(|v| v != "v5").collect();
    assert_eq!(early_values, ["v0", "v1", "v2", "v3", "v4"]);
    assert!(got.iter().any(|r| *r.topic == *late && r.offset == 5));
    assert_eq!(got.len(), 6, "nothing of the late topic before its end");
    // Out of range: the early topic's rule sends it back to the beginning.
    consumer.seek(&tp(&early, 0), 1000).unwrap();
    let again = consume_n(&consumer, 5).await;
    assert_eq!(again.first().map(|r| r.offset), Some(0));
    consumer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_topic_polls_return_nothing() {
    let target = Target::start(&[]);
    let topic = topic_name("empty");
    let consumer = Consumer::new(target.config(&[
        ("auto.offset.reset", "earliest"),
        ("fetch.max.wait.ms", "100"),
    ]))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 1).await;
    consumer.assign(&[tp(&topic, 0)]);
    assert!(consumer
        .poll(Duration::from_millis(400))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(consumer.position(&tp(&topic, 0)).await.unwrap(), 0);
    consumer.close().await;
}

/// A consumer configuration that bootstraps through `proxy`.
fn via_proxy(proxy: &BrokerProxy, extra: &[(&str, &str)]) -> ClientConfig {
    let mut entries = vec![("bootstrap.servers", proxy.bootstrap.as_str())];
    entries.extend_from_slice(extra);
    ClientConfig::from_map(entries).unwrap()
}

/// Offsets per partition of `records`.
fn offsets_by_partition(records: &[ConsumerRecord]) -> BTreeMap<i32, Vec<i64>> {
    let mut seen: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for r in records {
        seen.entry(r.partition).or_default().push(r.offset);
    }
    seen
}

/// An assigned consumer reads on while connections are cut and (our broker) the broker is
/// SIGKILLed and restarted; against an external broker the faults are dropped connections only.
/// Every record arrives exactly once, in order per partition, including records produced after
/// the faults (which the consumer long-polls for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_and_dropped_connections_lose_and_repeat_nothing() {
    let mut target = Target::start(&[]);
    let proxy = BrokerProxy::start(&target.bootstrap);
    let topic = topic_name("consume-faults");
    let consumer = Consumer::new(via_proxy(
        &proxy,
        &[
            ("auto.offset.reset", "earliest"),
            ("reconnect.backoff.ms", "10"),
            ("retry.backoff.ms", "20"),
            ("max.poll.records", "50"),
            ("max.partition.fetch.bytes", "2000"),
            ("fetch.max.wait.ms", "100"),
        ],
    ))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 3).await;
    produce(&target, &topic, 0, 0..1500, "snappy").await;
    produce(&target, &topic, 1, 1500..3000, "none").await;
    produce(&target, &topic, 2, 3000..4500, "lz4").await;
    consumer.assign(&[tp(&topic, 0), tp(&topic, 1), tp(&topic, 2)]);
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    // Faults at these record counts: cut, restart (or cut), cut; then more data, and a cut
    // while the consumer waits for it.
    let mut faults = vec![(500, false), (1500, true), (3000, false)];
    let mut produced_more = false;
    let total = 4500 + 3 * 200;
    while got.len() < total {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {} records",
            got.len()
        );
        got.extend(consumer.poll(Duration::from_millis(100)).await.unwrap());
        if let Some(&(at, restart)) = faults.first() {
            if got.len() >= at {
                faults.remove(0);
                if restart && target.is_own_broker() {
                    target.restart();
                } else {
                    proxy.cut_all();
                }
            }
        }
        if !produced_more && got.len() >= 4500 {
            produced_more = true;
            proxy.cut_all();
            for p in 0..3 {
                let start = 10_000 + p as usize * 200;
                produce(&target, &topic, p, start..start + 200, "zstd").await;
            }
        }
    }
    let seen = offsets_by_partition(&got);
    for p in 0..3 {
        assert_eq!(
            seen[&p],
            (0..1700).collect::<Vec<i64>>(),
            "partition {p}: no loss, no repeats, in order"
        );
    }
    assert!(proxy.connections_accepted() > 1, "the cuts reconnected");
    consumer.close().await;
}

/// Incremental fetch sessions (KIP-227): the first fetch is full and opens a session, later
/// ones are incremental on it, and once everything is read an idle fetch lists nothing and
/// gets nothing back. New data on one partition comes back exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_sessions_are_incremental() {
    let target = Target::start(&[]);
    let proxy = BrokerProxy::start(&target.bootstrap);
    let topic = topic_name("fetch-session");
    let consumer = Consumer::new(via_proxy(
        &proxy,
        &[
            ("auto.offset.reset", "earliest"),
            ("fetch.max.wait.ms", "50"),
        ],
    ))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 6).await;
    for p in 0..6 {
        produce(&target, &topic, p, 0..20, "none").await;
    }
    let partitions: Vec<TopicPartition> = (0..6).map(|p| tp(&topic, p)).collect();
    consumer.assign(&partitions);
    let got = consume_n(&consumer, 120).await;
    assert_eq!(got.len(), 120);
    // Idle: wait for an incremental fetch that lists and returns nothing.
    let idle = |f: &FetchSeen| f.epoch > 0 && f.listed == 0 && f.forgotten == 0 && f.answered == 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !proxy.fetches().iter().any(idle) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            proxy.fetches()
        );
        assert!(consumer
            .poll(Duration::from_millis(50))
            .await
            .unwrap()
            .is_empty());
    }
    produce(&target, &topic, 2, 20..25, "none").await;
    let more = consume_n(&consumer, 5).await;
    assert!(consumer
        .poll(Duration::from_millis(300))
        .await
        .unwrap()
        .is_empty());
    let mut all = got;
    all.extend(more);
    let seen = offsets_by_partition(&all);
    for p in 0..6 {
        let n = if p == 2 { 25 } else { 20 };
        assert_eq!(seen[&p], (0..n).collect::<Vec<i64>>(), "partition {p}");
    }
    let fetches = proxy.fetches();
    let first = &fetches[0];
    assert_eq!(
        (first.session_id, first.epoch),
        (0, 0),
        "first fetch is full"
    );
    assert_ne!(first.response_session_id, 0, "the broker opened a session");
    // One session per broker the partitions' leaders are on (one on a single broker).
    let sessions: std::collections::BTreeSet<i32> = fetches
        .iter()
        .filter(|f| (f.session_id, f.epoch) == (0, 0))
        .map(|f| f.response_session_id)
        .collect();
    assert!(
        !sessions.contains(&0),
        "every broker opened a session: {fetches:?}"
    );
    assert!(fetches.iter().all(|f| f.error_code == 0), "{fetches:?}");
    let mut incremental_count = 0;
    for session in &sessions {
        let incremental: Vec<&FetchSeen> = fetches
            .iter()
            .filter(|f| f.session_id == *session && f.epoch > 0)
            .collect();
        incremental_count += incremental.len();
        // Epochs count up by one on each session.
        for w in incremental.windows(2) {
            assert_eq!(w[1].epoch, w[0].epoch + 1, "{fetches:?}");
        }
    }
    assert!(incremental_count >= 2, "{fetches:?}");
    // Once idle, only partition 2 had news: every later fetch listed and got back at most
    // that one partition, not all six.
    let idle_at = fetches.iter().position(idle).unwrap();
    assert!(
        fetches[idle_at..]
            .iter()
            .all(|f| f.listed <= 1 && f.answered <= 1 && sessions.contains(&f.session_id)),
        "incremental fetches carry changes only: {fetches:?}"
    );
    consumer.close().await;
    // Closing ends the sessions (epoch -1).
    let last = proxy.fetches().pop().unwrap();
    assert!(
        sessions.contains(&last.session_id) && (last.epoch, last.error_code) == (-1, 0),
        "{last:?}"
    );
}

/// Bytes fetched and not yet handed to the application, over every assigned partition.
fn prefetched_bytes(consumer: &Consumer) -> u64 {
    consumer
        .detailed_stats()
        .partitions
        .iter()
        .map(|p| p.buffered_bytes)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_stays_within_the_buffer_budget_while_the_application_does_not_poll() {
    const PARTITIONS: i32 = 4;
    const PER_PARTITION: usize = 512;
    const BUDGET: u64 = 256 * 1024;
    const BATCH: u64 = 16 * 1024;
    let target = Target::start(&[]);
    let topic = topic_name("budget");
    let consumer = Consumer::new(target.config(&[
        ("auto.offset.reset", "earliest"),
        ("queued.max.messages.kbytes", "256"),
    ]))
    .unwrap();
    create_topic(consumer.cluster(), &topic, PARTITIONS).await;
    // 2 MiB of 1 KiB values in batches of at most 16 KiB: eight times the budget, and far
    // below fetch.max.bytes (50 MiB), so only the budget can stop the prefetch.
    let producer = Producer::new(target.config(&[
        ("batch.size", "16384"),
        ("linger.ms", "5"),
        ("compression.type", "none"),
    ]))
    .unwrap();
    let mut deliveries = Vec::new();
    for partition in 0..PARTITIONS {
        for i in 0..PER_PARTITION {
            let mut value = format!("{partition}-{i}-").repeat(1024);
            value.truncate(1024);
            let record = ProducerRecord::new(topic.as_str(), value).partition(partition);
            deliveries.push(producer.send(record).await.unwrap());
        }
    }
    for d in deliveries {
        d.await.unwrap();
    }
    producer.close().await;

    let parts: Vec<TopicPartition> = (0..PARTITIONS).map(|p| tp(&topic, p)).collect();
    consumer.assign(&parts);
    // The application reads a little, then stops polling for two seconds: the prefetcher keeps
    // going until the budget is full, and no further.
    let mut got = consume_n(&consumer, 1).await;
    let mut peak = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(prefetched_bytes(&consumer));
    }
    // One batch per leader may overshoot (a broker always returns a whole first batch); one
    // leader here, batches of at most 16 KiB plus their header.
    assert!(
        peak <= BUDGET + BATCH + 1024,
        "the prefetch holds {peak} bytes, the budget is {BUDGET}"
    );
    assert!(
        peak >= BUDGET / 2,
        "the prefetch stopped early at {peak} bytes of a {BUDGET}-byte budget"
    );

    // Nothing was lost or repeated while the prefetch waited.
    let total = PARTITIONS as usize * PER_PARTITION;
    got.extend(consume_n(&consumer, total - got.len()).await);
    let offsets = offsets_by_partition(&got);
    for partition in 0..PARTITIONS {
        let expected: Vec<i64> = (0..PER_PARTITION as i64).collect();
        assert_eq!(
            offsets.get(&partition),
            Some(&expected),
            "partition {partition}"
        );
    }
    consumer.close().await;
}
