//! Online migration between the group protocols (KIP-848, `group.consumer.migration.policy`
//! at Kafka 4.x's default, `bidirectional`): a classic group in use is upgraded by a rolling
//! restart of its members with `group.protocol=consumer`, then downgraded by rolling them back,
//! under a live producer, and nothing is lost or read twice. Against `odradek-broker` (fast
//! heartbeats set here) or Apache Kafka with `ODRADEK_TEST_BOOTSTRAP`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use odradek::producer::TopicPartition;
use odradek::{Consumer, ConsumerRecord};
use odradek_suite::{create_topic, produce_numbered as produce, topic_name, Target};

const BROKER: &[(&str, &str)] = odradek_suite::KIP848_FAST;
const PARTITIONS: i32 = 6;

fn consumer(target: &Target, group: &str, protocol: &str) -> Consumer {
    let mut settings = vec![
        ("group.id", group),
        ("group.protocol", protocol),
        ("auto.offset.reset", "earliest"),
        ("auto.commit.interval.ms", "200"),
    ];
    if protocol == "classic" {
        settings.extend([
            ("partition.assignment.strategy", "cooperative-sticky"),
            ("heartbeat.interval.ms", "500"),
            ("session.timeout.ms", "10000"),
        ]);
    }
    Consumer::new(target.config(&settings)).unwrap()
}

/// The members of the group while it migrates, and every record they were handed.
struct Group {
    group_id: String,
    admin: odradek::Admin,
    members: Vec<Consumer>,
    got: Vec<ConsumerRecord>,
}

impl Group {
    /// Polls every member until each owns `PARTITIONS / members` partitions, all of them are
    /// owned, and `want` records arrived; fails after `secs` naming what was reached.
    async fn settle(&mut self, want: usize, secs: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        let share = PARTITIONS as usize / self.members.len();
        loop {
            let owned: Vec<Vec<TopicPartition>> =
                self.members.iter().map(|c| c.assignment()).collect();
            let all: BTreeSet<&TopicPartition> = owned.iter().flatten().collect();
            let balanced = owned.iter().all(|a| a.len() == share);
            if balanced
                && all.len() == PARTITIONS as usize
                && self.got.len() >= want
                && self.broker_says_stable().await
            {
                self.assert_read_once();
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not settled: {} of {want} records, owned {owned:?}",
                self.got.len()
            );
            for c in &self.members {
                self.got
                    .extend(c.poll(Duration::from_millis(50)).await.unwrap());
            }
        }
    }

    /// Whether the broker sees the group stable with every member (for a consumer group: all
    /// members reconciled to the target assignment's epoch), as an operator checks before
    /// restarting the next member.
    async fn broker_says_stable(&self) -> bool {
        let d = self.admin.describe_groups(&[self.group_id.as_str()]).await;
        d.ok()
            .and_then(|mut d| d.pop())
            .and_then(|(_, d)| d.ok())
            .is_some_and(|d| d.state == "Stable" && d.members.len() == self.members.len())
    }

    /// Fails naming the records read more than once so far.
    fn assert_read_once(&self) {
        let mut seen = BTreeSet::new();
        let twice: Vec<(i32, i64)> = self
            .got
            .iter()
            .map(|r| (r.partition, r.offset))
            .filter(|k| !seen.insert(*k))
            .collect();
        assert!(
            twice.is_empty(),
            "{} records read twice: {:?}",
            twice.len(),
            &twice[..twice.len().min(20)]
        );
    }

    /// Replaces member `i` (closing it commits what it read and leaves) with one on `protocol`.
    async fn restart(
        &mut self,
        i: usize,
        target: &Target,
        group: &str,
        topic: &str,
        protocol: &str,
    ) {
        self.members.remove(i).close().await;
        let c = consumer(target, group, protocol);
        c.subscribe(&[topic], None).unwrap();
        self.members.insert(i, c);
    }
}

async fn group_type(target: &Target, group: &str) -> String {
    let admin = odradek::Admin::new(target.config(&[]));
    let d = admin.describe_groups(&[group]).await.unwrap().remove(0).1;
    d.unwrap().group_type
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_and_downgrade_lose_and_duplicate_nothing() {
    let target = Target::start(BROKER);
    let (topic, group_id) = (topic_name("migrate"), topic_name("gmigrate"));
    let first = consumer(&target, &group_id, "classic");
    create_topic(first.cluster(), &topic, PARTITIONS).await;
    let mut group = Group {
        group_id: group_id.clone(),
        admin: odradek::Admin::new(target.config(&[])),
        members: vec![first],
        got: Vec::new(),
    };
    for _ in 0..2 {
        group.members.push(consumer(&target, &group_id, "classic"));
    }
    for c in &group.members {
        c.subscribe(&[&topic], None).unwrap();
    }
    let mut produced = 300;
    produce(&target, &topic, produced).await;
    group.settle(produced, 60).await;
    assert_eq!(group_type(&target, &group_id).await, "classic");

    // Upgrade: each member restarts on the consumer protocol while records keep coming. The
    // first consumer-protocol member converts the group; classic members stay in it.
    for (i, protocol) in [(0, "consumer"), (1, "consumer"), (2, "consumer")] {
        group.restart(i, &target, &group_id, &topic, protocol).await;
        produce(&target, &topic, 150).await;
        produced += 150;
        group.settle(produced, 60).await;
        assert_eq!(
            group_type(&target, &group_id).await,
            "consumer",
            "after member {i}"
        );
    }
    // Downgrade: back to classic; the group converts when its last consumer-protocol member
    // leaves.
    for (i, protocol) in [(0, "classic"), (1, "classic"), (2, "classic")] {
        group.restart(i, &target, &group_id, &topic, protocol).await;
        produce(&target, &topic, 150).await;
        produced += 150;
        group.settle(produced, 60).await;
        let expected = if i < 2 { "consumer" } else { "classic" };
        assert_eq!(
            group_type(&target, &group_id).await,
            expected,
            "after member {i}"
        );
    }
    // Nothing more arrives: a record read twice would show up here or above.
    for _ in 0..10 {
        for c in &group.members {
            group
                .got
                .extend(c.poll(Duration::from_millis(50)).await.unwrap());
        }
    }
    let unique: BTreeSet<(i32, i64)> = group.got.iter().map(|r| (r.partition, r.offset)).collect();
    assert_eq!(unique.len(), produced, "every record was read");
    assert_eq!(group.got.len(), produced, "no record was read twice");
    for c in group.members.drain(..) {
        c.close().await;
    }
}
