//! The controller's pure decisions: where a new partition's replicas go (rack-aware, striped
//! across the usable brokers) and who leads a partition when its leader or ISR changes
//! (Kafka's `PartitionChangeBuilder.electAnyLeader`: a live leader stays; else the first live
//! ISR member in replica order; else, only with `unclean.leader.election.enable`, any live
//! replica, marked recovering; else no leader).

use std::collections::{BTreeMap, BTreeSet};

/// Replica assignments for `partitions` new partitions (numbered from `first`) of `rf`
/// replicas each over `brokers` (id, rack). Brokers are taken rack by rack in turn, so a
/// partition's replicas spread over as many racks as there are; the starting broker moves by
/// one per partition, so leadership spreads too. `None` when there are fewer than `rf` brokers.
pub fn assign(
    brokers: &[(i32, Option<String>)],
    first: i32,
    partitions: i32,
    rf: usize,
) -> Option<Vec<Vec<i32>>> {
    if rf == 0 || brokers.len() < rf {
        return None;
    }
    // Alternate racks: [r1b1, r2b1, r3b1, r1b2, ...].
    let mut by_rack: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    let mut sorted: Vec<&(i32, Option<String>)> = brokers.iter().collect();
    sorted.sort_by_key(|(id, _)| *id);
    for (id, rack) in sorted {
        by_rack
            .entry(rack.as_deref().unwrap_or(""))
            .or_default()
            .push(*id);
    }
    let mut ring = Vec::with_capacity(brokers.len());
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for ids in by_rack.values() {
            if let Some(id) = ids.get(i) {
                ring.push(*id);
            }
        }
    }
    let n = ring.len();
    Some(
        (first..first + partitions)
            .map(|p| {
                let start = usize::try_from(p).unwrap_or(0) % n;
                (0..rf).map(|i| ring[(start + i) % n]).collect()
            })
            .collect(),
    )
}

/// A partition's leadership after a change of who is usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    /// The leader (-1: none).
    pub leader: i32,
    /// The ISR.
    pub isr: Vec<i32>,
    /// The leader was elected from outside the ISR.
    pub recovering: bool,
}

/// Decides a partition's leader and ISR given which brokers are `usable` (registered,
/// unfenced, not shutting down). Unusable brokers leave the ISR unless that would empty it
/// (the last ISR member stays, so it can lead again when it comes back); the current leader
/// stays if usable.
pub fn elect(
    replicas: &[i32],
    isr: &[i32],
    leader: i32,
    usable: &BTreeSet<i32>,
    unclean: bool,
) -> Election {
    let live_isr: Vec<i32> = isr.iter().copied().filter(|r| usable.contains(r)).collect();
    let new_isr = if live_isr.is_empty() {
        isr.to_vec()
    } else {
        live_isr.clone()
    };
    if leader >= 0 && usable.contains(&leader) && new_isr.contains(&leader) {
        return Election {
            leader,
            isr: new_isr,
            recovering: false,
        };
    }
    if let Some(l) = replicas.iter().find(|r| live_isr.contains(r)) {
        return Election {
            leader: *l,
            isr: new_isr,
            recovering: false,
        };
    }
    if unclean {
        if let Some(l) = replicas.iter().find(|r| usable.contains(r)) {
            return Election {
                leader: *l,
                isr: vec![*l],
                recovering: true,
            };
        }
    }
    Election {
        leader: -1,
        isr: new_isr,
        recovering: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_spread_over_racks_and_leaders_rotate() {
        let brokers = vec![
            (1, Some("a".to_string())),
            (2, Some("a".to_string())),
            (3, Some("b".to_string())),
            (4, Some("b".to_string())),
        ];
        let a = assign(&brokers, 0, 4, 2).unwrap();
        for replicas in &a {
            let racks: BTreeSet<bool> = replicas.iter().map(|r| *r <= 2).collect();
            assert_eq!(racks.len(), 2, "both racks: {a:?}");
        }
        let leaders: BTreeSet<i32> = a.iter().map(|r| r[0]).collect();
        assert_eq!(leaders.len(), 4, "{a:?}");
        assert_eq!(assign(&brokers, 0, 1, 5), None);
    }

    #[test]
    fn elections_follow_kafkas_order() {
        let usable: BTreeSet<i32> = [2, 3].into();
        // The leader is gone: the first live ISR member in replica order leads.
        let e = elect(&[1, 2, 3], &[1, 2, 3], 1, &usable, false);
        assert_eq!((e.leader, e.isr.clone()), (2, vec![2, 3]));
        // A live leader stays.
        let e = elect(&[1, 2, 3], &[2, 3], 3, &usable, false);
        assert_eq!(e.leader, 3);
        // No live ISR member: no leader, the ISR is kept; unclean elects a live replica.
        let e = elect(&[1, 2, 3], &[1], 1, &usable, false);
        assert_eq!((e.leader, e.isr.clone()), (-1, vec![1]));
        let e = elect(&[1, 2, 3], &[1], 1, &usable, true);
        assert_eq!((e.leader, e.isr, e.recovering), (2, vec![2], true));
    }
}
