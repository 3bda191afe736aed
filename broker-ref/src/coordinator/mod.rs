//! The group coordinator (classic protocol): groups, membership, rebalances and committed
//! offsets, persisted in the compacted internal topic `__consumer_offsets`.
//!
//! Every group lives in `__consumer_offsets` partition `abs(hash(group)) % offsets.topic.num.partitions`
//! (Kafka's placement). Offset commits and group metadata (after each completed rebalance) are
//! appended there in Kafka's record layouts and replayed at startup, so committed offsets and
//! static members survive a restart. State transitions are in [`group`]; this module owns the
//! groups, the waiting JoinGroup/SyncGroup requests, the timers and the persistence.

pub mod consumer;
pub mod group;
pub mod migration;
pub mod producer_ids;
pub mod storage;
pub mod txn;
mod txn_offsets;
mod txn_replay;
mod types;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::records::{BatchBuilder, Compression, RecordBatches};
use odradek::ErrorCode;

use crate::clock::now_ms;
use crate::partition::TopicRegistry;
use crate::{Error, Result};
use group::{Group, GroupState, JoinAnswer, JoinParams, Pending, SyncAnswer};
use storage::{CommittedOffset, CoordinatorRecord};
pub use types::{
    OffsetEntry, OffsetToCommit, PartitionResult, TopicPartitionKey, TxnCommit, OFFSETS_TOPIC,
};

/// What a coordinator needs from the rest of the broker to keep its state in an internal
/// topic: the topic registry (where that topic lives; its partitions wake the fetches waiting
/// on them). Coordinators get this at construction instead of the whole broker.
#[derive(Debug, Clone)]
pub struct CoordinatorLog {
    /// Hosted topics, the coordinators' internal topics among them.
    pub topics: Arc<TopicRegistry>,
}

/// The group coordinator.
#[derive(Debug)]
pub struct GroupCoordinator {
    log: CoordinatorLog,
    groups: Mutex<HashMap<String, Group>>,
    initial_delay: Duration,
    min_session: Duration,
    max_session: Duration,
    max_metadata: usize,
    /// `group.max.size`: members a classic group admits.
    max_group_size: usize,
    /// `group.consumer.max.size`: members a consumer group admits.
    max_consumer_group_size: usize,
    /// `group.consumer.session.timeout.ms`: the session replayed consumer-group members get.
    consumer_session: Duration,
    /// `group.consumer.assignors`, as assignor names (the first is the default).
    consumer_assignors: Vec<&'static str>,
    /// `consumer` is in `group.coordinator.rebalance.protocols`.
    consumer_protocol: bool,
    /// `group.consumer.migration.policy`: which conversions of groups in use are allowed.
    migration: types::MigrationPolicy,
    offsets_partitions: i32,
    retention_ms: i64,
    /// Ids of the groups [`GroupCoordinator::tick`] visits (locked after `groups`).
    timed: Mutex<HashSet<String>>,
    /// `__consumer_offsets`, created on first use.
    offsets_topic: InternalTopic,
    /// Cluster mode: the `__consumer_offsets` partitions this broker leads and has loaded
    /// (it coordinates exactly their groups); `None` on a single node, which coordinates all.
    owned: Mutex<Option<HashSet<i32>>>,
}

/// A compacted internal topic a coordinator keeps its state in, created on first use.
#[derive(Debug)]
pub(crate) struct InternalTopic {
    name: &'static str,
    partitions: i32,
    overrides: BTreeMap<String, String>,
    /// Serialises the creation.
    creating: Mutex<()>,
}

/// Calls `each` with every batch of a coordinator's `partition` in offset order, up to its
/// high watermark, or its log end with `to_log_end` (a new leader loading what it has).
pub(crate) fn read_batches(
    partition: &crate::partition::Partition,
    to_log_end: bool,
    mut each: impl FnMut(&odradek::records::RecordBatch) -> Result<()>,
) -> Result<()> {
    let mut offset = partition.log_start_offset();
    let end = if to_log_end {
        partition.follower_position()?.0
    } else {
        partition.high_watermark()
    };
    while offset < end {
        let data = if to_log_end {
            partition.read_to_log_end(offset, 8 << 20)?
        } else {
            partition.read(offset, 8 << 20, true, false)?.records
        };
        let mut progressed = false;
        for batch in RecordBatches::new(data) {
            let batch = batch?;
            each(&batch)?;
            progressed |= batch.next_offset() > offset;
            offset = offset.max(batch.next_offset());
        }
        if !progressed {
            break;
        }
    }
    Ok(())
}

impl InternalTopic {
    /// `name` with `partitions` partitions, compacted, segments of `segment_bytes`, batches
    /// kept as the coordinator wrote them.
    pub(crate) fn new(name: &'static str, partitions: i32, segment_bytes: &str) -> Self {
        let mut overrides = BTreeMap::new();
        overrides.insert("cleanup.policy".to_string(), "compact".to_string());
        overrides.insert("segment.bytes".to_string(), segment_bytes.to_string());
        overrides.insert("compression.type".to_string(), "producer".to_string());
        InternalTopic {
            name,
            partitions,
            overrides,
            creating: Mutex::new(()),
        }
    }

    /// (name, partitions, config overrides), for the cluster layer to have the controller
    /// create the topic.
    pub(crate) fn spec(&self) -> (&'static str, i32, BTreeMap<String, String>) {
        (self.name, self.partitions, self.overrides.clone())
    }

    /// Creates the topic if it does not exist yet.
    pub(crate) fn ensure(&self, topics: &TopicRegistry) -> Result<()> {
        if topics.get(self.name).is_some() {
            return Ok(());
        }
        let _guard = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        if topics.get(self.name).is_none() {
            topics.create(self.name, self.partitions, self.overrides.clone(), false)?;
        }
        Ok(())
    }
}

impl GroupCoordinator {
    /// Creates the coordinator and replays `__consumer_offsets` if it exists. The topic itself
    /// is created on first use ([`GroupCoordinator::ensure_topic`]), as Kafka does: a broker
    /// that never sees a group starts without writing its 50 partitions.
    pub fn open(
        broker_config: &crate::config::BrokerConfig,
        log: CoordinatorLog,
    ) -> Result<GroupCoordinator> {
        let partitions = broker_config.int("offsets.topic.num.partitions").max(1);
        let mut consumer_assignors = Vec::new();
        for entry in broker_config.get("group.consumer.assignors").split(',') {
            let name = consumer::assignor::configured(entry).ok_or_else(|| {
                Error::config(
                    "group.consumer.assignors",
                    format!(
                        "assignor `{}` is not available: odradek-broker has uniform and range (custom assignor classes cannot run)",
                        entry.trim()
                    ),
                )
            })?;
            if !consumer_assignors.contains(&name) {
                consumer_assignors.push(name);
            }
        }
        let consumer_protocol = broker_config
            .get("group.coordinator.rebalance.protocols")
            .split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("consumer"));
        let policy = broker_config.get("group.consumer.migration.policy");
        let migration = types::MigrationPolicy::parse(policy).ok_or_else(|| {
            Error::config(
                "group.consumer.migration.policy",
                format!("`{policy}` is not one of disabled, upgrade, downgrade, bidirectional"),
            )
        })?;
        let coordinator = GroupCoordinator {
            migration,
            log,
            groups: Mutex::new(HashMap::new()),
            timed: Mutex::new(HashSet::new()),
            initial_delay: Duration::from_millis(
                broker_config.int("group.initial.rebalance.delay.ms").max(0) as u64,
            ),
            min_session: Duration::from_millis(
                broker_config.int("group.min.session.timeout.ms").max(0) as u64,
            ),
            max_session: Duration::from_millis(
                broker_config.int("group.max.session.timeout.ms").max(0) as u64,
            ),
            max_metadata: broker_config.int("offset.metadata.max.bytes").max(0) as usize,
            max_group_size: broker_config.int("group.max.size").max(1) as usize,
            max_consumer_group_size: broker_config.int("group.consumer.max.size").max(1) as usize,
            consumer_assignors,
            consumer_protocol,
            consumer_session: Duration::from_millis(
                broker_config
                    .int("group.consumer.session.timeout.ms")
                    .max(0) as u64,
            ),
            offsets_partitions: partitions,
            retention_ms: i64::from(broker_config.int("offsets.retention.minutes"))
                .saturating_mul(60_000),
            offsets_topic: InternalTopic::new(
                OFFSETS_TOPIC,
                partitions,
                broker_config.get("offsets.topic.segment.bytes"),
            ),
            owned: Mutex::new(None),
        };
        coordinator.replay()?;
        {
            // Replayed groups with members time their sessions from now on.
            let groups = coordinator.lock();
            coordinator.timed().extend(
                groups
                    .values()
                    .filter(|g| g.needs_timer())
                    .map(|g| g.id.clone()),
            );
        }
        Ok(coordinator)
    }

    /// Creates `__consumer_offsets` if it does not exist yet (FindCoordinator for a group,
    /// AddOffsetsToTxn and every write call this first). Failing, the caller answers
    /// COORDINATOR_NOT_AVAILABLE and the client retries.
    pub fn ensure_topic(&self) -> Result<()> {
        let cluster = self
            .owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if cluster {
            // The controller creates it; this broker hosts it once its metadata says so.
            return match self.log.topics.get(OFFSETS_TOPIC) {
                Some(_) => Ok(()),
                None => Err(Error::kafka(
                    ErrorCode::CoordinatorNotAvailable,
                    "the offsets topic is not created yet",
                )),
            };
        }
        self.offsets_topic.ensure(&self.log.topics)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The timed group ids (take after [`GroupCoordinator::lock`] when both are needed).
    fn timed(&self) -> MutexGuard<'_, HashSet<String>> {
        self.timed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn replay(&self) -> Result<()> {
        let Some(topic) = self.log.topics.get(OFFSETS_TOPIC) else {
            return Ok(());
        };
        self.replay_partitions(&topic.partitions(), false)
    }

    /// Cluster mode: this broker coordinates only the groups of the `__consumer_offsets`
    /// partitions it leads ([`GroupCoordinator::load_partition`]); nothing is loaded yet.
    pub fn own_partitions_only(&self) {
        *self.owned.lock().unwrap_or_else(|e| e.into_inner()) = Some(HashSet::new());
        self.lock().clear();
        self.timed().clear();
    }

    /// Whether this broker coordinates `group` now.
    pub fn coordinates(&self, group: &str) -> bool {
        let p = self.offsets_partition(group);
        self.owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_none_or(|owned| owned.contains(&p))
    }

    /// The spec of `__consumer_offsets` (name, partitions, config overrides), for the cluster
    /// layer to have the controller create it.
    pub fn offsets_topic_spec(&self) -> (&'static str, i32, BTreeMap<String, String>) {
        self.offsets_topic.spec()
    }

    /// This broker became the leader of `__consumer_offsets` partition `index`: its groups are
    /// loaded from the whole log (a new leader's log holds everything committed) and
    /// coordinated from now on.
    pub fn load_partition(&self, index: i32) -> Result<()> {
        let Some(partition) = self
            .log
            .topics
            .get(OFFSETS_TOPIC)
            .and_then(|t| t.partition(index))
        else {
            return Ok(());
        };
        self.drop_groups_of(index);
        self.replay_partitions(&[partition], true)?;
        if let Some(owned) = self
            .owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            owned.insert(index);
        }
        tracing::info!(
            partition = index,
            "group coordinator took over the partition's groups"
        );
        Ok(())
    }

    /// This broker no longer leads `__consumer_offsets` partition `index`: its groups go
    /// (requests for them are answered NOT_COORDINATOR; waiting joins and syncs end).
    pub fn unload_partition(&self, index: i32) {
        let was = self
            .owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .is_some_and(|owned| owned.remove(&index));
        if was {
            self.drop_groups_of(index);
            tracing::info!(
                partition = index,
                "group coordinator gave up the partition's groups"
            );
        }
    }

    fn drop_groups_of(&self, index: i32) {
        let mut groups = self.lock();
        let gone: Vec<String> = groups
            .keys()
            .filter(|g| self.offsets_partition(g) == index)
            .cloned()
            .collect();
        let mut timed = self.timed();
        for g in gone {
            groups.remove(&g);
            timed.remove(&g);
        }
    }

    /// Replays `partitions` of `__consumer_offsets` into the group map, up to each one's high
    /// watermark, or its log end with `to_log_end` (a new leader).
    fn replay_partitions(
        &self,
        partitions: &[std::sync::Arc<crate::partition::Partition>],
        to_log_end: bool,
    ) -> Result<()> {
        let mut offsets: HashMap<String, HashMap<(String, i32), CommittedOffset>> = HashMap::new();
        let mut metadata: HashMap<String, Option<storage::StoredGroup>> = HashMap::new();
        let mut consumer: HashMap<String, consumer::storage::Replayed> = HashMap::new();
        let mut pending = txn_replay::ReplayPending::default();
        for partition in partitions {
            read_batches(partition, to_log_end, |batch| {
                if batch.is_control() {
                    pending.on_marker(partition.index(), batch, &mut offsets);
                } else {
                    let txn_pid = (batch.is_transactional() && batch.producer_id() >= 0)
                        .then(|| batch.producer_id());
                    for r in batch.records()? {
                        let r = r?;
                        let Some(key) = r.key.as_ref() else { continue };
                        match storage::decode(key, r.value.as_ref()) {
                            Some(CoordinatorRecord::Offset {
                                group,
                                topic,
                                partition: p,
                                value,
                            }) => match (txn_pid, value) {
                                (Some(pid), Some(v)) => {
                                    pending.add(partition.index(), pid, group, (topic, p), v)
                                }
                                (Some(_), None) => {}
                                (None, value) => {
                                    let g = offsets.entry(group).or_default();
                                    match value {
                                        Some(v) => g.insert((topic, p), v),
                                        None => g.remove(&(topic, p)),
                                    };
                                }
                            },
                            Some(CoordinatorRecord::Group { group, value }) => {
                                metadata.insert(group, value);
                            }
                            None => {
                                if let Some((group, record)) =
                                    consumer::storage::decode_record(key, r.value.as_ref())
                                {
                                    consumer.entry(group).or_default().apply(record);
                                }
                            }
                        }
                    }
                }
                Ok(())
            })?;
        }
        let mut open_txns = pending.into_open();
        let now = Instant::now();
        let now_ms = now_ms();
        let mut groups = self.lock();
        let topics = consumer::topics::RegistryTopics(&self.log.topics);
        let mut consumer: HashMap<String, consumer::group::ConsumerGroup> = consumer
            .into_iter()
            .filter_map(|(name, r)| {
                use consumer::group::Topics;
                let g =
                    r.into_group(&name, now, self.consumer_session, &|id| topics.name_of(id))?;
                Some((name, g))
            })
            .collect();
        let names: std::collections::HashSet<String> = offsets
            .keys()
            .chain(metadata.keys())
            .chain(open_txns.keys())
            .chain(consumer.keys())
            .cloned()
            .collect();
        for name in names {
            let offs = offsets.remove(&name).unwrap_or_default();
            let txn = open_txns.remove(&name).unwrap_or_default();
            let modern = consumer.remove(&name);
            let mut group = match metadata.remove(&name).flatten() {
                Some(stored) if modern.is_none() => {
                    Group::restore(&name, stored, offs, now, now_ms)
                }
                None if offs.is_empty() && txn.is_empty() && modern.is_none() => continue,
                // A consumer group (a classic record of the same id is older: the group was
                // converted), or offsets only.
                _ => {
                    let mut g = Group::new(&name, now_ms);
                    g.offsets = offs;
                    g
                }
            };
            group.pending_txn = txn;
            group.consumer = modern;
            groups.insert(name, group);
        }
        tracing::info!(groups = groups.len(), "group coordinator loaded");
        Ok(())
    }

    /// Whether this broker coordinates `group` (always, on a single node).
    pub fn offsets_partition(&self, group: &str) -> i32 {
        storage::partition_for_group(group, self.offsets_partitions)
    }

    fn append(&self, group: &str, records: Vec<(Bytes, Option<Bytes>)>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.ensure_topic()?;
        let topic = self.log.topics.get(OFFSETS_TOPIC).ok_or_else(|| {
            Error::kafka(ErrorCode::CoordinatorNotAvailable, "offsets topic missing")
        })?;
        let partition = topic
            .partition(self.offsets_partition(group))
            .ok_or_else(|| {
                Error::kafka(
                    ErrorCode::CoordinatorNotAvailable,
                    "offsets partition missing",
                )
            })?;
        let now = now_ms();
        let mut b = BatchBuilder::new(Compression::None);
        for (k, v) in &records {
            b.append(now, Some(k), v.as_deref(), &[])?;
        }
        partition.append_record_set(b.build()?, now).map_err(|e| {
            Error::kafka(
                ErrorCode::CoordinatorNotAvailable,
                format!("cannot persist group state: {e}"),
            )
        })?;
        Ok(())
    }

    /// Whether `topic` has partition `partition` (an offset commit for anything else fails).
    fn partition_exists(&self, topic: &str, partition: i32) -> bool {
        self.log
            .topics
            .get(topic)
            .is_some_and(|t| t.partition(partition).is_some())
    }

    fn persist_if_dirty(&self, group: &mut Group) {
        if group.take_dirty() {
            let stored = group.stored(now_ms());
            let rec = storage::group_record(&group.id, Some(&stored));
            if let Err(e) = self.append(&group.id, vec![rec]) {
                tracing::warn!(group = %group.id, error = %e, "persisting group metadata failed");
            }
        }
    }

    /// Writes what changed in `group`'s consumer-protocol state since it was last written.
    pub(crate) fn persist_consumer(&self, group: &mut Group) -> Result<(), ErrorCode> {
        let Some(c) = group.consumer.as_mut() else {
            return Ok(());
        };
        if !c.take_dirty() {
            return Ok(());
        }
        let topics = consumer::topics::RegistryTopics(&self.log.topics);
        let (records, written) = consumer::storage::changes(c, &|id| {
            use consumer::group::Topics;
            topics.name_of(id)
        });
        if let Err(e) = self.append(&group.id, records) {
            tracing::warn!(group = %group.id, error = %e, "persisting consumer group state failed");
            // Written again on the next change or timer tick.
            c.mark_dirty();
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        c.written = written;
        Ok(())
    }

    /// Handles JoinGroup, waiting for the rebalance when needed.
    pub async fn join(&self, group_id: &str, params: JoinParams) -> JoinAnswer {
        if group_id.is_empty() {
            return error_join(ErrorCode::InvalidGroupId, &params.member_id);
        }
        if params.session_timeout < self.min_session || params.session_timeout > self.max_session {
            return error_join(ErrorCode::InvalidSessionTimeout, &params.member_id);
        }
        let member_id = params.member_id.clone();
        let pending = {
            let mut groups = self.lock();
            let group = groups
                .entry(group_id.to_string())
                .or_insert_with(|| Group::new(group_id, now_ms()));
            self.timed().insert(group_id.to_string());
            if let Some(c) = group.consumer.as_mut() {
                if !c.members.is_empty() {
                    // A classic member joins the consumer group as one of its members.
                    let topics = consumer::topics::RegistryTopics(&self.log.topics);
                    let limits = self.consumer_limits(self.consumer_session, 0);
                    let mut answer = c.classic_join(&params, &topics, limits, Instant::now());
                    // A classic static member replacing the last consumer-protocol one takes
                    // the group back to the classic protocol, stable, at the same generation.
                    self.maybe_downgrade(group);
                    if group.consumer.is_none() && answer.error.is_ok() {
                        answer.generation = group.generation;
                        answer.protocol = group.protocol.clone();
                    }
                    return match self.persist_consumer(group) {
                        Ok(()) => answer,
                        Err(code) => error_join(code, &answer.member_id),
                    };
                }
                // An empty consumer group becomes a classic one.
                if self
                    .append(group_id, consumer::storage::tombstones(c))
                    .is_err()
                {
                    return error_join(ErrorCode::CoordinatorNotAvailable, &params.member_id);
                }
                group.consumer = None;
            }
            if !group.admits_joining(&params.member_id, self.max_group_size) {
                group.refuse_joining(&params.member_id, Instant::now(), self.initial_delay);
                self.persist_if_dirty(group);
                // Kafka answers with no member id.
                return error_join(ErrorCode::GroupMaxSizeReached, "");
            }
            let pending = group.join(params, Instant::now(), self.initial_delay);
            self.persist_if_dirty(group);
            pending
        };
        match pending {
            Pending::Now(a) => a,
            Pending::Wait(rx) => rx
                .await
                .unwrap_or_else(|_| error_join(ErrorCode::CoordinatorNotAvailable, &member_id)),
        }
    }

    /// Handles SyncGroup.
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        protocol_type: Option<&str>,
        protocol: Option<&str>,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncAnswer {
        let pending = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return error_sync(ErrorCode::UnknownMemberId);
            };
            if let Some(c) = group.consumer.as_mut() {
                if c.members.is_empty() {
                    return error_sync(ErrorCode::UnknownMemberId);
                }
                let topics = consumer::topics::RegistryTopics(&self.log.topics);
                return c.classic_sync(
                    member_id,
                    generation,
                    instance_id,
                    protocol_type,
                    protocol,
                    &topics,
                    Instant::now(),
                );
            }
            let p = group.sync(
                member_id,
                generation,
                instance_id,
                protocol_type,
                protocol,
                assignments,
                Instant::now(),
            );
            self.persist_if_dirty(group);
            p
        };
        match pending {
            Pending::Now(a) => a,
            Pending::Wait(rx) => rx
                .await
                .unwrap_or_else(|_| error_sync(ErrorCode::CoordinatorNotAvailable)),
        }
    }

    /// Handles Heartbeat.
    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
    ) -> ErrorCode {
        let mut groups = self.lock();
        match groups.get_mut(group_id) {
            Some(g) => match g.consumer.as_mut() {
                Some(c) => c.classic_heartbeat(member_id, generation, instance_id, Instant::now()),
                None => g.heartbeat(member_id, generation, instance_id, Instant::now()),
            },
            None => ErrorCode::UnknownMemberId,
        }
    }

    /// Handles LeaveGroup for several members; returns one code per member.
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        let mut groups = self.lock();
        let group = groups.get_mut(group_id).ok_or(ErrorCode::UnknownMemberId)?;
        let now = Instant::now();
        if let Some(c) = group.consumer.as_mut() {
            let codes = members
                .iter()
                .map(|(m, i)| c.classic_leave(m, i.as_deref()))
                .collect();
            if !group.has_members() {
                group.empty_since_ms = now_ms();
            }
            // The answer does not wait on the write: a failed one is retried by the timer.
            let _ = self.persist_consumer(group);
            return Ok(codes);
        }
        let codes = members
            .iter()
            .map(|(m, i)| group.leave(m, i.as_deref(), now, self.initial_delay))
            .collect();
        self.persist_if_dirty(group);
        Ok(codes)
    }

    /// Handles OffsetCommit (at `api_version`): validates the member, then persists and
    /// applies every offset. As in Kafka, a commit to a group that does not exist creates it
    /// only when it comes from outside group management (generation < 0, a "simple" group);
    /// otherwise it is refused with GROUP_ID_NOT_FOUND (v9+) or ILLEGAL_GENERATION, so commits
    /// naming made-up members cannot create groups.
    #[allow(clippy::too_many_arguments)]
    pub fn commit(
        &self,
        api_version: i16,
        group_id: &str,
        member_id: &str,
        generation: i32,
        instance_id: Option<&str>,
        offsets: Vec<OffsetToCommit>,
    ) -> Vec<PartitionResult> {
        if group_id.is_empty() {
            return offsets
                .into_iter()
                .map(|(tp, ..)| (tp, ErrorCode::InvalidGroupId))
                .collect();
        }
        let mut groups = self.lock();
        if generation >= 0 && !groups.contains_key(group_id) {
            let code = if api_version >= 9 {
                ErrorCode::GroupIdNotFound
            } else {
                ErrorCode::IllegalGeneration
            };
            return offsets.into_iter().map(|(tp, ..)| (tp, code)).collect();
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now_ms()));
        let valid = match group.consumer.as_ref() {
            Some(c) => c.validate_commit(member_id, generation, api_version),
            None => group.validate_commit(member_id, generation, instance_id),
        };
        if let Err(code) = valid {
            return offsets.into_iter().map(|(tp, ..)| (tp, code)).collect();
        }
        let now = now_ms();
        let mut results = Vec::with_capacity(offsets.len());
        let mut records = Vec::new();
        let mut accepted = Vec::new();
        for (tp, offset, leader_epoch, metadata) in offsets {
            let metadata = metadata.unwrap_or_default();
            let known = self.partition_exists(&tp.0, tp.1);
            let code = if metadata.len() > self.max_metadata {
                ErrorCode::OffsetMetadataTooLarge
            } else if !known {
                ErrorCode::UnknownTopicOrPartition
            } else {
                ErrorCode::NoError
            };
            if code.is_ok() {
                let c = CommittedOffset {
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp: now,
                };
                records.push(storage::offset_record(group_id, &tp.0, tp.1, Some(&c)));
                accepted.push((tp.clone(), c));
            }
            results.push((tp, code));
        }
        match self.append(group_id, records) {
            Ok(()) => {
                for (tp, c) in accepted {
                    group.offsets.insert(tp, c);
                }
                results
            }
            Err(_) => results
                .into_iter()
                .map(|(tp, c)| {
                    (
                        tp,
                        if c.is_ok() {
                            ErrorCode::CoordinatorNotAvailable
                        } else {
                            c
                        },
                    )
                })
                .collect(),
        }
    }

    /// Committed offsets of a group: all of them, or those of `partitions`.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[(String, i32)]>,
    ) -> Vec<OffsetEntry> {
        let groups = self.lock();
        let Some(group) = groups.get(group_id) else {
            return partitions
                .unwrap_or_default()
                .iter()
                .map(|tp| (tp.clone(), missing_offset()))
                .collect();
        };
        match partitions {
            None => {
                let mut all: Vec<OffsetEntry> = group
                    .offsets
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                all.sort_by(|a, b| a.0.cmp(&b.0));
                all
            }
            Some(tps) => tps
                .iter()
                .map(|tp| {
                    (
                        tp.clone(),
                        group
                            .offsets
                            .get(tp)
                            .cloned()
                            .unwrap_or_else(missing_offset),
                    )
                })
                .collect(),
        }
    }

    /// A snapshot for DescribeGroups / ListGroups.
    pub fn describe(&self, group_id: &str) -> Option<GroupSummary> {
        let groups = self.lock();
        let g = groups.get(group_id)?;
        Some(summary(g))
    }

    /// Every group.
    pub fn list(&self) -> Vec<GroupSummary> {
        let groups = self.lock();
        let mut out: Vec<GroupSummary> = groups
            .values()
            .filter(|g| g.state != GroupState::Dead)
            .map(summary)
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// Deletes an empty group and its offsets.
    pub fn delete_group(&self, group_id: &str) -> ErrorCode {
        let mut groups = self.lock();
        let Some(group) = groups.get(group_id) else {
            return ErrorCode::GroupIdNotFound;
        };
        if group.has_members() {
            return ErrorCode::NonEmptyGroup;
        }
        let records = group_tombstones(group);
        if self.append(group_id, records).is_err() {
            return ErrorCode::CoordinatorNotAvailable;
        }
        groups.remove(group_id);
        ErrorCode::NoError
    }

    /// OffsetDelete: removes committed offsets of partitions no member subscribes to.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<PartitionResult>, ErrorCode> {
        let mut groups = self.lock();
        let group = groups.get_mut(group_id).ok_or(ErrorCode::GroupIdNotFound)?;
        let subscribed: Vec<String> = match group.consumer.as_ref() {
            Some(c) => c
                .subscribed_topics(&consumer::topics::RegistryTopics(&self.log.topics))
                .into_iter()
                .collect(),
            None => group.subscribed_topics(),
        };
        let mut results = Vec::new();
        let mut records = Vec::new();
        for tp in partitions {
            if subscribed.contains(&tp.0) {
                results.push((tp.clone(), ErrorCode::GroupSubscribedToTopic));
            } else {
                records.push(storage::offset_record(group_id, &tp.0, tp.1, None));
                results.push((tp.clone(), ErrorCode::NoError));
            }
        }
        self.append(group_id, records)
            .map_err(|_| ErrorCode::CoordinatorNotAvailable)?;
        for (tp, code) in &results {
            if code.is_ok() {
                group.offsets.remove(tp);
            }
        }
        Ok(results)
    }

    /// Timers every 100 ms: member sessions and join deadlines, of the groups that have any
    /// (`timed`); a group with nothing to time (no members, no pending joins, no rebalance
    /// under way) is not visited, so a broker holding many simple or empty groups does not
    /// scan them all under the groups lock ten times a second.
    pub fn tick(&self) {
        let now = Instant::now();
        let now_ms = now_ms();
        let mut groups = self.lock();
        let mut timed = self.timed();
        timed.retain(|id| {
            let Some(group) = groups.get_mut(id) else {
                return false;
            };
            group.tick(now, now_ms, self.initial_delay);
            self.persist_if_dirty(group);
            if let Some(c) = group.consumer.as_mut() {
                if c.tick(now) && c.members.is_empty() {
                    group.empty_since_ms = now_ms;
                }
                self.maybe_downgrade(group);
                // A failed write is retried on the next tick (the group stays dirty).
                let _ = self.persist_consumer(group);
            }
            group.needs_timer()
        });
    }

    /// Every `offsets.retention.check.interval.ms`: removes the offsets and metadata of groups
    /// empty for longer than `offsets.retention.minutes` (Kafka's offset expiration pass).
    pub fn expire_offsets(&self) {
        if self.retention_ms <= 0 {
            return;
        }
        let now_ms = now_ms();
        let mut groups = self.lock();
        let expired_groups: Vec<String> = groups
            .values()
            .filter(|g| {
                !g.has_members()
                    && g.state == GroupState::Empty
                    && now_ms - g.empty_since_ms > self.retention_ms
            })
            .map(|g| g.id.clone())
            .collect();
        for id in expired_groups {
            if let Some(group) = groups.get(&id) {
                let records = group_tombstones(group);
                if self.append(&id, records).is_ok() {
                    tracing::info!(group = %id, "expired offsets of empty group (offsets.retention.minutes)");
                    groups.remove(&id);
                }
            }
        }
    }
}

/// What DescribeGroups and ListGroups report about a group.
#[derive(Debug, Clone)]
pub struct GroupSummary {
    /// Group id.
    pub group_id: String,
    /// `classic` or `consumer` (KIP-848), as ListGroups v5 names group types.
    pub group_type: &'static str,
    /// State, as Kafka names it for the group's type.
    pub state_name: &'static str,
    /// State.
    pub state: GroupState,
    /// Protocol type.
    pub protocol_type: String,
    /// Chosen protocol.
    pub protocol: String,
    /// Members: id, instance id, client id, host, metadata, assignment.
    pub members: Vec<(String, Option<String>, String, String, Bytes, Bytes)>,
}

fn summary(g: &Group) -> GroupSummary {
    let (group_type, state_name) = match g.consumer.as_ref() {
        Some(c) => ("consumer", c.state().name()),
        None => ("classic", g.state.name()),
    };
    GroupSummary {
        group_id: g.id.clone(),
        group_type,
        state_name,
        state: g.state,
        protocol_type: match g.consumer {
            Some(_) => "consumer".to_string(),
            None => g.protocol_type.clone().unwrap_or_default(),
        },
        protocol: if g.state == GroupState::Stable {
            g.protocol.clone().unwrap_or_default()
        } else {
            String::new()
        },
        members: g
            .members
            .iter()
            .map(|m| {
                (
                    m.id.clone(),
                    m.instance_id.clone(),
                    m.client_id.clone(),
                    m.client_host.clone(),
                    m.metadata(g.protocol.as_deref()),
                    m.assignment.clone(),
                )
            })
            .collect(),
    }
}

/// Tombstones for everything a group has in `__consumer_offsets` (it is deleted or expired).
fn group_tombstones(group: &Group) -> Vec<(Bytes, Option<Bytes>)> {
    let mut records: Vec<(Bytes, Option<Bytes>)> = group
        .offsets
        .keys()
        .map(|(t, p)| storage::offset_record(&group.id, t, *p, None))
        .collect();
    if let Some(c) = group.consumer.as_ref() {
        records.extend(consumer::storage::tombstones(c));
    }
    records.push(storage::group_record(&group.id, None));
    records
}

fn missing_offset() -> CommittedOffset {
    CommittedOffset {
        offset: -1,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp: -1,
    }
}

fn error_join(code: ErrorCode, member_id: &str) -> JoinAnswer {
    JoinAnswer {
        error: code,
        generation: -1,
        protocol_type: None,
        protocol: None,
        leader: String::new(),
        member_id: member_id.to_string(),
        members: Vec::new(),
        skip_assignment: false,
    }
}

fn error_sync(code: ErrorCode) -> SyncAnswer {
    SyncAnswer {
        error: code,
        protocol_type: None,
        protocol: None,
        assignment: Bytes::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::broker::Broker;
    use crate::config::BrokerConfig;

    #[test]
    fn empty_groups_are_not_timed_and_their_offsets_expire_on_the_retention_pass() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig::from_entries([
            ("log.dirs", dir.path().display().to_string()),
            ("offsets.retention.minutes", "1".to_string()),
        ])
        .unwrap();
        let broker = Broker::open(config, "127.0.0.1".into(), 9092).unwrap();
        broker
            .topics
            .create("t", 1, BTreeMap::new(), false)
            .unwrap();
        broker.groups.ensure_topic().unwrap();
        let groups = &broker.groups;
        let results = groups.commit(
            9,
            "simple",
            "",
            -1,
            None,
            vec![(("t".into(), 0), 5, -1, None)],
        );
        assert!(results.iter().all(|(_, c)| c.is_ok()), "{results:?}");
        assert!(
            groups.timed().is_empty(),
            "a group without members is never timed"
        );
        // Empty for two minutes: the 100 ms timer leaves it alone, the retention pass removes it.
        groups.lock().get_mut("simple").unwrap().empty_since_ms -= 120_000;
        groups.tick();
        assert!(groups.lock().contains_key("simple"));
        groups.expire_offsets();
        assert!(!groups.lock().contains_key("simple"));
    }
}
