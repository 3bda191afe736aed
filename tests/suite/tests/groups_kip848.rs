//! Consumer groups on KIP-848's consumer protocol (`group.protocol=consumer`) with Odradek's
//! consumer: the broker assigns, members reconcile incrementally. Against `odradek-broker`
//! (fast heartbeats set here) or Apache Kafka with `ODRADEK_TEST_BOOTSTRAP` (its broker needs
//! `group.consumer.heartbeat.interval.ms` and `group.consumer.min.heartbeat.interval.ms` low, as
//! `scripts/test.sh` starts it, or the tests take a few heartbeats of 5 s each).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odradek::consumer::RebalanceListener;
use odradek::producer::TopicPartition;
use odradek::Consumer;
use odradek_suite::{create_topic, drain, produce_numbered as produce, topic_name, Target};

const BROKER: &[(&str, &str)] = odradek_suite::KIP848_FAST;

/// Every (partition, event) a member saw, and whether two members ever owned one partition.
#[derive(Debug, Default)]
struct Owners {
    owned: Mutex<std::collections::BTreeMap<String, BTreeSet<TopicPartition>>>,
    overlaps: Mutex<Vec<String>>,
    events: Mutex<Vec<(String, &'static str, usize)>>,
}

#[derive(Debug)]
struct Member {
    name: String,
    owners: Arc<Owners>,
}

impl Member {
    fn change(&self, kind: &'static str, parts: &[TopicPartition]) {
        let mut owned = self.owners.owned.lock().unwrap();
        let mine = owned.entry(self.name.clone()).or_default();
        for p in parts {
            if kind == "assigned" {
                mine.insert(p.clone());
            } else {
                mine.remove(p);
            }
        }
        let mut seen = BTreeSet::new();
        for (who, ps) in owned.iter() {
            for p in ps {
                if !seen.insert(p.clone()) {
                    self.owners
                        .overlaps
                        .lock()
                        .unwrap()
                        .push(format!("{p:?} twice after {who}"));
                }
            }
        }
        self.owners
            .events
            .lock()
            .unwrap()
            .push((self.name.clone(), kind, parts.len()));
    }
}

impl RebalanceListener for Member {
    fn on_assigned(&self, p: &[TopicPartition]) {
        self.change("assigned", p);
    }
    fn on_revoked(&self, p: &[TopicPartition]) {
        self.change("revoked", p);
    }
    fn on_lost(&self, p: &[TopicPartition]) {
        self.change("lost", p);
    }
}

fn member(owners: &Arc<Owners>, name: &str) -> Option<Arc<dyn RebalanceListener>> {
    Some(Arc::new(Member {
        name: name.into(),
        owners: owners.clone(),
    }))
}

fn consumer(target: &Target, group: &str, extra: &[(&str, &str)]) -> Consumer {
    let mut all = vec![
        ("group.id", group),
        ("group.protocol", "consumer"),
        ("auto.offset.reset", "earliest"),
        ("auto.commit.interval.ms", "200"),
    ];
    all.extend_from_slice(extra);
    Consumer::new(target.config(&all)).unwrap()
}

/// Polls every consumer until `done` holds of their assignments, or fails after `secs`.
async fn until(consumers: &[&Consumer], secs: u64, done: impl Fn(&[Vec<TopicPartition>]) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let now: Vec<Vec<TopicPartition>> = consumers.iter().map(|c| c.assignment()).collect();
        if done(&now) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not reached: {now:?}"
        );
        for c in consumers {
            let _ = c.poll(Duration::from_millis(50)).await.unwrap();
        }
    }
}

fn split(sizes: &[usize]) -> impl Fn(&[Vec<TopicPartition>]) -> bool + '_ {
    move |now| {
        let all: BTreeSet<&TopicPartition> = now.iter().flatten().collect();
        let mut got: Vec<usize> = now.iter().map(|a| a.len()).collect();
        got.sort_unstable();
        let mut want = sizes.to_vec();
        want.sort_unstable();
        got == want && all.len() == want.iter().sum::<usize>()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_share_partitions_without_overlap_and_consume_everything() {
    let target = Target::start(BROKER);
    let (topic, group) = (topic_name("k848"), topic_name("g848"));
    let owners = Arc::new(Owners::default());
    let a = consumer(&target, &group, &[]);
    create_topic(a.cluster(), &topic, 6).await;
    a.subscribe(&[&topic], member(&owners, "a")).unwrap();
    // (`until` polls and drops records: nothing is produced before the drain below.)
    until(&[&a], 30, split(&[6])).await;
    produce(&target, &topic, 600).await;
    let b = consumer(&target, &group, &[]);
    let c = consumer(&target, &group, &[]);
    b.subscribe(&[&topic], member(&owners, "b")).unwrap();
    c.subscribe(&[&topic], member(&owners, "c")).unwrap();
    let got = drain(&[&a, &b, &c], 600, 40).await;
    let unique: BTreeSet<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    assert_eq!(unique.len(), 600, "every record consumed");
    until(&[&a, &b, &c], 30, split(&[2, 2, 2])).await;
    // The broker's view agrees: ConsumerGroupDescribe through the admin client.
    let admin = odradek::Admin::new(target.config(&[]));
    let d = admin
        .describe_groups(&[&group])
        .await
        .unwrap()
        .remove(0)
        .1
        .unwrap();
    assert_eq!(
        (d.group_type.as_str(), d.protocol.as_str()),
        ("consumer", "uniform")
    );
    assert_eq!(d.members.len(), 3, "{d:?}");
    assert!(
        d.group_epoch >= 3 && d.assignment_epoch == d.group_epoch,
        "{d:?}"
    );
    for m in &d.members {
        assert_eq!(m.target_assignment.len(), 2, "{m:?}");
        assert!(m.member_epoch > 0);
    }
    // b leaves: a and c take its partitions; nobody ever owned a partition twice.
    b.close().await;
    until(&[&a, &c], 30, split(&[3, 3])).await;
    a.close().await;
    c.close().await;
    assert!(
        owners.overlaps.lock().unwrap().is_empty(),
        "{:?}",
        owners.overlaps
    );
    let events = owners.events.lock().unwrap();
    assert!(
        events.iter().all(|(_, kind, _)| *kind != "lost"),
        "an orderly group loses nothing: {events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_carry_the_member_epoch_and_a_new_member_resumes_from_them() {
    let target = Target::start(BROKER);
    let (topic, group) = (topic_name("k848c"), topic_name("g848c"));
    let a = consumer(&target, &group, &[("enable.auto.commit", "false")]);
    create_topic(a.cluster(), &topic, 2).await;
    produce(&target, &topic, 100).await;
    a.subscribe(&[&topic], None).unwrap();
    let got = drain(&[&a], 100, 30).await;
    assert_eq!(got.len(), 100);
    a.commit_sync(None).await.unwrap();
    a.close().await;
    produce(&target, &topic, 20).await;
    let b = consumer(&target, &group, &[]);
    b.subscribe(&[&topic], None).unwrap();
    let more = drain(&[&b], 20, 30).await;
    assert_eq!(more.len(), 20, "only the records after the commit");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(b.poll(Duration::from_millis(200)).await.unwrap().is_empty());
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regex_subscription_is_resolved_by_the_broker() {
    let target = Target::start(BROKER);
    let prefix = topic_name("rx848");
    let group = topic_name("g848rx");
    let a = consumer(&target, &group, &[("group.remote.assignor", "range")]);
    create_topic(a.cluster(), &format!("{prefix}-one"), 2).await;
    create_topic(a.cluster(), &format!("{prefix}-two"), 1).await;
    create_topic(a.cluster(), &format!("other-{prefix}"), 3).await;
    a.subscribe_pattern(&format!("{prefix}-.*"), None).unwrap();
    until(&[&a], 30, |now| now[0].len() == 3).await;
    assert!(a
        .assignment()
        .iter()
        .all(|tp| tp.topic.starts_with(&prefix)));
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_member_restarting_gets_its_partitions_back() {
    let target = Target::start(BROKER);
    let (topic, group) = (topic_name("k848s"), topic_name("g848s"));
    let a = consumer(&target, &group, &[("group.instance.id", "a")]);
    let b = consumer(&target, &group, &[("group.instance.id", "b")]);
    create_topic(a.cluster(), &topic, 4).await;
    a.subscribe(&[&topic], None).unwrap();
    b.subscribe(&[&topic], None).unwrap();
    until(&[&a, &b], 30, split(&[2, 2])).await;
    let before: BTreeSet<TopicPartition> = a.assignment().into_iter().collect();
    a.close().await;
    // b keeps its two while a is away (a static member's leave does not rebalance).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _ = b.poll(Duration::from_millis(50)).await.unwrap();
    assert_eq!(b.assignment().len(), 2);
    let a2 = consumer(&target, &group, &[("group.instance.id", "a")]);
    a2.subscribe(&[&topic], None).unwrap();
    until(&[&a2, &b], 30, split(&[2, 2])).await;
    let after: BTreeSet<TopicPartition> = a2.assignment().into_iter().collect();
    assert_eq!(before, after);
    a2.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_settings_are_refused_with_the_consumer_protocol() {
    let target = Target::start(BROKER);
    for (key, value) in [
        ("session.timeout.ms", "10000"),
        ("heartbeat.interval.ms", "1000"),
        ("partition.assignment.strategy", "range"),
    ] {
        let err = odradek::ClientConfig::from_map([
            ("bootstrap.servers", target.bootstrap.as_str()),
            ("group.id", "g"),
            ("group.protocol", "consumer"),
            (key, value),
        ])
        .unwrap_err();
        assert!(err.to_string().contains(key), "{err}");
    }
    // An assignor the broker does not have surfaces on poll.
    let topic = topic_name("k848bad");
    let c = consumer(
        &target,
        &topic_name("g848bad"),
        &[("group.remote.assignor", "sticky")],
    );
    create_topic(c.cluster(), &topic, 1).await;
    c.subscribe(&[&topic], None).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let err = loop {
        match c.poll(Duration::from_millis(100)).await {
            Err(e) => break e,
            Ok(_) => assert!(tokio::time::Instant::now() < deadline, "no error"),
        }
    };
    assert!(err.to_string().to_lowercase().contains("assignor"), "{err}");
    c.close().await;
}
