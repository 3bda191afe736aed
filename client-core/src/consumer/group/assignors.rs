//! Partition assignors, chosen by `partition.assignment.strategy`: `range` and `roundrobin`
//! compute exactly what the Java assignors compute for the same input (KafkaJS's
//! `RoundRobinAssigner` is `roundrobin` under KafkaJS's protocol name); `sticky` and
//! `cooperative-sticky` keep each member's current partitions where balance allows and move as
//! few as possible, and the cooperative variant never hands a partition to a new owner in the
//! same rebalance in which its old owner still holds it (KIP-429: the owner revokes it first,
//! then a follow-up rebalance assigns it).

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use crate::config::Assignor;
use crate::protocol::consumer_protocol::Subscription;
use crate::types::TopicPartition;

/// The assignment each member gets.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

impl Assignor {
    /// Whether members revoke only what they lose (cooperative) rather than everything.
    pub fn is_cooperative(self) -> bool {
        self == Assignor::CooperativeSticky
    }

    /// Assigns the partitions of `partitions_per_topic` to `members`.
    pub fn assign(
        self,
        members: &BTreeMap<String, Subscription>,
        partitions_per_topic: &HashMap<String, i32>,
    ) -> Assignment {
        match self {
            Assignor::Range => range(members, partitions_per_topic),
            Assignor::RoundRobin | Assignor::KafkaJsRoundRobin => {
                round_robin(members, partitions_per_topic)
            }
            Assignor::Sticky => sticky(members, partitions_per_topic, false),
            Assignor::CooperativeSticky => sticky(members, partitions_per_topic, true),
        }
    }
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn empty_assignment(members: &BTreeMap<String, Subscription>) -> Assignment {
    members.keys().map(|m| (m.clone(), Vec::new())).collect()
}

/// Per topic: members sorted by id get consecutive ranges; the first `partitions % members`
/// members get one extra.
fn range(
    members: &BTreeMap<String, Subscription>,
    partitions_per_topic: &HashMap<String, i32>,
) -> Assignment {
    let mut out = empty_assignment(members);
    let topics: BTreeSet<&String> = members.values().flat_map(|s| s.topics.iter()).collect();
    for topic in topics {
        let Some(&count) = partitions_per_topic.get(topic) else {
            continue;
        };
        let consumers: Vec<&String> = members
            .iter()
            .filter(|(_, s)| s.topics.contains(topic))
            .map(|(m, _)| m)
            .collect();
        let n = consumers.len() as i32;
        if n == 0 {
            continue;
        }
        let (per, extra) = (count / n, count % n);
        for (i, m) in consumers.iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            if let Some(v) = out.get_mut(*m) {
                v.extend((start..start + len).map(|p| tp(topic, p)));
            }
        }
    }
    out
}

/// All partitions sorted by topic then partition, dealt in turn to members sorted by id, skipping
/// members not subscribed to the partition's topic.
fn round_robin(
    members: &BTreeMap<String, Subscription>,
    partitions_per_topic: &HashMap<String, i32>,
) -> Assignment {
    let mut out = empty_assignment(members);
    let ids: Vec<&String> = members.keys().collect();
    if ids.is_empty() {
        return out;
    }
    let topics: BTreeSet<&String> = members.values().flat_map(|s| s.topics.iter()).collect();
    let mut next = 0usize;
    for topic in topics {
        let Some(&count) = partitions_per_topic.get(topic) else {
            continue;
        };
        for p in 0..count {
            for _ in 0..ids.len() {
                let m = ids[next % ids.len()];
                next += 1;
                if members[m].topics.contains(topic) {
                    if let Some(v) = out.get_mut(m) {
                        v.push(tp(topic, p));
                    }
                    break;
                }
            }
        }
    }
    out
}

/// Balanced and sticky: members keep owned partitions up to their fair share, the rest go to the
/// least-loaded eligible member (ties by member id).
fn sticky(
    members: &BTreeMap<String, Subscription>,
    partitions_per_topic: &HashMap<String, i32>,
    cooperative: bool,
) -> Assignment {
    let mut out = empty_assignment(members);
    if members.is_empty() {
        return out;
    }
    let all: Vec<TopicPartition> = {
        let topics: BTreeSet<&String> = members.values().flat_map(|s| s.topics.iter()).collect();
        topics
            .into_iter()
            .filter_map(|t| partitions_per_topic.get(t).map(|&c| (t, c)))
            .flat_map(|(t, c)| (0..c).map(move |p| tp(t, p)))
            .collect()
    };
    let eligible = |m: &str, p: &TopicPartition| {
        members
            .get(m)
            .is_some_and(|s| s.topics.iter().any(|t| t.as_str() == p.topic.as_ref()))
    };
    let total = all.len();
    let n = members.len();
    let quota_floor = total / n;
    let mut with_extra = total % n;
    // Previous owners (a partition claimed twice keeps only its first claimant by member id).
    let mut previous: HashMap<TopicPartition, String> = HashMap::new();
    for (m, s) in members {
        for p in &s.owned {
            previous.entry(p.clone()).or_insert_with(|| m.clone());
        }
    }
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();
    for (m, s) in members {
        let mut kept: Vec<TopicPartition> = s
            .owned
            .iter()
            .filter(|p| all.contains(p) && eligible(m, p) && previous.get(*p) == Some(m))
            .cloned()
            .collect();
        kept.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        let quota = if with_extra > 0 && kept.len() > quota_floor {
            with_extra -= 1;
            quota_floor + 1
        } else {
            quota_floor
        };
        kept.truncate(quota);
        for p in &kept {
            assigned.insert(p.clone());
        }
        if let Some(v) = out.get_mut(m) {
            *v = kept;
        }
    }
    for p in &all {
        if assigned.contains(p) {
            continue;
        }
        let target = out
            .iter()
            .filter(|(m, _)| eligible(m, p))
            .min_by(|(am, av), (bm, bv)| av.len().cmp(&bv.len()).then(am.cmp(bm)))
            .map(|(m, _)| m.clone());
        if let Some(m) = target {
            if let Some(v) = out.get_mut(&m) {
                v.push(p.clone());
            }
        }
    }
    if cooperative {
        // A partition moving from one member to another is withheld this round: its old owner
        // revokes it, and the follow-up rebalance hands it over.
        for (m, v) in out.iter_mut() {
            v.retain(|p| previous.get(p).is_none_or(|owner| owner == m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(topics: &[&str], owned: &[(&str, i32)]) -> Subscription {
        Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned: owned.iter().map(|(t, p)| tp(t, *p)).collect(),
            user_data: None,
        }
    }

    fn names(a: &Assignment, m: &str) -> Vec<String> {
        a[m].iter()
            .map(|p| format!("{}{}", p.topic, p.partition))
            .collect()
    }

    #[test]
    fn range_matches_java() {
        // Java RangeAssignor javadoc example: t0, t1 with 3 partitions, C0 and C1.
        let members: BTreeMap<String, Subscription> = [
            ("C0".into(), sub(&["t0", "t1"], &[])),
            ("C1".into(), sub(&["t0", "t1"], &[])),
        ]
        .into();
        let parts: HashMap<String, i32> = [("t0".into(), 3), ("t1".into(), 3)].into();
        let a = Assignor::Range.assign(&members, &parts);
        assert_eq!(names(&a, "C0"), ["t00", "t01", "t10", "t11"]);
        assert_eq!(names(&a, "C1"), ["t02", "t12"]);
    }

    #[test]
    fn round_robin_matches_java() {
        // Java RoundRobinAssignor javadoc example 2: C0 subscribes t0; C1 t0,t1; C2 t0,t1,t2;
        // t0 has 1, t1 has 2, t2 has 3 partitions.
        let members: BTreeMap<String, Subscription> = [
            ("C0".into(), sub(&["t0"], &[])),
            ("C1".into(), sub(&["t0", "t1"], &[])),
            ("C2".into(), sub(&["t0", "t1", "t2"], &[])),
        ]
        .into();
        let parts: HashMap<String, i32> =
            [("t0".into(), 1), ("t1".into(), 2), ("t2".into(), 3)].into();
        let a = Assignor::RoundRobin.assign(&members, &parts);
        assert_eq!(names(&a, "C0"), ["t00"]);
        assert_eq!(names(&a, "C1"), ["t10"]);
        assert_eq!(names(&a, "C2"), ["t11", "t20", "t21", "t22"]);
    }

    #[test]
    fn sticky_is_balanced_and_keeps_ownership() {
        let parts: HashMap<String, i32> = [("t".into(), 6)].into();
        let members: BTreeMap<String, Subscription> = [
            ("a".into(), sub(&["t"], &[("t", 0), ("t", 1), ("t", 2)])),
            ("b".into(), sub(&["t"], &[("t", 3), ("t", 4), ("t", 5)])),
            ("c".into(), sub(&["t"], &[])),
        ]
        .into();
        let a = Assignor::Sticky.assign(&members, &parts);
        assert!(a.values().all(|v| v.len() == 2), "{a:?}");
        assert_eq!(names(&a, "a")[..2], ["t0", "t1"]);
        assert_eq!(names(&a, "b")[..2], ["t3", "t4"]);
        let coop = Assignor::CooperativeSticky.assign(&members, &parts);
        assert!(
            coop["c"].is_empty(),
            "moving partitions are withheld in the first round"
        );
        assert_eq!(coop["a"].len() + coop["b"].len(), 4);
        // Second round: a and b no longer own the revoked partitions.
        let members2: BTreeMap<String, Subscription> = [
            ("a".into(), sub(&["t"], &[("t", 0), ("t", 1)])),
            ("b".into(), sub(&["t"], &[("t", 3), ("t", 4)])),
            ("c".into(), sub(&["t"], &[])),
        ]
        .into();
        let coop2 = Assignor::CooperativeSticky.assign(&members2, &parts);
        assert_eq!(coop2["c"].len(), 2);
        assert_eq!(names(&coop2, "a"), ["t0", "t1"]);
    }

    #[test]
    fn every_partition_assigned_exactly_once() {
        let parts: HashMap<String, i32> = [("x".into(), 7), ("y".into(), 3)].into();
        let members: BTreeMap<String, Subscription> = (0..4)
            .map(|i| (format!("m{i}"), sub(&["x", "y"], &[])))
            .collect();
        for assignor in [
            Assignor::Range,
            Assignor::RoundRobin,
            Assignor::Sticky,
            Assignor::CooperativeSticky,
        ] {
            let a = assignor.assign(&members, &parts);
            let mut all: Vec<String> = a
                .values()
                .flatten()
                .map(|p| format!("{}{}", p.topic, p.partition))
                .collect();
            all.sort();
            assert_eq!(all.len(), 10, "{assignor:?}");
            all.dedup();
            assert_eq!(all.len(), 10, "{assignor:?}");
        }
        assert_eq!(
            Assignor::from_name("org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
            Some(Assignor::CooperativeSticky)
        );
    }
}
