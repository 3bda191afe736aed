//! Moving one member from its current assignment towards its target (KIP-848 reconciliation):
//! partitions leave a member before any other member gets them. A member first gives up what
//! it must lose (it keeps its epoch until it confirms the revocation), then takes the target
//! epoch and the new partitions that no other member holds yet; partitions still held elsewhere
//! are "unreleased" and come on a later heartbeat, once freed.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::assignor::Assignment;

/// Where a member stands in its reconciliation (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// At the target epoch with everything it should have.
    Stable,
    /// It must confirm giving up partitions before it moves on.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions other members still hold.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's name (ConsumerGroupDescribe does not send it; logs and tests use it).
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedPartitions => "unrevoked_partitions",
            MemberState::UnreleasedPartitions => "unreleased_partitions",
        }
    }

    /// The state's code in Kafka's `ConsumerGroupCurrentMemberAssignmentValue`.
    pub fn code(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
        }
    }

    /// The state for a stored code (unknown codes restart reconciliation from stable).
    pub fn from_code(code: i8) -> MemberState {
        match code {
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Stable,
        }
    }
}

/// A member's reconciliation state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// State.
    pub state: MemberState,
    /// The member's epoch.
    pub member_epoch: i32,
    /// Its epoch before the last bump (a member that missed a response may still use it).
    pub previous_member_epoch: i32,
    /// Partitions the member owns.
    pub assigned: Assignment,
    /// Partitions it must give up (still its own until it confirms).
    pub pending_revocation: Assignment,
}

/// One reconciliation step for a member at `current`, towards `target` at `target_epoch`.
/// `owned_by_other(topic, partition)` says whether another member still holds a partition
/// (assigned or pending revocation). `owned` is what the member reported owning in this
/// heartbeat (`None` when it did not say).
pub fn next(
    current: &Reconciled,
    target: &Assignment,
    target_epoch: i32,
    owned: Option<&Assignment>,
    owned_by_other: &impl Fn(Uuid, i32) -> bool,
) -> Reconciled {
    match current.state {
        MemberState::Stable if current.member_epoch == target_epoch => current.clone(),
        MemberState::UnrevokedPartitions => {
            let confirmed = owned.is_some_and(|o| !intersects(o, &current.pending_revocation));
            if confirmed {
                compute(current, target, target_epoch, owned_by_other)
            } else {
                current.clone()
            }
        }
        _ => compute(current, target, target_epoch, owned_by_other),
    }
}

fn compute(
    current: &Reconciled,
    target: &Assignment,
    target_epoch: i32,
    owned_by_other: &impl Fn(Uuid, i32) -> bool,
) -> Reconciled {
    let mut kept = Assignment::new();
    let mut revoke = Assignment::new();
    let mut gained = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = target
        .keys()
        .chain(current.assigned.keys())
        .copied()
        .collect();
    let empty = BTreeSet::new();
    for topic in topics {
        let want = target.get(&topic).unwrap_or(&empty);
        let have = current.assigned.get(&topic).unwrap_or(&empty);
        let keep: BTreeSet<i32> = have.intersection(want).copied().collect();
        let lose: BTreeSet<i32> = have.difference(want).copied().collect();
        let mut add = BTreeSet::new();
        for p in want.difference(have) {
            if owned_by_other(topic, *p) {
                unreleased = true;
            } else {
                add.insert(*p);
            }
        }
        if !keep.is_empty() {
            kept.insert(topic, keep);
        }
        if !lose.is_empty() {
            revoke.insert(topic, lose);
        }
        if !add.is_empty() {
            gained.insert(topic, add);
        }
    }
    if !revoke.is_empty() {
        // Give up first, at the current epoch; nothing new until the member confirms.
        return Reconciled {
            state: MemberState::UnrevokedPartitions,
            member_epoch: current.member_epoch,
            previous_member_epoch: current.previous_member_epoch,
            assigned: kept,
            pending_revocation: revoke,
        };
    }
    for (topic, ps) in gained {
        kept.entry(topic).or_default().extend(ps);
    }
    Reconciled {
        state: if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        },
        member_epoch: target_epoch,
        previous_member_epoch: if target_epoch != current.member_epoch {
            current.member_epoch
        } else {
            current.previous_member_epoch
        },
        assigned: kept,
        pending_revocation: Assignment::new(),
    }
}

/// Whether two assignments share a partition.
pub fn intersects(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .any(|(t, ps)| b.get(t).is_some_and(|qs| !ps.is_disjoint(qs)))
}

/// Whether every partition of `a` is in `b`.
pub fn is_subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|qs| ps.is_subset(qs)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn a(parts: &[i32]) -> Assignment {
        BTreeMap::from([(Uuid::from_u128(1), parts.iter().copied().collect())])
    }

    fn at(epoch: i32, parts: &[i32]) -> Reconciled {
        Reconciled {
            state: MemberState::Stable,
            member_epoch: epoch,
            previous_member_epoch: epoch - 1,
            assigned: a(parts),
            pending_revocation: Assignment::new(),
        }
    }

    #[test]
    fn revocation_comes_first_and_waits_for_the_members_confirmation() {
        let free = |_: Uuid, _: i32| false;
        let step = next(&at(3, &[0, 1, 2]), &a(&[0, 3]), 4, None, &free);
        assert_eq!(step.state, MemberState::UnrevokedPartitions);
        assert_eq!(step.member_epoch, 3, "the epoch waits for the revocation");
        assert_eq!(step.assigned, a(&[0]));
        assert_eq!(step.pending_revocation, a(&[1, 2]));
        // Still owning 1: nothing moves.
        assert_eq!(next(&step, &a(&[0, 3]), 4, Some(&a(&[0, 1])), &free), step);
        assert_eq!(next(&step, &a(&[0, 3]), 4, None, &free), step);
        // Confirmed: the target epoch and the new partition.
        let done = next(&step, &a(&[0, 3]), 4, Some(&a(&[0])), &free);
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (4, 3));
        assert_eq!(done.assigned, a(&[0, 3]));
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn partitions_held_elsewhere_are_unreleased_until_freed() {
        let held = |_: Uuid, p: i32| p == 5;
        let step = next(&at(1, &[]), &a(&[4, 5]), 2, None, &held);
        assert_eq!(step.state, MemberState::UnreleasedPartitions);
        assert_eq!(step.member_epoch, 2);
        assert_eq!(step.assigned, a(&[4]));
        let free = |_: Uuid, _: i32| false;
        let later = next(&step, &a(&[4, 5]), 2, None, &free);
        assert_eq!(later.state, MemberState::Stable);
        assert_eq!(later.assigned, a(&[4, 5]));
        assert_eq!(later.previous_member_epoch, 1);
    }

    #[test]
    fn a_stable_member_at_the_target_epoch_stays() {
        let held = |_: Uuid, _: i32| true;
        let m = at(7, &[1]);
        assert_eq!(next(&m, &a(&[1, 2]), 7, None, &held), m);
    }

    #[test]
    fn subset_and_intersection() {
        assert!(is_subset(&a(&[1]), &a(&[1, 2])));
        assert!(!is_subset(&a(&[3]), &a(&[1, 2])));
        assert!(is_subset(&Assignment::new(), &a(&[])));
        assert!(intersects(&a(&[1, 9]), &a(&[9])));
        assert!(!intersects(&a(&[1]), &a(&[2])));
    }
}
