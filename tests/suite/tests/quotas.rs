//! Client quotas against a real broker (`odradek-broker`, or Apache Kafka when
//! `ODRADEK_TEST_BOOTSTRAP` is set): quota administration and Kafka's errors for bad input,
//! the precedence of entity combinations, and byte rates that settle at the quota while an
//! unthrottled client on the same broker keeps its speed.
//!
//! The rate tests need `quota.window.num=2` on the broker (the compatibility tier starts Kafka
//! so, and the suite's own broker gets it as an override): with Kafka's default of 11 one-second
//! windows a greedy client is allowed a burst of ten seconds' worth every ~11 s, so a 20 s
//! measurement would depend on where the bursts fall; with two windows the burst is one second's
//! worth and 20 s hold many periods.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odradek::admin::{
    Admin, ConfigResource, QuotaAlteration, QuotaEntity, QuotaFilter, QuotaMatch,
};
use odradek::{Consumer, ErrorCode, Producer, ProducerRecord, TopicPartition};
use odradek_suite::{create_topic, topic_name, Target};

const WINDOWS: &str = "2";

/// The tests run one at a time: on a shared broker (Apache Kafka) the precedence rows set
/// user-level and default quotas that would throttle the other tests' clients.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const RATE: f64 = 256.0 * 1024.0;
const VALUE: usize = 8 * 1024;

fn entity(parts: &[(&str, Option<&str>)]) -> QuotaEntity {
    parts
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect()
}

fn set(e: QuotaEntity, key: &str, value: Option<f64>) -> QuotaAlteration {
    QuotaAlteration {
        entity: e,
        ops: vec![(key.to_string(), value)],
    }
}

async fn alter_ok(admin: &Admin, alterations: &[QuotaAlteration]) {
    for (e, r) in admin.alter_client_quotas(alterations, false).await.unwrap() {
        r.unwrap_or_else(|err| panic!("{e:?}: {err}"));
    }
}

async fn alter_code(admin: &Admin, alteration: QuotaAlteration) -> ErrorCode {
    let results = admin
        .alter_client_quotas(&[alteration], false)
        .await
        .unwrap();
    match &results[0].1 {
        Ok(()) => ErrorCode::NoError,
        Err(e) => e.kafka_code(),
    }
}

/// Waits until a describe shows `want` for `e` (Kafka applies alterations through its metadata
/// log, a moment after the answer).
async fn wait_described(admin: &Admin, e: &QuotaEntity, want: Option<BTreeMap<String, f64>>) {
    let filter = QuotaFilter {
        components: e
            .iter()
            .map(|(t, n)| {
                let m = n.clone().map_or(QuotaMatch::Default, QuotaMatch::Exact);
                (t.clone(), m)
            })
            .collect(),
        strict: true,
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let found = admin.describe_client_quotas(&filter).await.unwrap();
        let got = found.into_iter().find(|(x, _)| x == e).map(|(_, v)| v);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{e:?}: {got:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_are_altered_described_and_bad_input_gets_kafkas_errors() {
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let user = topic_name("quota-user");
    let alice = entity(&[("user", Some(&user))]);
    let alice_app = entity(&[("user", Some(&user)), ("client-id", Some("app"))]);
    alter_ok(
        &admin,
        &[
            QuotaAlteration {
                entity: alice.clone(),
                ops: vec![
                    ("producer_byte_rate".into(), Some(1_048_576.0)),
                    ("request_percentage".into(), Some(12.5)),
                ],
            },
            set(alice_app.clone(), "consumer_byte_rate", Some(2048.0)),
        ],
    )
    .await;
    let mut want = BTreeMap::new();
    want.insert("producer_byte_rate".to_string(), 1_048_576.0);
    want.insert("request_percentage".to_string(), 12.5);
    wait_described(&admin, &alice, Some(want)).await;
    // A non-strict filter on the user finds both entities.
    let both = admin
        .describe_client_quotas(&QuotaFilter {
            components: vec![("user".into(), QuotaMatch::Exact(user.clone()))],
            strict: false,
        })
        .await
        .unwrap();
    assert_eq!(both.len(), 2, "{both:?}");

    // Bad input: Kafka's INVALID_REQUEST per alteration, nothing changed.
    let bad = [
        set(alice.clone(), "producer_byte_rate", Some(-1.0)),
        set(alice.clone(), "producer_byte_rate", Some(0.0)),
        set(alice.clone(), "producer_byte_rate", Some(1.5)),
        set(alice.clone(), "no_such_rate", Some(1.0)),
        set(
            entity(&[("group", Some("g"))]),
            "producer_byte_rate",
            Some(1.0),
        ),
        set(
            entity(&[("ip", Some("10.0.0.1"))]),
            "producer_byte_rate",
            Some(1.0),
        ),
        set(
            entity(&[("user", Some(&user)), ("ip", Some("10.0.0.1"))]),
            "connection_creation_rate",
            Some(1.0),
        ),
        set(entity(&[]), "producer_byte_rate", Some(1.0)),
        set(
            entity(&[("user", Some(""))]),
            "producer_byte_rate",
            Some(1.0),
        ),
    ];
    for b in bad {
        let code = alter_code(&admin, b.clone()).await;
        assert_eq!(code, ErrorCode::InvalidRequest, "{b:?}");
    }
    // validate_only checks and changes nothing.
    let r = admin
        .alter_client_quotas(&[set(alice.clone(), "producer_byte_rate", Some(5.0))], true)
        .await
        .unwrap();
    assert!(r[0].1.is_ok());
    // Describe errors: an unknown entity type, an IP filter mixed with a user filter.
    let err = admin
        .describe_client_quotas(&QuotaFilter {
            components: vec![("group".into(), QuotaMatch::Any)],
            strict: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.kafka_code(), ErrorCode::UnsupportedVersion, "{err}");
    let err = admin
        .describe_client_quotas(&QuotaFilter {
            components: vec![
                ("ip".into(), QuotaMatch::Any),
                ("user".into(), QuotaMatch::Any),
            ],
            strict: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.kafka_code(), ErrorCode::InvalidRequest, "{err}");
    let mut unchanged = BTreeMap::new();
    unchanged.insert("producer_byte_rate".to_string(), 1_048_576.0);
    unchanged.insert("request_percentage".to_string(), 12.5);
    wait_described(&admin, &alice, Some(unchanged)).await;

    // Removal.
    alter_ok(
        &admin,
        &[
            QuotaAlteration {
                entity: alice.clone(),
                ops: vec![
                    ("producer_byte_rate".into(), None),
                    ("request_percentage".into(), None),
                ],
            },
            set(alice_app.clone(), "consumer_byte_rate", None),
        ],
    )
    .await;
    wait_described(&admin, &alice, None).await;
    wait_described(&admin, &alice_app, None).await;
}

/// Fails unless the broker samples quotas over `WINDOWS` windows (see the module docs).
async fn require_short_windows(admin: &Admin) {
    let meta = admin.cluster().refresh().await.unwrap();
    let node = *meta.brokers.keys().next().unwrap();
    let configs = admin
        .describe_configs(&[ConfigResource::Broker(node)])
        .await
        .unwrap();
    let entries = configs[0].1.as_ref().unwrap();
    let windows = entries
        .iter()
        .find(|e| e.name == "quota.window.num")
        .and_then(|e| e.value.clone());
    assert_eq!(
        windows.as_deref(),
        Some(WINDOWS),
        "the rate tests need the broker started with quota.window.num={WINDOWS}"
    );
}

/// Bytes written to (`sent`) or read from every broker so far: what the byte-rate quotas count
/// (whole requests and responses, including what a consumer drops, such as the cut batch at the
/// end of a Kafka fetch response).
fn wire_bytes(cluster: &odradek::cluster::Cluster, sent: bool) -> u64 {
    cluster
        .broker_stats()
        .iter()
        .map(|b| if sent { b.bytes_sent } else { b.bytes_received })
        .sum()
}

/// Produces as fast as the broker lets it for `duration`; returns the payload bytes
/// acknowledged in `[warmup, duration)`, and the request bytes written from the warmup's end
/// to the loop's with the time between those two readings.
async fn produce_for(
    producer: Arc<Producer>,
    topic: String,
    warmup: Duration,
    duration: Duration,
) -> (u64, u64, Duration) {
    let started = Instant::now();
    let acked = Arc::new(AtomicU64::new(0));
    let mut pending = tokio::task::JoinSet::new();
    let value = vec![b'q'; VALUE];
    let mut wire_at_warmup = None;
    let mut warmed_at = started;
    while started.elapsed() < duration {
        if wire_at_warmup.is_none() && started.elapsed() >= warmup {
            wire_at_warmup = Some(wire_bytes(producer.cluster(), true));
            warmed_at = Instant::now();
        }
        let f = producer
            .send(ProducerRecord::new(topic.as_str(), value.clone()))
            .await
            .unwrap();
        let acked = acked.clone();
        pending.spawn(async move {
            f.await.unwrap();
            let at = started.elapsed();
            if at >= warmup && at < duration {
                acked.fetch_add(VALUE as u64, Ordering::Relaxed);
            }
        });
        while pending.len() > 256 {
            pending.join_next().await;
        }
    }
    // The wire bytes over the time between the two readings: a send blocked by the quota can
    // end the loop well after `duration`.
    let wire = wire_bytes(producer.cluster(), true) - wire_at_warmup.unwrap_or(0);
    let wire_interval = warmed_at.elapsed();
    while pending.join_next().await.is_some() {}
    (acked.load(Ordering::Relaxed), wire, wire_interval)
}

fn within(rate: f64, quota: f64, what: &str) {
    let ratio = rate / quota;
    eprintln!("{what}: {rate:.0} B/s, {ratio:.3} of the quota");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: {rate:.0} B/s against a quota of {quota:.0} B/s (ratio {ratio:.3})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_rates_settle_at_the_quota_and_do_not_starve_others() {
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[("quota.window.num", WINDOWS)]);
    let admin = Admin::new(target.config(&[]));
    require_short_windows(&admin).await;
    let produce_id = topic_name("qp");
    let consume_id = topic_name("qc");
    let free_id = topic_name("qf");
    alter_ok(
        &admin,
        &[
            set(
                entity(&[("client-id", Some(&produce_id))]),
                "producer_byte_rate",
                Some(RATE),
            ),
            set(
                entity(&[("client-id", Some(&consume_id))]),
                "consumer_byte_rate",
                Some(RATE),
            ),
        ],
    )
    .await;
    wait_described(
        &admin,
        &entity(&[("client-id", Some(&consume_id))]),
        Some([("consumer_byte_rate".to_string(), RATE)].into()),
    )
    .await;
    let throttled_topic = topic_name("quota-p");
    let source_topic = topic_name("quota-c");
    let free_topic = topic_name("quota-f");
    let free = Arc::new(
        Producer::new(target.config(&[("client.id", &free_id), ("linger.ms", "5")])).unwrap(),
    );
    for t in [&throttled_topic, &source_topic, &free_topic] {
        create_topic(free.cluster(), t, 1).await;
    }
    // What the consumer reads: more than 25 s at the quota, written unthrottled.
    let fill = (RATE * 30.0) as usize / VALUE;
    let mut acks = Vec::with_capacity(fill);
    for _ in 0..fill {
        acks.push(
            free.send(ProducerRecord::new(
                source_topic.as_str(),
                vec![b'c'; VALUE],
            ))
            .await
            .unwrap(),
        );
    }
    for a in acks {
        a.await.unwrap();
    }

    let warmup = Duration::from_secs(3);
    let run = Duration::from_secs(23);
    let throttled = Arc::new(
        Producer::new(target.config(&[
            ("client.id", &produce_id),
            ("batch.size", "32768"),
            ("linger.ms", "0"),
            ("buffer.memory", "1048576"),
        ]))
        .unwrap(),
    );
    let producing = tokio::spawn(produce_for(
        throttled.clone(),
        throttled_topic.clone(),
        warmup,
        run,
    ));

    let consumer = Consumer::new(target.config(&[
        ("client.id", &consume_id),
        ("auto.offset.reset", "earliest"),
        ("max.partition.fetch.bytes", "16384"),
        ("fetch.max.bytes", "16384"),
    ]))
    .unwrap();
    let consuming = tokio::spawn(async move {
        consumer.assign(&[TopicPartition::new(source_topic.as_str(), 0)]);
        let started = Instant::now();
        let mut bytes = 0u64;
        let mut wire_at_warmup = None;
        let mut warmed_at = started;
        while started.elapsed() < run {
            if wire_at_warmup.is_none() && started.elapsed() >= warmup {
                wire_at_warmup = Some(wire_bytes(consumer.cluster(), false));
                warmed_at = Instant::now();
            }
            for r in consumer.poll(Duration::from_millis(50)).await.unwrap() {
                let at = started.elapsed();
                if at >= warmup && at < run {
                    bytes += r.value.as_ref().map_or(0, |v| v.len() as u64);
                }
            }
        }
        let wire = wire_bytes(consumer.cluster(), false) - wire_at_warmup.unwrap_or(0);
        let wire_interval = warmed_at.elapsed();
        let stats = consumer.cluster().broker_stats();
        consumer.close().await;
        (bytes, wire, wire_interval, stats)
    });

    // Meanwhile an unthrottled client on the same broker keeps going at full speed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let free_started = Instant::now();
    let (free_bytes, _, _) = produce_for(
        free.clone(),
        free_topic.clone(),
        Duration::ZERO,
        Duration::from_secs(3),
    )
    .await;
    let free_rate = free_bytes as f64 / free_started.elapsed().as_secs_f64();
    eprintln!("unthrottled producer: {free_rate:.0} B/s");
    assert!(
        free_rate > 4.0 * RATE,
        "the unthrottled producer got {free_rate:.0} B/s beside throttled clients"
    );

    let measured = (run - warmup).as_secs_f64();
    let (produced, produced_wire, wire_interval) = producing.await.unwrap();
    eprintln!("producer payload: {:.0} B/s", produced as f64 / measured);
    within(
        produced_wire as f64 / wire_interval.as_secs_f64(),
        RATE,
        "producer (request bytes)",
    );
    let (consumed, consumed_wire, consumed_interval, stats) = consuming.await.unwrap();
    eprintln!("consumer payload: {:.0} B/s", consumed as f64 / measured);
    within(
        consumed_wire as f64 / consumed_interval.as_secs_f64(),
        RATE,
        "consumer (response bytes)",
    );
    // The throttling was reported (per-broker statistics).
    assert!(stats.iter().any(|b| b.throttled > 0), "{stats:?}");
    let pstats = throttled.cluster().broker_stats();
    assert!(pstats.iter().any(|b| b.throttled > 0), "{pstats:?}");
    assert!(free
        .cluster()
        .broker_stats()
        .iter()
        .all(|b| b.throttled == 0));

    alter_ok(
        &admin,
        &[
            set(
                entity(&[("client-id", Some(&produce_id))]),
                "producer_byte_rate",
                None,
            ),
            set(
                entity(&[("client-id", Some(&consume_id))]),
                "consumer_byte_rate",
                None,
            ),
        ],
    )
    .await;
}

/// Kafka's precedence, one row per level: the entities of levels `row..=8` are set, each with
/// its own producer_byte_rate, and a producer (user ANONYMOUS on PLAINTEXT, a client id of its
/// own) is measured; it must get the rate of level `row`. Only rows 3 and 6 share a sensor
/// (user ANONYMOUS, every client id), and the rows between them outlast its windows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precedence_of_entity_combinations_is_kafkas() {
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[("quota.window.num", WINDOWS)]);
    let admin = Admin::new(target.config(&[]));
    require_short_windows(&admin).await;
    let user = "ANONYMOUS";
    let topic = topic_name("quota-precedence");
    create_topic(admin.cluster(), &topic, 1).await;
    for row in 1..=8usize {
        let client = topic_name(&format!("qprec{row}"));
        let c = client.as_str();
        let levels: [QuotaEntity; 8] = [
            entity(&[("user", Some(user)), ("client-id", Some(c))]),
            entity(&[("user", Some(user)), ("client-id", None)]),
            entity(&[("user", Some(user))]),
            entity(&[("user", None), ("client-id", Some(c))]),
            entity(&[("user", None), ("client-id", None)]),
            entity(&[("user", None)]),
            entity(&[("client-id", Some(c))]),
            entity(&[("client-id", None)]),
        ];
        // Level k (1-based) allows 64 KiB/s × 1.5^(k-1): neighbours differ by half.
        let rate_of = |k: usize| 65536.0 * 1.5f64.powi(k as i32 - 1);
        let set_rows: Vec<QuotaAlteration> = (row..=8)
            .map(|k| {
                set(
                    levels[k - 1].clone(),
                    "producer_byte_rate",
                    Some(rate_of(k)),
                )
            })
            .collect();
        alter_ok(&admin, &set_rows).await;
        for k in row..=8 {
            wait_described(
                &admin,
                &levels[k - 1],
                Some([("producer_byte_rate".to_string(), rate_of(k))].into()),
            )
            .await;
        }
        let producer = Arc::new(
            Producer::new(target.config(&[
                ("client.id", c),
                ("batch.size", "16384"),
                ("linger.ms", "0"),
                ("buffer.memory", "262144"),
            ]))
            .unwrap(),
        );
        // Measured over 5 s: up to five 16 KiB requests are in flight when a throttle starts,
        // a burst that is a large part of three seconds at the lowest row's 64 KiB/s (row 1
        // measured 1.17-1.23 of its quota on Kafka over 3 s; the other rows 1.00).
        let (_, wire, interval) = produce_for(
            producer.clone(),
            topic.clone(),
            Duration::from_secs(2),
            Duration::from_secs(7),
        )
        .await;
        let rate = wire as f64 / interval.as_secs_f64();
        let want = rate_of(row);
        let ratio = rate / want;
        eprintln!("precedence row {row}: {rate:.0} B/s, {ratio:.3} of level {row}'s quota");
        assert!(
            (0.8..=1.2).contains(&ratio),
            "row {row}: {rate:.0} B/s, want level {row}'s {want:.0} B/s (ratio {ratio:.3})"
        );
        let clear: Vec<QuotaAlteration> = (row..=8)
            .map(|k| set(levels[k - 1].clone(), "producer_byte_rate", None))
            .collect();
        alter_ok(&admin, &clear).await;
        for k in row..=8 {
            wait_described(&admin, &levels[k - 1], None).await;
        }
    }
}

/// `controller_mutation_rate`: a CreateTopics that finds the client's bucket empty is refused
/// per topic with THROTTLING_QUOTA_EXCEEDED (strict mode, CreateTopics v6+); the admin client
/// retries it once the throttle time has passed, within `default.api.timeout.ms`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_mutations_are_throttled_and_retried_after_the_throttle() {
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[]);
    let client = topic_name("qmut");
    let config = |timeout: &str| {
        target.config(&[("client.id", &client), ("default.api.timeout.ms", timeout)])
    };
    let admin = Admin::new(config("60000"));
    let e = entity(&[("client-id", Some(&client))]);
    // 5 partitions a second; the bucket holds 11 windows' worth (55) and starts full.
    alter_ok(
        &admin,
        &[set(e.clone(), "controller_mutation_rate", Some(5.0))],
    )
    .await;
    wait_described(
        &admin,
        &e,
        Some([("controller_mutation_rate".to_string(), 5.0)].into()),
    )
    .await;
    let new = |name: &str, partitions: i32| {
        odradek::admin::NewTopic::new(name)
            .partitions(partitions)
            .replication_factor(1)
    };
    let first = topic_name("qmut-a");
    // 70 partitions: allowed (the bucket was not empty) and leaves it 15 tokens short: 3 s.
    let r = admin
        .create_topics(&[new(&first, 70)], false)
        .await
        .unwrap();
    r[0].1.as_ref().unwrap();
    // With a short timeout the next creation is refused with the quota error.
    let impatient = Admin::new(config("1000"));
    impatient.cluster().refresh().await.unwrap();
    let second = topic_name("qmut-b");
    let started = Instant::now();
    let r = impatient
        .create_topics(&[new(&second, 1)], false)
        .await
        .unwrap();
    let err = r[0].1.as_ref().unwrap_err();
    assert_eq!(
        err.kafka_code(),
        ErrorCode::ThrottlingQuotaExceeded,
        "{err}"
    );
    // With time to wait, the same creation succeeds once the bucket has refilled.
    let r = admin
        .create_topics(&[new(&second, 1)], false)
        .await
        .unwrap();
    r[0].1.as_ref().unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let throttled: u64 = admin
        .cluster()
        .broker_stats()
        .iter()
        .map(|b| b.throttled)
        .sum::<u64>()
        + impatient
            .cluster()
            .broker_stats()
            .iter()
            .map(|b| b.throttled)
            .sum::<u64>();
    assert!(throttled > 0, "no throttle time was reported");
    alter_ok(&admin, &[set(e, "controller_mutation_rate", None)]).await;
    let _ = admin
        .delete_topics(&[first.as_str(), second.as_str()])
        .await;
}

/// `request_percentage`: a client that keeps the broker busy beyond its share of a request
/// thread gets a throttle time (at most one window), every other client none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_time_quota_throttles_a_busy_client() {
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[]);
    let client = topic_name("qreq");
    let admin = Admin::new(target.config(&[]));
    let e = entity(&[("client-id", Some(&client))]);
    alter_ok(&admin, &[set(e.clone(), "request_percentage", Some(0.001))]).await;
    wait_described(
        &admin,
        &e,
        Some([("request_percentage".to_string(), 0.001)].into()),
    )
    .await;
    let busy = Admin::new(target.config(&[("client.id", &client)]));
    let meta = busy.cluster().refresh().await.unwrap();
    let node = *meta.brokers.keys().next().unwrap();
    let conn = busy.cluster().connection(node).await.unwrap();
    let mut max_throttle = 0;
    // A fast Metadata answer keeps a thread busy for microseconds: up to 3000 of them.
    for _ in 0..3000 {
        let r = conn
            .send(&odradek::protocol::messages::MetadataRequest::default())
            .await
            .unwrap();
        max_throttle = max_throttle.max(r.throttle_time_ms);
        if max_throttle > 0 {
            break;
        }
    }
    assert!(
        max_throttle > 0,
        "3000 Metadata requests were never throttled"
    );
    assert!(
        max_throttle <= 1_000,
        "throttle {max_throttle} ms exceeds one window"
    );
    // Another client id is not throttled.
    let other = admin.cluster().connection(node).await.unwrap();
    for _ in 0..20 {
        let r = other
            .send(&odradek::protocol::messages::MetadataRequest::default())
            .await
            .unwrap();
        assert_eq!(r.throttle_time_ms, 0);
    }
    alter_ok(&admin, &[set(e, "request_percentage", None)]).await;
}

/// `connection_creation_rate` for an IP: connections beyond the rate are not served (Kafka
/// closes them after the throttle time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_creation_rate_limits_new_connections_from_an_ip() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _serial = SERIAL.lock().await;
    let target = Target::start(&[("quota.window.num", WINDOWS)]);
    let admin = Admin::new(target.config(&[]));
    let e = entity(&[("ip", Some("127.0.0.1"))]);
    alter_ok(
        &admin,
        &[set(e.clone(), "connection_creation_rate", Some(2.0))],
    )
    .await;
    wait_described(
        &admin,
        &e,
        Some([("connection_creation_rate".to_string(), 2.0)].into()),
    )
    .await;
    // Kafka applies IP quotas a moment after they are described.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // ApiVersions v0, correlation id 7, client id "q".
    let request: &[u8] = &[0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, b'q'];
    let mut attempts = Vec::new();
    for _ in 0..12 {
        let addr = target.bootstrap.clone();
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        attempts.push(tokio::spawn(async move {
            if s.write_all(request).await.is_err() {
                return false;
            }
            let mut size = [0u8; 4];
            matches!(
                tokio::time::timeout(Duration::from_secs(4), s.read_exact(&mut size)).await,
                Ok(Ok(_))
            )
        }));
    }
    let mut answered = 0;
    for a in attempts {
        if a.await.unwrap() {
            answered += 1;
        }
    }
    alter_ok(&admin, &[set(e.clone(), "connection_creation_rate", None)]).await;
    wait_described(&admin, &e, None).await;
    assert!(
        (1..=6).contains(&answered),
        "{answered} of 12 connections made at once were served at 2 connections/s"
    );
}
