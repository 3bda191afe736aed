//! Online migration between the group protocols, as Kafka 4.x does it
//! (`group.consumer.migration.policy`): a classic group in use becomes a consumer group when a
//! consumer-protocol member joins it (upgrade), and a consumer group whose last
//! consumer-protocol member leaves while classic members remain goes back to the classic
//! protocol (downgrade). Empty groups convert either way whatever the policy. The classic
//! members of a converted group keep working (`consumer::classic`).
//!
//! Upgrade: every classic member becomes a consumer-group member at the classic generation,
//! stable, owning its last assignment (the target assignment starts as those assignments);
//! JoinGroup and SyncGroup requests waiting on a rebalance are answered REBALANCE_IN_PROGRESS.
//! Downgrade: the classic members become the members of a classic group at the group epoch
//! before the leave (so members that had reconciled keep a current generation), each with its
//! target assignment, and a rebalance starts so they rejoin.

use std::time::Instant;

use odradek::ErrorCode;

use super::consumer::classic::{by_id, encoded};
use super::consumer::group::{stored_member, ClassicProtocol, ConsumerGroup, Topics};
use super::consumer::reconcile::{MemberState, Reconciled};
use super::consumer::topics::RegistryTopics;
use super::group::{Group, MigratingMember};
use super::GroupCoordinator;

/// A member's last assignment, decoded; `Err(true)` when it carries a custom assignor's user
/// data (which the consumer protocol would lose), `Err(false)` when it does not decode. Empty
/// bytes (a member that never synced) are no partitions.
fn classic_assignment(bytes: &bytes::Bytes) -> Result<Vec<odradek::TopicPartition>, bool> {
    use bytes::Buf;
    use kafka_protocol::messages::ConsumerProtocolAssignment;
    use kafka_protocol::protocol::Decodable;
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let mut b = bytes.clone();
    if b.remaining() < 2 {
        return Err(false);
    }
    let version = b.get_i16().clamp(0, 3);
    let a = ConsumerProtocolAssignment::decode(&mut b, version).map_err(|_| false)?;
    if a.user_data.as_ref().is_some_and(|u| !u.is_empty()) {
        return Err(true);
    }
    Ok(a.assigned_partitions
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| odradek::TopicPartition {
                topic: t.topic.to_string().into(),
                partition: *p,
            })
        })
        .collect())
}

/// The consumer group a classic group in use becomes (Kafka's `fromClassicGroup`); `Err` with
/// the message Kafka answers when a member's embedded consumer protocol does not decode or its
/// assignment carries a custom assignor's user data.
pub fn consumer_group_of(
    group: &Group,
    topics: &dyn Topics,
    now: Instant,
) -> Result<ConsumerGroup, String> {
    let malformed = || {
        format!(
            "Cannot upgrade classic group {} to consumer group because the embedded consumer protocol is malformed.",
            group.id
        )
    };
    let custom = || {
        format!(
            "Cannot upgrade classic group {} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.",
            group.id
        )
    };
    let mut c = ConsumerGroup::new(&group.id);
    c.group_epoch = group.generation;
    c.assignment_epoch = group.generation;
    for m in group.migrating_members() {
        let protocol = group.protocol.as_deref();
        let metadata = m
            .protocols
            .iter()
            .find(|(n, _)| Some(n.as_str()) == protocol)
            .or(m.protocols.first())
            .map(|(_, meta)| meta.clone())
            .unwrap_or_default();
        let mut names = odradek::protocol::consumer_protocol::decode_subscription(&metadata)
            .map_err(|_| malformed())?
            .topics;
        names.sort();
        names.dedup();
        let partitions = classic_assignment(&m.assignment).map_err(|user_data| {
            if user_data {
                custom()
            } else {
                malformed()
            }
        })?;
        let assigned = by_id(&partitions, topics);
        c.target.insert(m.id.clone(), assigned.clone());
        let member = stored_member(
            m.id,
            m.instance_id,
            None,
            m.client_id,
            m.client_host,
            names,
            None,
            None,
            m.rebalance_timeout.as_millis().min(i32::MAX as u128) as i32,
            Reconciled {
                state: MemberState::Stable,
                member_epoch: group.generation,
                previous_member_epoch: group.generation,
                assigned,
                pending_revocation: Default::default(),
            },
            Some(ClassicProtocol {
                session_timeout_ms: m.session_timeout.as_millis().min(i32::MAX as u128) as i32,
                protocols: m.protocols,
            }),
        );
        c.restore_member(member, now, m.session_timeout);
    }
    c.mark_dirty();
    Ok(c)
}

/// The classic members a consumer group going back to the classic protocol keeps (Kafka's
/// `fromConsumerGroup`): each with its target assignment.
pub fn classic_members_of(c: &ConsumerGroup, topics: &dyn Topics) -> Vec<MigratingMember> {
    c.members
        .values()
        .filter_map(|m| {
            let classic = m.classic.as_ref()?;
            let session =
                std::time::Duration::from_millis(classic.session_timeout_ms.max(0) as u64);
            Some(MigratingMember {
                id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout: session,
                rebalance_timeout: std::time::Duration::from_millis(
                    m.rebalance_timeout_ms.max(0) as u64
                ),
                protocols: classic.protocols.clone(),
                assignment: encoded(&c.target.get(&m.id).cloned().unwrap_or_default(), topics),
            })
        })
        .collect()
}

impl GroupCoordinator {
    /// Converts the classic group `group` (it has members) to a consumer group for a joining
    /// consumer-protocol member, if the policy and the group allow it; `Err` is the answer for
    /// that member (GROUP_ID_NOT_FOUND with Kafka's message), the reason logged.
    pub(super) fn upgrade(&self, group: &mut Group) -> Result<(), (ErrorCode, String)> {
        let why = if !self.migration.upgrade {
            Some("the online upgrade is disabled")
        } else if !group.uses_consumer_protocol() {
            Some("the group does not use the consumer embedded protocol")
        } else if group.members.len() > self.max_consumer_group_size {
            Some("the group size exceeds the consumer group maximum size")
        } else {
            None
        };
        if let Some(why) = why {
            tracing::info!(group = %group.id, "Cannot upgrade classic group to consumer group because {why}.");
            return Err((
                ErrorCode::GroupIdNotFound,
                format!("Group {} is not a consumer group.", group.id),
            ));
        }
        let topics = RegistryTopics(&self.log.topics);
        let converted = consumer_group_of(group, &topics, Instant::now()).map_err(|message| {
            tracing::warn!(group = %group.id, "{message}");
            (ErrorCode::GroupIdNotFound, message)
        })?;
        let tombstone = super::storage::group_record(&group.id, None);
        self.append(&group.id, vec![tombstone]).map_err(|e| {
            (
                ErrorCode::CoordinatorNotAvailable,
                format!("the group's conversion could not be written: {e}"),
            )
        })?;
        tracing::info!(group = %group.id, members = converted.members.len(), epoch = converted.group_epoch, "classic group upgraded to a consumer group");
        group.hand_over_members();
        group.consumer = Some(converted);
        Ok(())
    }

    /// After a consumer-protocol member of `group` left, was fenced or was replaced by a classic
    /// static member: if only classic members remain and the policy allows it, the group goes
    /// back to the classic protocol (starting a rebalance unless the member was replaced). A
    /// failed write leaves it a consumer group.
    pub(super) fn maybe_downgrade(&self, group: &mut Group) {
        let Some(c) = group.consumer.as_mut() else {
            return;
        };
        let Some(departure) = c.take_consumer_member_removed() else {
            return;
        };
        if !c.only_classic_members() {
            return;
        }
        if !self.migration.downgrade {
            tracing::info!(group = %group.id, "Cannot downgrade consumer group to classic group because the online downgrade is disabled.");
            return;
        }
        if c.members.len() > self.max_group_size {
            tracing::info!(group = %group.id, "Cannot downgrade consumer group to classic group because its group size is greater than classic group max size.");
            return;
        }
        let topics = RegistryTopics(&self.log.topics);
        let members = classic_members_of(c, &topics);
        if let Err(e) = self.append(&group.id, super::consumer::storage::tombstones(c)) {
            tracing::warn!(group = %group.id, error = %e, "downgrading the group failed: it stays a consumer group");
            return;
        }
        tracing::info!(group = %group.id, members = members.len(), epoch = departure.epoch, "consumer group downgraded to a classic group");
        group.consumer = None;
        // Replaced by a classic static member, the group stays stable (the newcomer holds the
        // leaving member's assignment); otherwise the members rejoin.
        group.adopt_members(
            departure.epoch,
            members,
            Instant::now(),
            !departure.replaced,
        );
        // Still timed: its members' sessions and the rebalance are the classic group's now.
        self.persist_if_dirty(group);
    }
}

#[cfg(test)]
mod tests;
