//! Consumer groups with Odradek's consumer: subscribe, rebalances, commits, static membership,
//! against `odradek-broker` (or Apache Kafka with `ODRADEK_TEST_BOOTSTRAP`).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odradek::consumer::RebalanceListener;
use odradek::producer::TopicPartition;
use odradek::Consumer;
use odradek_suite::{create_topic, drain, produce_numbered as produce, topic_name, Target};

#[derive(Debug, Default)]
struct Events {
    log: Mutex<Vec<(String, Vec<TopicPartition>)>>,
}

impl RebalanceListener for Events {
    fn on_assigned(&self, p: &[TopicPartition]) {
        self.log
            .lock()
            .unwrap()
            .push(("assigned".into(), p.to_vec()));
    }
    fn on_revoked(&self, p: &[TopicPartition]) {
        self.log
            .lock()
            .unwrap()
            .push(("revoked".into(), p.to_vec()));
    }
    fn on_lost(&self, p: &[TopicPartition]) {
        self.log.lock().unwrap().push(("lost".into(), p.to_vec()));
    }
}

fn group_config(target: &Target, group: &str, extra: &[(&str, &str)]) -> odradek::ClientConfig {
    let mut all = vec![
        ("group.id", group),
        ("auto.offset.reset", "earliest"),
        ("heartbeat.interval.ms", "200"),
        ("session.timeout.ms", "6000"),
        ("auto.commit.interval.ms", "200"),
    ];
    all.extend_from_slice(extra);
    target.config(&all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_members_split_partitions_and_consume_everything() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("grp");
    let group = topic_name("g");
    let a = Consumer::new(group_config(
        &target,
        &group,
        &[("partition.assignment.strategy", "range")],
    ))
    .unwrap();
    create_topic(a.cluster(), &topic, 4).await;
    produce(&target, &topic, 400).await;
    let b = Consumer::new(group_config(
        &target,
        &group,
        &[("partition.assignment.strategy", "range")],
    ))
    .unwrap();
    a.subscribe(&[&topic], None).unwrap();
    b.subscribe(&[&topic], None).unwrap();
    let got = drain(&[&a, &b], 400, 40).await;
    let unique: BTreeSet<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    assert_eq!(unique.len(), 400, "every record consumed");
    // Once stable, the two members own disjoint, complete halves.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (pa, pb) = (a.assignment(), b.assignment());
        let both: BTreeSet<&TopicPartition> = pa.iter().chain(pb.iter()).collect();
        if pa.len() == 2 && pb.len() == 2 && both.len() == 4 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not balanced: {pa:?} / {pb:?}"
        );
        let _ = a.poll(Duration::from_millis(50)).await.unwrap();
        let _ = b.poll(Duration::from_millis(50)).await.unwrap();
    }
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_let_a_new_member_resume() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("resume");
    let group = topic_name("g");
    let first = Consumer::new(group_config(
        &target,
        &group,
        &[("enable.auto.commit", "false")],
    ))
    .unwrap();
    create_topic(first.cluster(), &topic, 1).await;
    produce(&target, &topic, 100).await;
    first.subscribe(&[&topic], None).unwrap();
    let got = drain(&[&first], 60, 30).await;
    assert!(got.len() >= 60);
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    first.commit_sync(Some(&[(tp.clone(), 60)])).await.unwrap();
    assert_eq!(
        first.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp],
        Some(60)
    );
    first.close().await;
    let second = Consumer::new(group_config(&target, &group, &[])).unwrap();
    second.subscribe(&[&topic], None).unwrap();
    let got = drain(&[&second], 40, 30).await;
    assert_eq!(
        got.first().map(|r| r.offset),
        Some(60),
        "resumes at the committed offset"
    );
    assert_eq!(got.len(), 40);
    // Auto-commit records what was delivered; closing commits the rest.
    second.close().await;
    let check = Consumer::new(group_config(&target, &group, &[])).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let c = check.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp];
        if c == Some(100) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "committed {c:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_never_revokes_kept_partitions() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("coop");
    let group = topic_name("g");
    let cfg = [("partition.assignment.strategy", "cooperative-sticky")];
    let events_a = Arc::new(Events::default());
    let a = Consumer::new(group_config(&target, &group, &cfg)).unwrap();
    create_topic(a.cluster(), &topic, 6).await;
    a.subscribe(&[&topic], Some(events_a.clone())).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while a.assignment().len() != 6 {
        assert!(tokio::time::Instant::now() < deadline);
        let _ = a.poll(Duration::from_millis(50)).await.unwrap();
    }
    let before: BTreeSet<TopicPartition> = a.assignment().into_iter().collect();
    let b = Consumer::new(group_config(&target, &group, &cfg)).unwrap();
    b.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !(a.assignment().len() == 3 && b.assignment().len() == 3) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?} / {:?}",
            a.assignment(),
            b.assignment()
        );
        let _ = a.poll(Duration::from_millis(50)).await.unwrap();
        let _ = b.poll(Duration::from_millis(50)).await.unwrap();
    }
    let kept: BTreeSet<TopicPartition> = a.assignment().into_iter().collect();
    assert!(kept.is_subset(&before));
    let log = events_a.log.lock().unwrap().clone();
    let revoked: BTreeSet<TopicPartition> = log
        .iter()
        .filter(|(k, _)| k == "revoked")
        .flat_map(|(_, p)| p.clone())
        .collect();
    assert!(
        revoked.is_disjoint(&kept),
        "a kept partition was revoked: {log:?}"
    );
    assert_eq!(
        revoked.len(),
        3,
        "exactly the moved partitions were revoked: {log:?}"
    );
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_restart_keeps_partitions_without_rebalance() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("static");
    let group = topic_name("g");
    let dynamic_events = Arc::new(Events::default());
    let dynamic = Consumer::new(group_config(
        &target,
        &group,
        &[("partition.assignment.strategy", "range")],
    ))
    .unwrap();
    create_topic(dynamic.cluster(), &topic, 4).await;
    let static_cfg = [
        ("group.instance.id", "static-1"),
        ("partition.assignment.strategy", "range"),
    ];
    let s1 = Consumer::new(group_config(&target, &group, &static_cfg)).unwrap();
    s1.subscribe(&[&topic], None).unwrap();
    dynamic
        .subscribe(&[&topic], Some(dynamic_events.clone()))
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !(s1.assignment().len() == 2 && dynamic.assignment().len() == 2) {
        assert!(tokio::time::Instant::now() < deadline);
        let _ = s1.poll(Duration::from_millis(50)).await.unwrap();
        let _ = dynamic.poll(Duration::from_millis(50)).await.unwrap();
    }
    let static_parts: BTreeSet<TopicPartition> = s1.assignment().into_iter().collect();
    let events_before = dynamic_events.log.lock().unwrap().len();
    s1.close().await; // a static member does not leave
    let s2 = Consumer::new(group_config(&target, &group, &static_cfg)).unwrap();
    s2.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s2.assignment().len() != 2 {
        assert!(tokio::time::Instant::now() < deadline);
        let _ = s2.poll(Duration::from_millis(50)).await.unwrap();
        let _ = dynamic.poll(Duration::from_millis(50)).await.unwrap();
    }
    let again: BTreeSet<TopicPartition> = s2.assignment().into_iter().collect();
    assert_eq!(again, static_parts, "same partitions back");
    for _ in 0..10 {
        let _ = dynamic.poll(Duration::from_millis(50)).await.unwrap();
    }
    assert_eq!(
        dynamic_events.log.lock().unwrap().len(),
        events_before,
        "no rebalance for the other member"
    );
    s2.close().await;
    dynamic.close().await;
    let _: BTreeMap<(), ()> = BTreeMap::new();
}

/// A listener that applies assignments itself (librdkafka's rebalance-callback model): the
/// membership task waits until the test says the last event was handled.
#[derive(Debug, Default)]
struct Manual {
    log: Mutex<Vec<(String, Vec<TopicPartition>)>>,
    issued: std::sync::atomic::AtomicU64,
    handled: tokio::sync::watch::Sender<u64>,
}

impl Manual {
    fn record(&self, kind: &str, p: &[TopicPartition]) {
        self.log.lock().unwrap().push((kind.into(), p.to_vec()));
        self.issued
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn handle_all(&self) {
        let n = self.issued.load(std::sync::atomic::Ordering::SeqCst);
        self.handled.send_replace(n);
    }

    fn find(&self, kind: &str) -> Option<Vec<TopicPartition>> {
        let log = self.log.lock().unwrap();
        log.iter().find(|(k, _)| k == kind).map(|(_, p)| p.clone())
    }
}

impl RebalanceListener for Manual {
    fn on_assigned(&self, p: &[TopicPartition]) {
        self.record("assigned", p);
    }
    fn on_revoked(&self, p: &[TopicPartition]) {
        self.record("revoked", p);
    }
    fn applies_assignment(&self) -> bool {
        true
    }
    fn handled(&self) -> odradek::consumer::Handled {
        let target = self.issued.load(std::sync::atomic::Ordering::SeqCst);
        let mut rx = self.handled.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|h| *h >= target).await;
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_applies_assignments_gates_the_rebalance() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("manual");
    let group = topic_name("g");
    let consumer = Arc::new(
        Consumer::new(group_config(
            &target,
            &group,
            &[("enable.auto.commit", "false")],
        ))
        .unwrap(),
    );
    create_topic(consumer.cluster(), &topic, 2).await;
    produce(&target, &topic, 50).await;
    let listener = Arc::new(Manual::default());
    consumer
        .subscribe(&[&topic], Some(listener.clone()))
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let assigned = loop {
        if let Some(p) = listener.find("assigned") {
            break p;
        }
        assert!(tokio::time::Instant::now() < deadline, "no assignment");
        assert!(consumer
            .poll(Duration::from_millis(50))
            .await
            .unwrap()
            .is_empty());
    };
    assert_eq!(assigned.len(), 2);
    // The consumer has not applied the assignment: nothing is fetched until the application does.
    assert!(consumer.assignment().is_empty());
    assert!(consumer
        .poll(Duration::from_millis(200))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(consumer.rebalance_protocol(), "EAGER");
    consumer.assign(&assigned);
    listener.handle_all();
    let got = drain(&[&consumer], 50, 30).await;
    assert_eq!(got.len(), 50);
    let tp = assigned[0].clone();
    let results = consumer
        .commit_offsets(&[(tp.clone(), 3, Some("meta".into()))])
        .await
        .unwrap();
    assert_eq!(results, vec![(tp.clone(), odradek::ErrorCode::NoError)]);
    assert_eq!(
        consumer.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp],
        Some(3)
    );
    // Leaving waits for the application to handle the final revoke.
    let closing = {
        let c = consumer.clone();
        tokio::spawn(async move { c.close().await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while listener.find("revoked").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "no revoke");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!closing.is_finished());
    assert_eq!(
        consumer.assignment().len(),
        2,
        "revoked partitions stay until applied"
    );
    consumer.assign(&[]);
    listener.handle_all();
    tokio::time::timeout(Duration::from_secs(30), closing)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_member_leaves_at_once_instead_of_timing_out() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("leave");
    let group = topic_name("g");
    // A session far longer than the deadline below: only a LeaveGroup can free the partitions.
    let long_session = [("session.timeout.ms", "45000")];
    let first = Consumer::new(group_config(&target, &group, &long_session)).unwrap();
    create_topic(first.cluster(), &topic, 2).await;
    produce(&target, &topic, 10).await;
    first.subscribe(&[&topic], None).unwrap();
    assert_eq!(drain(&[&first], 10, 30).await.len(), 10);
    first.close().await;

    let second = Consumer::new(group_config(&target, &group, &long_session)).unwrap();
    second.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while second.assignment().len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the closed member still holds its partitions: {:?}",
            second.assignment()
        );
        let _ = second.poll(Duration::from_millis(50)).await.unwrap();
    }
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_lists_describes_reads_offsets_of_and_deletes_groups() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("gadmin");
    let group = topic_name("g");
    let consumer = Consumer::new(group_config(
        &target,
        &group,
        &[("enable.auto.commit", "false")],
    ))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 2).await;
    consumer.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while consumer.assignment().len() != 2 {
        assert!(tokio::time::Instant::now() < deadline, "no assignment");
        let _ = consumer.poll(Duration::from_millis(50)).await.unwrap();
    }
    let tp0 = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    consumer
        .commit_sync(Some(&[(tp0.clone(), 7)]))
        .await
        .unwrap();

    let admin = odradek::Admin::new(target.config(&[]));
    let listed: Vec<_> = admin
        .list_groups()
        .await
        .unwrap()
        .into_iter()
        .flat_map(|(_, r)| r.unwrap())
        .collect();
    let mine = listed.iter().find(|g| g.group_id == group).unwrap();
    assert_eq!(mine.protocol_type, "consumer");

    let described = admin.describe_groups(&[&group]).await.unwrap();
    let d = described[0].1.as_ref().unwrap();
    assert_eq!(d.state, "Stable");
    assert_eq!(d.members.len(), 1);
    // The coordinator is the broker FindCoordinator names, with its address from metadata.
    let coordinator = admin
        .cluster()
        .find_coordinator(odradek::cluster::CoordinatorType::Group, &group)
        .await
        .unwrap();
    let known = admin.cluster().metadata().brokers[&coordinator].clone();
    assert_eq!(d.coordinator.as_ref(), Some(&known));
    let mut assigned = d.members[0].assignment.clone();
    assigned.sort_by_key(|tp| tp.partition);
    assert_eq!(assigned.len(), 2);
    assert_eq!(assigned[0], tp0);

    let offsets = admin.list_group_offsets(&group, None).await.unwrap();
    assert_eq!(offsets.len(), 1);
    assert_eq!(
        (offsets[0].partition.clone(), offsets[0].offset),
        (tp0.clone(), Some(7))
    );

    let busy = admin.delete_groups(&[&group]).await.unwrap();
    assert!(
        matches!(
            busy[0].1,
            Err(odradek::Error::Kafka(odradek::ErrorCode::NonEmptyGroup))
        ),
        "{busy:?}"
    );
    consumer.close().await;
    let deleted = admin.delete_groups(&[&group]).await.unwrap();
    assert!(deleted[0].1.is_ok(), "{deleted:?}");
    let missing = admin.delete_groups(&[&group]).await.unwrap();
    assert!(
        matches!(
            missing[0].1,
            Err(odradek::Error::Kafka(odradek::ErrorCode::GroupIdNotFound))
        ),
        "{missing:?}"
    );
    // A deleted group is `Dead` (our broker, older Kafka) or GROUP_ID_NOT_FOUND (Kafka 4.x,
    // DescribeGroups v6).
    let gone = admin.describe_groups(&[&group]).await.unwrap();
    match &gone[0].1 {
        Ok(d) => assert_eq!(d.state, "Dead"),
        Err(e) => assert!(
            matches!(
                e,
                odradek::Error::Kafka(odradek::ErrorCode::GroupIdNotFound)
            ),
            "{e:?}"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_alters_and_deletes_group_offsets() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("goffsets");
    let group = topic_name("g");
    let consumer = Consumer::new(group_config(
        &target,
        &group,
        &[("enable.auto.commit", "false")],
    ))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 2).await;
    let tp = |partition| TopicPartition {
        topic: topic.as_str().into(),
        partition,
    };
    consumer.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while consumer.assignment().len() != 2 {
        assert!(tokio::time::Instant::now() < deadline, "no assignment");
        let _ = consumer.poll(Duration::from_millis(50)).await.unwrap();
    }
    consumer
        .commit_sync(Some(&[(tp(0), 3), (tp(1), 4)]))
        .await
        .unwrap();
    let admin = odradek::Admin::new(target.config(&[]));

    // While a member consumes the topic, its offsets cannot be changed or deleted.
    let busy = admin.alter_group_offsets(&group, &[(tp(0), 1)]).await;
    assert!(
        busy.as_ref()
            .map_or(true, |r| r.iter().any(|(_, x)| x.is_err())),
        "altered under an active member: {busy:?}"
    );
    let busy = admin.delete_group_offsets(&group, &[tp(0)]).await.unwrap();
    assert!(
        matches!(
            busy[0].1,
            Err(odradek::Error::Kafka(
                odradek::ErrorCode::GroupSubscribedToTopic
            ))
        ),
        "{busy:?}"
    );

    consumer.close().await;
    let altered = admin
        .alter_group_offsets(&group, &[(tp(0), 10), (tp(1), 20)])
        .await
        .unwrap();
    assert!(altered.iter().all(|(_, r)| r.is_ok()), "{altered:?}");
    let deleted = admin.delete_group_offsets(&group, &[tp(1)]).await.unwrap();
    assert_eq!(deleted.len(), 1);
    assert!(deleted[0].1.is_ok(), "{deleted:?}");
    let offsets = admin
        .list_group_offsets(&group, Some(&[tp(0), tp(1)]))
        .await
        .unwrap();
    let found: Vec<(i32, Option<i64>)> = offsets
        .iter()
        .map(|o| (o.partition.partition, o.offset))
        .collect();
    assert_eq!(found, vec![(0, Some(10)), (1, None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_a_broker_restart() {
    let mut target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    if !target.is_own_broker() {
        return; // Restarting needs our own broker process.
    }
    let topic = topic_name("durable");
    let group = topic_name("g");
    let first = Consumer::new(group_config(
        &target,
        &group,
        &[("enable.auto.commit", "false")],
    ))
    .unwrap();
    create_topic(first.cluster(), &topic, 1).await;
    produce(&target, &topic, 50).await;
    first.subscribe(&[&topic], None).unwrap();
    assert!(drain(&[&first], 30, 30).await.len() >= 30);
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    first.commit_sync(Some(&[(tp.clone(), 30)])).await.unwrap();
    first.close().await;

    // SIGKILL and restart on the same data: the group's offsets are reloaded from
    // __consumer_offsets.
    target.restart();
    let second = Consumer::new(group_config(&target, &group, &[])).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match second.committed(std::slice::from_ref(&tp)).await {
            Ok(c) if c[&tp] == Some(30) => break,
            other => assert!(
                tokio::time::Instant::now() < deadline,
                "committed after restart: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    second.subscribe(&[&topic], None).unwrap();
    let got = drain(&[&second], 20, 30).await;
    assert_eq!(
        got.first().map(|r| r.offset),
        Some(30),
        "resumes after restart"
    );
    assert_eq!(got.len(), 20);
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_commits_land_in_call_order() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("acommit");
    let group = topic_name("g");
    let consumer = Consumer::new(group_config(
        &target,
        &group,
        &[("enable.auto.commit", "false")],
    ))
    .unwrap();
    create_topic(consumer.cluster(), &topic, 1).await;
    produce(&target, &topic, 40).await;
    consumer.subscribe(&[&topic], None).unwrap();
    assert_eq!(drain(&[&consumer], 40, 30).await.len(), 40);
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    // Fire several without awaiting: the last one issued is what stays committed.
    let first = consumer.commit_async(Some(&[(tp.clone(), 5)]));
    let _not_awaited = consumer.commit_async(Some(&[(tp.clone(), 6)]));
    let last = consumer.commit_async(Some(&[(tp.clone(), 7)]));
    last.await.unwrap();
    first.await.unwrap();
    let committed = consumer.committed(std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(committed[&tp], Some(7));
    // Without offsets: the current positions (everything delivered).
    consumer.commit_async(None).await.unwrap();
    let committed = consumer.committed(std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(committed[&tp], Some(40));
    consumer.close().await;

    let no_group = Consumer::new(target.config(&[])).unwrap();
    assert!(no_group.commit_async(None).await.is_err());
    no_group.close().await;
}

/// Background auto-commit commits only what the application has finished with: records a
/// `poll` returned count as handled once the application polls again (Java's rule). Before,
/// the committed offset ran ahead to the position, so a crash between a `poll` and the handling
/// of its records lost them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_commit_covers_only_records_the_application_polled_past() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("autocommit");
    let group = topic_name("g");
    let c = Consumer::new(group_config(
        &target,
        &group,
        &[("auto.commit.interval.ms", "50"), ("max.poll.records", "5")],
    ))
    .unwrap();
    create_topic(c.cluster(), &topic, 1).await;
    produce(&target, &topic, 20).await;
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    c.subscribe(&[&topic], None).unwrap();
    let mut first = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while first.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no records");
        first = c.poll(Duration::from_millis(100)).await.unwrap();
    }
    let handed_out = first.last().unwrap().offset + 1;
    // Many auto-commit intervals pass while the application is still "handling" `first`.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let committed = c.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp];
    assert!(
        committed.unwrap_or(0) <= first[0].offset,
        "auto-commit committed {committed:?} while records from {} were not handled yet",
        first[0].offset
    );
    // Asking for more says `first` is handled: the next auto-commit covers it.
    let _ = c.poll(Duration::from_millis(10)).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let committed = c.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp];
        if committed == Some(handed_out) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "committed {committed:?}, want {handed_out}"
        );
    }
    c.close().await;
}

/// The same rule one record at a time: a record `recv` returned counts as handled once `recv`
/// is called again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_commit_after_recv_covers_records_received_before_the_last() {
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let topic = topic_name("autocommit-recv");
    let group = topic_name("g");
    let c = Consumer::new(group_config(
        &target,
        &group,
        &[("auto.commit.interval.ms", "50")],
    ))
    .unwrap();
    create_topic(c.cluster(), &topic, 1).await;
    produce(&target, &topic, 10).await;
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    c.subscribe(&[&topic], None).unwrap();
    let committed_soon = |want: i64| {
        let (c, tp) = (&c, tp.clone());
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let got = c.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp];
                if got == Some(want) {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "committed {got:?}, want {want}"
                );
            }
        }
    };
    let first = tokio::time::timeout(Duration::from_secs(30), c.recv())
        .await
        .unwrap()
        .unwrap();
    let second = c.recv().await.unwrap();
    assert_eq!((first.offset, second.offset), (0, 1));
    // `second` is still being handled: only `first` is committed, however long we wait.
    committed_soon(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = c.committed(std::slice::from_ref(&tp)).await.unwrap()[&tp];
    assert_eq!(got, Some(1));
    let third = c.recv().await.unwrap();
    assert_eq!(third.offset, 2);
    committed_soon(2).await;
    c.close().await;
}

/// A commit waiting on its answer longer than the session must not cost the member its place
/// in the group: heartbeats go on without the group client's lock. Before, they queued behind
/// the hung commit until `session.timeout.ms` was spent, the coordinator expired the member,
/// and its next commit failed with UNKNOWN_MEMBER_ID (a CI failure of the Kotlin fault test
/// on a 3-node Apache Kafka).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_the_session_while_a_commit_waits_for_its_answer() {
    const OFFSET_COMMIT: i16 = 8;
    let target = Target::start(&[("group.initial.rebalance.delay.ms", "0")]);
    let proxy = odradek_suite::broker_proxy::BrokerProxy::start(&target.bootstrap);
    let topic = topic_name("hung-commit");
    let group = topic_name("g");
    let events = Arc::new(Events::default());
    let mut config = group_config(
        &target,
        &group,
        &[
            ("enable.auto.commit", "false"),
            ("request.timeout.ms", "12000"),
        ],
    );
    config.set("bootstrap.servers", &proxy.bootstrap).unwrap();
    let consumer = Consumer::new(config).unwrap();
    create_topic(consumer.cluster(), &topic, 1).await;
    produce(&target, &topic, 10).await;
    consumer
        .subscribe(
            &[&topic],
            Some(events.clone() as Arc<dyn RebalanceListener>),
        )
        .unwrap();
    assert_eq!(drain(&[&consumer], 10, 30).await.len(), 10);
    let (_, member, generation) = consumer.group_metadata().await.unwrap();

    // The commit's answer never comes: it holds the group client for request.timeout.ms
    // (12 s), twice the session (6 s).
    proxy.stall_responses(Some(OFFSET_COMMIT));
    let hung = consumer.commit_async(None);
    let outcome = tokio::time::timeout(Duration::from_secs(30), hung)
        .await
        .expect("the stalled commit ends with its request timeout");
    assert!(outcome.is_err(), "no answer, no success: {outcome:?}");
    proxy.stall_responses(None);

    consumer
        .commit_sync(None)
        .await
        .expect("the member commits again");
    let (_, member_after, generation_after) = consumer.group_metadata().await.unwrap();
    assert_eq!(
        (member_after.as_str(), generation_after),
        (member.as_str(), generation),
        "still the same member of the same generation"
    );
    let log = events.log.lock().unwrap().clone();
    assert!(
        log.iter().all(|(what, _)| what == "assigned"),
        "no partition revoked or lost meanwhile: {log:?}"
    );
    consumer.close().await;
    proxy.stop();
}
