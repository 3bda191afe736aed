//! One consumer group's classic-protocol state machine: Empty → PreparingRebalance →
//! CompletingRebalance → Stable (and Dead once deleted), with members, timers and committed
//! offsets. Pure logic: no I/O; the coordinator persists what `take_dirty` reports.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::ErrorCode;
use tokio::sync::oneshot;

use super::storage::{CommittedOffset, StoredGroup, StoredMember};

/// Group states, named as Kafka names them in DescribeGroups / ListGroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members (may hold offsets).
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Assignment handed out.
    Stable,
    /// Deleted.
    Dead,
}

impl GroupState {
    /// Kafka's name for the state.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A JoinGroup request, decoded.
#[derive(Debug, Clone)]
pub struct JoinParams {
    /// Member id ("" on first join).
    pub member_id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Protocol type (e.g. `consumer`).
    pub protocol_type: String,
    /// Supported protocols in preference order with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// KIP-394: new members must rejoin with an assigned id (JoinGroup v4+).
    pub require_known_member: bool,
    /// JoinGroup version (v9+ can tell a restarted static leader to skip the assignment).
    pub version: i16,
}

/// A JoinGroup answer.
#[derive(Debug, Clone)]
pub struct JoinAnswer {
    /// Error.
    pub error: ErrorCode,
    /// Generation.
    pub generation: i32,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Chosen protocol.
    pub protocol: Option<String>,
    /// Leader member id.
    pub leader: String,
    /// The member's id.
    pub member_id: String,
    /// For the leader: every member's id, instance id and metadata.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// The leader must not compute a new assignment (a restarted static leader, v9+).
    pub skip_assignment: bool,
}

impl JoinAnswer {
    pub(crate) fn error(error: ErrorCode, member_id: &str) -> Self {
        JoinAnswer {
            error,
            generation: -1,
            protocol_type: None,
            protocol: None,
            leader: String::new(),
            member_id: member_id.to_string(),
            members: Vec::new(),
            skip_assignment: false,
        }
    }
}

/// A SyncGroup answer.
#[derive(Debug, Clone)]
pub struct SyncAnswer {
    /// Error.
    pub error: ErrorCode,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Chosen protocol.
    pub protocol: Option<String>,
    /// The member's assignment.
    pub assignment: Bytes,
}

impl SyncAnswer {
    pub(crate) fn error(error: ErrorCode) -> Self {
        SyncAnswer {
            error,
            protocol_type: None,
            protocol: None,
            assignment: Bytes::new(),
        }
    }
}

/// Either an immediate answer or one that arrives when the rebalance progresses.
#[derive(Debug)]
pub enum Pending<T> {
    /// Answer now.
    Now(T),
    /// Answer later.
    Wait(oneshot::Receiver<T>),
}

/// A group member.
#[derive(Debug)]
pub struct Member {
    /// Member id.
    pub id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    protocol_type: String,
    protocols: Vec<(String, Bytes)>,
    /// Current assignment.
    pub assignment: Bytes,
    deadline: Instant,
    join_waiter: Option<oneshot::Sender<JoinAnswer>>,
    sync_waiter: Option<oneshot::Sender<SyncAnswer>>,
}

impl Member {
    /// The member's metadata for `protocol`.
    pub fn metadata(&self, protocol: Option<&str>) -> Bytes {
        protocol
            .and_then(|p| self.protocols.iter().find(|(n, _)| n == p))
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

/// One group.
#[derive(Debug)]
pub struct Group {
    /// Group id.
    pub id: String,
    /// State.
    pub state: GroupState,
    /// Generation.
    pub generation: i32,
    /// Protocol type of the members.
    pub protocol_type: Option<String>,
    /// Chosen protocol.
    pub protocol: Option<String>,
    /// Leader member id.
    pub leader: Option<String>,
    /// Members in join order.
    pub members: Vec<Member>,
    pending: HashMap<String, Instant>,
    join_deadline: Option<Instant>,
    join_started: Instant,
    initial_join: bool,
    /// Committed offsets by (topic, partition).
    pub offsets: HashMap<(String, i32), CommittedOffset>,
    /// Offsets committed inside open transactions, by producer id: published when the
    /// transaction commits, dropped when it aborts.
    pub pending_txn: HashMap<i64, HashMap<(String, i32), CommittedOffset>>,
    /// When the group last became empty (ms), for offset expiry.
    pub empty_since_ms: i64,
    /// The group's consumer-protocol (KIP-848) state, when it is a consumer group; its classic
    /// members are then empty (offsets stay in [`Group::offsets`]).
    pub consumer: Option<super::consumer::group::ConsumerGroup>,
    dirty: bool,
}

/// A member as it moves between the classic and the consumer protocol (online migration): what
/// either group type needs to carry it over.
#[derive(Debug, Clone)]
pub struct MigratingMember {
    /// Member id.
    pub id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Protocols (assignor names) in preference order, with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// Its assignment, in the consumer protocol's encoding.
    pub assignment: Bytes,
}

fn new_member_id(client_id: &str) -> String {
    format!("{client_id}-{}", uuid::Uuid::new_v4())
}

impl Group {
    /// A new, empty group.
    pub fn new(id: &str, now_ms: i64) -> Group {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: Vec::new(),
            pending: HashMap::new(),
            join_deadline: None,
            join_started: Instant::now(),
            initial_join: false,
            offsets: HashMap::new(),
            pending_txn: HashMap::new(),
            empty_since_ms: now_ms,
            consumer: None,
            dirty: false,
        }
    }

    /// Whether the group has members of either protocol.
    pub fn has_members(&self) -> bool {
        !self.members.is_empty()
            || self
                .consumer
                .as_ref()
                .is_some_and(|c| !c.members.is_empty())
    }

    /// Restores a group persisted after a rebalance; members get a fresh session.
    pub fn restore(
        id: &str,
        stored: StoredGroup,
        offsets: HashMap<(String, i32), CommittedOffset>,
        now: Instant,
        now_ms: i64,
    ) -> Group {
        let mut g = Group::new(id, now_ms);
        g.generation = stored.generation;
        g.protocol_type = Some(stored.protocol_type.clone()).filter(|p| !p.is_empty());
        g.protocol = stored.protocol.clone();
        g.leader = stored.leader.clone();
        g.offsets = offsets;
        for m in stored.members {
            let session = Duration::from_millis(m.session_timeout_ms.max(0) as u64);
            g.members.push(Member {
                id: m.member_id,
                instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                session_timeout: session,
                rebalance_timeout: Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
                protocol_type: stored.protocol_type.clone(),
                protocols: stored
                    .protocol
                    .iter()
                    .map(|p| (p.clone(), m.subscription.clone()))
                    .collect(),
                assignment: m.assignment,
                deadline: now + session,
                join_waiter: None,
                sync_waiter: None,
            });
        }
        g.state = if g.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        g
    }

    /// The members, for converting a group in use to the consumer protocol.
    pub fn migrating_members(&self) -> Vec<MigratingMember> {
        self.members
            .iter()
            .map(|m| MigratingMember {
                id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout: m.session_timeout,
                rebalance_timeout: m.rebalance_timeout,
                protocols: m.protocols.clone(),
                assignment: m.assignment.clone(),
            })
            .collect()
    }

    /// Whether the members use the consumer protocol's embedded protocol (`consumer`), which a
    /// conversion to the consumer group protocol needs.
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some("consumer")
    }

    /// Drops the classic members once the group became a consumer group: waiting JoinGroup and
    /// SyncGroup requests are answered REBALANCE_IN_PROGRESS (the members rejoin, now into the
    /// consumer group). The caller has written the classic metadata's tombstone.
    pub fn hand_over_members(&mut self) {
        for m in self.members.drain(..) {
            if let Some(w) = m.join_waiter {
                let _ = w.send(JoinAnswer::error(ErrorCode::RebalanceInProgress, &m.id));
            }
            if let Some(w) = m.sync_waiter {
                let _ = w.send(SyncAnswer::error(ErrorCode::RebalanceInProgress));
            }
        }
        self.state = GroupState::Empty;
        self.protocol = None;
        self.leader = None;
        self.pending.clear();
        self.join_deadline = None;
        self.dirty = false;
    }

    /// Takes `members` over from a consumer group going back to the classic protocol, at
    /// `generation` (its group epoch), stable (Kafka's `fromConsumerGroup`), and with
    /// `rebalance` starts a rebalance so they rejoin. Each keeps its assignment until then.
    pub fn adopt_members(
        &mut self,
        generation: i32,
        members: Vec<MigratingMember>,
        now: Instant,
        rebalance: bool,
    ) {
        self.generation = generation;
        self.protocol_type = Some("consumer".to_string());
        self.leader = None;
        self.members = members
            .into_iter()
            .map(|m| Member {
                id: m.id,
                instance_id: m.instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                session_timeout: m.session_timeout,
                rebalance_timeout: m.rebalance_timeout,
                protocol_type: "consumer".to_string(),
                protocols: m.protocols,
                assignment: m.assignment,
                deadline: now + m.session_timeout,
                join_waiter: None,
                sync_waiter: None,
            })
            .collect();
        self.protocol = self.select_protocol();
        self.state = GroupState::Stable;
        self.dirty = true;
        if rebalance {
            self.prepare_rebalance(now, Duration::ZERO);
        }
    }

    /// What to persist for this group.
    pub fn stored(&self, now_ms: i64) -> StoredGroup {
        StoredGroup {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            state_timestamp: now_ms,
            members: self
                .members
                .iter()
                .map(|m| StoredMember {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout.as_millis() as i32,
                    session_timeout_ms: m.session_timeout.as_millis() as i32,
                    subscription: m.metadata(self.protocol.as_deref()),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// Whether group metadata changed since the last call (and clears the flag).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Kafka's `acceptJoiningMember` for `group.max.size`: an empty group takes anyone; while
    /// preparing a rebalance, a member already waiting is accepted and others while fewer than
    /// `max_size` wait; otherwise, a member is accepted and a newcomer while the group has
    /// fewer than `max_size` members. As in Kafka, a join without a member id is a newcomer,
    /// a restarted static member too.
    pub fn admits_joining(&self, member_id: &str, max_size: usize) -> bool {
        let known = self.member_index(member_id);
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                known.is_some_and(|i| self.members[i].join_waiter.is_some())
                    || self
                        .members
                        .iter()
                        .filter(|m| m.join_waiter.is_some())
                        .count()
                        < max_size
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                known.is_some() || self.members.len() < max_size
            }
        }
    }

    /// Turns away a member `group.max.size` does not admit: a known one leaves the group (as
    /// in Kafka, so the rebalance completes without it).
    pub fn refuse_joining(&mut self, member_id: &str, now: Instant, initial_delay: Duration) {
        if let Some(i) = self.member_index(member_id) {
            self.remove_member(i, ErrorCode::GroupMaxSizeReached, now, initial_delay);
        }
    }

    fn member_index(&self, id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.id == id)
    }

    fn max_rebalance_timeout(&self) -> Duration {
        self.members
            .iter()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::from_secs(60))
    }

    /// Whether the joining member shares its protocol type and at least one protocol with every
    /// other member (its own previous protocols do not count: it may be changing them).
    fn protocols_compatible(&self, p: &JoinParams) -> bool {
        if p.protocol_type.is_empty() || p.protocols.is_empty() {
            return false;
        }
        let others: Vec<&Member> = self
            .members
            .iter()
            .filter(|m| m.id != p.member_id)
            .collect();
        if others.is_empty() {
            return true;
        }
        if others.iter().any(|m| m.protocol_type != p.protocol_type) {
            return false;
        }
        p.protocols.iter().any(|(name, _)| {
            others
                .iter()
                .all(|m| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Handles JoinGroup.
    pub fn join(
        &mut self,
        p: JoinParams,
        now: Instant,
        initial_delay: Duration,
    ) -> Pending<JoinAnswer> {
        if self.state == GroupState::Dead {
            return Pending::Now(JoinAnswer::error(
                ErrorCode::CoordinatorNotAvailable,
                &p.member_id,
            ));
        }
        if !self.protocols_compatible(&p) {
            return Pending::Now(JoinAnswer::error(
                ErrorCode::InconsistentGroupProtocol,
                &p.member_id,
            ));
        }
        if p.member_id.is_empty() {
            if let Some(instance) = p.instance_id.clone() {
                return self.join_static_new_id(p, &instance, now, initial_delay);
            }
            let id = new_member_id(&p.client_id);
            if p.require_known_member {
                self.pending.insert(
                    id.clone(),
                    now + p.session_timeout.max(Duration::from_secs(1)),
                );
                return Pending::Now(JoinAnswer::error(ErrorCode::MemberIdRequired, &id));
            }
            return self.add_and_rebalance(id, p, now, initial_delay);
        }
        if self.pending.remove(&p.member_id).is_some() {
            let id = p.member_id.clone();
            return self.add_and_rebalance(id, p, now, initial_delay);
        }
        let Some(i) = self.member_index(&p.member_id) else {
            return Pending::Now(JoinAnswer::error(ErrorCode::UnknownMemberId, &p.member_id));
        };
        if p.instance_id.is_some() && self.members[i].instance_id != p.instance_id {
            return Pending::Now(JoinAnswer::error(ErrorCode::FencedInstanceId, &p.member_id));
        }
        let same = self.members[i].protocols == p.protocols;
        let is_leader = self.leader.as_deref() == Some(p.member_id.as_str());
        match self.state {
            GroupState::CompletingRebalance | GroupState::Stable
                if same && !(is_leader && self.state == GroupState::Stable) =>
            {
                self.members[i].deadline = now + self.members[i].session_timeout;
                Pending::Now(self.answer_for(&p.member_id))
            }
            GroupState::Empty | GroupState::Dead => {
                Pending::Now(JoinAnswer::error(ErrorCode::UnknownMemberId, &p.member_id))
            }
            _ => {
                let (tx, rx) = oneshot::channel();
                self.update_member(i, &p, now);
                self.members[i].join_waiter = Some(tx);
                if self.state != GroupState::PreparingRebalance {
                    self.prepare_rebalance(now, initial_delay);
                }
                self.maybe_complete_join(now);
                Pending::Wait(rx)
            }
        }
    }

    fn join_static_new_id(
        &mut self,
        p: JoinParams,
        instance: &str,
        now: Instant,
        initial_delay: Duration,
    ) -> Pending<JoinAnswer> {
        let new_id = new_member_id(&p.client_id);
        let Some(i) = self
            .members
            .iter()
            .position(|m| m.instance_id.as_deref() == Some(instance))
        else {
            return self.add_and_rebalance(new_id, p, now, initial_delay);
        };
        // A restarted static member replaces its old incarnation (which is fenced) and keeps its
        // assignment; a follower with unchanged metadata causes no rebalance (KIP-345).
        let old_id = std::mem::replace(&mut self.members[i].id, new_id.clone());
        if let Some(w) = self.members[i].join_waiter.take() {
            let _ = w.send(JoinAnswer::error(ErrorCode::FencedInstanceId, &old_id));
        }
        if let Some(w) = self.members[i].sync_waiter.take() {
            let _ = w.send(SyncAnswer::error(ErrorCode::FencedInstanceId));
        }
        let was_leader = self.leader.as_deref() == Some(old_id.as_str());
        if was_leader {
            self.leader = Some(new_id.clone());
        }
        self.dirty = true;
        // Kafka skips the rebalance whenever the group is stable and the selected protocol is
        // still among the new instance's protocols (its metadata may differ: cooperative
        // members list no owned partitions after a restart).
        let keeps_protocol = self
            .protocol
            .as_ref()
            .is_some_and(|proto| p.protocols.iter().any(|(n, _)| n == proto));
        if self.state == GroupState::Stable && keeps_protocol {
            self.update_member(i, &p, now);
            self.members[i].deadline = now + self.members[i].session_timeout;
            let mut answer = self.answer_for(&new_id);
            if was_leader && p.version >= 9 {
                // KIP-814: the new leader sees the members but keeps the current assignment.
                answer.skip_assignment = true;
            } else if was_leader {
                // As Kafka answers before JoinGroup v9: the previous leader id, so the new
                // instance acts as a follower and takes its stored assignment from SyncGroup.
                answer.leader = old_id;
                answer.members = Vec::new();
            }
            return Pending::Now(answer);
        }
        let (tx, rx) = oneshot::channel();
        self.update_member(i, &p, now);
        self.members[i].join_waiter = Some(tx);
        if self.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(now, initial_delay);
        }
        self.maybe_complete_join(now);
        Pending::Wait(rx)
    }

    fn update_member(&mut self, i: usize, p: &JoinParams, now: Instant) {
        let m = &mut self.members[i];
        m.protocols = p.protocols.clone();
        m.protocol_type = p.protocol_type.clone();
        m.session_timeout = p.session_timeout;
        m.rebalance_timeout = p.rebalance_timeout;
        m.deadline = now + p.session_timeout.max(p.rebalance_timeout);
    }

    fn add_and_rebalance(
        &mut self,
        id: String,
        p: JoinParams,
        now: Instant,
        initial_delay: Duration,
    ) -> Pending<JoinAnswer> {
        let (tx, rx) = oneshot::channel();
        if self.members.is_empty() {
            self.protocol_type = Some(p.protocol_type.clone());
        }
        self.members.push(Member {
            id,
            instance_id: p.instance_id.clone(),
            client_id: p.client_id.clone(),
            client_host: p.client_host.clone(),
            session_timeout: p.session_timeout,
            rebalance_timeout: p.rebalance_timeout,
            protocol_type: p.protocol_type.clone(),
            protocols: p.protocols.clone(),
            assignment: Bytes::new(),
            deadline: now + p.session_timeout.max(p.rebalance_timeout),
            join_waiter: Some(tx),
            sync_waiter: None,
        });
        if self.state == GroupState::PreparingRebalance {
            if self.initial_join {
                // New groups wait group.initial.rebalance.delay.ms after each arrival, bounded by
                // the rebalance timeout, to gather members before the first assignment.
                let cap = self.join_started + self.max_rebalance_timeout();
                self.join_deadline = Some((now + initial_delay).min(cap));
            }
        } else {
            self.prepare_rebalance(now, initial_delay);
        }
        self.maybe_complete_join(now);
        Pending::Wait(rx)
    }

    fn prepare_rebalance(&mut self, now: Instant, initial_delay: Duration) {
        for m in &mut self.members {
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncAnswer::error(ErrorCode::RebalanceInProgress));
            }
        }
        self.initial_join = self.state == GroupState::Empty;
        self.state = GroupState::PreparingRebalance;
        self.join_started = now;
        let timeout = self.max_rebalance_timeout();
        self.join_deadline = Some(if self.initial_join {
            now + initial_delay.min(timeout)
        } else {
            now + timeout
        });
    }

    fn maybe_complete_join(&mut self, now: Instant) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let all_joined = self.members.iter().all(|m| m.join_waiter.is_some());
        let delay_over = !self.initial_join || self.join_deadline.is_none_or(|d| now >= d);
        if all_joined && delay_over {
            self.complete_join(now);
        }
    }

    fn select_protocol(&self) -> Option<String> {
        let first = self.members.first()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| {
                self.members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(x, _)| x == *n))
            })
            .collect();
        let mut votes: Vec<(&String, usize)> = candidates.iter().map(|c| (*c, 0)).collect();
        for m in &self.members {
            if let Some((n, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(&n)) {
                if let Some(v) = votes.iter_mut().find(|(c, _)| *c == n) {
                    v.1 += 1;
                }
            }
        }
        // Most votes; ties go to the earlier candidate in the first member's preference order.
        let mut best: Option<(&String, usize)> = None;
        for (c, v) in votes {
            if best.is_none_or(|(_, bv)| v > bv) {
                best = Some((c, v));
            }
        }
        best.map(|(c, _)| c.clone())
    }

    fn complete_join(&mut self, now: Instant) {
        // Members that did not rejoin in time leave the group.
        let (joined, gone): (Vec<Member>, Vec<Member>) = std::mem::take(&mut self.members)
            .into_iter()
            .partition(|m| m.join_waiter.is_some());
        self.members = joined;
        drop(gone);
        self.generation += 1;
        self.join_deadline = None;
        self.dirty = true;
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.protocol = None;
            self.leader = None;
            return;
        }
        self.protocol = self.select_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| self.member_index(l).is_none())
        {
            self.leader = self.members.first().map(|m| m.id.clone());
        }
        self.state = GroupState::CompletingRebalance;
        let ids: Vec<String> = self.members.iter().map(|m| m.id.clone()).collect();
        for id in ids {
            let answer = self.answer_for(&id);
            if let Some(i) = self.member_index(&id) {
                let m = &mut self.members[i];
                m.deadline = now + m.session_timeout;
                if let Some(w) = m.join_waiter.take() {
                    let _ = w.send(answer);
                }
            }
        }
    }

    fn answer_for(&self, member_id: &str) -> JoinAnswer {
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            self.members
                .iter()
                .map(|m| {
                    (
                        m.id.clone(),
                        m.instance_id.clone(),
                        m.metadata(self.protocol.as_deref()),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinAnswer {
            skip_assignment: false,
            error: ErrorCode::NoError,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            leader,
            member_id: member_id.to_string(),
            members,
        }
    }

    /// Whether `instance_id` now belongs to a newer incarnation than `member_id` (KIP-345).
    fn fenced(&self, member_id: &str, instance_id: Option<&str>) -> bool {
        instance_id.is_some_and(|inst| {
            self.members
                .iter()
                .any(|m| m.instance_id.as_deref() == Some(inst) && m.id != member_id)
        })
    }

    fn check_member(
        &self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
    ) -> Result<usize, ErrorCode> {
        if self.state == GroupState::Dead {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if self.fenced(member_id, instance_id) {
            return Err(ErrorCode::FencedInstanceId);
        }
        let i = self
            .member_index(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if instance_id.is_some() && self.members[i].instance_id.as_deref() != instance_id {
            return Err(ErrorCode::FencedInstanceId);
        }
        if generation != self.generation {
            return Err(ErrorCode::IllegalGeneration);
        }
        Ok(i)
    }

    /// Handles SyncGroup.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: Instant,
    ) -> Pending<SyncAnswer> {
        let i = match self.check_member(member_id, generation, instance_id) {
            Ok(i) => i,
            Err(e) => return Pending::Now(SyncAnswer::error(e)),
        };
        if protocol_type.is_some_and(|t| Some(t) != self.protocol_type.as_deref())
            || protocol.is_some_and(|p| Some(p) != self.protocol.as_deref())
        {
            return Pending::Now(SyncAnswer::error(ErrorCode::InconsistentGroupProtocol));
        }
        self.members[i].deadline = now + self.members[i].session_timeout;
        match self.state {
            GroupState::PreparingRebalance => {
                Pending::Now(SyncAnswer::error(ErrorCode::RebalanceInProgress))
            }
            GroupState::Stable => Pending::Now(self.sync_answer(i)),
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                self.members[i].sync_waiter = Some(tx);
                if self.leader.as_deref() == Some(member_id) {
                    let mut by_member: HashMap<String, Bytes> = assignments.into_iter().collect();
                    for m in &mut self.members {
                        m.assignment = by_member.remove(&m.id).unwrap_or_default();
                    }
                    self.state = GroupState::Stable;
                    self.dirty = true;
                    for j in 0..self.members.len() {
                        let answer = self.sync_answer(j);
                        if let Some(w) = self.members[j].sync_waiter.take() {
                            let _ = w.send(answer);
                        }
                    }
                }
                Pending::Wait(rx)
            }
            GroupState::Empty | GroupState::Dead => {
                Pending::Now(SyncAnswer::error(ErrorCode::UnknownMemberId))
            }
        }
    }

    fn sync_answer(&self, i: usize) -> SyncAnswer {
        SyncAnswer {
            error: ErrorCode::NoError,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            assignment: self.members[i].assignment.clone(),
        }
    }

    /// Handles Heartbeat.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        now: Instant,
    ) -> ErrorCode {
        if self.state == GroupState::Empty {
            return ErrorCode::UnknownMemberId;
        }
        if self.fenced(member_id, instance_id) {
            return ErrorCode::FencedInstanceId;
        }
        let i = match self.member_index(member_id) {
            Some(i) => i,
            None => {
                return if self.state == GroupState::Dead {
                    ErrorCode::CoordinatorNotAvailable
                } else {
                    ErrorCode::UnknownMemberId
                }
            }
        };
        if instance_id.is_some() && self.members[i].instance_id.as_deref() != instance_id {
            return ErrorCode::FencedInstanceId;
        }
        if self.state == GroupState::PreparingRebalance {
            self.members[i].deadline = now
                + self.members[i]
                    .session_timeout
                    .max(self.members[i].rebalance_timeout);
            return ErrorCode::RebalanceInProgress;
        }
        if generation != self.generation {
            return ErrorCode::IllegalGeneration;
        }
        self.members[i].deadline = now + self.members[i].session_timeout;
        ErrorCode::NoError
    }

    /// Handles one member of a LeaveGroup request (by member id, or by instance id when the
    /// member id is empty).
    pub fn leave(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        now: Instant,
        initial_delay: Duration,
    ) -> ErrorCode {
        let i = if member_id.is_empty() {
            instance_id.and_then(|inst| {
                self.members
                    .iter()
                    .position(|m| m.instance_id.as_deref() == Some(inst))
            })
        } else {
            self.member_index(member_id)
        };
        let Some(i) = i else {
            return ErrorCode::UnknownMemberId;
        };
        if instance_id.is_some() && self.members[i].instance_id.as_deref() != instance_id {
            return ErrorCode::FencedInstanceId;
        }
        self.remove_member(i, ErrorCode::UnknownMemberId, now, initial_delay);
        ErrorCode::NoError
    }

    fn remove_member(
        &mut self,
        i: usize,
        reason: ErrorCode,
        now: Instant,
        initial_delay: Duration,
    ) {
        let m = self.members.remove(i);
        if let Some(w) = m.join_waiter {
            let _ = w.send(JoinAnswer::error(reason, &m.id));
        }
        if let Some(w) = m.sync_waiter {
            let _ = w.send(SyncAnswer::error(reason));
        }
        self.dirty = true;
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.prepare_rebalance(now, initial_delay)
            }
            GroupState::PreparingRebalance => self.maybe_complete_join(now),
            _ => {}
        }
        if self.members.is_empty() && self.state == GroupState::PreparingRebalance {
            self.complete_join(now);
        }
    }

    /// Expires members and pending member ids, and completes a join phase whose deadline passed.
    /// Returns whether the group became empty.
    pub fn tick(&mut self, now: Instant, now_ms: i64, initial_delay: Duration) -> bool {
        let was_empty = self.members.is_empty();
        self.pending.retain(|_, deadline| *deadline > now);
        while let Some(i) = self
            .members
            .iter()
            .position(|m| m.deadline <= now && m.join_waiter.is_none())
        {
            tracing::info!(group = %self.id, member = %self.members[i].id, "member session expired");
            self.remove_member(i, ErrorCode::UnknownMemberId, now, initial_delay);
        }
        if self.state == GroupState::PreparingRebalance
            && self.join_deadline.is_some_and(|d| now >= d)
        {
            self.complete_join(now);
        }
        let empty = self.members.is_empty();
        if empty && !was_empty {
            self.empty_since_ms = now_ms;
        }
        empty && !was_empty
    }

    /// Whether [`Group::tick`] has anything to time: member sessions, pending joins, or a
    /// rebalance's join deadline.
    pub fn needs_timer(&self) -> bool {
        !self.members.is_empty()
            || !self.pending.is_empty()
            || self.state == GroupState::PreparingRebalance
            || self.consumer.as_ref().is_some_and(|c| c.needs_timer())
    }

    /// Checks that a member may commit offsets now.
    pub fn validate_commit(
        &self,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if generation < 0 && member_id.is_empty() {
            // A standalone (assign-mode) consumer: allowed while the group has no members.
            return if self.members.is_empty() {
                Ok(())
            } else {
                Err(ErrorCode::UnknownMemberId)
            };
        }
        self.check_member(member_id, generation, instance_id)?;
        if self.state == GroupState::CompletingRebalance {
            return Err(ErrorCode::RebalanceInProgress);
        }
        Ok(())
    }

    /// Topics any member subscribes to (for OffsetDelete), from the consumer protocol metadata.
    pub fn subscribed_topics(&self) -> Vec<String> {
        use kafka_protocol::messages::ConsumerProtocolSubscription;
        use kafka_protocol::protocol::Decodable;
        let mut out = Vec::new();
        for m in &self.members {
            let mut meta = m.metadata(self.protocol.as_deref());
            if meta.len() < 2 {
                continue;
            }
            let version = i16::from_be_bytes([meta[0], meta[1]]);
            bytes::Buf::advance(&mut meta, 2);
            if let Ok(sub) = ConsumerProtocolSubscription::decode(&mut meta, version.clamp(0, 3)) {
                out.extend(sub.topics.iter().map(|t| t.to_string()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(member: &str, protocols: &[&str]) -> JoinParams {
        JoinParams {
            member_id: member.to_string(),
            instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(30),
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::from(format!("meta-{member}-{p}"))))
                .collect(),
            require_known_member: true,
            version: 7,
        }
    }

    fn now_answer(p: Pending<JoinAnswer>) -> JoinAnswer {
        match p {
            Pending::Now(a) => a,
            Pending::Wait(mut rx) => rx.try_recv().expect("answer ready"),
        }
    }

    /// KIP-394 first join, then the real join; returns the member id and the waiting receiver.
    fn join_new(g: &mut Group, protocols: &[&str], now: Instant) -> (String, Pending<JoinAnswer>) {
        let a = now_answer(g.join(params("", protocols), now, Duration::ZERO));
        assert_eq!(a.error, ErrorCode::MemberIdRequired);
        let id = a.member_id.clone();
        let p = g.join(params(&id, protocols), now, Duration::ZERO);
        (id, p)
    }

    fn stable_group_of_two(now: Instant) -> (Group, String, String) {
        let mut g = Group::new("g", 0);
        let (a, pa) = join_new(&mut g, &["range", "roundrobin"], now);
        let ja = now_answer(pa);
        assert_eq!(ja.generation, 1);
        // A second member joins: the group rebalances and waits for the first to rejoin.
        let (b, pb) = join_new(&mut g, &["roundrobin", "range"], now);
        assert_eq!(g.state, GroupState::PreparingRebalance);
        let pa2 = g.join(params(&a, &["range", "roundrobin"]), now, Duration::ZERO);
        let (ja, jb) = (now_answer(pa2), now_answer(pb));
        assert_eq!((ja.generation, jb.generation), (2, 2));
        assert_eq!(ja.leader, a);
        assert_eq!(ja.members.len(), 2, "the leader sees every member");
        assert!(jb.members.is_empty(), "followers see none");
        assert_eq!(g.state, GroupState::CompletingRebalance);
        let pb_sync = g.sync(&b, 2, None, None, None, vec![], now);
        let pa_sync = g.sync(
            &a,
            2,
            None,
            None,
            None,
            vec![
                (a.clone(), Bytes::from_static(b"A")),
                (b.clone(), Bytes::from_static(b"B")),
            ],
            now,
        );
        let sync_answer = |p: Pending<SyncAnswer>| match p {
            Pending::Now(a) => a,
            Pending::Wait(mut rx) => rx.try_recv().expect("sync answered"),
        };
        assert_eq!(sync_answer(pb_sync).assignment, Bytes::from_static(b"B"));
        assert_eq!(sync_answer(pa_sync).assignment, Bytes::from_static(b"A"));
        assert_eq!(g.state, GroupState::Stable);
        (g, a, b)
    }

    #[test]
    fn two_members_rebalance_and_sync() {
        let now = Instant::now();
        let (g, a, _) = stable_group_of_two(now);
        // Votes: "range" (a's first choice, tie broken by the first member's order).
        assert_eq!(g.protocol.as_deref(), Some("range"));
        assert_eq!(g.leader.as_deref(), Some(a.as_str()));
        assert!(g.stored(0).members.iter().all(|m| !m.assignment.is_empty()));
    }

    #[test]
    fn heartbeat_errors() {
        let now = Instant::now();
        let (mut g, a, b) = stable_group_of_two(now);
        assert_eq!(g.heartbeat(&a, 2, None, now), ErrorCode::NoError);
        assert_eq!(
            g.heartbeat("nobody", 2, None, now),
            ErrorCode::UnknownMemberId
        );
        assert_eq!(g.heartbeat(&a, 1, None, now), ErrorCode::IllegalGeneration);
        assert_eq!(g.leave(&b, None, now, Duration::ZERO), ErrorCode::NoError);
        assert_eq!(
            g.heartbeat(&a, 2, None, now),
            ErrorCode::RebalanceInProgress
        );
    }

    #[test]
    fn expired_session_triggers_rebalance_and_last_leave_empties() {
        let now = Instant::now();
        let (mut g, a, b) = stable_group_of_two(now);
        assert_eq!(
            g.heartbeat(&a, 2, None, now + Duration::from_secs(8)),
            ErrorCode::NoError
        );
        g.tick(now + Duration::from_secs(11), 11_000, Duration::ZERO);
        assert!(g.member_index(&b).is_none(), "b's session expired");
        assert_eq!(g.state, GroupState::PreparingRebalance);
        let a_rejoin = now_answer(g.join(
            params(&a, &["range"]),
            now + Duration::from_secs(11),
            Duration::ZERO,
        ));
        assert_eq!(a_rejoin.generation, 3);
        assert_eq!(g.leave(&a, None, now, Duration::ZERO), ErrorCode::NoError);
        assert_eq!(g.state, GroupState::Empty);
        assert_eq!(
            g.leave(&a, None, now, Duration::ZERO),
            ErrorCode::UnknownMemberId
        );
    }

    #[test]
    fn static_member_restart_keeps_assignment_without_rebalance() {
        let now = Instant::now();
        let mut g = Group::new("g", 0);
        let mut leader = params("", &["range"]);
        leader.require_known_member = false;
        let lid = now_answer(g.join(leader, now, Duration::ZERO)).member_id;
        let mut s = params("", &["range"]);
        s.instance_id = Some("static-1".into());
        let p = g.join(s.clone(), now, Duration::ZERO);
        let lp = g.join(params(&lid, &["range"]), now, Duration::ZERO);
        let first = now_answer(p);
        now_answer(lp);
        let _ = g.sync(
            &lid,
            first.generation,
            None,
            None,
            None,
            vec![(first.member_id.clone(), Bytes::from_static(b"P3"))],
            now,
        );
        assert_eq!(g.state, GroupState::Stable);
        let generation = g.generation;
        // The static member restarts (new process, empty member id, same instance id).
        let again = now_answer(g.join(s, now, Duration::ZERO));
        assert_eq!(again.error, ErrorCode::NoError);
        assert_ne!(
            again.member_id, first.member_id,
            "a new incarnation gets a new id"
        );
        assert_eq!(g.generation, generation, "no rebalance");
        assert_eq!(g.state, GroupState::Stable);
        let Pending::Now(sync) = g.sync(
            &again.member_id,
            generation,
            Some("static-1"),
            None,
            None,
            vec![],
            now,
        ) else {
            panic!("stable groups answer at once");
        };
        assert_eq!(sync.assignment, Bytes::from_static(b"P3"));
        // The old incarnation is fenced.
        assert_eq!(
            g.heartbeat(&first.member_id, generation, Some("static-1"), now),
            ErrorCode::FencedInstanceId
        );
    }

    #[test]
    fn restarted_static_leader_causes_no_rebalance() {
        let now = Instant::now();
        let mut g = Group::new("g", 0);
        let mut s = params("", &["range"]);
        s.instance_id = Some("lead".into());
        let first = now_answer(g.join(s.clone(), now, Duration::ZERO));
        assert_eq!(first.leader, first.member_id, "the only member leads");
        let _ = g.sync(
            &first.member_id,
            first.generation,
            Some("lead"),
            None,
            None,
            vec![(first.member_id.clone(), Bytes::from_static(b"ALL"))],
            now,
        );
        let generation = g.generation;
        let mut changed = s.clone();
        changed.protocols = vec![("range".into(), Bytes::from_static(b"other metadata"))];
        let again = now_answer(g.join(changed, now, Duration::ZERO));
        assert_eq!(again.error, ErrorCode::NoError);
        assert_eq!(g.generation, generation, "no rebalance");
        assert_eq!(again.leader, first.member_id, "reported as a follower");
        assert!(again.members.is_empty());
        let Pending::Now(sync) = g.sync(
            &again.member_id,
            generation,
            Some("lead"),
            None,
            None,
            vec![],
            now,
        ) else {
            panic!("stable groups answer at once");
        };
        assert_eq!(sync.assignment, Bytes::from_static(b"ALL"));
    }

    #[test]
    fn commits_are_validated() {
        let now = Instant::now();
        let mut g = Group::new("g", 0);
        assert_eq!(
            g.validate_commit("", -1, None),
            Ok(()),
            "standalone consumer on an empty group"
        );
        let (a, p) = join_new(&mut g, &["range"], now);
        let gen = now_answer(p).generation;
        assert_eq!(
            g.validate_commit("", -1, None),
            Err(ErrorCode::UnknownMemberId)
        );
        assert_eq!(
            g.validate_commit(&a, gen, None),
            Err(ErrorCode::RebalanceInProgress),
            "before SyncGroup"
        );
        let _ = g.sync(&a, gen, None, None, None, vec![], now);
        assert_eq!(g.validate_commit(&a, gen, None), Ok(()));
        assert_eq!(
            g.validate_commit(&a, gen - 1, None),
            Err(ErrorCode::IllegalGeneration)
        );
        assert_eq!(
            g.validate_commit("stranger", gen, None),
            Err(ErrorCode::UnknownMemberId)
        );
    }

    #[test]
    fn inconsistent_protocols_are_rejected() {
        let now = Instant::now();
        let mut g = Group::new("g", 0);
        let (_, p) = join_new(&mut g, &["range"], now);
        now_answer(p);
        let a = now_answer(g.join(params("", &["sticky"]), now, Duration::ZERO));
        assert_eq!(a.error, ErrorCode::InconsistentGroupProtocol);
        let mut other_type = params("", &["range"]);
        other_type.protocol_type = "connect".into();
        assert_eq!(
            now_answer(g.join(other_type, now, Duration::ZERO)).error,
            ErrorCode::InconsistentGroupProtocol
        );
        assert_eq!(
            now_answer(g.join(params("unknown-id", &["range"]), now, Duration::ZERO)).error,
            ErrorCode::UnknownMemberId
        );
    }

    #[test]
    fn initial_delay_gathers_members_before_the_first_assignment() {
        let now = Instant::now();
        let mut g = Group::new("g", 0);
        let delay = Duration::from_millis(300);
        let a = now_answer(g.join(params("", &["range"]), now, delay)).member_id;
        let Pending::Wait(mut rx) = g.join(params(&a, &["range"]), now, delay) else {
            panic!("a new group waits for the initial delay");
        };
        assert!(rx.try_recv().is_err());
        g.tick(now + Duration::from_millis(100), 100, delay);
        assert!(rx.try_recv().is_err(), "still within the delay");
        g.tick(now + Duration::from_millis(301), 301, delay);
        assert_eq!(rx.try_recv().expect("joined after the delay").generation, 1);
    }

    #[test]
    fn group_max_size_admits_members_and_turns_newcomers_away() {
        let now = Instant::now();
        let (mut g, a, b) = stable_group_of_two(now);
        assert_eq!(g.state, GroupState::Stable);
        // Full at 2: members rejoin, a newcomer (or a pending id) is refused.
        assert!(g.admits_joining(&a, 2));
        assert!(!g.admits_joining("", 2));
        assert!(!g.admits_joining("someone-new", 2));
        assert!(g.admits_joining("", 3));
        // Preparing a rebalance: only members already waiting count.
        // The leader rejoining starts a rebalance.
        let _pa = g.join(params(&a, &["range", "roundrobin"]), now, Duration::ZERO);
        assert_eq!(g.state, GroupState::PreparingRebalance);
        assert!(g.admits_joining(&a, 1), "a waiting member stays");
        assert!(!g.admits_joining(&b, 1), "one is already waiting");
        assert!(g.admits_joining(&b, 2));
        // A member turned away leaves, so the rebalance completes without it.
        g.refuse_joining(&b, now, Duration::ZERO);
        assert_eq!(g.members.len(), 1);
        assert_eq!(g.state, GroupState::CompletingRebalance);
    }
}
