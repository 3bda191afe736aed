//! The admin client against a real broker (`odradek-broker`, or Apache Kafka with
//! `ODRADEK_TEST_BOOTSTRAP`).
//!
//! Kafka applies topic changes through its controller and the broker's metadata cache catches up
//! a moment later, so checks that follow a change poll until they hold (with a deadline).

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use odradek::admin::{
    AlterConfigOp, ConfigEntry, ConfigResource, ConfigSource, NewTopic, OffsetSpec,
    TopicDescription,
};
use odradek::producer::TopicPartition;
use odradek::{Admin, Error, ErrorCode, Producer, ProducerRecord, Result};
use odradek_suite::{topic_name, Target};

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// The Kafka code of a per-item error.
fn code<T: std::fmt::Debug>(r: &Result<T>) -> ErrorCode {
    match r {
        Err(Error::Kafka(c)) => *c,
        other => panic!("expected a Kafka error code, got {other:?}"),
    }
}

/// Polls `check` until it returns `Some` (or 30 s pass).
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `topic` is described with `partitions` partitions, each with a leader.
async fn wait_for_topic(admin: &Admin, topic: &str, partitions: usize) -> TopicDescription {
    eventually(&format!("{topic} with {partitions} partitions"), || async {
        let (_, r) = admin.describe_topics(&[topic]).await.unwrap().pop()?;
        let d = r.ok()?;
        (d.partitions.len() == partitions && d.partitions.iter().all(|p| p.leader.is_some()))
            .then_some(d)
    })
    .await
}

/// Waits until `topic` is gone from metadata.
async fn wait_for_absence(admin: &Admin, topic: &str) {
    eventually(&format!("{topic} to disappear"), || async {
        let (_, r) = admin.describe_topics(&[topic]).await.unwrap().pop()?;
        matches!(r, Err(Error::Kafka(ErrorCode::UnknownTopicOrPartition))).then_some(())
    })
    .await
}

async fn create(admin: &Admin, topic: &str, partitions: i32) {
    let results = admin
        .create_topics(&[NewTopic::new(topic).partitions(partitions)], false)
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    wait_for_topic(admin, topic, partitions as usize).await;
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Produces `n` records to partition 0 with timestamps `base + i * 1000`.
async fn produce(target: &Target, topic: &str, n: i64, base: i64) {
    let producer = Producer::new(target.config(&[("linger.ms", "1")])).unwrap();
    let mut futures = Vec::new();
    for i in 0..n {
        let r = ProducerRecord::new(topic, format!("v{i}"))
            .partition(0)
            .timestamp(base + i * 1000);
        futures.push(producer.send(r).await.unwrap());
    }
    for f in futures {
        f.await.unwrap();
    }
    producer.close().await;
}

async fn topic_configs(admin: &Admin, topic: &str) -> HashMap<String, ConfigEntry> {
    let mut results = admin
        .describe_configs(&[ConfigResource::Topic(topic.into())])
        .await
        .unwrap();
    let (_, entries) = results.pop().unwrap();
    entries
        .unwrap()
        .into_iter()
        .map(|e| (e.name.clone(), e))
        .collect()
}

/// A list-valued config as a set: Kafka keeps APPEND's order, odradek-broker a canonical one.
fn list(value: &str) -> std::collections::BTreeSet<&str> {
    value.split(',').map(str::trim).collect()
}

/// A config that is not overridden on the topic comes from the broker or Kafka's defaults.
fn not_overridden(e: &ConfigEntry) -> bool {
    matches!(
        e.source,
        ConfigSource::Default
            | ConfigSource::StaticBroker
            | ConfigSource::DynamicBroker
            | ConfigSource::DynamicDefaultBroker
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_reports_each_topic_and_validate_only_creates_nothing() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let (a, b, checked) = (topic_name("ct-a"), topic_name("ct-b"), topic_name("ct-v"));
    let results = admin
        .create_topics(
            &[
                NewTopic::new(&a).partitions(3).replication_factor(1),
                NewTopic::new(&b)
                    .partitions(1)
                    .config("retention.ms", "3600000")
                    .config("cleanup.policy", "compact"),
            ],
            false,
        )
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, a);
    let created_a = results[0].1.as_ref().unwrap();
    assert_eq!(created_a.partitions, 3);
    assert_eq!(created_a.replication_factor, 1);
    assert!(!created_a.topic_id.is_nil());
    let created_b = results[1].1.as_ref().unwrap();
    assert_eq!(created_b.partitions, 1);
    let retention = created_b
        .configs
        .iter()
        .find(|c| c.name == "retention.ms")
        .unwrap();
    assert_eq!(retention.value.as_deref(), Some("3600000"));
    assert_eq!(retention.source, ConfigSource::DynamicTopic);

    let described = wait_for_topic(&admin, &a, 3).await;
    assert_eq!(described.topic_id, created_a.topic_id);
    assert!(!described.internal);

    // validate_only: the answer of a real create, but nothing is created.
    let results = admin
        .create_topics(&[NewTopic::new(&checked).partitions(2)], true)
        .await
        .unwrap();
    assert_eq!(results[0].1.as_ref().unwrap().partitions, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, r) = admin.describe_topics(&[&checked]).await.unwrap().remove(0);
    assert_eq!(code(&r), ErrorCode::UnknownTopicOrPartition);

    // Per-item errors next to a success (a replication factor above the broker count).
    let brokers = admin.describe_cluster().await.unwrap().brokers.len() as i16;
    let ok = topic_name("ct-ok");
    let results = admin
        .create_topics(
            &[
                NewTopic::new(&a).partitions(3),
                NewTopic::new(topic_name("ct-zero")).partitions(0),
                NewTopic::new(topic_name("ct-cfg")).config("retention.ms", "soon"),
                NewTopic::new(topic_name("ct-rf")).replication_factor(brokers + 1),
                NewTopic::new(&ok),
            ],
            false,
        )
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::TopicAlreadyExists);
    assert_eq!(code(&results[1].1), ErrorCode::InvalidPartitions);
    assert_eq!(code(&results[2].1), ErrorCode::InvalidConfig);
    assert_eq!(code(&results[3].1), ErrorCode::InvalidReplicationFactor);
    let default_partitions = results[4].1.as_ref().unwrap().partitions;
    assert!(default_partitions >= 1);

    // validate_only reports the same per-item errors.
    let results = admin
        .create_topics(&[NewTopic::new(&a), NewTopic::new(&checked)], true)
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::TopicAlreadyExists);
    results[1].1.as_ref().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_topics_per_topic_results() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("del");
    create(&admin, &topic, 2).await;
    let missing = topic_name("del-missing");
    let results = admin.delete_topics(&[&topic, &missing]).await.unwrap();
    assert_eq!(results[0].0, topic);
    results[0].1.as_ref().unwrap();
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    wait_for_absence(&admin, &topic).await;
    let listed = admin.list_topics().await.unwrap();
    assert!(listed.iter().all(|t| t.name != topic));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_partitions_grows_topics_and_rejects_shrinking() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("cp");
    create(&admin, &topic, 1).await;

    let results = admin.create_partitions(&[(&topic, 5)], true).await.unwrap();
    results[0].1.as_ref().unwrap();
    let results = admin
        .create_partitions(&[(&topic, 3)], false)
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    // validate_only changed nothing: 3, not 5.
    let described = wait_for_topic(&admin, &topic, 3).await;
    assert_eq!(described.partitions.len(), 3);

    let missing = topic_name("cp-missing");
    let results = admin
        .create_partitions(&[(&topic, 2), (&missing, 4), (&topic, 3)], false)
        .await
        .unwrap();
    // A topic named twice is rejected as a whole (both items share the answer), as Kafka does.
    assert_eq!(code(&results[0].1), ErrorCode::InvalidRequest);
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    assert_eq!(code(&results[2].1), ErrorCode::InvalidRequest);
    let results = admin
        .create_partitions(&[(&topic, 2), (&missing, 4)], false)
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::InvalidPartitions);
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    let results = admin
        .create_partitions(&[(&topic, 3)], false)
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::InvalidPartitions);
    assert_eq!(wait_for_topic(&admin, &topic, 3).await.partitions.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_configs_of_topics_and_brokers() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("dc");
    let results = admin
        .create_topics(
            &[NewTopic::new(&topic)
                .partitions(1)
                .config("retention.ms", "7200000")],
            false,
        )
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    wait_for_topic(&admin, &topic, 1).await;

    let configs = topic_configs(&admin, &topic).await;
    let retention = &configs["retention.ms"];
    assert_eq!(retention.value.as_deref(), Some("7200000"));
    assert_eq!(retention.source, ConfigSource::DynamicTopic);
    assert!(!retention.read_only);
    assert!(!retention.sensitive);
    // Kafka describes more keys than we do; these exist everywhere.
    for key in [
        "cleanup.policy",
        "segment.bytes",
        "max.message.bytes",
        "min.insync.replicas",
    ] {
        assert!(not_overridden(&configs[key]), "{key}: {:?}", configs[key]);
    }
    assert_eq!(configs["cleanup.policy"].value.as_deref(), Some("delete"));

    let cluster = admin.describe_cluster().await.unwrap();
    let broker = cluster.brokers[0].id;
    let missing = topic_name("dc-missing");
    let results = admin
        .describe_configs(&[
            ConfigResource::Broker(broker),
            ConfigResource::Topic(missing),
            ConfigResource::Broker(broker + 1000),
        ])
        .await
        .unwrap();
    let broker_configs = results[0].1.as_ref().unwrap();
    let partitions = broker_configs
        .iter()
        .find(|e| e.name == "num.partitions")
        .unwrap();
    assert!(partitions.value.is_some());
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    assert_eq!(code(&results[2].1), ErrorCode::BrokerNotAvailable);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_configs_replaces_every_override() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("ac");
    create(&admin, &topic, 1).await;
    let resource = ConfigResource::Topic(topic.clone());
    let set = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };

    let results = admin
        .alter_configs(
            &[(
                resource.clone(),
                set(&[("retention.ms", "1000000"), ("cleanup.policy", "compact")]),
            )],
            false,
        )
        .await
        .unwrap();
    assert_eq!(results[0].0, resource);
    results[0].1.as_ref().unwrap();
    let configs = eventually("both overrides", || async {
        let c = topic_configs(&admin, &topic).await;
        (c["cleanup.policy"].source == ConfigSource::DynamicTopic).then_some(c)
    })
    .await;
    assert_eq!(configs["retention.ms"].value.as_deref(), Some("1000000"));
    assert_eq!(configs["retention.ms"].source, ConfigSource::DynamicTopic);
    assert_eq!(configs["cleanup.policy"].value.as_deref(), Some("compact"));

    // Legacy semantics: keys left out revert to their defaults.
    let results = admin
        .alter_configs(
            &[(resource.clone(), set(&[("retention.ms", "2000000")]))],
            false,
        )
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    let configs = eventually("cleanup.policy reverted", || async {
        let c = topic_configs(&admin, &topic).await;
        not_overridden(&c["cleanup.policy"]).then_some(c)
    })
    .await;
    assert_eq!(configs["cleanup.policy"].value.as_deref(), Some("delete"));
    assert_eq!(configs["retention.ms"].value.as_deref(), Some("2000000"));

    // validate_only changes nothing; bad values and unknown topics fail per resource.
    let missing = ConfigResource::Topic(topic_name("ac-missing"));
    let results = admin
        .alter_configs(
            &[(resource.clone(), set(&[("retention.ms", "3000000")]))],
            true,
        )
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    let results = admin
        .alter_configs(
            &[
                (resource.clone(), set(&[("retention.ms", "later")])),
                (missing, set(&[("retention.ms", "1")])),
            ],
            false,
        )
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::InvalidConfig);
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let configs = topic_configs(&admin, &topic).await;
    assert_eq!(configs["retention.ms"].value.as_deref(), Some("2000000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_alter_configs_set_append_subtract_delete() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("iac");
    create(&admin, &topic, 1).await;
    let resource = ConfigResource::Topic(topic.clone());
    let alter = |ops: Vec<AlterConfigOp>, validate_only: bool| {
        let changes = vec![(resource.clone(), ops)];
        let admin = &admin;
        async move {
            let mut results = admin
                .incremental_alter_configs(&changes, validate_only)
                .await
                .unwrap();
            results.pop().unwrap().1
        }
    };
    let wait_for = |key: &'static str, value: &'static str| {
        let admin = &admin;
        let topic = &topic;
        async move {
            eventually(&format!("{key}={value}"), || async {
                let c = topic_configs(admin, topic).await;
                (c[key].value.as_deref().map(list) == Some(list(value))).then_some(c)
            })
            .await
        }
    };

    alter(
        vec![
            AlterConfigOp::set("retention.ms", "4000000"),
            AlterConfigOp::append("cleanup.policy", "compact"),
        ],
        false,
    )
    .await
    .unwrap();
    let c = wait_for("cleanup.policy", "delete,compact").await;
    assert_eq!(c["retention.ms"].value.as_deref(), Some("4000000"));
    assert_eq!(c["retention.ms"].source, ConfigSource::DynamicTopic);
    assert_eq!(c["cleanup.policy"].source, ConfigSource::DynamicTopic);

    // Incremental: untouched keys keep their overrides.
    alter(
        vec![AlterConfigOp::subtract("cleanup.policy", "delete")],
        false,
    )
    .await
    .unwrap();
    let c = wait_for("cleanup.policy", "compact").await;
    assert_eq!(c["retention.ms"].value.as_deref(), Some("4000000"));

    alter(vec![AlterConfigOp::delete("retention.ms")], false)
        .await
        .unwrap();
    let c = eventually("retention.ms back to its default", || async {
        let c = topic_configs(&admin, &topic).await;
        not_overridden(&c["retention.ms"]).then_some(c)
    })
    .await;
    assert_eq!(c["cleanup.policy"].source, ConfigSource::DynamicTopic);

    // validate_only changes nothing.
    alter(vec![AlterConfigOp::set("cleanup.policy", "delete")], true)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = topic_configs(&admin, &topic).await;
    assert_eq!(c["cleanup.policy"].value.as_deref(), Some("compact"));

    let err = alter(vec![AlterConfigOp::set("retention.ms", "never")], false).await;
    assert_eq!(code(&err), ErrorCode::InvalidConfig);
    let missing = ConfigResource::Topic(topic_name("iac-missing"));
    let results = admin
        .incremental_alter_configs(
            &[(missing, vec![AlterConfigOp::set("retention.ms", "1")])],
            false,
        )
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::UnknownTopicOrPartition);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_for_every_spec() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("lo");
    create(&admin, &topic, 2).await;
    let base = now_ms() - 60_000;
    produce(&target, &topic, 10, base).await;

    let missing = topic_name("lo-missing");
    let queries = [
        (tp(&topic, 0), OffsetSpec::Earliest),
        (tp(&topic, 0), OffsetSpec::Latest),
        (tp(&topic, 0), OffsetSpec::Timestamp(base + 4500)),
        (tp(&topic, 0), OffsetSpec::Timestamp(base + 10_000_000)),
        (tp(&topic, 0), OffsetSpec::MaxTimestamp),
        (tp(&topic, 1), OffsetSpec::Latest),
        (tp(&topic, 1), OffsetSpec::MaxTimestamp),
        (tp(&topic, 7), OffsetSpec::Latest),
        (tp(&missing, 0), OffsetSpec::Earliest),
    ];
    let results = admin.list_offsets(&queries).await.unwrap();
    assert_eq!(results.len(), queries.len());
    for ((q, _), (r, _)) in queries.iter().zip(&results) {
        assert_eq!(q, r);
    }
    let found = |i: usize| results[i].1.as_ref().unwrap().unwrap();
    assert_eq!(found(0).offset, 0);
    assert_eq!(found(1).offset, 10);
    assert_eq!(found(2).offset, 5);
    assert_eq!(found(2).timestamp, Some(base + 5000));
    assert_eq!(results[3].1.as_ref().unwrap(), &None);
    assert_eq!(found(4).offset, 9);
    assert_eq!(found(4).timestamp, Some(base + 9000));
    assert_eq!(found(5).offset, 0);
    assert_eq!(results[6].1.as_ref().unwrap(), &None);
    assert_eq!(code(&results[7].1), ErrorCode::UnknownTopicOrPartition);
    assert_eq!(code(&results[8].1), ErrorCode::UnknownTopicOrPartition);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_moves_the_low_watermark() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let topic = topic_name("dr");
    create(&admin, &topic, 1).await;
    produce(&target, &topic, 10, now_ms()).await;

    let results = admin.delete_records(&[(tp(&topic, 0), 4)]).await.unwrap();
    assert_eq!(results[0].1.as_ref().unwrap(), &4);
    let earliest = admin
        .list_offsets(&[(tp(&topic, 0), OffsetSpec::Earliest)])
        .await
        .unwrap();
    assert_eq!(earliest[0].1.as_ref().unwrap().unwrap().offset, 4);

    let missing = topic_name("dr-missing");
    let results = admin
        .delete_records(&[
            (tp(&topic, 0), 11),
            (tp(&topic, 3), 1),
            (tp(&missing, 0), 1),
        ])
        .await
        .unwrap();
    assert_eq!(code(&results[0].1), ErrorCode::OffsetOutOfRange);
    assert_eq!(code(&results[1].1), ErrorCode::UnknownTopicOrPartition);
    assert_eq!(code(&results[2].1), ErrorCode::UnknownTopicOrPartition);

    // -1 deletes up to the high watermark.
    let results = admin.delete_records(&[(tp(&topic, 0), -1)]).await.unwrap();
    assert_eq!(results[0].1.as_ref().unwrap(), &10);
    let offsets = admin
        .list_offsets(&[
            (tp(&topic, 0), OffsetSpec::Earliest),
            (tp(&topic, 0), OffsetSpec::Latest),
        ])
        .await
        .unwrap();
    assert_eq!(offsets[0].1.as_ref().unwrap().unwrap().offset, 10);
    assert_eq!(offsets[1].1.as_ref().unwrap().unwrap().offset, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_topics_and_log_dirs() {
    let target = Target::start(&[]);
    let admin = Admin::new(target.config(&[]));
    let cluster = admin.describe_cluster().await.unwrap();
    assert!(!cluster.cluster_id.is_empty());
    assert!(!cluster.brokers.is_empty());
    let ids: Vec<i32> = cluster.brokers.iter().map(|b| b.id).collect();
    if let Some(controller) = cluster.controller {
        assert!(ids.contains(&controller), "{cluster:?}");
    }
    assert!(cluster.brokers.iter().all(|b| b.port > 0 && !b.fenced));

    let topic = topic_name("ct");
    create(&admin, &topic, 2).await;
    produce(&target, &topic, 5, now_ms()).await;

    let listed = admin.list_topics().await.unwrap();
    let mine = listed.iter().find(|t| t.name == topic).unwrap();
    assert_eq!(mine.partitions, 2);
    assert!(!mine.internal);
    assert!(listed.windows(2).all(|w| w[0].name <= w[1].name));

    let missing = topic_name("ct-missing");
    let described = admin.describe_topics(&[&topic, &missing]).await.unwrap();
    let d = described[0].1.as_ref().unwrap();
    assert_eq!(d.name, topic);
    assert_eq!(d.topic_id, mine.topic_id);
    assert_eq!(d.partitions.len(), 2);
    for (i, p) in d.partitions.iter().enumerate() {
        assert_eq!(p.partition, i as i32);
        let leader = p.leader.unwrap();
        assert!(ids.contains(&leader));
        // One replica on a single broker, the default replication factor on a cluster.
        assert!(p.replicas.contains(&leader), "{p:?}");
        assert!(p.isr.contains(&leader), "{p:?}");
        assert!(p.isr.iter().all(|r| p.replicas.contains(r)), "{p:?}");
        if ids.len() == 1 {
            assert_eq!(p.replicas, vec![leader]);
        }
        assert!(p.error.is_none());
    }
    assert_eq!(code(&described[1].1), ErrorCode::UnknownTopicOrPartition);

    let dirs = admin.describe_log_dirs().await.unwrap();
    assert_eq!(dirs.len(), cluster.brokers.len());
    let replica = dirs
        .iter()
        .flat_map(|(_, r)| r.as_ref().unwrap())
        .flat_map(|d| {
            assert!(d.error.is_none(), "{d:?}");
            d.replicas.iter()
        })
        .find(|r| r.topic == topic && r.partition == 0)
        .unwrap();
    assert!(replica.size > 0, "{replica:?}");
    assert!(!replica.future);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_cluster_fails_the_call_within_the_api_timeout() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let admin = Admin::from_map([
        ("bootstrap.servers", format!("127.0.0.1:{port}")),
        ("default.api.timeout.ms", "1500".to_string()),
    ])
    .unwrap();
    let started = std::time::Instant::now();
    let err = admin.describe_cluster().await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    assert!(err.to_string().contains("no broker answered"), "{err}");
    let err = admin
        .create_topics(&[NewTopic::new("never")], false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_through_dropped_connections() {
    let Some((target, proxy)) = Target::start_behind_proxy(&[]).await else {
        return; // needs our own broker behind the proxy
    };
    let admin = Admin::new(target.config(&[("retry.backoff.ms", "10")]));
    admin.describe_cluster().await.unwrap();
    // Cut every connection every few milliseconds while the calls run, so some requests are
    // lost in flight and must be retried; in bursts of 30 ms with 30 ms of calm between them,
    // so a retry can always get through, however loaded the machine (cutting without a pause
    // could starve every attempt for the whole default.api.timeout.ms on a busy CI machine).
    let proxy = std::sync::Arc::new(proxy);
    let cutting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let cuts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cutter = {
        let (proxy, cutting, cuts) = (proxy.clone(), cutting.clone(), cuts.clone());
        tokio::spawn(async move {
            while cutting.load(std::sync::atomic::Ordering::Relaxed) {
                let burst = tokio::time::Instant::now() + Duration::from_millis(30);
                while tokio::time::Instant::now() < burst {
                    proxy.cut_all();
                    cuts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        })
    };
    for round in 0..10 {
        let topic = topic_name(&format!("cut-{round}"));
        let results = admin
            .create_topics(&[NewTopic::new(&topic).partitions(1)], false)
            .await
            .unwrap();
        // A request lost with its connection may still have been applied; the retry then finds
        // the topic there.
        match &results[0].1 {
            Ok(_) | Err(Error::Kafka(ErrorCode::TopicAlreadyExists)) => {}
            other => panic!("round {round}: {other:?}"),
        }
        let offsets = admin
            .list_offsets(&[(tp(&topic, 0), OffsetSpec::Latest)])
            .await
            .unwrap();
        assert_eq!(offsets[0].1.as_ref().unwrap().unwrap().offset, 0);
        let configs = topic_configs(&admin, &topic).await;
        assert!(configs.contains_key("retention.ms"));
    }
    cutting.store(false, std::sync::atomic::Ordering::Relaxed);
    cutter.await.unwrap();
    // Without the cuts one connection would have served every call: each further one is a
    // reconnection after a cut, most of them with a call in flight.
    assert!(
        cuts.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the cutter never ran"
    );
    assert!(
        proxy.connections_accepted() >= 3,
        "only {} connections: the cuts never hit the calls",
        proxy.connections_accepted()
    );
}
