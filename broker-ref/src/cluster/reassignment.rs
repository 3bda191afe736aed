//! Partition reassignment (KIP-455) as KRaft's controller runs it, as pure functions of the
//! image. A reassignment to a target replica list writes the union (target first, then the
//! replicas being removed) with the adding and removing replicas; the new replicas fetch from
//! the leader like any follower and join the ISR once caught up; when every adding replica is
//! in the ISR, the leader's AlterPartition that put the last one there also completes it: the
//! replicas become the target, the removed ones leave the ISR (and leadership, if the leader is
//! one of them). Cancelling reverts to the original replicas. A reassignment whose new
//! replicas are already in sync (a reorder, a removal) completes at once.

use std::collections::BTreeSet;

use odradek::ErrorCode;

use super::image::PartitionImage;
use super::records::{MetadataRecord, ReassigningReplicas};
use crate::{Error, Result};

/// The leader, ISR and replicas a partition ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Replicas.
    pub replicas: Vec<i32>,
    /// ISR.
    pub isr: Vec<i32>,
    /// Leader (-1: none).
    pub leader: i32,
}

fn invalid(message: String) -> Error {
    Error::kafka(ErrorCode::InvalidReplicaAssignment, message)
}

/// The leader among `replicas` (in order) once the ISR is `isr`: the current one if it stays
/// in sync, else the first usable in-sync replica.
fn leader_among(current: i32, replicas: &[i32], isr: &[i32], usable: &BTreeSet<i32>) -> i32 {
    if isr.contains(&current) && usable.contains(&current) {
        return current;
    }
    replicas
        .iter()
        .copied()
        .find(|r| isr.contains(r) && usable.contains(r))
        .unwrap_or(-1)
}

/// Whether a reassignment in flight is done once the ISR is `isr`, and how the partition
/// ends: every adding replica in sync, and a usable in-sync target replica to lead.
pub fn completion(p: &PartitionImage, isr: &[i32], usable: &BTreeSet<i32>) -> Option<Settled> {
    if p.reassigning.is_empty() || p.reassigning.adding.iter().any(|r| !isr.contains(r)) {
        return None;
    }
    let target = p.target_replicas();
    let isr: Vec<i32> = isr.iter().copied().filter(|r| target.contains(r)).collect();
    let leader = leader_among(p.leader, &target, &isr, usable);
    (leader >= 0).then_some(Settled {
        replicas: target,
        isr,
        leader,
    })
}

/// The change of partition `index` of `topic_id` that moves it from `p` to `s`, ending any
/// reassignment.
fn settle(topic_id: &str, index: i32, p: &PartitionImage, s: Settled) -> MetadataRecord {
    MetadataRecord::PartitionChange {
        topic_id: topic_id.to_string(),
        partition: index,
        leader: (s.leader != p.leader).then_some(s.leader),
        isr: (s.isr != p.isr).then_some(s.isr),
        replicas: (s.replicas != p.replicas).then_some(s.replicas),
        recovering: None,
        reassignment: Some(ReassigningReplicas::default()),
    }
}

/// The change an AlterPartitionReassignments entry asks of partition `index` (`target`
/// `None`: cancel), or `None` when there is nothing to do. `registered` are the brokers the
/// cluster knows, `usable` those that may lead.
pub fn plan(
    topic_id: &str,
    index: i32,
    p: &PartitionImage,
    target: Option<&[i32]>,
    registered: &BTreeSet<i32>,
    usable: &BTreeSet<i32>,
    allow_replication_factor_change: bool,
) -> Result<Option<MetadataRecord>> {
    let original = p.original_replicas();
    let Some(target) = target else {
        if p.reassigning.is_empty() {
            return Err(Error::kafka(
                ErrorCode::NoReassignmentInProgress,
                "no reassignment of this partition is in progress",
            ));
        }
        let isr: Vec<i32> = p
            .isr
            .iter()
            .copied()
            .filter(|r| original.contains(r))
            .collect();
        let leader = leader_among(p.leader, &original, &isr, usable);
        if leader < 0 {
            return Err(invalid(
                "no original replica is in sync and available: cancelling would leave the \
                 partition without a leader"
                    .into(),
            ));
        }
        return Ok(Some(settle(
            topic_id,
            index,
            p,
            Settled {
                replicas: original,
                isr,
                leader,
            },
        )));
    };
    if target.is_empty() {
        return Err(invalid("the target replica list is empty".into()));
    }
    let mut seen = BTreeSet::new();
    for r in target {
        if !seen.insert(*r) {
            return Err(invalid(format!("broker {r} is listed twice")));
        }
        if !registered.contains(r) {
            return Err(invalid(format!("broker {r} is not registered")));
        }
    }
    if !allow_replication_factor_change && target.len() != original.len() {
        return Err(Error::kafka(
            ErrorCode::InvalidReplicationFactor,
            format!(
                "the reassignment changes the replication factor from {} to {} and the request \
                 does not allow it",
                original.len(),
                target.len()
            ),
        ));
    }
    if target == original.as_slice() && p.reassigning.is_empty() {
        return Ok(None);
    }
    let adding: Vec<i32> = target
        .iter()
        .copied()
        .filter(|r| !original.contains(r))
        .collect();
    let removing: Vec<i32> = original
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let replicas: Vec<i32> = target.iter().chain(&removing).copied().collect();
    let isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| replicas.contains(r))
        .collect();
    let started = PartitionImage {
        replicas: replicas.clone(),
        isr: isr.clone(),
        reassigning: ReassigningReplicas {
            adding: adding.clone(),
            removing: removing.clone(),
        },
        ..p.clone()
    };
    if adding.is_empty() {
        // Nothing to catch up: a removal or a reorder is done at once.
        let isr: Vec<i32> = isr.iter().copied().filter(|r| target.contains(r)).collect();
        let leader = leader_among(p.leader, target, &isr, usable);
        if leader < 0 {
            return Err(invalid(format!(
                "no replica of {target:?} is in sync and available to lead"
            )));
        }
        let done = Settled {
            replicas: target.to_vec(),
            isr,
            leader,
        };
        return Ok(Some(settle(topic_id, index, p, done)));
    }
    if let Some(done) = completion(&started, &isr, usable) {
        return Ok(Some(settle(topic_id, index, p, done)));
    }
    let leader = leader_among(p.leader, &replicas, &isr, usable);
    Ok(Some(MetadataRecord::PartitionChange {
        topic_id: topic_id.to_string(),
        partition: index,
        leader: (leader != p.leader && leader >= 0).then_some(leader),
        isr: (isr != p.isr).then_some(isr),
        replicas: Some(replicas),
        recovering: None,
        reassignment: Some(ReassigningReplicas { adding, removing }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::image::MetadataImage;

    fn part(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionImage {
        PartitionImage {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader,
            leader_epoch: 3,
            partition_epoch: 7,
            recovering: false,
            reassigning: ReassigningReplicas::default(),
        }
    }

    fn set(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    /// Applies `record` to `p` the way the image does.
    fn applied(p: &PartitionImage, record: MetadataRecord) -> PartitionImage {
        let mut image = MetadataImage::default();
        image.apply(
            1,
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: "id".into(),
            },
        );
        image.apply(
            2,
            MetadataRecord::Partition {
                topic_id: "id".into(),
                partition: 0,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
            },
        );
        image.apply(3, record);
        image.topics["t"].partitions[&0].clone()
    }

    #[test]
    fn a_move_adds_then_completes_when_the_new_replica_is_in_sync() {
        let all = set(&[1, 2, 3, 4]);
        let p = part(&[1, 2, 3], &[1, 2, 3], 1);
        // Move the replica on 1 (the leader) to 4.
        let change = plan("id", 0, &p, Some(&[4, 2, 3]), &all, &all, true)
            .unwrap()
            .unwrap();
        let moving = applied(&p, change);
        assert_eq!(
            moving.replicas,
            [4, 2, 3, 1],
            "target first, then the leaving"
        );
        assert_eq!(moving.reassigning.adding, [4]);
        assert_eq!(moving.reassigning.removing, [1]);
        assert_eq!(moving.leader, 1, "the leader stays until it is done");
        assert_eq!(moving.original_replicas(), [2, 3, 1]);
        assert!(
            completion(&moving, &[1, 2, 3], &all).is_none(),
            "4 not in sync yet"
        );
        let done = completion(&moving, &[1, 2, 3, 4], &all).unwrap();
        assert_eq!(done.replicas, [4, 2, 3]);
        assert_eq!(done.isr, [2, 3, 4]);
        assert_eq!(
            done.leader, 4,
            "the leader left: the first in-sync target replica leads"
        );
    }

    #[test]
    fn validation_follows_kafka() {
        let all = set(&[1, 2, 3]);
        let p = part(&[1, 2, 3], &[1, 2, 3], 1);
        let code =
            |t: Option<&[i32]>, allow| plan("id", 0, &p, t, &all, &all, allow).unwrap_err().code();
        assert_eq!(code(Some(&[]), true), ErrorCode::InvalidReplicaAssignment);
        assert_eq!(
            code(Some(&[1, 1, 2]), true),
            ErrorCode::InvalidReplicaAssignment
        );
        assert_eq!(
            code(Some(&[1, 2, 9]), true),
            ErrorCode::InvalidReplicaAssignment
        );
        assert_eq!(
            code(Some(&[1, 2]), false),
            ErrorCode::InvalidReplicationFactor
        );
        assert_eq!(code(None, true), ErrorCode::NoReassignmentInProgress);
        assert_eq!(
            plan("id", 0, &p, Some(&[1, 2, 3]), &all, &all, true).unwrap(),
            None,
            "the same replicas: nothing to do"
        );
    }

    #[test]
    fn removals_and_reorders_complete_at_once_and_cancel_reverts() {
        let all = set(&[1, 2, 3, 4]);
        let p = part(&[1, 2, 3], &[1, 2, 3], 1);
        let shrunk = applied(
            &p,
            plan("id", 0, &p, Some(&[2, 3]), &all, &all, true)
                .unwrap()
                .unwrap(),
        );
        assert_eq!(
            (shrunk.replicas.clone(), shrunk.isr.clone(), shrunk.leader),
            (vec![2, 3], vec![2, 3], 2)
        );
        assert!(shrunk.reassigning.is_empty());
        let reordered = applied(
            &p,
            plan("id", 0, &p, Some(&[3, 2, 1]), &all, &all, true)
                .unwrap()
                .unwrap(),
        );
        assert_eq!(
            (reordered.replicas.clone(), reordered.leader),
            (vec![3, 2, 1], 1)
        );

        let moving = applied(
            &p,
            plan("id", 0, &p, Some(&[4, 2, 3]), &all, &all, true)
                .unwrap()
                .unwrap(),
        );
        let reverted = applied(
            &moving,
            plan("id", 0, &moving, None, &all, &all, true)
                .unwrap()
                .unwrap(),
        );
        assert_eq!(reverted.replicas, [2, 3, 1], "the original replicas");
        assert!(reverted.reassigning.is_empty());
        assert_eq!(reverted.leader, 1);
    }
}
