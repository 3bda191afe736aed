//! The interception point against the real `odradek` client: a broker started in-process
//! (`server::start`), faults injected per API key through `RunningBroker::interceptor`, and the
//! client's recovery checked both from its own results and from the broker's request log.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use odradek::records::RecordBatches;
use odradek::{ClientConfig, Consumer, ErrorCode, Producer, ProducerRecord};
use odradek_broker::config::BrokerConfig;
use odradek_broker::server::{self, Action, LoggedRequest, Rule, RunningBroker};

/// A broker on 127.0.0.1:0 with its data in a fresh temporary directory (kept alive by the
/// returned guard) and one single-partition topic `t`.
async fn start(overrides: &[(&str, &str)]) -> (RunningBroker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = vec![
        (
            "listeners".to_string(),
            "PLAINTEXT://127.0.0.1:0".to_string(),
        ),
        ("log.dirs".to_string(), dir.path().display().to_string()),
        (
            "group.initial.rebalance.delay.ms".to_string(),
            "0".to_string(),
        ),
        ("offsets.topic.num.partitions".to_string(), "1".to_string()),
    ];
    entries.extend(
        overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let config = BrokerConfig::from_entries(entries).unwrap();
    let running = server::start(config).await.unwrap();
    running
        .broker
        .topics
        .create("t", 1, BTreeMap::new(), false)
        .unwrap();
    (running, dir)
}

fn client_config(running: &RunningBroker, extra: &[(&str, &str)]) -> ClientConfig {
    let bootstrap = running.local_addr.to_string();
    let mut entries = vec![
        ("bootstrap.servers", bootstrap.as_str()),
        ("retry.backoff.ms", "20"),
        ("linger.ms", "0"),
    ];
    entries.extend_from_slice(extra);
    ClientConfig::from_map(entries).unwrap()
}

/// The values stored in partition 0 of `topic`, read straight from the broker's log.
fn stored_values(running: &RunningBroker, topic: &str) -> Vec<Bytes> {
    let partition = running
        .broker
        .topics
        .get(topic)
        .unwrap()
        .partition(0)
        .unwrap();
    let read = partition.read(0, 1 << 20, true, false).unwrap();
    RecordBatches::new(read.records)
        .flat_map(|b| b.unwrap().records().unwrap().collect::<Vec<_>>())
        .map(|r| r.unwrap().value.unwrap())
        .collect()
}

fn of_api(log: &[LoggedRequest], key: ApiKey) -> Vec<&LoggedRequest> {
    log.iter().filter(|r| r.api_key == key).collect()
}

/// Sends one record and waits for its acknowledgement.
async fn send_one(producer: &Producer, value: &str) -> odradek::Result<i64> {
    let delivery = producer
        .send(ProducerRecord::new("t", value.to_string()))
        .await?;
    Ok(delivery.await?.offset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_not_leader_on_produce_is_retried_and_delivered_once() {
    let (running, _dir) = start(&[]).await;
    let hooks = &running.interceptor;
    hooks.record_requests(true);
    hooks
        .push_errors(ApiKey::Produce, [ErrorCode::NotLeaderOrFollower; 2])
        .unwrap();
    let producer = Producer::new(client_config(&running, &[])).unwrap();
    let offset = send_one(&producer, "exactly-once").await.unwrap();
    assert_eq!(offset, 0);
    producer.close().await;

    assert_eq!(hooks.pending_rules(), 0, "both pushed errors were consumed");
    assert_eq!(stored_values(&running, "t"), [Bytes::from("exactly-once")]);
    let log = hooks.requests();
    let produces = of_api(&log, ApiKey::Produce);
    assert_eq!(produces.len(), 3, "two refused, one accepted: {produces:?}");
    assert_eq!(
        produces[0].action,
        Some(Action::Error(ErrorCode::NotLeaderOrFollower))
    );
    assert_eq!(produces[2].action, None);
    // NOT_LEADER_OR_FOLLOWER sends the client back to the metadata before it retries.
    let first_error = log.iter().position(|r| r == produces[0]).unwrap();
    assert!(
        log[first_error..]
            .iter()
            .any(|r| r.api_key == ApiKey::Metadata),
        "no metadata refresh after the error: {log:?}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_coordinator_not_available_on_offset_commit_is_retried() {
    let (running, _dir) = start(&[]).await;
    let producer = Producer::new(client_config(&running, &[])).unwrap();
    for i in 0..10 {
        send_one(&producer, &format!("v{i}")).await.unwrap();
    }
    producer.close().await;

    let hooks = &running.interceptor;
    hooks.record_requests(true);
    hooks
        .push_errors(
            ApiKey::OffsetCommit,
            [ErrorCode::CoordinatorNotAvailable; 2],
        )
        .unwrap();
    let consumer = Consumer::new(client_config(
        &running,
        &[
            ("group.id", "intercepted-group"),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "100"),
            ("heartbeat.interval.ms", "100"),
        ],
    ))
    .unwrap();
    consumer.subscribe(&["t"], None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut consumed = 0;
    let committed = loop {
        assert!(Instant::now() < deadline, "offset 10 never committed");
        consumed += consumer
            .poll(Duration::from_millis(50))
            .await
            .unwrap()
            .len();
        let offsets = running
            .broker
            .groups
            .fetch_offsets("intercepted-group", Some(&[("t".to_string(), 0)]));
        let offset = offsets[0].1.offset;
        if offset == 10 {
            break offset;
        }
    };
    consumer.close().await;
    assert_eq!((consumed, committed), (10, 10));

    assert_eq!(hooks.pending_rules(), 0, "both pushed errors were consumed");
    let log = hooks.requests();
    let commits = of_api(&log, ApiKey::OffsetCommit);
    assert!(commits.len() >= 3, "{commits:?}");
    for refused in &commits[..2] {
        assert_eq!(
            refused.action,
            Some(Action::Error(ErrorCode::CoordinatorNotAvailable))
        );
    }
    assert!(commits[2..].iter().all(|c| c.action.is_none()));
    // The client forgot the coordinator and looked it up again before committing again.
    let first_error = log.iter().position(|r| r == commits[0]).unwrap();
    let second = log.iter().position(|r| r == commits[1]).unwrap();
    assert!(
        log[first_error..second]
            .iter()
            .any(|r| r.api_key == ApiKey::FindCoordinator),
        "no coordinator lookup between the refused commits: {log:?}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_not_leader_on_fetch_is_survived_and_nothing_is_missed() {
    let (running, _dir) = start(&[]).await;
    let producer = Producer::new(client_config(&running, &[])).unwrap();
    for i in 0..5 {
        send_one(&producer, &format!("f{i}")).await.unwrap();
    }
    producer.close().await;
    let hooks = &running.interceptor;
    hooks.record_requests(true);
    hooks
        .push_errors(ApiKey::Fetch, [ErrorCode::NotLeaderOrFollower; 2])
        .unwrap();
    let consumer = Consumer::new(client_config(
        &running,
        &[("auto.offset.reset", "earliest")],
    ))
    .unwrap();
    consumer.assign(&[odradek::producer::TopicPartition {
        topic: "t".into(),
        partition: 0,
    }]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut values = Vec::new();
    while values.len() < 5 {
        assert!(Instant::now() < deadline, "got only {values:?}");
        for r in consumer.poll(Duration::from_millis(50)).await.unwrap() {
            values.push(r.value.unwrap());
        }
    }
    consumer.close().await;
    let expected: Vec<Bytes> = (0..5).map(|i| Bytes::from(format!("f{i}"))).collect();
    assert_eq!(values, expected, "each record once, in order");
    assert_eq!(hooks.pending_rules(), 0);
    let log = hooks.requests();
    let fetches = of_api(&log, ApiKey::Fetch);
    assert!(fetches.len() >= 3, "{fetches:?}");
    assert!(fetches[2..].iter().all(|f| f.action.is_none()));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_response_hits_request_timeout_and_the_retry_delivers_once() {
    let (running, _dir) = start(&[]).await;
    let hooks = &running.interceptor;
    hooks.record_requests(true);
    // The first Produce is appended, but its response would come 10 s later.
    hooks
        .add(Rule::new(
            ApiKey::Produce,
            Action::Delay(Duration::from_secs(10)),
        ))
        .unwrap();
    let producer =
        Producer::new(client_config(&running, &[("request.timeout.ms", "500")])).unwrap();
    let started = Instant::now();
    let offset = send_one(&producer, "late").await.unwrap();
    let elapsed = started.elapsed();
    producer.close().await;

    assert!(
        elapsed >= Duration::from_millis(500),
        "acknowledged before request.timeout.ms: {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_secs(8),
        "the client waited for the delayed response instead of timing out: {elapsed:?}"
    );
    assert_eq!(
        offset, 0,
        "the retry is acknowledged with the first append's offset"
    );
    assert_eq!(
        stored_values(&running, "t"),
        [Bytes::from("late")],
        "the idempotent retry was not appended twice"
    );
    let log = hooks.requests();
    let produces = of_api(&log, ApiKey::Produce);
    assert_eq!(produces.len(), 2, "{produces:?}");
    assert_eq!(
        produces[0].action,
        Some(Action::Delay(Duration::from_secs(10)))
    );
    assert_ne!(
        produces[0].peer, produces[1].peer,
        "the timed-out connection was replaced"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_shows_what_the_client_sent() {
    let (running, _dir) = start(&[]).await;
    let hooks = &running.interceptor;
    hooks.record_requests(true);
    let producer = Producer::new(client_config(
        &running,
        &[("client.id", "intercept-log-client")],
    ))
    .unwrap();
    send_one(&producer, "logged").await.unwrap();
    producer.close().await;

    let log = hooks.take_requests();
    assert!(!log.is_empty());
    for r in &log {
        assert_eq!(
            r.client_id.as_deref(),
            Some("intercept-log-client"),
            "{r:?}"
        );
        assert_eq!(r.action, None);
    }
    for key in [
        ApiKey::ApiVersions,
        ApiKey::Metadata,
        ApiKey::InitProducerId,
        ApiKey::Produce,
    ] {
        assert!(
            log.iter().any(|r| r.api_key == key),
            "no {key:?} in {log:?}"
        );
    }
    // Every connection opens with ApiVersions, and its correlation ids only go up.
    let mut by_connection: HashMap<_, Vec<&LoggedRequest>> = HashMap::new();
    for r in &log {
        by_connection.entry(r.peer).or_default().push(r);
    }
    for requests in by_connection.values() {
        assert_eq!(requests[0].api_key, ApiKey::ApiVersions, "{requests:?}");
        assert!(requests
            .windows(2)
            .all(|w| w[0].correlation_id < w[1].correlation_id));
    }
    let produce = log.iter().find(|r| r.api_key == ApiKey::Produce).unwrap();
    assert!(produce.api_version >= 3, "{produce:?}");
    assert!(hooks.requests().is_empty(), "take_requests emptied the log");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_request_and_a_closed_connection_are_survived() {
    let (running, _dir) = start(&[]).await;
    let hooks = &running.interceptor;
    hooks.record_requests(true);
    // First Produce: never answered. Second: the connection is closed instead.
    hooks.add(Rule::new(ApiKey::Produce, Action::Drop)).unwrap();
    hooks
        .add(Rule::new(ApiKey::Produce, Action::Close))
        .unwrap();
    let producer =
        Producer::new(client_config(&running, &[("request.timeout.ms", "500")])).unwrap();
    let offset = send_one(&producer, "survivor").await.unwrap();
    // The connection is usable again afterwards.
    let next = send_one(&producer, "after").await.unwrap();
    producer.close().await;

    assert_eq!((offset, next), (0, 1));
    assert_eq!(
        stored_values(&running, "t"),
        [Bytes::from("survivor"), Bytes::from("after")]
    );
    assert_eq!(hooks.pending_rules(), 0);
    let log = hooks.requests();
    let actions: Vec<Option<Action>> = of_api(&log, ApiKey::Produce)
        .iter()
        .map(|r| r.action)
        .collect();
    assert_eq!(
        actions,
        [Some(Action::Drop), Some(Action::Close), None, None],
        "{log:?}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_injection_is_refused_for_apis_without_an_error_response() {
    let (running, _dir) = start(&[]).await;
    let refused = running
        .interceptor
        .push_errors(ApiKey::DescribeConfigs, [ErrorCode::PolicyViolation]);
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("DescribeConfigs"), "{message}");
    assert!(
        message.contains("Produce"),
        "lists what is supported: {message}"
    );
    assert_eq!(running.interceptor.pending_rules(), 0);
    running.shutdown().await.unwrap();
}
