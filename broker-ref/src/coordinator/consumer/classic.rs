//! Classic-protocol members in a consumer-protocol group (KIP-848's online migration): a
//! consumer that still speaks JoinGroup / SyncGroup / Heartbeat / LeaveGroup joins a consumer
//! group as Kafka 4.x lets it. Its generation is its member epoch; the broker computes its
//! assignment like any member's (the JoinGroup answer names no leader and no members, so the
//! client assigns nothing) and SyncGroup hands it the partitions it owns now. It reconciles by
//! rejoining: a heartbeat answers REBALANCE_IN_PROGRESS while it is behind the group epoch,
//! must revoke, or may take partitions another member has freed; its next JoinGroup reports
//! what it still owns (the subscription's owned partitions), which confirms a revocation.

use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::protocol::consumer_protocol::{decode_subscription, encode_assignment};
use odradek::ErrorCode;
use odradek::TopicPartition;

use super::assignor::Assignment;
use super::group::{ClassicProtocol, ConsumerGroup, Departure, Limits, Member, Topics};
use super::reconcile::MemberState;
use crate::coordinator::group::{JoinAnswer, JoinParams, SyncAnswer};

/// The protocol type every member of a consumer group uses.
const CONSUMER: &str = "consumer";

/// `partitions` (by topic name) as an assignment by topic id; topics that do not exist drop.
pub fn by_id(partitions: &[TopicPartition], topics: &dyn Topics) -> Assignment {
    let mut out = Assignment::new();
    for tp in partitions {
        if let Some((id, count)) = topics.lookup(&tp.topic) {
            if (0..count).contains(&tp.partition) {
                out.entry(id).or_default().insert(tp.partition);
            }
        }
    }
    out
}

/// `assignment` (by topic id) in the consumer protocol's assignment encoding, by topic name.
pub fn encoded(assignment: &Assignment, topics: &dyn Topics) -> Bytes {
    let partitions: Vec<TopicPartition> = assignment
        .iter()
        .filter_map(|(id, ps)| topics.name_of(*id).map(|name| (name, ps)))
        .flat_map(|(name, ps)| {
            ps.iter().map(move |p| TopicPartition {
                topic: name.clone().into(),
                partition: *p,
            })
        })
        .collect();
    encode_assignment(&partitions).unwrap_or_default()
}

impl ConsumerGroup {
    /// Whether a classic member with `protocol_type` and `protocols` can join: it must use the
    /// consumer protocol, and (unless the group is empty) share an assignor name with every
    /// classic member already in (Kafka's `supportsClassicProtocols`).
    pub fn supports_classic(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if protocol_type != CONSUMER || protocols.is_empty() {
            return false;
        }
        let classic: Vec<&ClassicProtocol> = self
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        protocols.iter().any(|(name, _)| {
            classic
                .iter()
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// The member a classic request names: by instance id when given (FENCED_INSTANCE_ID when
    /// another member id holds it), else by member id; it must be a classic member.
    fn classic_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<&Member, ErrorCode> {
        let member = match instance_id {
            Some(instance) => {
                let m = self
                    .members
                    .values()
                    .find(|m| m.instance_id.as_deref() == Some(instance))
                    .ok_or(ErrorCode::UnknownMemberId)?;
                if m.id != member_id {
                    return Err(ErrorCode::FencedInstanceId);
                }
                m
            }
            None => self
                .members
                .get(member_id)
                .ok_or(ErrorCode::UnknownMemberId)?,
        };
        if member.classic.is_none() {
            return Err(ErrorCode::UnknownMemberId);
        }
        Ok(member)
    }

    /// Whether `member` waits for a partition of its target that another member still holds.
    fn waiting_on_unreleased(&self, member: &Member) -> bool {
        let Some(target) = self.target.get(&member.id) else {
            return false;
        };
        target.iter().any(|(t, ps)| {
            ps.iter().any(|p| {
                !member
                    .current
                    .assigned
                    .get(t)
                    .is_some_and(|s| s.contains(p))
                    && self.held_by_other(&member.id, *t, *p)
            })
        })
    }

    /// Handles a JoinGroup from a classic member (the group has members). Answers at once.
    pub fn classic_join(
        &mut self,
        p: &JoinParams,
        topics: &dyn Topics,
        limits: Limits,
        now: Instant,
    ) -> JoinAnswer {
        if !self.supports_classic(&p.protocol_type, &p.protocols) {
            return JoinAnswer::error(ErrorCode::InconsistentGroupProtocol, &p.member_id);
        }
        let unknown = p.member_id.is_empty();
        let member_id = if unknown {
            uuid::Uuid::new_v4().to_string()
        } else {
            p.member_id.clone()
        };
        let static_holder = p.instance_id.as_deref().and_then(|instance| {
            self.members
                .values()
                .find(|m| m.instance_id.as_deref() == Some(instance))
                .map(|m| m.id.clone())
        });
        if static_holder.as_ref().is_some_and(|h| *h != member_id) && !unknown {
            return JoinAnswer::error(ErrorCode::FencedInstanceId, &p.member_id);
        }
        let is_new = static_holder.is_none() && !self.members.contains_key(&member_id);
        if is_new && self.members.len() >= limits.max_size {
            return JoinAnswer::error(ErrorCode::GroupMaxSizeReached, &p.member_id);
        }
        if unknown && p.require_known_member && p.instance_id.is_none() {
            // KIP-394: a new dynamic member rejoins with the id it is given.
            return JoinAnswer::error(ErrorCode::MemberIdRequired, &member_id);
        }
        let Some(subscription) = p
            .protocols
            .first()
            .and_then(|(_, meta)| decode_subscription(meta).ok())
        else {
            return JoinAnswer::error(ErrorCode::InconsistentGroupProtocol, &p.member_id);
        };
        let session_ms = p.session_timeout.as_millis().min(i32::MAX as u128) as i32;
        let rebalance_ms = p.rebalance_timeout.as_millis().min(i32::MAX as u128) as i32;
        let mut changed = false;
        match static_holder {
            Some(holder) if holder != member_id => {
                // A restarted static member (unknown member id) takes its instance's place and
                // assignment, reconciling from epoch 0 as a returning static member does.
                if let Some(mut m) = self.members.remove(&holder) {
                    if m.classic.is_none() && self.consumer_member_removed.is_none() {
                        // The last consumer-protocol member may be going: a downgrade check.
                        self.consumer_member_removed = Some(Departure {
                            epoch: self.group_epoch,
                            replaced: true,
                        });
                    }
                    m.id = member_id.clone();
                    m.current.member_epoch = 0;
                    m.current.previous_member_epoch = 0;
                    if let Some(t) = self.target.remove(&holder) {
                        self.target.insert(member_id.clone(), t);
                    }
                    self.members.insert(member_id.clone(), m);
                }
                self.dirty = true;
            }
            Some(_) => {}
            None if is_new => {
                self.members.insert(
                    member_id.clone(),
                    Member::joining(
                        &member_id,
                        p.instance_id.clone(),
                        &p.client_id,
                        &p.client_host,
                        rebalance_ms,
                        now,
                    ),
                );
                changed = true;
            }
            None => {}
        }
        let owned = by_id(&subscription.owned, topics);
        let Some(member) = self.members.get_mut(&member_id) else {
            return JoinAnswer::error(ErrorCode::UnknownMemberId, &member_id);
        };
        let mut names = subscription.topics.clone();
        names.sort();
        names.dedup();
        if member.topic_names != names {
            member.topic_names = names;
            changed = true;
        }
        let classic = ClassicProtocol {
            session_timeout_ms: session_ms,
            protocols: p.protocols.clone(),
        };
        if member.classic.as_ref() != Some(&classic) || member.rebalance_timeout_ms != rebalance_ms
        {
            member.classic = Some(classic);
            member.rebalance_timeout_ms = rebalance_ms;
            self.dirty = true;
        }
        member.client_id = p.client_id.clone();
        member.client_host = p.client_host.clone();
        member.session_deadline = now + Duration::from_millis(session_ms.max(0) as u64);
        // It must now sync within its rebalance timeout.
        member.classic_deadline = Some(now + Duration::from_millis(rebalance_ms.max(0) as u64));
        self.refresh_target(topics, changed, limits.default_assignor);
        self.reconcile(&member_id, Some(&owned), now);
        let Some(member) = self.members.get(&member_id) else {
            return JoinAnswer::error(ErrorCode::UnknownMemberId, &member_id);
        };
        JoinAnswer {
            error: ErrorCode::NoError,
            generation: member.current.member_epoch,
            protocol_type: Some(CONSUMER.to_string()),
            protocol: p.protocols.first().map(|(n, _)| n.clone()),
            leader: String::new(),
            member_id,
            members: Vec::new(),
            skip_assignment: false,
        }
    }

    /// Handles a SyncGroup from a classic member: its current assignment.
    #[allow(clippy::too_many_arguments)]
    pub fn classic_sync(
        &mut self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol: Option<&str>,
        topics: &dyn Topics,
        now: Instant,
    ) -> SyncAnswer {
        let member = match self.classic_member(member_id, instance_id) {
            Ok(m) => m,
            Err(code) => return SyncAnswer::error(code),
        };
        if generation != member.current.member_epoch {
            return SyncAnswer::error(ErrorCode::IllegalGeneration);
        }
        let name = member
            .classic
            .as_ref()
            .and_then(|c| c.protocols.first())
            .map(|(n, _)| n.clone())
            .unwrap_or_default();
        if protocol_type.is_some_and(|t| t != CONSUMER) || protocol.is_some_and(|p| p != name) {
            return SyncAnswer::error(ErrorCode::InconsistentGroupProtocol);
        }
        let rebalancing = self.group_epoch > member.current.member_epoch
            && member.current.state != MemberState::UnrevokedPartitions;
        let assignment = encoded(&member.current.assigned, topics);
        let id = member.id.clone();
        let Some(member) = self.members.get_mut(&id) else {
            return SyncAnswer::error(ErrorCode::UnknownMemberId);
        };
        let rebalance = Duration::from_millis(member.rebalance_timeout_ms.max(0) as u64);
        if rebalancing {
            // A newer epoch: the member rejoins first.
            member.classic_deadline.get_or_insert(now + rebalance);
            return SyncAnswer::error(ErrorCode::RebalanceInProgress);
        }
        member.classic_deadline = None;
        member.session_deadline = now + member.session(Duration::ZERO);
        SyncAnswer {
            error: ErrorCode::NoError,
            protocol_type: Some(CONSUMER.to_string()),
            protocol: Some(name),
            assignment,
        }
    }

    /// Handles a Heartbeat from a classic member: REBALANCE_IN_PROGRESS when it should rejoin
    /// (it is behind the group epoch, must revoke, or partitions it waits for are free).
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        now: Instant,
    ) -> ErrorCode {
        let member = match self.classic_member(member_id, instance_id) {
            Ok(m) => m,
            Err(code) => return code,
        };
        if generation != member.current.member_epoch {
            return ErrorCode::IllegalGeneration;
        }
        let rejoin = member.current.member_epoch < self.group_epoch
            || member.current.state == MemberState::UnrevokedPartitions
            || (member.current.state == MemberState::UnreleasedPartitions
                && !self.waiting_on_unreleased(member));
        let id = member.id.clone();
        let Some(member) = self.members.get_mut(&id) else {
            return ErrorCode::UnknownMemberId;
        };
        member.session_deadline = now + member.session(Duration::ZERO);
        if rejoin {
            let rebalance = Duration::from_millis(member.rebalance_timeout_ms.max(0) as u64);
            member.classic_deadline.get_or_insert(now + rebalance);
            return ErrorCode::RebalanceInProgress;
        }
        ErrorCode::NoError
    }

    /// Handles one member of a LeaveGroup (by member id, or by instance id when the member id
    /// is empty): the member must be a classic one.
    pub fn classic_leave(&mut self, member_id: &str, instance_id: Option<&str>) -> ErrorCode {
        let id = match instance_id {
            Some(instance) if member_id.is_empty() => {
                match self
                    .members
                    .values()
                    .find(|m| m.instance_id.as_deref() == Some(instance))
                {
                    Some(m) if m.classic.is_some() => m.id.clone(),
                    _ => return ErrorCode::UnknownMemberId,
                }
            }
            _ => match self.classic_member(member_id, instance_id) {
                Ok(m) => m.id.clone(),
                Err(code) => return code,
            },
        };
        self.remove(&id);
        self.bump("classic member left");
        ErrorCode::NoError
    }
}
