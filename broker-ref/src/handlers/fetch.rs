//! Fetch: long-polling reads of stored batches, bounded by the high watermark (or the last
//! stable offset for read_committed), `max_bytes` and per-partition limits. In cluster mode a
//! consumer's fetch with client metadata (v11+) may be served by a follower, and a leader with
//! the rack-aware selector points a consumer to a replica in its rack instead of reading
//! (`read_replica`, KIP-392).
//!
//! Fetch sessions (KIP-227, Fetch v7+): the session state machine lives in
//! [`crate::session::fetch`]; this module reads what the session context names. A sessionless
//! request (epoch -1, and every request before v7) reads the request's partitions and answers
//! with session id 0. A full request with epoch 0 reads the request's partitions, answers all of
//! them and creates a session. An incremental request reads every partition of its session, so
//! `min_bytes` and the long poll count data arriving on partitions the request did not list, and
//! answers only the partitions with news.
//!
//! Waiting (`max_wait_ms`, `min_bytes`): a request its first read does not answer registers with
//! the partitions it reads (`partition::Waiters`), reads once more, and is woken only when one of them moves. A wake does not re-read:
//! the request sums the bytes appended to its partitions since its last read
//! ([`Partition::progress`]) and reads again only once they could reach `min_bytes`, or when a
//! log start offset moved or a partition was deleted. `min_bytes` is capped at the response's
//! `max_bytes`, as Kafka caps it, so a `min_bytes` near `i32::MAX` just waits out `max_wait_ms`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, ProducerId, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use odradek::records::RecordBatches;
use odradek::ErrorCode;
use uuid::Uuid;

use super::context::RequestContext;
use super::read_replica::ReadSite;
use super::reply::error_parts;
use crate::broker::Broker;
use crate::partition::{Partition, Progress, Topic};
use crate::session::fetch::{
    FetchContext, FetchParams, PartitionKey, PartitionResult, SessionUpdate, TopicKey,
    INVALID_SESSION_ID,
};
use crate::{Error, Result};

/// Handles Fetch.
pub async fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: FetchRequest,
) -> Result<ResponseKind> {
    let version = ctx.api_version;
    let replica = if request.replica_state.replica_id.0 >= 0 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    if replica >= 0 {
        return super::replica_fetch::handle(broker, ctx, request, replica).await;
    }
    let max_wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let deadline = tokio::time::Instant::now() + max_wait;
    let broker_max = broker.config.int("fetch.max.bytes").max(1) as usize;
    let max_bytes = (request.max_bytes.max(0) as usize).min(broker_max);
    let min_bytes = (request.min_bytes.max(0) as usize).min(max_bytes);
    let read_committed = request.isolation_level == 1;
    let by_id = version >= 13;
    let site = ReadSite::of(broker, version, request.rack_id.as_str(), ctx.listener());
    let context = broker.fetch_sessions.new_context(
        request.session_id,
        request.session_epoch,
        by_id,
        || session_update(&request, by_id),
        Instant::now(),
    );
    let poll = LongPoll {
        deadline,
        min_bytes,
    };
    let limits = Limits {
        max_bytes,
        min_bytes,
    };
    let response = match context {
        FetchContext::Sessionless => {
            let topics = poll
                .run(
                    || watched_topics(broker, &request.topics, version >= 13),
                    || read_all(&site, &request.topics, limits, read_committed, version),
                )
                .await;
            FetchResponse::default()
                .with_session_id(INVALID_SESSION_ID)
                .with_responses(topics)
        }
        FetchContext::Error(code) => FetchResponse::default()
            .with_error_code(code.code())
            .with_session_id(INVALID_SESSION_ID),
        FetchContext::Full {
            uses_topic_ids,
            partitions,
        } => {
            let data = poll
                .run(
                    || watched_list(broker, &partitions),
                    || read_list(&site, &partitions, limits, read_committed, by_id),
                )
                .await;
            let results: Vec<PartitionResult> = data.iter().map(result_of).collect();
            let session_id = broker.fetch_sessions.create_session(
                uses_topic_ids,
                &partitions,
                &results,
                Instant::now(),
            );
            FetchResponse::default()
                .with_session_id(session_id)
                .with_responses(group_by_topic(&partitions, data, None))
        }
        FetchContext::Incremental {
            session_id,
            epoch,
            partitions,
        } => {
            let data = poll
                .run(
                    || watched_list(broker, &partitions),
                    || read_list(&site, &partitions, limits, read_committed, by_id),
                )
                .await;
            let results: Vec<PartitionResult> = data.iter().map(result_of).collect();
            match broker.fetch_sessions.complete_incremental(
                session_id,
                epoch,
                &partitions,
                &results,
                Instant::now(),
            ) {
                Ok(include) => FetchResponse::default()
                    .with_session_id(session_id)
                    .with_responses(group_by_topic(&partitions, data, Some(&include))),
                Err(code) => {
                    // As Kafka: a session used by another request meanwhile is named in the
                    // error; a session that is gone is not.
                    let id = if code == ErrorCode::InvalidFetchSessionEpoch {
                        session_id
                    } else {
                        INVALID_SESSION_ID
                    };
                    FetchResponse::default()
                        .with_error_code(code.code())
                        .with_session_id(id)
                }
            }
        }
    };
    Ok(ResponseKind::Fetch(response))
}

/// A request's response size limit and the bytes it waits for.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_bytes: usize,
    min_bytes: usize,
}

/// The wait of one request: until `min_bytes` are readable, a partition has an error, or the
/// deadline passes.
struct LongPoll {
    deadline: tokio::time::Instant,
    min_bytes: usize,
}

impl LongPoll {
    /// Calls `read` (which returns what it read, the bytes credited toward `min_bytes` and
    /// whether any partition failed) until it is time to answer. Between reads it sleeps until
    /// one of the partitions `watch` names moved enough to possibly reach `min_bytes` (see the
    /// module docs). A fetch answered by its first read never resolves or registers them.
    async fn run<T>(
        &self,
        watch: impl FnOnce() -> Vec<Arc<Partition>>,
        mut read: impl FnMut() -> (T, usize, bool),
    ) -> T {
        let waiter = Arc::new(tokio::sync::Notify::new());
        let mut watch = Some(watch);
        let mut watched: Vec<Arc<Partition>> = Vec::new();
        let mut answer_now = false;
        loop {
            let seen: Vec<Progress> = watched.iter().map(|p| p.progress()).collect();
            let (out, bytes, any_error) = read();
            if answer_now
                || bytes >= self.min_bytes
                || any_error
                || tokio::time::Instant::now() >= self.deadline
            {
                return out;
            }
            if let Some(watch) = watch.take() {
                // First wait: register, then read once more, so nothing appended between the
                // first read and the registration is missed (a later move leaves a permit).
                watched = watch();
                for p in &watched {
                    p.register_waiter(&waiter);
                }
                continue;
            }
            // Waiting for other clients' data: the request slot goes back meanwhile.
            crate::request_slots::release_while_waiting();
            let needed = (self.min_bytes - bytes) as u64;
            loop {
                match moved(&watched, &seen, needed) {
                    Moved::NotEnough => {}
                    Moved::Enough => break,
                    Moved::Otherwise => {
                        // Not more data but a different answer (a deleted partition, a moved
                        // log start or leader): Kafka completes the delayed fetch at once.
                        answer_now = true;
                        break;
                    }
                }
                if tokio::time::timeout_at(self.deadline, waiter.notified())
                    .await
                    .is_err()
                {
                    break; // the deadline: one last read answers
                }
            }
        }
    }
}

/// How `watched` moved since a read.
enum Moved {
    /// Fewer new bytes than the read lacked.
    NotEnough,
    /// Enough new bytes that a read could reach `min_bytes`.
    Enough,
    /// Something other than an append changed (see [`Progress::other_changes`]).
    Otherwise,
}

/// How `watched` moved since `seen`, given the bytes the last read lacked.
fn moved(watched: &[Arc<Partition>], seen: &[Progress], needed: u64) -> Moved {
    let mut grown = 0u64;
    for (p, before) in watched.iter().zip(seen) {
        let now = p.progress();
        if now.other_changes != before.other_changes {
            return Moved::Otherwise;
        }
        grown = grown.saturating_add(now.appended_bytes.saturating_sub(before.appended_bytes));
    }
    if grown >= needed {
        Moved::Enough
    } else {
        Moved::NotEnough
    }
}

/// The existing partitions a sessionless request reads.
fn watched_topics(broker: &Broker, topics: &[FetchTopic], by_id: bool) -> Vec<Arc<Partition>> {
    let mut out = Vec::new();
    for ft in topics {
        let topic = if by_id {
            broker.topics.get_by_id(ft.topic_id)
        } else {
            broker.topics.get(&ft.topic)
        };
        if let Some(topic) = topic {
            out.extend(
                ft.partitions
                    .iter()
                    .filter_map(|fp| topic.partition(fp.partition)),
            );
        }
    }
    out
}

/// The existing partitions of a session's (or full request's) list.
fn watched_list(
    broker: &Broker,
    partitions: &[(PartitionKey, FetchParams)],
) -> Vec<Arc<Partition>> {
    let mut topics = TopicLookup::new(broker);
    partitions
        .iter()
        .filter_map(|(key, _)| topics.get(&key.topic)?.partition(key.partition))
        .collect()
}

/// Topic lookups by session key, remembering the last one: partitions of one topic are
/// usually adjacent in a list.
struct TopicLookup<'a> {
    broker: &'a Broker,
    last: Option<(TopicKey, Option<Arc<Topic>>)>,
}

impl<'a> TopicLookup<'a> {
    fn new(broker: &'a Broker) -> Self {
        TopicLookup { broker, last: None }
    }

    fn get(&mut self, key: &TopicKey) -> Option<Arc<Topic>> {
        if let Some((k, t)) = &self.last {
            if k == key {
                return t.clone();
            }
        }
        let t = match key {
            TopicKey::Name(name) => self.broker.topics.get(name),
            TopicKey::Id(id) => self.broker.topics.get_by_id(*id),
        };
        self.last = Some((key.clone(), t.clone()));
        t
    }
}

/// The request's partitions and forgotten partitions, keyed as a session keys them.
fn session_update(request: &FetchRequest, by_id: bool) -> SessionUpdate {
    let count = request.topics.iter().map(|t| t.partitions.len()).sum();
    let mut partitions = Vec::with_capacity(count);
    for ft in &request.topics {
        let topic = topic_key(&ft.topic, ft.topic_id, by_id);
        for fp in &ft.partitions {
            let key = PartitionKey {
                topic: topic.clone(),
                partition: fp.partition,
            };
            partitions.push((key, params_of(fp)));
        }
    }
    let mut forgotten = Vec::new();
    for ft in &request.forgotten_topics_data {
        let topic = topic_key(&ft.topic, ft.topic_id, by_id);
        for &partition in &ft.partitions {
            forgotten.push(PartitionKey {
                topic: topic.clone(),
                partition,
            });
        }
    }
    SessionUpdate {
        partitions,
        forgotten,
    }
}

/// A session key for a topic. The name is copied out of the request: a `StrBytes` from the
/// decoder shares the request's buffer, which a session must not keep alive.
fn topic_key(name: &TopicName, id: Uuid, by_id: bool) -> TopicKey {
    if by_id {
        TopicKey::Id(id)
    } else {
        TopicKey::Name(Arc::from(name.as_str()))
    }
}

fn params_of(fp: &FetchPartition) -> FetchParams {
    FetchParams {
        fetch_offset: fp.fetch_offset,
        partition_max_bytes: fp.partition_max_bytes,
        log_start_offset: fp.log_start_offset,
        current_leader_epoch: fp.current_leader_epoch,
        last_fetched_epoch: fp.last_fetched_epoch,
    }
}

/// What a session needs to know about a partition it answered.
fn result_of(pd: &PartitionData) -> PartitionResult {
    PartitionResult {
        error_code: pd.error_code,
        has_records: pd.records.as_ref().is_some_and(|r| !r.is_empty()),
        high_watermark: pd.high_watermark,
        last_stable_offset: pd.last_stable_offset,
        log_start_offset: pd.log_start_offset,
        has_preferred_replica: pd.preferred_read_replica.0 >= 0,
    }
}

/// One pass over the partitions of a request or session: the byte budget left, the bytes credited toward `min_bytes`, whether any partition failed, and whether a partition
/// has returned data yet (the first one that does is allowed one whole batch beyond its limits,
/// KIP-74).
///
/// As Kafka's DelayedFetch, a partition is credited with what it has readable up to its limit:
/// a partition stopped by its limit (more data after what it returned) counts its whole limit,
/// not the whole batches that fitted under it. Otherwise a `fetch.min.bytes` equal to
/// `max.partition.fetch.bytes` could never be reached by one partition, and every Fetch would
/// wait out `fetch.wait.max.ms` although data was there.
struct ReadPass<'a> {
    site: &'a ReadSite<'a>,
    budget: usize,
    credited: usize,
    min_bytes: usize,
    any_error: bool,
    first_with_data: bool,
    read_committed: bool,
}

impl<'a> ReadPass<'a> {
    fn new(
        site: &'a ReadSite<'a>,
        max_bytes: usize,
        min_bytes: usize,
        read_committed: bool,
    ) -> ReadPass<'a> {
        ReadPass {
            site,
            budget: max_bytes,
            credited: 0,
            min_bytes,
            any_error: false,
            first_with_data: true,
            read_committed,
        }
    }

    /// Reads one partition of `topic` (`None`: unknown topic).
    fn read(
        &mut self,
        topic: Option<&Arc<Topic>>,
        by_id: bool,
        index: i32,
        params: &FetchParams,
    ) -> PartitionData {
        let read_committed = self.read_committed;
        let mut pd = PartitionData::default()
            .with_partition_index(index)
            .with_aborted_transactions(read_committed.then(Vec::new));
        let partition = topic.and_then(|t| t.partition(index));
        let mut limit = 0;
        let refused = partition.as_ref().and_then(|p| {
            p.check_readable(params.current_leader_epoch, self.site.followers_serve)
                .err()
        });
        if let Some(p) = partition.as_ref().filter(|_| refused.is_none()) {
            if let Some(preferred) = self.site.preferred(p, params.fetch_offset) {
                // KIP-392: no records, the consumer goes to the replica in its rack.
                return pd
                    .with_high_watermark(p.high_watermark())
                    .with_last_stable_offset(p.last_stable_offset())
                    .with_log_start_offset(p.log_start_offset())
                    .with_preferred_read_replica(BrokerId(preferred))
                    .with_records(Some(bytes::Bytes::new()));
            }
        }
        let result = match partition {
            _ if refused.is_some() => {
                Err(refused.unwrap_or_else(|| ErrorCode::UnknownServerError.into()))
            }
            None => Err(Error::kafka(
                if by_id {
                    ErrorCode::UnknownTopicId
                } else {
                    ErrorCode::UnknownTopicOrPartition
                },
                "unknown topic or partition",
            )),
            Some(p) => {
                limit = (params.partition_max_bytes.max(0) as usize).min(self.budget);
                let out = p.read(
                    params.fetch_offset,
                    limit,
                    self.first_with_data,
                    read_committed,
                );
                match out {
                    Ok(o) => Ok(o),
                    Err(e) => {
                        pd = pd
                            .with_high_watermark(p.high_watermark())
                            .with_last_stable_offset(p.last_stable_offset())
                            .with_log_start_offset(p.log_start_offset());
                        Err(e)
                    }
                }
            }
        };
        match result {
            Ok(o) => {
                let n = o.records.len();
                if n > 0 {
                    self.first_with_data = false;
                }
                self.budget = self.budget.saturating_sub(n);
                self.credited += n;
                if n > 0 && n < limit && self.credited < self.min_bytes {
                    let bound = if read_committed {
                        o.last_stable_offset
                    } else {
                        o.high_watermark
                    };
                    if end_offset(&o.records).is_some_and(|end| end < bound) {
                        self.credited += limit - n;
                    }
                }
                let aborted = o.aborted.map(|list| {
                    list.into_iter()
                        .map(|a| {
                            AbortedTransaction::default()
                                .with_producer_id(ProducerId(a.producer_id))
                                .with_first_offset(a.first_offset)
                        })
                        .collect()
                });
                pd.with_high_watermark(o.high_watermark)
                    .with_last_stable_offset(o.last_stable_offset)
                    .with_log_start_offset(o.log_start_offset)
                    .with_aborted_transactions(aborted)
                    .with_records(Some(o.records))
            }
            Err(e) => {
                self.any_error = true;
                let (code, _) = error_parts(&e);
                if pd.high_watermark == 0 && code != ErrorCode::OffsetOutOfRange.code() {
                    pd = pd.with_high_watermark(-1);
                }
                pd.with_error_code(code)
                    .with_records(Some(bytes::Bytes::new()))
            }
        }
    }
}

/// The offset after the last whole batch of `records`.
fn end_offset(records: &bytes::Bytes) -> Option<i64> {
    RecordBatches::new(records.clone())
        .map_while(|b| b.ok())
        .last()
        .map(|b| b.next_offset())
}

/// Sessionless read of the request's topics, answered in request order.
fn read_all(
    site: &ReadSite<'_>,
    topics: &[FetchTopic],
    limits: Limits,
    read_committed: bool,
    version: i16,
) -> (Vec<FetchableTopicResponse>, usize, bool) {
    let broker = site.broker();
    let mut pass = ReadPass::new(site, limits.max_bytes, limits.min_bytes, read_committed);
    let mut out = Vec::with_capacity(topics.len());
    for ft in topics {
        let by_id = version >= 13;
        let topic = if by_id {
            broker.topics.get_by_id(ft.topic_id)
        } else {
            broker.topics.get(&ft.topic)
        };
        let mut partitions = Vec::with_capacity(ft.partitions.len());
        for fp in &ft.partitions {
            partitions.push(pass.read(topic.as_ref(), by_id, fp.partition, &params_of(fp)));
        }
        out.push(
            FetchableTopicResponse::default()
                .with_topic(ft.topic.clone())
                .with_topic_id(ft.topic_id)
                .with_partitions(partitions),
        );
    }
    (out, pass.credited, pass.any_error)
}

/// Reads a session's (or a full request's) partitions in order; one result per partition.
fn read_list(
    site: &ReadSite<'_>,
    partitions: &[(PartitionKey, FetchParams)],
    limits: Limits,
    read_committed: bool,
    by_id: bool,
) -> (Vec<PartitionData>, usize, bool) {
    let broker = site.broker();
    let mut pass = ReadPass::new(site, limits.max_bytes, limits.min_bytes, read_committed);
    let mut out = Vec::with_capacity(partitions.len());
    let mut topics = TopicLookup::new(broker);
    for (key, params) in partitions {
        let topic = topics.get(&key.topic);
        out.push(pass.read(topic.as_ref(), by_id, key.partition, params));
    }
    (out, pass.credited, pass.any_error)
}

/// Builds the response's topics from `data` (one entry per partition of `partitions`), keeping
/// only the entries `include` marks, and starting a new topic entry whenever the topic changes
/// from one partition to the next.
fn group_by_topic(
    partitions: &[(PartitionKey, FetchParams)],
    data: Vec<PartitionData>,
    include: Option<&[bool]>,
) -> Vec<FetchableTopicResponse> {
    let mut out: Vec<FetchableTopicResponse> = Vec::new();
    let mut current: Option<&TopicKey> = None;
    for (i, ((key, _), pd)) in partitions.iter().zip(data).enumerate() {
        if include.is_some_and(|mask| !mask.get(i).copied().unwrap_or(false)) {
            continue;
        }
        let same_topic = current == Some(&key.topic);
        match out.last_mut() {
            Some(last) if same_topic => last.partitions.push(pd),
            _ => {
                let entry = match &key.topic {
                    TopicKey::Name(name) => FetchableTopicResponse::default()
                        .with_topic(TopicName(StrBytes::from_string(name.to_string()))),
                    TopicKey::Id(id) => FetchableTopicResponse::default().with_topic_id(*id),
                };
                out.push(entry.with_partitions(vec![pd]));
                current = Some(&key.topic);
            }
        }
    }
    out
}
