//! Requests to the group coordinator: find it, join, sync, heartbeat, leave, commit and fetch
//! offsets. Retriable coordinator errors make the caller rediscover the coordinator.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::{Cluster, CoordinatorType};
use crate::net::Connection;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Talks to one group's coordinator.
#[derive(Debug)]
pub struct GroupClient {
    cluster: Arc<Cluster>,
    /// Group id.
    pub group_id: String,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Current member id ("" before the first join).
    pub member_id: String,
    /// Current generation (-1 outside a group generation).
    pub generation: i32,
    coordinator: Option<i32>,
    /// A coordinator the next FindCoordinator is not sent to: one whose "unknown member"
    /// answer is being checked with another broker, or one just given up on.
    doubted: Option<i32>,
    /// The coordinator's node id (-1: unknown), readable without this client's lock, so a
    /// member can close a hung coordinator's connection while a request holds the lock.
    seen: Arc<AtomicI32>,
    /// The last offset committed (or read back from the group) per partition (statistics).
    committed: CommittedLog,
}

/// The last offset committed or fetched per partition, shared with the statistics.
pub type CommittedLog = Arc<std::sync::Mutex<HashMap<TopicPartition, i64>>>;

impl GroupClient {
    /// A client for `group_id`.
    pub fn new(cluster: Arc<Cluster>, group_id: String, instance_id: Option<String>) -> Self {
        GroupClient {
            cluster,
            group_id,
            instance_id,
            member_id: String::new(),
            generation: -1,
            coordinator: None,
            doubted: None,
            seen: Arc::new(AtomicI32::new(-1)),
            committed: CommittedLog::default(),
        }
    }

    /// The log of committed offsets this client keeps up to date.
    pub fn committed_log(&self) -> CommittedLog {
        self.committed.clone()
    }

    fn log_committed(&self, tp: &TopicPartition, offset: i64) {
        if let Ok(mut log) = self.committed.lock() {
            log.insert(tp.clone(), offset);
        }
    }

    /// The heartbeats of the current generation, sent without this client's lock (see
    /// [`Heartbeater`]). The coordinator it shares with this client is forgotten by either.
    pub fn heartbeater(&self) -> Heartbeater {
        Heartbeater {
            cluster: self.cluster.clone(),
            group_id: self.group_id.clone(),
            seen: self.seen.clone(),
            given_up: AtomicI32::new(-1),
            request: self.heartbeat_request(),
        }
    }

    /// Forgets the coordinator (after NOT_COORDINATOR and similar errors, or when it left a
    /// session unanswered). The next lookup asks another broker: a frozen coordinator would
    /// leave FindCoordinator unanswered for `request.timeout.ms` too, and the member's session
    /// on the group's new coordinator would run out meanwhile.
    pub fn forget_coordinator(&mut self) {
        if let Some(node) = self.coordinator.take() {
            forget(&self.seen, node);
            self.doubted = Some(node);
        }
    }

    /// After UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: looks the coordinator up again, asking
    /// another broker. A broker that was frozen (or cut off) past the sessions still holds
    /// the group for a moment after it wakes and expires every member, though the group has
    /// moved to a new coordinator that still knows them; such an answer is not the group's.
    /// Returns whether the coordinator changed (then the request is worth sending again).
    async fn second_opinion(&mut self) -> bool {
        let Some(answered) = self.coordinator else {
            return false;
        };
        self.forget_coordinator();
        match self.connection().await {
            Ok(_) => self.coordinator.is_some_and(|c| c != answered),
            Err(_) => false,
        }
    }

    /// Whether an error means the member is not (or no longer) in the coordinator's group.
    pub fn is_membership_error(code: ErrorCode) -> bool {
        matches!(
            code,
            ErrorCode::UnknownMemberId | ErrorCode::IllegalGeneration
        )
    }

    /// Whether an error means the coordinator moved or is loading.
    pub fn is_coordinator_error(code: ErrorCode) -> bool {
        matches!(
            code,
            ErrorCode::NotCoordinator
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::CoordinatorLoadInProgress
        )
    }

    async fn connection(&mut self) -> Result<Arc<Connection>> {
        let seen = self.seen.load(Ordering::Acquire);
        if self.coordinator.is_some_and(|node| seen != node) {
            // Given up on without this client's lock (see `Heartbeater::give_up`): a request
            // that held the lock meanwhile must not go back to the same coordinator.
            self.forget_coordinator();
        }
        if self.coordinator.is_none() && seen >= 0 && Some(seen) != self.doubted {
            // Found meanwhile by the heartbeats (see `Heartbeater::beat`).
            self.coordinator = Some(seen);
        }
        if let Some(node) = self.coordinator {
            match self.cluster.coordinator_connection(node).await {
                Ok(c) => return Ok(c),
                Err(e) => {
                    self.forget_coordinator();
                    return Err(e);
                }
            }
        }
        let coordinator = find_coordinator(&self.cluster, &self.group_id, self.doubted).await?;
        self.doubted = None;
        self.coordinator = Some(coordinator);
        self.seen.store(coordinator, Ordering::Release);
        self.cluster.coordinator_connection(coordinator).await
    }

    /// JoinGroup with our protocols; returns the raw response (errors are the caller's to
    /// handle: MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS…).
    pub async fn join(
        &mut self,
        protocols: Vec<(String, Bytes)>,
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
    ) -> Result<JoinGroupResponse> {
        let conn = self.connection().await?;
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_session_timeout_ms(session_timeout_ms)
            .with_rebalance_timeout_ms(rebalance_timeout_ms)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id.as_deref().map(sb))
            .with_protocol_type(sb("consumer"))
            .with_protocols(
                protocols
                    .into_iter()
                    .map(|(n, m)| {
                        JoinGroupRequestProtocol::default()
                            .with_name(sb(&n))
                            .with_metadata(m)
                    })
                    .collect(),
            );
        // JoinGroup may wait for the whole rebalance: allow the rebalance timeout plus slack.
        let wait = std::time::Duration::from_millis(rebalance_timeout_ms.max(0) as u64 + 5000)
            .max(self.cluster.config().request_timeout);
        let response = conn.send_timeout(&request, wait).await?;
        if Self::is_coordinator_error(ErrorCode::from_code(response.error_code)) {
            self.forget_coordinator();
        }
        Ok(response)
    }

    /// SyncGroup; the leader passes every member's assignment. Returns the member's assignment.
    pub async fn sync(
        &mut self,
        protocol: &str,
        assignments: Vec<(String, Bytes)>,
    ) -> Result<Bytes> {
        let conn = self.connection().await?;
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id.as_deref().map(sb))
            .with_protocol_type(Some(sb("consumer")))
            .with_protocol_name(Some(sb(protocol)))
            .with_assignments(
                assignments
                    .into_iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(sb(&m))
                            .with_assignment(a)
                    })
                    .collect(),
            );
        let response = conn.send(&request).await?;
        let code = ErrorCode::from_code(response.error_code);
        if Self::is_coordinator_error(code) {
            self.forget_coordinator();
        }
        code.into_result()?;
        Ok(response.assignment)
    }

    fn heartbeat_request(&self) -> HeartbeatRequest {
        HeartbeatRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id.as_deref().map(sb))
    }

    /// Heartbeat, looking the coordinator up first when it is not known, and asking another
    /// broker when the answer says this member is not in the group (see `second_opinion`).
    pub async fn heartbeat(&mut self) -> Result<()> {
        let request = self.heartbeat_request();
        let mut code =
            ErrorCode::from_code(self.connection().await?.send(&request).await?.error_code);
        if Self::is_membership_error(code) && self.second_opinion().await {
            code = ErrorCode::from_code(self.connection().await?.send(&request).await?.error_code);
        }
        if Self::is_coordinator_error(code) {
            self.forget_coordinator();
        }
        code.into_result().map_err(Error::Kafka)
    }

    /// LeaveGroup for this member (static members leave only by their session expiring, as in
    /// Kafka, so a restart within the session timeout keeps the assignment).
    pub async fn leave(&mut self) -> Result<()> {
        if self.member_id.is_empty() || self.instance_id.is_some() {
            return Ok(());
        }
        let conn = self.connection().await?;
        // v3+ names leaving members in `members`; earlier versions carry one `member_id`
        // (setting the other field fails to encode).
        let version = conn
            .versions()
            .version(kafka_protocol::messages::ApiKey::LeaveGroup)?;
        let request = LeaveGroupRequest::default().with_group_id(GroupId(sb(&self.group_id)));
        let request = if version >= 3 {
            request.with_members(vec![
                MemberIdentity::default().with_member_id(sb(&self.member_id))
            ])
        } else {
            request.with_member_id(sb(&self.member_id))
        };
        let response = conn.send_versioned(&request, version).await?;
        self.member_id.clear();
        self.generation = -1;
        ErrorCode::from_code(response.error_code)
            .into_result()
            .map_err(Error::Kafka)
    }

    /// OffsetCommit of `(partition, offset, metadata)`; in a group generation the member id and
    /// generation fence stale members, outside one (`generation` -1) it is a standalone commit.
    pub async fn commit(
        &mut self,
        offsets: &[(TopicPartition, i64, Option<String>)],
    ) -> Result<Vec<(TopicPartition, ErrorCode)>> {
        let out = self.commit_once(offsets).await?;
        let in_doubt =
            self.generation >= 0 && out.iter().any(|(_, c)| Self::is_membership_error(*c));
        if in_doubt && self.second_opinion().await {
            return self.commit_once(offsets).await;
        }
        Ok(out)
    }

    async fn commit_once(
        &mut self,
        offsets: &[(TopicPartition, i64, Option<String>)],
    ) -> Result<Vec<(TopicPartition, ErrorCode)>> {
        let conn = self.connection().await?;
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (tp, offset, metadata) in offsets {
            let p = OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(sb(metadata.as_deref().unwrap_or(""))));
            match topics
                .iter_mut()
                .find(|t| t.name.as_str() == tp.topic.as_ref())
            {
                Some(t) => t.partitions.push(p),
                None => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partitions(vec![p]),
                ),
            }
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_generation_id_or_member_epoch(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id.as_deref().map(sb))
            .with_retention_time_ms(-1)
            .with_topics(topics);
        let response = conn.send(&request).await?;
        let mut out = Vec::new();
        for t in response.topics {
            for p in t.partitions {
                let code = ErrorCode::from_code(p.error_code);
                if Self::is_coordinator_error(code) {
                    self.forget_coordinator();
                }
                out.push((
                    TopicPartition {
                        topic: t.name.to_string().into(),
                        partition: p.partition_index,
                    },
                    code,
                ));
            }
        }
        for (tp, code) in &out {
            if *code == ErrorCode::NoError {
                if let Some((_, offset, _)) = offsets.iter().find(|(t, _, _)| t == tp) {
                    self.log_committed(tp, *offset);
                }
            }
        }
        Ok(out)
    }

    /// OffsetFetch for `partitions`: `None` where nothing is committed. Asks for stable offsets
    /// (KIP-447, v7+): while a transaction that commits offsets for these partitions is open,
    /// the coordinator answers UNSTABLE_OFFSET_COMMIT and this retries (bounded by
    /// `default.api.timeout.ms`), so a consumer never starts from an offset an aborting
    /// transaction would take back.
    pub async fn committed(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<HashMap<TopicPartition, Option<(i64, String)>>> {
        let deadline = tokio::time::Instant::now() + self.cluster.config().default_api_timeout;
        let mut retry = crate::cluster::backoff::Retry::default();
        loop {
            match self.committed_once(partitions).await {
                Err(Error::Kafka(ErrorCode::UnstableOffsetCommit))
                    if tokio::time::Instant::now() < deadline =>
                {
                    let wait = retry.failed(self.cluster.config());
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    tokio::time::sleep(wait.min(left)).await;
                }
                other => return other,
            }
        }
    }

    async fn committed_once(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<HashMap<TopicPartition, Option<(i64, String)>>> {
        let conn = self.connection().await?;
        let mut topics: Vec<OffsetFetchRequestTopic> = Vec::new();
        for tp in partitions {
            match topics
                .iter_mut()
                .find(|t| t.name.as_str() == tp.topic.as_ref())
            {
                Some(t) => t.partition_indexes.push(tp.partition),
                None => topics.push(
                    OffsetFetchRequestTopic::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partition_indexes(vec![tp.partition]),
                ),
            }
        }
        // Versions 0-7 carry one group; we stay there so any broker answers the same shape.
        let version = conn
            .versions()
            .version(kafka_protocol::messages::ApiKey::OffsetFetch)?
            .min(7);
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_topics(Some(topics))
            .with_require_stable(version >= 7);
        let response = conn.send_versioned(&request, version).await?;
        let top = ErrorCode::from_code(response.error_code);
        if Self::is_coordinator_error(top) {
            self.forget_coordinator();
        }
        top.into_result()?;
        let mut out = HashMap::new();
        for t in response.topics {
            for p in t.partitions {
                ErrorCode::from_code(p.error_code).into_result()?;
                let tp = TopicPartition {
                    topic: t.name.to_string().into(),
                    partition: p.partition_index,
                };
                let meta = p.metadata.map(|m| m.to_string()).unwrap_or_default();
                if p.committed_offset >= 0 {
                    self.log_committed(&tp, p.committed_offset);
                }
                out.insert(
                    tp,
                    (p.committed_offset >= 0).then_some((p.committed_offset, meta)),
                );
            }
        }
        Ok(out)
    }
}

/// One ConsumerGroupHeartbeat's fields (KIP-848); `None` / -1 mean "unchanged since the last
/// heartbeat", as on the wire.
#[derive(Debug, Clone, Default)]
pub struct ConsumerHeartbeat {
    /// Member epoch (0 joins, -1 leaves, -2 leaves temporarily).
    pub member_epoch: i32,
    /// Static membership id.
    pub instance_id: Option<String>,
    /// Rack.
    pub rack_id: Option<String>,
    /// Rebalance timeout (`max.poll.interval.ms`), -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names.
    pub topic_names: Option<Vec<String>>,
    /// Subscribed regular expression ("" for none; v1+).
    pub topic_regex: Option<String>,
    /// Preferred server assignor.
    pub server_assignor: Option<String>,
    /// Partitions owned, by topic id.
    pub owned:
        Option<Vec<kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions>>,
}

impl ConsumerHeartbeat {
    /// A request with every field unchanged (a leave sets its epoch).
    pub fn leaving() -> Self {
        ConsumerHeartbeat {
            rebalance_timeout_ms: -1,
            ..ConsumerHeartbeat::default()
        }
    }
}

impl GroupClient {
    /// One ConsumerGroupHeartbeat (KIP-848) for this member. The coordinator is looked up when
    /// unknown and forgotten after a coordinator error (the caller resends in full).
    pub async fn consumer_heartbeat(
        &mut self,
        hb: &ConsumerHeartbeat,
    ) -> Result<kafka_protocol::messages::ConsumerGroupHeartbeatResponse> {
        use kafka_protocol::messages::{ApiKey, ConsumerGroupHeartbeatRequest};
        let conn = self.connection().await?;
        let version = conn.versions().version(ApiKey::ConsumerGroupHeartbeat)?;
        let regex = match (&hb.topic_regex, version) {
            (Some(re), 0) if !re.is_empty() => {
                return Err(Error::config(
                    "subscribe",
                    "a regular-expression subscription on the consumer group protocol needs                      ConsumerGroupHeartbeat v1 (Kafka 4.0+)",
                ))
            }
            (_, 0) => None,
            (re, _) => re.clone(),
        };
        let request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(sb(&self.group_id)))
            .with_member_id(sb(&self.member_id))
            .with_member_epoch(hb.member_epoch)
            .with_instance_id(hb.instance_id.as_deref().map(sb))
            .with_rack_id(hb.rack_id.as_deref().map(sb))
            .with_rebalance_timeout_ms(hb.rebalance_timeout_ms)
            .with_subscribed_topic_names(
                hb.topic_names
                    .as_ref()
                    .map(|ns| ns.iter().map(|n| TopicName(sb(n))).collect()),
            )
            .with_subscribed_topic_regex(regex.as_deref().map(sb))
            .with_server_assignor(hb.server_assignor.as_deref().map(sb))
            .with_topic_partitions(hb.owned.clone());
        let response = conn.send_versioned(&request, version).await?;
        if Self::is_coordinator_error(ErrorCode::from_code(response.error_code)) {
            self.forget_coordinator();
        }
        Ok(response)
    }
}

/// FindCoordinator for `group_id`, asked of another broker than `exclude`: a coordinator
/// whose answer is in doubt (see `GroupClient::second_opinion`) or one given up on.
async fn find_coordinator(cluster: &Cluster, group_id: &str, exclude: Option<i32>) -> Result<i32> {
    cluster
        .find_coordinator_asking_other_than(CoordinatorType::Group, group_id, exclude)
        .await
}

/// Forgets `node` as the coordinator in `seen` unless another was found meanwhile.
fn forget(seen: &AtomicI32, node: i32) {
    let _ = seen.compare_exchange(node, -1, Ordering::AcqRel, Ordering::Acquire);
}

/// A member's heartbeats for one generation, sent without the group client's lock.
///
/// The group client serialises its requests, and one of them (a commit, a coordinator lookup)
/// may wait on an unresponsive broker for `request.timeout.ms`, longer than a session. A
/// heartbeat queued behind it would let the member's session run out on a coordinator that
/// answers perfectly well, so heartbeats find the coordinator and reach it on their own, and
/// only take the lock to double-check an UNKNOWN_MEMBER_ID answer (see
/// [`GroupClient::heartbeat`]). The coordinator found or given up on is shared with the group
/// client.
#[derive(Debug)]
pub struct Heartbeater {
    cluster: Arc<Cluster>,
    group_id: String,
    seen: Arc<AtomicI32>,
    /// The coordinator last given up on (-1: none): the next lookup asks another broker.
    given_up: AtomicI32,
    request: HeartbeatRequest,
}

impl Heartbeater {
    /// One heartbeat to the coordinator, looked up first when none is known.
    pub async fn beat(&self) -> Result<()> {
        let mut node = self.seen.load(Ordering::Acquire);
        if node < 0 {
            let exclude = Some(self.given_up.load(Ordering::Acquire)).filter(|n| *n >= 0);
            node = find_coordinator(&self.cluster, &self.group_id, exclude).await?;
            self.given_up.store(-1, Ordering::Release);
            // Whoever found one first is followed.
            if let Err(found) =
                self.seen
                    .compare_exchange(-1, node, Ordering::AcqRel, Ordering::Acquire)
            {
                node = found;
            }
        }
        let conn = match self.cluster.coordinator_connection(node).await {
            Ok(c) => c,
            Err(e) => {
                forget(&self.seen, node);
                return Err(e);
            }
        };
        let code = ErrorCode::from_code(conn.send(&self.request).await?.error_code);
        if GroupClient::is_coordinator_error(code) {
            forget(&self.seen, node);
        }
        code.into_result().map_err(Error::Kafka)
    }

    /// Gives up on the coordinator last found, without the group client's lock, which a
    /// request hung on that coordinator may hold: the next request of any caller looks the
    /// coordinator up again at another broker. Returns the node given up on, if there was one.
    pub fn give_up(&self) -> Option<i32> {
        let node = self.seen.swap(-1, Ordering::AcqRel);
        if node >= 0 {
            self.given_up.store(node, Ordering::Release);
        }
        (node >= 0).then_some(node)
    }
}
