//! Server-side assignors of consumer-protocol groups (KIP-848): `uniform` (the default) and
//! `range`, as named in `group.consumer.assignors` and the client's `group.remote.assignor`.
//!
//! Both are pure functions of the members' subscriptions, the subscribed topics' partition
//! counts and the previous target assignment, deterministic (members and partitions are visited
//! in sorted order) and sticky: a partition stays with its previous owner whenever balance
//! allows, so a rebalance moves as few partitions as it can.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

/// Partitions by topic id: a member's assignment.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// The assignors this broker has, in Kafka's default order of `group.consumer.assignors`.
pub const ASSIGNORS: &[&str] = &["uniform", "range"];

/// Reads one entry of `group.consumer.assignors`: an assignor's name or Kafka's class name for
/// it; `None` for anything else (custom assignor classes cannot run here).
pub fn configured(entry: &str) -> Option<&'static str> {
    match entry.trim() {
        "uniform" | "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => {
            Some("uniform")
        }
        "range" | "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => Some("range"),
        _ => None,
    }
}

/// What an assignor sees of one member.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    /// Topic ids the member subscribes to that exist (names and regex resolved).
    pub topics: BTreeSet<Uuid>,
    /// Static membership id (`range` orders static members first, by this id).
    pub instance_id: Option<String>,
}

/// Computes the target assignment of every member with `assignor` (one of [`ASSIGNORS`]).
/// `partitions` gives each existing subscribed topic's partition count; `previous` is the last
/// target assignment (members not in `members` are ignored).
pub fn assign(
    assignor: &str,
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    previous: &HashMap<String, Assignment>,
) -> HashMap<String, Assignment> {
    match assignor {
        "range" => range(members, partitions, previous),
        _ => uniform(members, partitions, previous),
    }
}

/// `uniform`: every member gets a near-equal share (counts differ by at most one among members
/// able to take a partition), previous owners keep what they can, the rest go to the least
/// loaded eligible member.
fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    previous: &HashMap<String, Assignment>,
) -> HashMap<String, Assignment> {
    let mut owner: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    let mut load: BTreeMap<&str, usize> = members.keys().map(|m| (m.as_str(), 0)).collect();
    let eligible = |m: &str, t: &Uuid| members.get(m).is_some_and(|s| s.topics.contains(t));
    let exists = |t: &Uuid, p: i32| partitions.get(t).is_some_and(|n| p >= 0 && p < *n);
    let all: Vec<(Uuid, i32)> = partitions
        .iter()
        .filter(|(t, _)| members.values().any(|m| m.topics.contains(t)))
        .flat_map(|(t, n)| (0..*n).map(move |p| (*t, p)))
        .collect();
    // The fair share of a member that can take every partition: retain up to it.
    let subscribers = members.values().filter(|m| !m.topics.is_empty()).count();
    let cap = if subscribers == 0 {
        0
    } else {
        all.len().div_ceil(subscribers)
    };
    for (m, assignment) in previous_in_order(members, previous) {
        for (t, ps) in assignment {
            for p in ps {
                let held = load.get(m).copied().unwrap_or(0);
                if held < cap && eligible(m, t) && exists(t, *p) && !owner.contains_key(&(*t, *p)) {
                    owner.insert((*t, *p), m);
                    *load.entry(m).or_default() += 1;
                }
            }
        }
    }
    for tp in &all {
        if owner.contains_key(tp) {
            continue;
        }
        let best = load
            .iter()
            .filter(|(m, _)| eligible(m, &tp.0))
            .min_by_key(|(m, n)| (**n, **m))
            .map(|(m, _)| *m);
        if let Some(m) = best {
            owner.insert(*tp, m);
            *load.entry(m).or_default() += 1;
        }
    }
    balance(&mut owner, &mut load, &eligible);
    collect(members, owner)
}

/// Moves partitions from the most to a less loaded eligible member until no move narrows a gap
/// of more than one (each move lowers the sum of squared loads, so this ends).
fn balance<'a>(
    owner: &mut BTreeMap<(Uuid, i32), &'a str>,
    load: &mut BTreeMap<&'a str, usize>,
    eligible: &impl Fn(&str, &Uuid) -> bool,
) {
    loop {
        let mut moved = false;
        // Most loaded first; each gives at most one partition per pass.
        let mut givers: Vec<(&str, usize)> = load.iter().map(|(m, n)| (*m, *n)).collect();
        givers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        'givers: for (giver, _) in givers {
            let owned: Vec<(Uuid, i32)> = owner
                .iter()
                .filter(|(_, m)| **m == giver)
                .map(|(tp, _)| *tp)
                .collect();
            // Give away the highest partitions first: the low ones tend to be the sticky ones.
            for tp in owned.into_iter().rev() {
                let giver_load = load.get(giver).copied().unwrap_or(0);
                let taker = load
                    .iter()
                    .filter(|(m, n)| **m != giver && **n + 1 < giver_load && eligible(m, &tp.0))
                    .min_by_key(|(m, n)| (**n, **m))
                    .map(|(m, _)| *m);
                if let Some(taker) = taker {
                    owner.insert(tp, taker);
                    *load.entry(giver).or_default() -= 1;
                    *load.entry(taker).or_default() += 1;
                    moved = true;
                    break 'givers;
                }
            }
        }
        if !moved {
            return;
        }
    }
}

/// `range`, as Kafka's (not sticky: recomputed from scratch): members in order (static members
/// first by instance id, then the others by member id); per topic, its subscribers in that
/// order get contiguous ranges (the first `partitions % subscribers` one more), so members
/// subscribing to co-partitioned topics get the same partition numbers of each.
fn range(
    members: &BTreeMap<String, MemberSpec>,
    partitions: &BTreeMap<Uuid, i32>,
    _previous: &HashMap<String, Assignment>,
) -> HashMap<String, Assignment> {
    let mut out: HashMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let mut ordered: Vec<(&String, &MemberSpec)> = members.iter().collect();
    ordered.sort_by(|(a, sa), (b, sb)| {
        (sa.instance_id.is_none(), &sa.instance_id, a).cmp(&(
            sb.instance_id.is_none(),
            &sb.instance_id,
            b,
        ))
    });
    for (topic, count) in partitions {
        let subscribed: Vec<&String> = ordered
            .iter()
            .filter(|(_, s)| s.topics.contains(topic))
            .map(|(m, _)| *m)
            .collect();
        if subscribed.is_empty() || *count <= 0 {
            continue;
        }
        let n = subscribed.len() as i32;
        let (quota, extra) = (count / n, count % n);
        let mut start = 0;
        for (i, m) in subscribed.into_iter().enumerate() {
            let size = quota + i32::from((i as i32) < extra);
            if size > 0 {
                if let Some(a) = out.get_mut(m) {
                    a.entry(*topic).or_default().extend(start..start + size);
                }
            }
            start += size;
        }
    }
    out
}

/// Members' previous assignments, members in id order (deterministic retention).
fn previous_in_order<'a>(
    members: &'a BTreeMap<String, MemberSpec>,
    previous: &'a HashMap<String, Assignment>,
) -> impl Iterator<Item = (&'a str, &'a Assignment)> {
    members
        .keys()
        .filter_map(move |m| previous.get(m).map(|a| (m.as_str(), a)))
}

fn collect(
    members: &BTreeMap<String, MemberSpec>,
    owner: BTreeMap<(Uuid, i32), &str>,
) -> HashMap<String, Assignment> {
    let mut out: HashMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for ((t, p), m) in owner {
        if let Some(a) = out.get_mut(m) {
            a.entry(t).or_default().insert(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(subs: &[(&str, &[Uuid])]) -> BTreeMap<String, MemberSpec> {
        subs.iter()
            .map(|(m, ts)| {
                (
                    m.to_string(),
                    MemberSpec {
                        topics: ts.iter().copied().collect(),
                        instance_id: None,
                    },
                )
            })
            .collect()
    }

    fn count(a: &Assignment) -> usize {
        a.values().map(|p| p.len()).sum()
    }

    fn owners(out: &HashMap<String, Assignment>) -> BTreeMap<(Uuid, i32), String> {
        let mut o = BTreeMap::new();
        for (m, a) in out {
            for (t, ps) in a {
                for p in ps {
                    assert!(o.insert((*t, *p), m.clone()).is_none(), "{t}-{p} twice");
                }
            }
        }
        o
    }

    #[test]
    fn uniform_is_balanced_complete_and_sticky() {
        let t = Uuid::from_u128(1);
        let parts = BTreeMap::from([(t, 7)]);
        let two = members(&[("a", &[t]), ("b", &[t])]);
        let first = assign("uniform", &two, &parts, &HashMap::new());
        assert_eq!(owners(&first).len(), 7);
        let mut counts: Vec<usize> = first.values().map(count).collect();
        counts.sort();
        assert_eq!(counts, vec![3, 4]);
        // A third member joins: it takes two or three, and nobody else loses more than needed.
        let three = members(&[("a", &[t]), ("b", &[t]), ("c", &[t])]);
        let second = assign("uniform", &three, &parts, &first);
        let mut counts: Vec<usize> = second.values().map(count).collect();
        counts.sort();
        assert_eq!(counts, vec![2, 2, 3]);
        let (o1, o2) = (owners(&first), owners(&second));
        let moved = o1.iter().filter(|(tp, m)| o2.get(*tp) != Some(*m)).count();
        assert_eq!(moved, 2, "only c's share moves: {o1:?} -> {o2:?}");
        // The same input again changes nothing.
        assert_eq!(assign("uniform", &three, &parts, &second), second);
    }

    #[test]
    fn uniform_respects_different_subscriptions() {
        let (t1, t2) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let parts = BTreeMap::from([(t1, 4), (t2, 2)]);
        let m = members(&[("a", &[t1]), ("b", &[t1, t2]), ("c", &[])]);
        let out = assign("uniform", &m, &parts, &HashMap::new());
        let o = owners(&out);
        assert_eq!(o.len(), 6);
        for ((t, _), m) in &o {
            assert!(m != "a" || *t == t1, "a only subscribes to t1");
            assert_ne!(m, "c");
        }
        assert_eq!(count(&out["a"]), 3);
        assert_eq!(count(&out["b"]), 3);
        assert!(out["c"].is_empty());
    }

    #[test]
    fn range_gives_contiguous_co_partitioned_ranges() {
        let (t1, t2) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let parts = BTreeMap::from([(t1, 5), (t2, 5)]);
        let m = members(&[("a", &[t1, t2]), ("b", &[t1, t2])]);
        let out = assign("range", &m, &parts, &HashMap::new());
        assert_eq!(out["a"][&t1], BTreeSet::from([0, 1, 2]));
        assert_eq!(out["a"][&t2], BTreeSet::from([0, 1, 2]));
        assert_eq!(out["b"][&t1], BTreeSet::from([3, 4]));
        assert_eq!(owners(&out).len(), 10);
        // Static members come first, by instance id.
        let mut m = members(&[("a", &[t1]), ("b", &[t1])]);
        m.get_mut("b").unwrap().instance_id = Some("i".into());
        let out = assign("range", &m, &parts, &HashMap::new());
        assert_eq!(out["b"][&t1], BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn no_members_or_no_topics_assign_nothing() {
        let t = Uuid::from_u128(1);
        let parts = BTreeMap::from([(t, 3)]);
        assert!(assign("uniform", &BTreeMap::new(), &parts, &HashMap::new()).is_empty());
        let idle = members(&[("a", &[])]);
        assert!(assign("uniform", &idle, &parts, &HashMap::new())["a"].is_empty());
        assert!(assign("range", &idle, &parts, &HashMap::new())["a"].is_empty());
    }
}
