//! One consumer-protocol group (KIP-848): members with epochs, the group epoch (bumped when the
//! members or their subscribed topics change), the target assignment computed for that epoch by
//! a server-side assignor, and each member's reconciliation towards its target. Pure logic: the
//! coordinator passes the topics and the time, and persists what [`ConsumerGroup::take_dirty`]
//! reports.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use odradek::ErrorCode;
use uuid::Uuid;

use super::assignor::{self, Assignment, MemberSpec};
use super::reconcile::{self, MemberState, Reconciled};

/// Member epoch a member sends to join (or rejoin after being fenced).
pub const JOIN_EPOCH: i32 = 0;
/// Member epoch a member sends to leave.
pub const LEAVE_EPOCH: i32 = -1;
/// Member epoch a static member sends to leave temporarily (it keeps its assignment until its
/// session expires or the same instance comes back).
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// The topics a group sees: by name, their id and partition count; and every name (for
/// regular-expression subscriptions).
pub trait Topics {
    /// The id and partition count of `name`, if it exists.
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)>;
    /// Every topic name (internal topics excluded).
    fn names(&self) -> Vec<String>;
    /// The name of topic `id`, if it exists.
    fn name_of(&self, id: Uuid) -> Option<String>;
}

/// A ConsumerGroupHeartbeat, decoded.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    /// Request version (v0: the broker names new members; v1+: the client does).
    pub version: i16,
    /// Member id.
    pub member_id: String,
    /// Member epoch (0 join, -1 leave, -2 static leave, else the current epoch).
    pub member_epoch: i32,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Rack.
    pub rack_id: Option<String>,
    /// Rebalance timeout (-1: unchanged).
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names (`None`: unchanged).
    pub subscribed_topic_names: Option<Vec<String>>,
    /// Subscribed topic regular expression (`None`: unchanged; v1+).
    pub subscribed_topic_regex: Option<String>,
    /// Preferred server assignor (`None`: unchanged).
    pub server_assignor: Option<String>,
    /// Partitions the member owns (`None`: unchanged).
    pub owned: Option<Assignment>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
}

/// A ConsumerGroupHeartbeat answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatAnswer {
    /// Error.
    pub error: ErrorCode,
    /// Error message.
    pub message: Option<String>,
    /// The member's id.
    pub member_id: String,
    /// The member's epoch.
    pub member_epoch: i32,
    /// How often the member should heartbeat.
    pub heartbeat_interval_ms: i32,
    /// The member's assignment, when it changed or the request was a full one.
    pub assignment: Option<Assignment>,
}

impl HeartbeatAnswer {
    /// An error answer.
    pub fn error(error: ErrorCode, message: impl Into<String>, member_id: &str) -> Self {
        HeartbeatAnswer {
            error,
            message: Some(message.into()),
            member_id: member_id.to_string(),
            member_epoch: -1,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    }
}

/// Limits and timings of a group (broker settings and the group's overrides).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `consumer.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub max_size: usize,
    /// The first of `group.consumer.assignors`: used when no member names one.
    pub default_assignor: &'static str,
}

/// One member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Member id.
    pub id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Rack.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub topic_names: Vec<String>,
    /// Subscribed regular expression.
    pub topic_regex: Option<String>,
    /// Preferred server assignor.
    pub server_assignor: Option<String>,
    /// Rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// Reconciliation state: epochs, assigned and pending-revocation partitions.
    pub current: Reconciled,
    /// Set for a member speaking the classic protocol (JoinGroup, SyncGroup, Heartbeat) in
    /// this group: what it joined with (Kafka's `ClassicMemberMetadata`).
    pub classic: Option<ClassicProtocol>,
    pub(super) session_deadline: Instant,
    /// When the member must have confirmed its pending revocation.
    pub(super) revocation_deadline: Option<Instant>,
    /// A classic member told to rejoin (or to sync after its join) must do so by then.
    pub(super) classic_deadline: Option<Instant>,
}

/// A consumer-protocol member's departure, which may take the group back to the classic protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    /// The group epoch before it (a downgrade keeps it, without the bump the removal made).
    pub epoch: i32,
    /// A classic static member took its place (a downgrade then needs no rebalance).
    pub replaced: bool,
}

/// What a classic-protocol member of a consumer group joined with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicProtocol {
    /// Its session timeout (JoinGroup's; its sessions are timed with it).
    pub session_timeout_ms: i32,
    /// Its protocols (assignor names) in preference order, with their consumer-protocol
    /// subscription metadata.
    pub protocols: Vec<(String, bytes::Bytes)>,
}

impl Member {
    /// A member joining with nothing yet: epoch 0, no subscription, its session ending at
    /// `session_deadline`.
    pub(super) fn joining(
        id: &str,
        instance_id: Option<String>,
        client_id: &str,
        client_host: &str,
        rebalance_timeout_ms: i32,
        session_deadline: Instant,
    ) -> Member {
        Member {
            id: id.to_string(),
            instance_id,
            rack_id: None,
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            topic_names: Vec::new(),
            topic_regex: None,
            server_assignor: None,
            rebalance_timeout_ms,
            current: Reconciled {
                state: MemberState::Stable,
                member_epoch: JOIN_EPOCH,
                previous_member_epoch: JOIN_EPOCH,
                assigned: Assignment::new(),
                pending_revocation: Assignment::new(),
            },
            classic: None,
            session_deadline,
            revocation_deadline: None,
            classic_deadline: None,
        }
    }

    /// The member's session timeout: its own for a classic member, else the group's.
    pub(super) fn session(&self, group_session: Duration) -> Duration {
        match &self.classic {
            Some(c) => Duration::from_millis(c.session_timeout_ms.max(0) as u64),
            None => group_session,
        }
    }
}

impl Member {
    /// The topic names the member subscribes to, its regular expression resolved.
    fn subscribed(&self, topics: &dyn Topics, regexes: &mut RegexCache) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.topic_names.iter().cloned().collect();
        if let Some(re) = self.topic_regex.as_deref() {
            names.extend(regexes.matches(re, topics));
        }
        names
    }
}

/// Compiled subscription regexes and the topics each matched, for one pass over the topics.
#[derive(Debug, Default)]
struct RegexCache {
    names: Option<Vec<String>>,
    matched: HashMap<String, Vec<String>>,
}

impl RegexCache {
    fn matches(&mut self, re: &str, topics: &dyn Topics) -> Vec<String> {
        if let Some(m) = self.matched.get(re) {
            return m.clone();
        }
        let names = self.names.get_or_insert_with(|| topics.names());
        let found: Vec<String> = match compile(re) {
            Ok(r) => names.iter().filter(|n| r.is_match(n)).cloned().collect(),
            Err(_) => Vec::new(),
        };
        self.matched.insert(re.to_string(), found.clone());
        found
    }
}

/// Compiles a subscription regex as Kafka matches it (RE2J `matches()`: the whole name), with
/// bounded size so a hostile pattern cannot take unbounded memory or time.
pub fn compile(re: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&format!("^(?:{re})$"))
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
        .map_err(|e| e.to_string())
}

/// Group states as ConsumerGroupDescribe and ListGroups name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No members.
    Empty,
    /// The target assignment is behind the group epoch.
    Assigning,
    /// Members are moving to the target assignment.
    Reconciling,
    /// Every member is at the target.
    Stable,
}

impl State {
    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::Assigning => "Assigning",
            State::Reconciling => "Reconciling",
            State::Stable => "Stable",
        }
    }
}

/// One consumer-protocol group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// Group id.
    pub id: String,
    /// Bumped whenever members, subscriptions or subscribed topics change.
    pub group_epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub assignment_epoch: i32,
    /// Members by id.
    pub members: BTreeMap<String, Member>,
    /// Target assignment per member.
    pub target: HashMap<String, Assignment>,
    /// Partition counts of the subscribed topics the target was computed from.
    pub subscribed_metadata: BTreeMap<Uuid, i32>,
    /// What storage holds of this group (to write only changes).
    pub(crate) written: super::written::Written,
    /// A consumer-protocol member left, was fenced or was replaced by a classic static member
    /// since the last [`ConsumerGroup::take_consumer_member_removed`] (the coordinator then
    /// checks whether the group goes back to the classic protocol).
    pub(super) consumer_member_removed: Option<Departure>,
    pub(super) dirty: bool,
}

fn new_member_id() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Uuid::new_v4().as_bytes())
}

/// Checks a heartbeat's fields as Kafka does before anything else; `assignors` are the
/// configured ones (`group.consumer.assignors`).
pub fn validate(hb: &Heartbeat, assignors: &[&str]) -> Result<(), (ErrorCode, String)> {
    let invalid = |m: &str| Err((ErrorCode::InvalidRequest, m.to_string()));
    if hb
        .instance_id
        .as_deref()
        .is_some_and(|i| i.trim().is_empty())
    {
        return invalid("InstanceId can't be empty.");
    }
    if hb.rack_id.as_deref().is_some_and(|r| r.trim().is_empty()) {
        return invalid("RackId can't be empty.");
    }
    if (hb.version >= 1 || hb.member_epoch != JOIN_EPOCH) && hb.member_id.trim().is_empty() {
        return invalid("MemberId can't be empty.");
    }
    match hb.member_epoch {
        JOIN_EPOCH => {
            if hb.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if hb.owned.as_ref().is_none_or(|o| !o.is_empty()) {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            if hb.subscribed_topic_names.is_none() && hb.subscribed_topic_regex.is_none() {
                return invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
        }
        STATIC_LEAVE_EPOCH if hb.instance_id.is_none() => {
            return invalid("InstanceId can't be null.");
        }
        e if e < STATIC_LEAVE_EPOCH => return invalid("MemberEpoch is invalid."),
        _ => {}
    }
    if let Some(a) = hb.server_assignor.as_deref() {
        if !assignors.contains(&a) {
            return Err((
                ErrorCode::UnsupportedAssignor,
                format!(
                    "ServerAssignor {a} is not supported. Supported assignors: {}.",
                    assignors.join(", ")
                ),
            ));
        }
    }
    if let Some(re) = hb.subscribed_topic_regex.as_deref() {
        if let Err(e) = compile(re) {
            return Err((
                ErrorCode::InvalidRegularExpression,
                format!("SubscribedTopicRegex `{re}` is not a valid regular expression: {e}."),
            ));
        }
    }
    Ok(())
}

impl ConsumerGroup {
    /// A new, empty group.
    pub fn new(id: &str) -> ConsumerGroup {
        ConsumerGroup {
            id: id.to_string(),
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: HashMap::new(),
            subscribed_metadata: BTreeMap::new(),
            written: super::written::Written::default(),
            consumer_member_removed: None,
            dirty: false,
        }
    }

    /// If a consumer-protocol member left, was fenced or was replaced since the last call: how.
    /// Clears it.
    pub fn take_consumer_member_removed(&mut self) -> Option<Departure> {
        self.consumer_member_removed.take()
    }

    /// Whether every member speaks the classic protocol (and there is at least one).
    pub fn only_classic_members(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(|m| m.classic.is_some())
    }

    /// Whether the group changed since the last call (and clears the flag).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Marks the group as changed (its last write failed: it is written again).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The group's state.
    pub fn state(&self) -> State {
        if self.members.is_empty() {
            State::Empty
        } else if self.assignment_epoch < self.group_epoch {
            State::Assigning
        } else if self.members.values().any(|m| {
            m.current.state != MemberState::Stable
                || m.current.member_epoch != self.assignment_epoch
        }) {
            State::Reconciling
        } else {
            State::Stable
        }
    }

    /// Topic names any member subscribes to (for OffsetDelete), regexes resolved.
    pub fn subscribed_topics(&self, topics: &dyn Topics) -> BTreeSet<String> {
        let mut regexes = RegexCache::default();
        self.members
            .values()
            .flat_map(|m| m.subscribed(topics, &mut regexes))
            .collect()
    }

    /// Handles a validated heartbeat ([`validate`]).
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topics: &dyn Topics,
        limits: Limits,
        now: Instant,
    ) -> HeartbeatAnswer {
        if hb.member_epoch == LEAVE_EPOCH || hb.member_epoch == STATIC_LEAVE_EPOCH {
            return self.leave(&hb);
        }
        let (member_id, joined) = match self.admit(&hb, limits, now) {
            Ok(admitted) => admitted,
            Err((code, message)) => return HeartbeatAnswer::error(code, message, &hb.member_id),
        };
        let full = hb.member_epoch == JOIN_EPOCH
            || (hb.rebalance_timeout_ms != -1
                && (hb.subscribed_topic_names.is_some() || hb.subscribed_topic_regex.is_some())
                && hb.owned.is_some());
        let Some(member) = self.members.get_mut(&member_id) else {
            return HeartbeatAnswer::error(ErrorCode::UnknownMemberId, "", &member_id);
        };
        let before = member.current.assigned.clone();
        let mut changed = joined;
        macro_rules! update {
            ($field:expr, $value:expr) => {{
                let v = $value;
                if $field != v {
                    $field = v;
                    changed = true;
                }
            }};
        }
        if let Some(names) = hb.subscribed_topic_names.clone() {
            let mut names = names;
            names.sort();
            names.dedup();
            update!(member.topic_names, names);
        }
        if let Some(re) = hb.subscribed_topic_regex.clone() {
            update!(member.topic_regex, Some(re).filter(|r| !r.is_empty()));
        }
        if let Some(a) = hb.server_assignor.clone() {
            update!(member.server_assignor, Some(a));
        }
        if hb.rack_id.is_some() {
            update!(member.rack_id, hb.rack_id.clone());
        }
        if hb.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        member.client_id = hb.client_id.clone();
        member.client_host = hb.client_host.clone();
        member.session_deadline = now + limits.session_timeout;
        self.refresh_target(topics, changed, limits.default_assignor);
        self.reconcile(&member_id, hb.owned.as_ref(), now);
        let Some(member) = self.members.get(&member_id) else {
            return HeartbeatAnswer::error(ErrorCode::UnknownMemberId, "", &member_id);
        };
        let assignment =
            (full || member.current.assigned != before).then(|| member.current.assigned.clone());
        HeartbeatAnswer {
            error: ErrorCode::NoError,
            message: None,
            member_id: member_id.clone(),
            member_epoch: member.current.member_epoch,
            heartbeat_interval_ms: limits.heartbeat_interval_ms,
            assignment,
        }
    }

    /// Finds, creates or replaces the heartbeat's member and checks its epoch; returns its id
    /// and whether it is a new member.
    fn admit(
        &mut self,
        hb: &Heartbeat,
        limits: Limits,
        now: Instant,
    ) -> Result<(String, bool), (ErrorCode, String)> {
        let unknown = |id: &str| {
            (
                ErrorCode::UnknownMemberId,
                format!("Member {id} is not a member of group."),
            )
        };
        if hb.member_epoch != JOIN_EPOCH {
            let member = self
                .members
                .get(&hb.member_id)
                .ok_or_else(|| unknown(&hb.member_id))?;
            if let Some(instance) = hb.instance_id.as_deref() {
                if member.instance_id.as_deref() != Some(instance) {
                    return Err((
                        ErrorCode::FencedInstanceId,
                        format!("Static member {instance} was fenced by another member."),
                    ));
                }
            }
            let epoch = member.current.member_epoch;
            let stale_ok = hb.member_epoch == member.current.previous_member_epoch
                && hb
                    .owned
                    .as_ref()
                    .is_some_and(|o| reconcile::is_subset(o, &member.current.assigned));
            if hb.member_epoch > epoch || (hb.member_epoch < epoch && !stale_ok) {
                return Err((
                    ErrorCode::FencedMemberEpoch,
                    format!(
                        "The consumer group member has a smaller member epoch ({}) than the one known by the group coordinator ({epoch}). The member must abandon all its partitions and rejoin.",
                        hb.member_epoch
                    ),
                ));
            }
            return Ok((hb.member_id.clone(), false));
        }
        // Joining or rejoining.
        if let Some(instance) = hb.instance_id.as_deref() {
            let previous = self
                .members
                .values()
                .find(|m| m.instance_id.as_deref() == Some(instance))
                .map(|m| (m.id.clone(), m.current.member_epoch));
            match previous {
                Some((id, _)) if id == hb.member_id => {
                    // The same static member rejoining (it lost its epoch): it keeps its
                    // place; the full answer gives it its assignment back.
                    return Ok((id, false));
                }
                Some((id, STATIC_LEAVE_EPOCH)) => {
                    // The instance came back under a new id: it takes the old member's place.
                    let new_id = self.new_id(hb);
                    if let Some(mut m) = self.members.remove(&id) {
                        m.id = new_id.clone();
                        // It keeps the assignment and reconciles from epoch 0: what it held
                        // is its own again at the target epoch.
                        m.current.member_epoch = JOIN_EPOCH;
                        m.current.previous_member_epoch = JOIN_EPOCH;
                        m.session_deadline = now + limits.session_timeout;
                        if let Some(t) = self.target.remove(&id) {
                            self.target.insert(new_id.clone(), t);
                        }
                        self.members.insert(new_id.clone(), m);
                    }
                    self.dirty = true;
                    return Ok((new_id, false));
                }
                Some(_) => {
                    return Err((
                        ErrorCode::UnreleasedInstanceId,
                        format!(
                            "Static member with instance id {instance} cannot join the group because the instance id is owned by another member."
                        ),
                    ));
                }
                None => {}
            }
        } else if self.members.contains_key(&hb.member_id) {
            // A known member rejoining (it was fenced on its side, or lost the answer to its
            // join): it keeps its place; the full answer gives it its assignment again.
            return Ok((hb.member_id.clone(), false));
        }
        if self.members.len() >= limits.max_size {
            return Err((
                ErrorCode::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    limits.max_size
                ),
            ));
        }
        let id = if hb.version == 0 && hb.member_id.is_empty() {
            new_member_id()
        } else {
            self.new_id(hb)
        };
        self.members.insert(
            id.clone(),
            Member::joining(
                &id,
                hb.instance_id.clone(),
                &hb.client_id,
                &hb.client_host,
                hb.rebalance_timeout_ms,
                now + limits.session_timeout,
            ),
        );
        self.dirty = true;
        Ok((id, true))
    }

    fn new_id(&self, hb: &Heartbeat) -> String {
        if hb.member_id.is_empty() {
            new_member_id()
        } else {
            hb.member_id.clone()
        }
    }

    fn leave(&mut self, hb: &Heartbeat) -> HeartbeatAnswer {
        let answer = HeartbeatAnswer {
            error: ErrorCode::NoError,
            message: None,
            member_id: hb.member_id.clone(),
            member_epoch: hb.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        };
        let id = match hb.instance_id.as_deref() {
            Some(instance) => match self
                .members
                .values()
                .find(|m| m.instance_id.as_deref() == Some(instance))
            {
                Some(m) if m.id != hb.member_id => {
                    return HeartbeatAnswer::error(
                        ErrorCode::FencedInstanceId,
                        format!("Static member {instance} was fenced by another member."),
                        &hb.member_id,
                    )
                }
                Some(m) => m.id.clone(),
                None => {
                    return HeartbeatAnswer::error(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance} is unknown."),
                        &hb.member_id,
                    )
                }
            },
            None if self.members.contains_key(&hb.member_id) => hb.member_id.clone(),
            None => {
                return HeartbeatAnswer::error(
                    ErrorCode::UnknownMemberId,
                    format!("Member {} is not a member of group.", hb.member_id),
                    &hb.member_id,
                )
            }
        };
        if hb.member_epoch == STATIC_LEAVE_EPOCH {
            // Kept with its assignment until its session ends or the instance returns; what it
            // was giving up is released.
            if let Some(m) = self.members.get_mut(&id) {
                m.current.member_epoch = STATIC_LEAVE_EPOCH;
                m.current.pending_revocation.clear();
                m.revocation_deadline = None;
                self.dirty = true;
            }
        } else {
            self.remove(&id);
            self.bump("member left");
        }
        answer
    }

    pub(super) fn remove(&mut self, id: &str) {
        if let Some(m) = self.members.remove(id) {
            if m.classic.is_none() && self.consumer_member_removed.is_none() {
                self.consumer_member_removed = Some(Departure {
                    epoch: self.group_epoch,
                    replaced: false,
                });
            }
        }
        self.target.remove(id);
        self.dirty = true;
    }

    pub(super) fn bump(&mut self, why: &str) {
        self.group_epoch += 1;
        self.dirty = true;
        tracing::debug!(group = %self.id, epoch = self.group_epoch, why, "consumer group epoch bumped");
    }

    /// Bumps the group epoch once if `changed` (members or subscriptions) or the subscribed
    /// topics changed (created, deleted, partitions added), and recomputes the target
    /// assignment when it is behind the group epoch.
    pub(super) fn refresh_target(
        &mut self,
        topics: &dyn Topics,
        changed: bool,
        default_assignor: &'static str,
    ) {
        let mut regexes = RegexCache::default();
        let subscriptions: BTreeMap<String, BTreeSet<String>> = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.subscribed(topics, &mut regexes)))
            .collect();
        let mut metadata = BTreeMap::new();
        let mut ids: HashMap<&str, Uuid> = HashMap::new();
        for name in subscriptions.values().flatten() {
            if let Some((id, partitions)) = topics.lookup(name) {
                metadata.insert(id, partitions);
                ids.insert(name.as_str(), id);
            }
        }
        if metadata != self.subscribed_metadata {
            self.subscribed_metadata = metadata;
            self.bump("subscribed topics changed");
        } else if changed {
            self.bump("members or subscriptions changed");
        }
        if self.assignment_epoch >= self.group_epoch {
            return;
        }
        let specs: BTreeMap<String, MemberSpec> = subscriptions
            .iter()
            .map(|(id, names)| {
                let topics = names
                    .iter()
                    .filter_map(|n| ids.get(n.as_str()).copied())
                    .collect();
                let instance_id = self.members.get(id).and_then(|m| m.instance_id.clone());
                (
                    id.clone(),
                    MemberSpec {
                        topics,
                        instance_id,
                    },
                )
            })
            .collect();
        let assignor = self.current_assignor(default_assignor);
        self.target = assignor::assign(assignor, &specs, &self.subscribed_metadata, &self.target);
        self.assignment_epoch = self.group_epoch;
        self.dirty = true;
        tracing::debug!(group = %self.id, epoch = self.group_epoch, assignor, "consumer group target assignment computed");
    }

    /// The assignor most members name (ties: the name first in order), else `default`.
    pub fn current_assignor(&self, default: &'static str) -> &'static str {
        let mut votes: BTreeMap<&'static str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = m.server_assignor.as_deref().and_then(assignor::configured) {
                *votes.entry(a).or_default() += 1;
            }
        }
        let best = votes.values().copied().max().unwrap_or(0);
        votes
            .into_iter()
            .find(|(_, n)| *n == best && best > 0)
            .map_or(default, |(a, _)| a)
    }

    /// Whether a member other than `id` holds partition `p` of topic `t` (assigned, or still
    /// pending its revocation).
    pub(super) fn held_by_other(&self, id: &str, t: Uuid, p: i32) -> bool {
        self.members.values().any(|m| {
            m.id != id
                && (m.current.assigned.get(&t).is_some_and(|s| s.contains(&p))
                    || m.current
                        .pending_revocation
                        .get(&t)
                        .is_some_and(|s| s.contains(&p)))
        })
    }

    /// Moves member `id` one step towards its target.
    pub(super) fn reconcile(&mut self, id: &str, owned: Option<&Assignment>, now: Instant) {
        let Some(member) = self.members.get(id) else {
            return;
        };
        if member.current.member_epoch == STATIC_LEAVE_EPOCH {
            return;
        }
        let empty = Assignment::new();
        let target = self.target.get(id).unwrap_or(&empty);
        let owned_by_other = |t: Uuid, p: i32| self.held_by_other(id, t, p);
        let next = reconcile::next(
            &member.current,
            target,
            self.assignment_epoch,
            owned,
            &owned_by_other,
        );
        let Some(member) = self.members.get_mut(id) else {
            return;
        };
        if next != member.current {
            if next.state == MemberState::UnrevokedPartitions {
                // Re-armed on every change that leaves the member revoking.
                member.revocation_deadline =
                    Some(now + Duration::from_millis(member.rebalance_timeout_ms.max(0) as u64));
            } else {
                member.revocation_deadline = None;
            }
            tracing::debug!(group = %self.id, member = %id, state = next.state.name(), epoch = next.member_epoch, "consumer group member reconciled");
            member.current = next;
            self.dirty = true;
        }
    }

    /// Fences members whose session ended or who did not revoke within their rebalance
    /// timeout. Returns whether any member was removed.
    pub fn tick(&mut self, now: Instant) -> bool {
        let expired: Vec<(String, &'static str)> = self
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    Some((m.id.clone(), "session timed out"))
                } else if m.revocation_deadline.is_some_and(|d| d <= now) {
                    Some((
                        m.id.clone(),
                        "did not revoke partitions within its rebalance timeout",
                    ))
                } else if m.classic_deadline.is_some_and(|d| d <= now) {
                    Some((
                        m.id.clone(),
                        "classic member did not rejoin or sync within its rebalance timeout",
                    ))
                } else {
                    None
                }
            })
            .collect();
        for (id, why) in &expired {
            tracing::info!(group = %self.id, member = %id, why, "consumer group member fenced");
            self.remove(id);
            self.bump("member fenced");
        }
        !expired.is_empty()
    }

    /// Checks an OffsetCommit (member epoch in the generation field) from member `member_id`.
    /// As in Kafka: a negative epoch commits from outside the group while it has no members;
    /// a member must commit with its current epoch (STALE_MEMBER_EPOCH otherwise) and with
    /// OffsetCommit v9 or later.
    pub fn validate_commit(
        &self,
        member_id: &str,
        epoch: i32,
        api_version: i16,
    ) -> Result<(), ErrorCode> {
        if epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if member.classic.is_some() {
            // A classic member commits with its generation, which is its member epoch.
            return if epoch == member.current.member_epoch {
                Ok(())
            } else {
                Err(ErrorCode::IllegalGeneration)
            };
        }
        if api_version < 9 {
            return Err(ErrorCode::UnsupportedVersion);
        }
        if epoch != member.current.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Checks an OffsetFetch naming a member (v9+): an unknown member or another epoch fails.
    pub fn validate_fetch(&self, member_id: &str, epoch: i32) -> Result<(), ErrorCode> {
        let member = self
            .members
            .get(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if epoch != member.current.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Whether [`ConsumerGroup::tick`] has anything to time.
    pub fn needs_timer(&self) -> bool {
        !self.members.is_empty()
    }

    /// Restores a member from storage (its session starts now).
    pub fn restore_member(&mut self, mut member: Member, now: Instant, session: Duration) {
        member.session_deadline = now + member.session(session);
        member.revocation_deadline = (member.current.state == MemberState::UnrevokedPartitions)
            .then(|| now + Duration::from_millis(member.rebalance_timeout_ms.max(0) as u64));
        self.members.insert(member.id.clone(), member);
    }
}

/// A member as storage restores it.
#[allow(clippy::too_many_arguments)]
pub fn stored_member(
    id: String,
    instance_id: Option<String>,
    rack_id: Option<String>,
    client_id: String,
    client_host: String,
    topic_names: Vec<String>,
    topic_regex: Option<String>,
    server_assignor: Option<String>,
    rebalance_timeout_ms: i32,
    current: Reconciled,
    classic: Option<ClassicProtocol>,
) -> Member {
    let now = Instant::now();
    Member {
        id,
        instance_id,
        rack_id,
        client_id,
        client_host,
        topic_names,
        topic_regex,
        server_assignor,
        rebalance_timeout_ms,
        current,
        classic,
        session_deadline: now,
        revocation_deadline: None,
        classic_deadline: None,
    }
}

#[cfg(test)]
mod tests;
