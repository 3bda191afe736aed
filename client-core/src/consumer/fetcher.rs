//! The background prefetcher: one Fetch in flight per leader, for every assigned, unpaused
//! partition with a known (and, after a leader change, validated) position, while the buffer is
//! under its budget (`queued.max.messages.kbytes`, 64 MiB). Each Fetch asks for no more than
//! its share of the budget's free room (`max_bytes`, reserved until it ends), so an application
//! that stops polling holds at most the budget plus one batch per leader. Each broker's
//! requests run on an incremental fetch session (KIP-227, `session.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::offsets::{list_offsets, EARLIEST, LATEST};
use super::replica;
use super::session::{FetchParams, SessionRequest, MIN_SESSION_VERSION};
use super::shared::Shared;
use super::state::{Buffered, Reset};
use super::validate::{observe_leader_epoch, validate_positions};
use crate::cluster::BrokerInfo;
use crate::config::ConsumerConfig;
use crate::records::RecordBatches;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode};

/// How long closing fetch sessions may hold up `close`.
const SESSION_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs until the consumer closes.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut in_flight_leaders: HashMap<i32, InFlight> = HashMap::new();
    let mut refresh: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let woken = shared.fetch_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // A moved leader is fetched from as soon as metadata shows it.
        let metadata_changed = shared.cluster.metadata_changed();
        tokio::pin!(metadata_changed);
        metadata_changed.as_mut().enable();
        if shared.lock().closed {
            for (_, f) in in_flight_leaders {
                f.task.abort();
            }
            if let Some(h) = refresh {
                h.abort();
            }
            close_sessions(&shared).await;
            return;
        }
        resolve_resets(&shared).await;
        refresh_metadata(&shared, &mut refresh);
        validate_positions(&shared).await;
        in_flight_leaders.retain(|_, f| !f.done.load(Ordering::Acquire));
        let (plan, max_bytes) = plan_fetches(&shared, &in_flight_leaders);
        for (leader, parts) in plan {
            let (s, done) = (shared.clone(), Arc::new(AtomicBool::new(false)));
            let flag = done.clone();
            let reservation = Reservation {
                shared: shared.clone(),
                bytes: max_bytes,
            };
            let task = tokio::spawn(async move {
                fetch_from(s.clone(), leader, parts, max_bytes).await;
                // Released after the response's data was counted as buffered (the fetch's
                // bytes are counted twice for a moment, never zero times).
                drop(reservation);
                // Marked done before the wake-up it causes, so the loop it wakes sees the
                // leader free (a finished JoinHandle can still report unfinished then, and
                // the leader would wait for the 250 ms tick).
                flag.store(true, Ordering::Release);
                s.fetch_wake.notify_one();
            });
            in_flight_leaders.insert(leader, InFlight { task, done });
        }
        let on_metadata = backoff_a_new_leader_would_end(&shared);
        let woken = async {
            tokio::select! {
                _ = woken => {}
                _ = metadata_changed, if on_metadata => {}
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(250), woken).await;
    }
}

/// Whether a metadata update should wake the fetcher: some partition waits out a fetch backoff
/// (a new leader ends it) and every assigned partition has a leader (while one has none, each
/// update would wake the fetcher to look the topic up again at once).
fn backoff_a_new_leader_would_end(shared: &Shared) -> bool {
    let meta = shared.cluster.metadata();
    let now = Instant::now();
    let state = shared.lock();
    let waiting = state
        .parts
        .values()
        .any(|p| p.backoff_until.is_some_and(|t| t > now));
    waiting
        && state
            .parts
            .keys()
            .all(|tp| meta.leader(&tp.topic, tp.partition).is_some())
}

/// The room a fetch in flight holds in the buffer budget; given back when the fetch ends,
/// answered, failed or aborted.
struct Reservation {
    shared: Arc<Shared>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.reserved_bytes = state.reserved_bytes.saturating_sub(self.bytes);
    }
}

/// The `max_bytes` of a fetch: its share of the buffer budget's free room (what is neither
/// buffered nor reserved by fetches in flight), capped at `fetch.max.bytes`, at least 1. A
/// broker returns at least one batch whatever `max_bytes` says (KIP-74), so a fetch always
/// progresses, and the buffer stays within the budget plus one batch per leader.
fn fetch_share(room: usize, leaders: usize, fetch_max_bytes: i32) -> usize {
    let cap = usize::try_from(fetch_max_bytes.max(1)).unwrap_or(1);
    (room / leaders.max(1)).clamp(1, cap)
}

/// A fetch in flight to one leader.
struct InFlight {
    task: tokio::task::JoinHandle<()>,
    /// Set when the fetch's response was handled.
    done: Arc<AtomicBool>,
}

/// Refreshes metadata in the background when a fetch reported it stale or it is older than
/// `metadata.max.age.ms`, so moved leaders and new leader epochs (KIP-320) are noticed.
fn refresh_metadata(shared: &Shared, running: &mut Option<tokio::task::JoinHandle<()>>) {
    if running.as_ref().is_some_and(|h| !h.is_finished()) {
        return;
    }
    let asked = std::mem::take(&mut shared.lock().refresh_metadata);
    let old = shared.cluster.metadata().age() > shared.cluster.config().metadata_max_age;
    if asked || old {
        let cluster = shared.cluster.clone();
        *running = Some(tokio::spawn(async move {
            if let Err(e) = cluster.refresh().await {
                tracing::debug!(error = %e, "consumer metadata refresh failed");
            }
        }));
    }
}

/// Ends every open fetch session (epoch -1) so brokers free them now rather than when they
/// expire; best effort, bounded by a short timeout.
async fn close_sessions(shared: &Shared) {
    let sessions: Vec<(i32, (i32, i32))> = shared
        .lock()
        .sessions
        .drain()
        .filter_map(|(leader, s)| Some((leader, s.close_metadata()?)))
        .collect();
    let closes = sessions
        .into_iter()
        .map(|(leader, (id, epoch))| async move {
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_min_bytes(0)
                .with_session_id(id)
                .with_session_epoch(epoch);
            if let Ok(conn) = shared.cluster.connection(leader).await {
                let _ = conn.send(&request).await;
            }
        });
    let _ = tokio::time::timeout(
        SESSION_CLOSE_TIMEOUT,
        futures_util::future::join_all(closes),
    )
    .await;
}

/// Looks up positions for partitions that need one (`auto.offset.reset`, seek to beginning/end).
pub(crate) async fn resolve_resets(shared: &Shared) {
    resolve_committed(shared).await;
    let read_committed = shared.cluster.config().consumer.read_committed;
    let wanted: Vec<(TopicPartition, i64, u64)> = {
        let state = shared.lock();
        state
            .parts
            .iter()
            .filter_map(|(tp, p)| {
                let query = match p.reset? {
                    Reset::Earliest => EARLIEST,
                    Reset::Latest => LATEST,
                    Reset::Committed => return None,
                };
                Some((tp.clone(), query, p.generation))
            })
            .collect()
    };
    if wanted.is_empty() {
        return;
    }
    let queries: Vec<(TopicPartition, i64)> =
        wanted.iter().map(|(tp, q, _)| (tp.clone(), *q)).collect();
    match list_offsets(&shared.cluster, &queries, read_committed).await {
        Ok(found) => {
            let mut state = shared.lock();
            state.reset_retry.succeeded();
            for (tp, _, generation) in wanted {
                let Some(p) = state.parts.get_mut(&tp) else {
                    continue;
                };
                // Another lookup (e.g. position()) may already have resolved it: never move a
                // position that is no longer waiting for a reset.
                if p.generation != generation || p.reset.is_none() {
                    continue;
                }
                if let Some(Some((offset, _))) = found.get(&tp) {
                    p.position = Some(*offset);
                    p.fetch_offset = Some(*offset);
                    p.reset = None;
                }
            }
            drop(state);
            shared.fetch_wake.notify_one();
        }
        Err(e) => {
            tracing::debug!(error = %e, "offset reset lookup failed; will retry");
            let wait = shared.lock().reset_retry.failed(shared.cluster.config());
            tokio::time::sleep(wait).await;
        }
    }
}

/// Positions from the group's committed offsets; partitions with none fall back to
/// `auto.offset.reset`.
async fn resolve_committed(shared: &Shared) {
    let Some(group) = &shared.group else { return };
    let wanted: Vec<(TopicPartition, u64)> = {
        let state = shared.lock();
        state
            .parts
            .iter()
            .filter(|(_, p)| p.reset == Some(Reset::Committed))
            .map(|(tp, p)| (tp.clone(), p.generation))
            .collect()
    };
    if wanted.is_empty() {
        return;
    }
    let tps: Vec<TopicPartition> = wanted.iter().map(|(tp, _)| tp.clone()).collect();
    let found = group.lock().await.committed(&tps).await;
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!(error = %e, "committed offsets lookup failed; will retry");
            let wait = shared
                .lock()
                .committed_retry
                .failed(shared.cluster.config());
            tokio::time::sleep(wait).await;
            return;
        }
    };
    let fallback = |topic: &str| match shared.reset_policy(topic) {
        crate::config::OffsetReset::Earliest => Some(Reset::Earliest),
        crate::config::OffsetReset::Latest => Some(Reset::Latest),
        crate::config::OffsetReset::None => None,
    };
    let mut state = shared.lock();
    state.committed_retry.succeeded();
    for (tp, generation) in wanted {
        let Some(p) = state.parts.get_mut(&tp) else {
            continue;
        };
        if p.generation != generation || p.reset != Some(Reset::Committed) {
            continue;
        }
        match found.get(&tp).cloned().flatten() {
            Some((offset, _)) => p.seek(offset),
            None => p.reset = fallback(&tp.topic),
        }
    }
}

/// One partition of a planned Fetch.
#[derive(Debug, Clone)]
struct PlannedPartition {
    tp: TopicPartition,
    offset: i64,
    generation: u64,
    /// The leader epoch metadata knows (-1: unknown), sent as `current_leader_epoch`.
    leader_epoch: i32,
    /// Only part of a batch came back last time: this partition must be read first.
    oversize: bool,
}

type Planned = Vec<PlannedPartition>;

/// The fetches to start, by leader, and the `max_bytes` each asks for (reserved in the buffer
/// budget for each of them).
fn plan_fetches(
    shared: &Arc<Shared>,
    busy: &HashMap<i32, InFlight>,
) -> (HashMap<i32, Planned>, usize) {
    let meta = shared.cluster.metadata();
    let config = &shared.cluster.config().consumer;
    let now = Instant::now();
    let mut state = shared.lock();
    let room = config
        .max_buffered_bytes
        .saturating_sub(state.buffered_bytes + state.reserved_bytes);
    if room == 0 {
        return (HashMap::new(), 0);
    }
    let mut plan: HashMap<i32, Planned> = HashMap::new();
    let mut missing_leader = false;
    let order = state.order.clone();
    for tp in order {
        // A partition with data still waiting is fetched too (its next data is appended behind
        // it): the global budget bounds memory, and a fetch that lists only partitions with
        // nothing new would otherwise long-poll for `fetch.max.wait.ms` while the partitions
        // being drained wait behind it (one fetch in flight per leader).
        let Some(p) = state.parts.get_mut(&tp) else {
            continue;
        };
        if p.paused || p.in_flight || p.error.is_some() {
            continue;
        }
        if p.backoff_until.is_some_and(|t| t > now) {
            // A new leader (a newer epoch in metadata) ends the backoff the old one earned.
            let epoch = leader_epoch(&meta, &tp);
            if !(epoch >= 0 && p.leader_epoch.is_some_and(|known| epoch > known)) {
                continue;
            }
            p.backoff_until = None;
        }
        let Some(offset) = p.fetch_offset else {
            continue;
        };
        let Some(leader) = meta.leader(&tp.topic, tp.partition) else {
            missing_leader = true;
            continue;
        };
        let epoch = leader_epoch(&meta, &tp);
        observe_leader_epoch(p, epoch);
        if p.awaiting_validation {
            continue;
        }
        let node = replica::fetch_node(&mut p.read_replica, leader, &meta, now);
        if busy.contains_key(&node) {
            continue;
        }
        p.in_flight = true;
        let planned = PlannedPartition {
            tp: tp.clone(),
            offset,
            generation: p.generation,
            leader_epoch: epoch,
            oversize: p.oversize,
        };
        let entry = plan.entry(node).or_default();
        if p.oversize {
            entry.insert(0, planned);
        } else {
            entry.push(planned);
        }
    }
    if !state.order.is_empty() {
        state.order.rotate_left(1);
    }
    let share = fetch_share(room, plan.len(), config.fetch_max_bytes);
    state.reserved_bytes += share * plan.len();
    drop(state);
    if missing_leader {
        shared.cluster.invalidate();
        let cluster = shared.cluster.clone();
        let topics: Vec<String> = shared
            .lock()
            .parts
            .keys()
            .map(|tp| tp.topic.to_string())
            .collect();
        let shared = shared.clone();
        tokio::spawn(async move {
            for t in topics {
                let _ = cluster
                    .topic(&t, Instant::now() + Duration::from_secs(1))
                    .await;
            }
            // Once every leader is known the fetcher starts at once instead of at its next
            // tick (a new member's first assignment used to wait 250 ms here). While one is
            // still missing it waits for the tick, so a leaderless partition never makes the
            // lookups spin.
            let meta = shared.cluster.metadata();
            let found = shared
                .lock()
                .parts
                .keys()
                .all(|tp| meta.leader(&tp.topic, tp.partition).is_some());
            if found {
                shared.fetch_wake.notify_one();
            }
        });
    }
    (plan, share)
}

/// The partition's leader epoch in `meta` (-1 when unknown).
fn leader_epoch(meta: &crate::cluster::ClusterMetadata, tp: &TopicPartition) -> i32 {
    meta.topics
        .get(tp.topic.as_ref())
        .and_then(|t| t.partitions.iter().find(|p| p.partition == tp.partition))
        .map_or(-1, |p| p.leader_epoch)
}

/// The FetchRequest for one session request, asking for at most `max_bytes`.
fn fetch_request(
    config: &ConsumerConfig,
    session: &SessionRequest,
    max_bytes: usize,
) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, params) in &session.partitions {
        let fp = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(params.current_leader_epoch)
            .with_fetch_offset(params.fetch_offset)
            .with_partition_max_bytes(params.max_bytes);
        match topics
            .iter_mut()
            .find(|t| t.topic.as_str() == tp.topic.as_ref())
        {
            Some(t) => t.partitions.push(fp),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(topic_name(&tp.topic))
                    .with_partitions(vec![fp]),
            ),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    for tp in &session.forgotten {
        match forgotten
            .iter_mut()
            .find(|t| t.topic.as_str() == tp.topic.as_ref())
        {
            Some(t) => t.partitions.push(tp.partition),
            None => forgotten.push(
                ForgottenTopic::default()
                    .with_topic(topic_name(&tp.topic))
                    .with_partitions(vec![tp.partition]),
            ),
        }
    }
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(config.fetch_max_wait.as_millis().min(i32::MAX as u128) as i32)
        .with_min_bytes(config.fetch_min_bytes)
        .with_max_bytes(i32::try_from(max_bytes).unwrap_or(i32::MAX))
        .with_isolation_level(i8::from(config.read_committed))
        .with_session_id(session.session_id)
        .with_session_epoch(session.epoch)
        .with_rack_id(StrBytes::from_string(config.client_rack.clone()))
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten)
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

async fn fetch_from(shared: Arc<Shared>, leader: i32, parts: Planned, max_bytes: usize) {
    let config = shared.cluster.config().consumer.clone();
    let backoff = (
        shared.cluster.config().retry_backoff,
        shared.cluster.config().retry_backoff_max,
    );
    let conn = match shared.cluster.connection(leader).await {
        Ok(conn) => conn,
        Err(e) => {
            shared.cluster.on_error(&e);
            release(&shared, leader, &parts, Some(backoff));
            shared.fetch_wake.notify_one();
            return;
        }
    };
    let sessions = conn
        .versions()
        .version(ApiKey::Fetch)
        .is_ok_and(|v| v >= MIN_SESSION_VERSION);
    let wanted = parts
        .iter()
        .map(|p| {
            let params = FetchParams {
                fetch_offset: p.offset,
                max_bytes: config.max_partition_fetch_bytes,
                current_leader_epoch: p.leader_epoch,
            };
            (p.tp.clone(), params)
        })
        .collect();
    // A partition that got only part of a batch must come first, and only a full fetch reads
    // partitions in request order (an incremental one reads them in the session's order).
    let force_full = parts.iter().any(|p| p.oversize);
    let session = shared
        .lock()
        .sessions
        .entry(leader)
        .or_default()
        .request(wanted, force_full, sessions);
    let result = conn
        .send(&fetch_request(&config, &session, max_bytes))
        .await;
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            shared.cluster.on_error(&e);
            if let Some(s) = shared.lock().sessions.get_mut(&leader) {
                s.on_failure();
            }
            release(&shared, leader, &parts, Some(backoff));
            shared.fetch_wake.notify_one();
            return;
        }
    };
    let mut state = shared.lock();
    let top_error = ErrorCode::from_code(response.error_code);
    let session_error = state.sessions.entry(leader).or_default().on_response(
        &session,
        top_error,
        response.session_id,
    );
    if !top_error.is_ok() {
        drop(state);
        tracing::debug!(broker = leader, error = %top_error, "fetch failed");
        // A session error is answered by a full fetch at once; anything else backs off.
        let until = (!session_error).then_some(backoff);
        if !session_error {
            shared.cluster.on_error(&Error::Kafka(top_error));
        }
        release(&shared, leader, &parts, until);
        shared.fetch_wake.notify_one();
        return;
    }
    let mut got_data = false;
    let mut refresh = false;
    let endpoints = hint_endpoints(&response);
    for topic in response.responses {
        for pd in topic.partitions {
            let tp = TopicPartition {
                topic: topic.topic.to_string().into(),
                partition: pd.partition_index,
            };
            let Some(planned) = parts.iter().find(|p| p.tp == tp) else {
                continue;
            };
            let (offset, generation) = (planned.offset, planned.generation);
            let Some(p) = state.parts.get_mut(&tp) else {
                continue;
            };
            if p.generation != generation {
                continue;
            }
            p.in_flight = false;
            if p.fetch_offset != Some(offset) {
                // Not the offset this fetch asked from: stale (Java discards it the same way).
                continue;
            }
            let code = ErrorCode::from_code(pd.error_code);
            match code {
                ErrorCode::NoError => {
                    p.fetch_answered();
                    replica::on_answer(
                        &mut p.read_replica,
                        pd.preferred_read_replica.0,
                        leader,
                        shared.cluster.config().metadata_max_age,
                    );
                    p.high_watermark = pd.high_watermark;
                    p.last_stable_offset = pd.last_stable_offset;
                    p.log_start_offset = pd.log_start_offset;
                    let records = pd.records.unwrap_or_default();
                    let mut next = None;
                    let mut walk = RecordBatches::new(records.clone());
                    for b in walk.by_ref() {
                        match b {
                            Ok(b) => next = Some(b.next_offset()),
                            Err(_) => break,
                        }
                    }
                    match next {
                        Some(next) if next > offset => {
                            p.oversize = false;
                            p.fetch_offset = Some(next);
                            let size = records.len();
                            state.buffered_bytes += size;
                            let aborted = pd
                                .aborted_transactions
                                .as_deref()
                                .unwrap_or_default()
                                .iter()
                                .map(|a| (a.producer_id.0, a.first_offset))
                                .collect();
                            state
                                .buffer
                                .push_back(Buffered::new(tp, generation, records, aborted));
                            got_data = true;
                        }
                        _ if walk.truncated_tail() > 0 || !records.is_empty() => {
                            // Only part of a batch came back: ask again with this partition first.
                            p.oversize = true;
                        }
                        _ => {}
                    }
                }
                // Any error from a read replica (OFFSET_OUT_OF_RANGE: it is behind;
                // NOT_LEADER_OR_FOLLOWER: no longer a replica) sends the partition back to its
                // leader, which decides (and resets positions) from there.
                code if replica::drop_if(&mut p.read_replica, leader) => {
                    tracing::debug!(%code, node = leader, "read replica dropped");
                    p.back_off(backoff.0, backoff.1);
                }
                ErrorCode::OffsetOutOfRange => match shared.reset_policy(&tp.topic) {
                    crate::config::OffsetReset::Earliest => p.request_reset(Reset::Earliest),
                    crate::config::OffsetReset::Latest => p.request_reset(Reset::Latest),
                    crate::config::OffsetReset::None => {
                        p.error = Some(Error::Kafka(code));
                        got_data = true;
                    }
                },
                ErrorCode::NotLeaderOrFollower | ErrorCode::FencedLeaderEpoch
                    if shared.cluster.apply_leader_hint(
                        &tp.topic,
                        tp.partition,
                        pd.current_leader.leader_id.0,
                        pd.current_leader.leader_epoch,
                        &endpoints,
                    ) =>
                {
                    // KIP-951: the response named the new leader; fetch from it at once (after
                    // validating the position if its epoch is newer), no metadata round trip.
                    observe_leader_epoch(p, pd.current_leader.leader_epoch);
                }
                code if code.is_retriable() || code.invalidates_metadata() => {
                    // FENCED_LEADER_EPOCH (our epoch is old), UNKNOWN_LEADER_EPOCH (the broker's
                    // is), NOT_LEADER_OR_FOLLOWER...: back off and refresh metadata; a newer
                    // leader epoch then makes the position wait for validation.
                    p.back_off(backoff.0, backoff.1);
                    shared.cluster.on_error(&Error::Kafka(code));
                    refresh = refresh || code.invalidates_metadata();
                }
                code => {
                    p.error = Some(Error::Kafka(code));
                    got_data = true;
                }
            }
        }
    }
    state.refresh_metadata |= refresh;
    // Partitions the response left out had nothing new (an incremental fetch answers only
    // partitions with news); they become fetchable again.
    for planned in &parts {
        if let Some(p) = state.parts.get_mut(&planned.tp) {
            if p.generation == planned.generation {
                p.in_flight = false;
            }
        }
    }
    drop(state);
    if got_data {
        shared.data_ready.notify_waiters();
    }
    shared.fetch_wake.notify_one();
}

/// Makes the partitions of a fetch to `node` that failed fetchable again (after a backoff of
/// `retry.backoff.ms` .. `retry.backoff.max.ms` when `backoff` names them, or at once);
/// those read from `node` as a follower go back to their leader.
fn release(shared: &Shared, node: i32, parts: &Planned, backoff: Option<(Duration, Duration)>) {
    let mut state = shared.lock();
    for planned in parts {
        if let Some(p) = state.parts.get_mut(&planned.tp) {
            if p.generation == planned.generation {
                p.in_flight = false;
                match backoff {
                    Some((base, max)) => p.back_off(base, max),
                    None => p.backoff_until = None,
                }
                replica::drop_if(&mut p.read_replica, node);
            }
        }
    }
}

/// The brokers a Fetch response names for its leader hints (KIP-951, v16+).
fn hint_endpoints(resp: &kafka_protocol::messages::FetchResponse) -> Vec<BrokerInfo> {
    BrokerInfo::hinted(
        resp.node_endpoints
            .iter()
            .map(|n| (n.node_id.0, n.host.as_str(), n.port, n.rack.as_deref())),
    )
}

#[cfg(test)]
mod tests {
    use super::fetch_share;

    #[test]
    fn a_fetch_asks_for_its_share_of_the_free_room_capped_at_fetch_max_bytes() {
        // 64 MiB free, 50 MiB fetch.max.bytes: the cap.
        assert_eq!(fetch_share(64 << 20, 1, 50 << 20), 50 << 20);
        // Three leaders share 3 MiB of room.
        assert_eq!(fetch_share(3 << 20, 3, 50 << 20), 1 << 20);
        // Almost no room: still 1 byte, which a broker answers with one batch (KIP-74).
        assert_eq!(fetch_share(2, 3, 50 << 20), 1);
        // A nonsensical fetch.max.bytes cannot make the request ask for nothing.
        assert_eq!(fetch_share(1 << 20, 1, 0), 1);
    }
}
