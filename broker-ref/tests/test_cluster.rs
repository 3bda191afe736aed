//! The in-process test cluster (`odradek_broker::testing`) against the real `odradek` client,
//! through the public testing API only: injected errors are retried, a broker that goes down
//! is reported and recovered from, a moved leader is followed, a delayed response triggers
//! `request.timeout.ms`, and the request log shows what the client sent.

// A panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use odradek::producer::TopicPartition;
use odradek::{Consumer, ErrorCode, Producer, ProducerRecord};
use odradek_broker::testing::{Action, Cluster, CoordinatorKind, LoggedRequest, Rule, Storage};

fn producer(cluster: &Cluster, extra: &[(&str, &str)]) -> Producer {
    let mut conf = vec![
        ("bootstrap.servers", cluster.bootstrap()),
        ("retry.backoff.ms", "20"),
        ("linger.ms", "0"),
    ];
    conf.extend_from_slice(extra);
    Producer::from_map(conf).unwrap()
}

fn consumer(cluster: &Cluster, extra: &[(&str, &str)]) -> Consumer {
    let mut conf = vec![
        ("bootstrap.servers", cluster.bootstrap()),
        ("auto.offset.reset", "earliest"),
        ("retry.backoff.ms", "20"),
        ("fetch.wait.max.ms", "100"),
    ];
    conf.extend_from_slice(extra);
    Consumer::from_map(conf).unwrap()
}

async fn send(
    producer: &Producer,
    topic: &str,
    partition: i32,
    value: &str,
) -> odradek::Result<i64> {
    let record = ProducerRecord::new(topic, value.to_string()).partition(partition);
    Ok(producer.send(record).await?.await?.offset)
}

/// Reads `n` values from one partition (assigned, from the beginning).
async fn read(cluster: &Cluster, topic: &str, partition: i32, n: usize) -> Vec<Bytes> {
    let c = consumer(cluster, &[]);
    c.assign(&[TopicPartition {
        topic: topic.into(),
        partition,
    }]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut values = Vec::new();
    while values.len() < n {
        assert!(Instant::now() < deadline, "read only {values:?}");
        for r in c.poll(Duration::from_millis(50)).await.unwrap() {
            values.push(r.value.unwrap());
        }
    }
    // Nothing more than expected.
    for r in c.poll(Duration::from_millis(200)).await.unwrap() {
        values.push(r.value.unwrap());
    }
    c.close().await;
    values
}

fn of_api(log: &[LoggedRequest], key: ApiKey) -> Vec<&LoggedRequest> {
    log.iter().filter(|r| r.api_key == key).collect()
}

fn values(v: &[&str]) -> Vec<Bytes> {
    v.iter().map(|s| Bytes::from(s.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_leader_on_produce_is_retried_and_delivered_once() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    cluster.record_requests(true);
    cluster
        .push_request_errors(ApiKey::Produce, [ErrorCode::NotLeaderOrFollower; 2])
        .unwrap();
    let p = producer(&cluster, &[]);
    assert_eq!(send(&p, "t", 0, "once").await.unwrap(), 0);
    p.close().await;
    assert_eq!(cluster.pending_rules(), 0);
    let log = cluster.requests();
    let produces = of_api(&log, ApiKey::Produce);
    assert_eq!(produces.len(), 3, "{produces:?}");
    assert_eq!(
        produces[0].action,
        Some(Action::Error(ErrorCode::NotLeaderOrFollower))
    );
    assert_eq!(produces[2].action, None);
    assert_eq!(read(&cluster, "t", 0, 1).await, values(&["once"]));
}

/// KIP-360: an idempotent producer answered UNKNOWN_PRODUCER_ID (the broker lost its state)
/// bumps its epoch (a second InitProducerId), restarts its sequences and delivers the batch,
/// as the Java client does, instead of failing the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_producer_id_bumps_the_epoch_and_the_batch_is_delivered() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    cluster.record_requests(true);
    let p = producer(&cluster, &[("enable.idempotence", "true")]);
    assert_eq!(send(&p, "t", 0, "a").await.unwrap(), 0);
    cluster
        .push_request_errors(ApiKey::Produce, [ErrorCode::UnknownProducerId])
        .unwrap();
    assert_eq!(send(&p, "t", 0, "b").await.unwrap(), 1);
    assert_eq!(send(&p, "t", 0, "c").await.unwrap(), 2);
    p.close().await;
    assert_eq!(cluster.pending_rules(), 0);
    let log = cluster.requests();
    let seen: Vec<(ApiKey, Option<Action>)> = log
        .iter()
        .filter(|r| matches!(r.api_key, ApiKey::Produce | ApiKey::InitProducerId))
        .map(|r| (r.api_key, r.action))
        .collect();
    assert_eq!(
        seen,
        [
            (ApiKey::InitProducerId, None),
            (ApiKey::Produce, None),
            (
                ApiKey::Produce,
                Some(Action::Error(ErrorCode::UnknownProducerId))
            ),
            (ApiKey::InitProducerId, None),
            (ApiKey::Produce, None),
            (ApiKey::Produce, None),
        ]
    );
    assert_eq!(read(&cluster, "t", 0, 3).await, values(&["a", "b", "c"]));
}

/// The nominal waits of five failures in a row with retry.backoff.ms=50 and
/// retry.backoff.max.ms=1000 (KIP-580): 50 + 100 + 200 + 400 + 800 ms; jitter takes off at
/// most 20%. A fixed backoff would wait 5 × 50 ms.
const FIVE_BACKOFFS: Duration = Duration::from_millis((50 + 100 + 200 + 400 + 800) * 8 / 10);
const BACKOFF_CONF: [(&str, &str); 2] =
    [("retry.backoff.ms", "50"), ("retry.backoff.max.ms", "1000")];

/// Failed JoinGroups in a row back off exponentially, not at a fixed interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_group_joins_back_off_exponentially() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    cluster.record_requests(true);
    cluster
        .push_request_errors(ApiKey::JoinGroup, [ErrorCode::CoordinatorLoadInProgress; 5])
        .unwrap();
    let p = producer(&cluster, &[]);
    send(&p, "t", 0, "v").await.unwrap();
    p.close().await;
    let c = consumer(
        &cluster,
        &[("group.id", "g"), BACKOFF_CONF[0], BACKOFF_CONF[1]],
    );
    let started = Instant::now();
    c.subscribe(&["t"], None).unwrap();
    let deadline = started + Duration::from_secs(30);
    while c.poll(Duration::from_millis(50)).await.unwrap().is_empty() {
        assert!(Instant::now() < deadline, "never joined");
    }
    let waited = started.elapsed();
    c.close().await;
    assert_eq!(cluster.pending_rules(), 0);
    let log = cluster.requests();
    let joins = of_api(&log, ApiKey::JoinGroup);
    let refused = joins
        .iter()
        .filter(|r| r.action == Some(Action::Error(ErrorCode::CoordinatorLoadInProgress)))
        .count();
    assert_eq!(refused, 5, "{joins:?}");
    assert!(waited >= FIVE_BACKOFFS, "joined after {waited:?}");
}

/// An idempotent producer's failed InitProducerIds in a row back off exponentially.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_init_producer_ids_back_off_exponentially() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    cluster
        .push_request_errors(
            ApiKey::InitProducerId,
            [ErrorCode::CoordinatorLoadInProgress; 5],
        )
        .unwrap();
    let started = Instant::now();
    let p = producer(
        &cluster,
        &[
            ("enable.idempotence", "true"),
            BACKOFF_CONF[0],
            BACKOFF_CONF[1],
        ],
    );
    assert_eq!(send(&p, "t", 0, "v").await.unwrap(), 0);
    let waited = started.elapsed();
    p.close().await;
    assert_eq!(cluster.pending_rules(), 0);
    assert!(waited >= FIVE_BACKOFFS, "produced after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_error_fails_only_that_partition() {
    let cluster = Cluster::builder().topic("t", 2).start().unwrap();
    cluster.record_requests(true);
    cluster
        .push_partition_request_errors("t", 1, ApiKey::Produce, [ErrorCode::NotLeaderOrFollower])
        .unwrap();
    // Both records in one Produce request.
    let p = producer(&cluster, &[("linger.ms", "50")]);
    let a = p
        .send(ProducerRecord::new("t", "p0").partition(0))
        .await
        .unwrap();
    let b = p
        .send(ProducerRecord::new("t", "p1").partition(1))
        .await
        .unwrap();
    assert_eq!(a.await.unwrap().offset, 0);
    assert_eq!(b.await.unwrap().offset, 0);
    p.close().await;
    let log = cluster.requests();
    let produces = of_api(&log, ApiKey::Produce);
    let first = produces[0];
    assert_eq!(first.partitions.len(), 2, "{first:?}");
    assert_eq!(first.action, None);
    assert_eq!(
        first.item_errors,
        [("t".to_string(), 1, ErrorCode::NotLeaderOrFollower)]
    );
    // The retry carries only partition 1.
    assert_eq!(produces[1].partitions, [("t".to_string(), 1)]);
    assert_eq!(read(&cluster, "t", 0, 1).await, values(&["p0"]));
    assert_eq!(read(&cluster, "t", 1, 1).await, values(&["p1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_not_available_on_offset_commit_is_retried() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    let p = producer(&cluster, &[]);
    for i in 0..3 {
        send(&p, "t", 0, &format!("v{i}")).await.unwrap();
    }
    p.close().await;
    cluster.record_requests(true);
    cluster
        .push_request_errors(
            ApiKey::OffsetCommit,
            [ErrorCode::CoordinatorNotAvailable; 2],
        )
        .unwrap();
    // The client's own commits (auto-commit) are retried after the coordinator errors.
    let c = consumer(
        &cluster,
        &[
            ("group.id", "g"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "100"),
        ],
    );
    c.subscribe(&["t"], None).unwrap();
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    loop {
        assert!(Instant::now() < deadline, "offset 3 never committed");
        seen += c.poll(Duration::from_millis(50)).await.unwrap().len();
        if seen == 3 && c.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp] == Some(3) {
            break;
        }
    }
    c.close().await;
    let log = cluster.requests();
    let commits = of_api(&log, ApiKey::OffsetCommit);
    assert!(commits.len() >= 3, "{commits:?}");
    assert!(commits[..2]
        .iter()
        .all(|r| r.action == Some(Action::Error(ErrorCode::CoordinatorNotAvailable))));
    assert_eq!(commits.last().unwrap().action, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_taken_down_is_reported_and_recovered_from() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    let p = producer(
        &cluster,
        &[
            ("delivery.timeout.ms", "1500"),
            ("request.timeout.ms", "500"),
        ],
    );
    send(&p, "t", 0, "before").await.unwrap();
    cluster.set_broker_down(1).unwrap();
    assert!(!cluster.is_broker_up(1));
    let addr = cluster.broker_addr(1).unwrap();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "a down broker refuses connections"
    );
    assert_eq!(cluster.connection_count(1).unwrap(), 0);
    // The client reports it: the record times out.
    let failed = send(&p, "t", 0, "lost").await;
    assert!(failed.is_err(), "{failed:?}");
    cluster.set_broker_up(1).unwrap();
    assert_eq!(cluster.broker_addr(1).unwrap(), addr, "same port");
    send(&p, "t", 0, "after").await.unwrap();
    p.close().await;
    assert_eq!(
        read(&cluster, "t", 0, 2).await,
        values(&["before", "after"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_leader_is_followed_by_producer_and_consumer() {
    let cluster = Cluster::builder().brokers(3).topic("t", 1).start().unwrap();
    assert_eq!(cluster.bootstrap().split(',').count(), 3);
    assert_eq!(cluster.partition_leader("t", 0).unwrap().leader, 1);
    cluster.record_requests(true);
    let p = producer(&cluster, &[]);
    let c = consumer(&cluster, &[]);
    c.assign(&[TopicPartition {
        topic: "t".into(),
        partition: 0,
    }]);
    send(&p, "t", 0, "on-1").await.unwrap();
    let epoch = cluster.set_partition_leader("t", 0, 2).unwrap();
    assert_eq!(epoch, 1);
    // DescribeTopicPartitions (Kafka 4.x admin clients' describeTopics) shows the move too.
    let via = cluster.bootstrap().split(',').next().unwrap().to_string();
    let described = tokio::task::spawn_blocking(move || {
        common::Client::connect(&via).call(
            &kafka_protocol::messages::DescribeTopicPartitionsRequest::default()
                .with_topics(vec![
                    kafka_protocol::messages::describe_topic_partitions_request::TopicRequest::default()
                        .with_name(common::topic_name("t")),
                ])
                .with_response_partition_limit(10),
            0,
        )
    })
    .await
    .unwrap();
    let moved = &described.topics[0].partitions[0];
    assert_eq!((moved.leader_id.0, moved.leader_epoch), (2, 1), "{moved:?}");
    send(&p, "t", 0, "on-2").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while got.len() < 2 {
        assert!(Instant::now() < deadline, "consumed only {got:?}");
        for r in c.poll(Duration::from_millis(50)).await.unwrap() {
            got.push(r.value.unwrap());
        }
    }
    assert_eq!(got, values(&["on-1", "on-2"]));
    // A second move, back to broker 1 while the consumer keeps going.
    cluster.set_partition_leader("t", 0, 3).unwrap();
    send(&p, "t", 0, "on-3").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 3 {
        assert!(Instant::now() < deadline, "consumed only {got:?}");
        for r in c.poll(Duration::from_millis(50)).await.unwrap() {
            got.push(r.value.unwrap());
        }
    }
    p.close().await;
    c.close().await;
    let log = cluster.requests();
    let produces = of_api(&log, ApiKey::Produce);
    let ok_on = |b: i32| {
        produces
            .iter()
            .any(|r| r.broker == b && r.item_errors.is_empty() && r.action.is_none())
    };
    assert!(ok_on(1) && ok_on(2) && ok_on(3), "{produces:?}");
    let fetches_on: Vec<i32> = of_api(&log, ApiKey::Fetch)
        .iter()
        .map(|r| r.broker)
        .collect();
    assert!(
        fetches_on.contains(&2) && fetches_on.contains(&3),
        "{fetches_on:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_response_triggers_request_timeout() {
    let cluster = Cluster::builder().topic("t", 1).start().unwrap();
    cluster.record_requests(true);
    cluster
        .add_rule(Rule::new(
            ApiKey::Produce,
            Action::Delay(Duration::from_secs(10)),
        ))
        .unwrap();
    let p = producer(&cluster, &[("request.timeout.ms", "500")]);
    let started = Instant::now();
    assert_eq!(send(&p, "t", 0, "late").await.unwrap(), 0);
    let elapsed = started.elapsed();
    p.close().await;
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    let produces = cluster.requests();
    let produces = of_api(&produces, ApiKey::Produce);
    assert_eq!(produces.len(), 2, "{produces:?}");
    assert_ne!(produces[0].peer, produces[1].peer, "a new connection");
    assert_eq!(
        read(&cluster, "t", 0, 1).await,
        values(&["late"]),
        "delivered once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_shows_what_the_client_sent() {
    let cluster = Cluster::builder()
        .record_requests(true)
        .topic("t", 1)
        .start()
        .unwrap();
    let p = producer(&cluster, &[("client.id", "logged-client")]);
    send(&p, "t", 0, "x").await.unwrap();
    p.close().await;
    let log = cluster.take_requests();
    assert!(log
        .iter()
        .all(|r| r.client_id.as_deref() == Some("logged-client")));
    assert!(log.iter().all(|r| r.broker == 1));
    for key in [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce] {
        assert!(log.iter().any(|r| r.api_key == key), "no {key:?}: {log:?}");
    }
    let produce = log.iter().find(|r| r.api_key == ApiKey::Produce).unwrap();
    assert_eq!(produce.partitions, [("t".to_string(), 0)]);
    assert!(produce.api_version >= 3);
    assert!(cluster.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_coordinator_and_clamped_versions_are_what_the_client_uses() {
    let cluster = Cluster::builder().brokers(3).topic("t", 3).start().unwrap();
    cluster
        .set_coordinator(CoordinatorKind::Group, "pinned", Some(3))
        .unwrap();
    assert_eq!(cluster.coordinator(CoordinatorKind::Group, "pinned"), 3);
    cluster.set_api_version(ApiKey::Produce, 3, 7).unwrap();
    cluster.record_requests(true);
    let p = producer(&cluster, &[]);
    for partition in 0..3 {
        send(&p, "t", partition, "v").await.unwrap();
    }
    p.close().await;
    let c = consumer(
        &cluster,
        &[("group.id", "pinned"), ("enable.auto.commit", "false")],
    );
    c.subscribe(&["t"], None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while seen < 3 {
        assert!(Instant::now() < deadline);
        seen += c.poll(Duration::from_millis(50)).await.unwrap().len();
    }
    c.commit_sync(None).await.unwrap();
    c.close().await;
    let log = cluster.requests();
    for r in of_api(&log, ApiKey::Produce) {
        assert!(r.api_version <= 7, "{r:?}");
    }
    // Partitions are spread over the brokers: each broker got the produce for its partition.
    let mut produce_brokers: Vec<i32> = of_api(&log, ApiKey::Produce)
        .iter()
        .map(|r| r.broker)
        .collect();
    produce_brokers.sort();
    produce_brokers.dedup();
    assert_eq!(produce_brokers, [1, 2, 3]);
    for key in [ApiKey::JoinGroup, ApiKey::SyncGroup, ApiKey::OffsetCommit] {
        let on: Vec<i32> = of_api(&log, key).iter().map(|r| r.broker).collect();
        assert!(
            !on.is_empty() && on.iter().all(|b| *b == 3),
            "{key:?} on {on:?}"
        );
    }
    // Moving the pin: the old coordinator now refuses the group.
    cluster
        .set_coordinator(CoordinatorKind::Group, "pinned", Some(1))
        .unwrap();
    assert_eq!(cluster.coordinator(CoordinatorKind::Group, "pinned"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connections_and_a_slow_broker_are_survived() {
    let cluster = Cluster::builder()
        .brokers(2)
        .topic("t", 1)
        .storage(Storage::TempDir)
        .start()
        .unwrap();
    let p = producer(&cluster, &[("client.id", "victim")]);
    send(&p, "t", 0, "a").await.unwrap();
    assert!(cluster.connection_count(1).unwrap() >= 1);
    let closed = cluster.close_connections(None, Some("victim")).unwrap();
    assert!(closed >= 1);
    assert_eq!(cluster.close_connections(None, Some("nobody")).unwrap(), 0);
    cluster
        .set_broker_rtt(1, Duration::from_millis(300))
        .unwrap();
    let started = Instant::now();
    send(&p, "t", 0, "b").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    cluster.set_broker_rtt(1, Duration::ZERO).unwrap();
    p.close().await;
    assert_eq!(read(&cluster, "t", 0, 2).await, values(&["a", "b"]));
    let dir = cluster.data_dir().to_path_buf();
    assert!(dir.exists());
    drop(cluster);
    assert!(!dir.exists(), "dropped = cleaned");
}

#[test]
fn a_kept_directory_survives_a_restart_and_bad_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::builder()
        .storage(Storage::Dir(dir.path().to_path_buf()))
        .topic("kept", 2)
        .start()
        .unwrap();
    assert!(cluster.set_partition_leader("kept", 5, 1).is_err());
    assert!(cluster.set_partition_leader("missing", 0, 1).is_err());
    assert!(cluster.set_broker_down(7).is_err());
    assert!(cluster.set_api_version(ApiKey::ApiVersions, 0, 1).is_err());
    cluster.stop();
    let again = Cluster::builder()
        .storage(Storage::Dir(dir.path().to_path_buf()))
        .start()
        .unwrap();
    assert_eq!(again.partition_leader("kept", 1).unwrap().leader, 1);
}

#[test]
fn an_empty_cluster_starts_and_stops_in_milliseconds() {
    for brokers in [1, 3] {
        // Warm up (first use of the file system and the thread machinery).
        Cluster::builder().brokers(brokers).start().unwrap().stop();
        let started = Instant::now();
        for _ in 0..5 {
            Cluster::builder().brokers(brokers).start().unwrap().stop();
        }
        let each = started.elapsed() / 5;
        // Generous for a loaded debug build; BENCHMARKS.md has the release numbers.
        assert!(
            each < Duration::from_millis(500),
            "{brokers} brokers: {each:?}"
        );
    }
}

#[test]
fn a_fetch_waiting_on_a_leader_that_moves_answers_not_leader_at_once() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;

    let cluster = Cluster::builder().brokers(2).topic("t", 1).start().unwrap();
    assert_eq!(cluster.partition_leader("t", 0).unwrap().leader, 1);
    let mut client = common::Client::connect(&cluster.broker_addr(1).unwrap().to_string());
    // A minute of long poll on broker 1, which leads t-0 when the fetch arrives.
    let fetch = FetchRequest::default()
        .with_max_wait_ms(60_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let id = client.send(&fetch, 12);
    std::thread::sleep(Duration::from_millis(200));
    cluster.set_partition_leader("t", 0, 2).unwrap();
    // Answered now (the client's read timeout is 30 s), without records: broker 1 no longer
    // leads the partition, as Kafka completes a delayed fetch on a leader change.
    let (header, resp) = client.receive::<FetchResponse>(12);
    assert_eq!(header.correlation_id, id);
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, ErrorCode::NotLeaderOrFollower.code());
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
}

/// A broker that answers slowly (or throttles, or is slow to connect) holds up only the
/// partitions it leads: the producer's other brokers keep acknowledging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_broker_does_not_hold_up_the_partitions_of_the_others() {
    // Partitions 0 and 2 are led by broker 1, 1 and 3 by broker 2.
    let cluster = Cluster::builder().brokers(2).topic("t", 4).start().unwrap();
    // One request in flight per connection, so a second request to the slow broker waits.
    let p = producer(&cluster, &[("max.in.flight.requests.per.connection", "1")]);
    for partition in 0..4 {
        send(&p, "t", partition, "warm").await.unwrap();
    }
    cluster.set_broker_rtt(2, Duration::from_secs(3)).unwrap();
    let slow_a = p
        .send(ProducerRecord::new("t", "slow-a").partition(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Another partition of the slow broker: its request waits for the connection's slot.
    let slow_b = p
        .send(ProducerRecord::new("t", "slow-b").partition(3))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    send(&p, "t", 0, "fast").await.unwrap();
    let fast = started.elapsed();
    assert!(
        fast < Duration::from_millis(1_500),
        "partition 0 (broker 1) waited {fast:?} behind broker 2"
    );
    slow_a.await.unwrap();
    slow_b.await.unwrap();
    cluster.set_broker_rtt(2, Duration::ZERO).unwrap();
    p.close().await;
    assert_eq!(read(&cluster, "t", 0, 2).await, values(&["warm", "fast"]));
    assert_eq!(read(&cluster, "t", 1, 2).await, values(&["warm", "slow-a"]));
    assert_eq!(read(&cluster, "t", 3, 2).await, values(&["warm", "slow-b"]));
}
