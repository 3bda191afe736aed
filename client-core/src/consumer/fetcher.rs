//! The background prefetcher: one Fetch in flight per leader, for every assigned, unpaused
//! partition with a known position and no data waiting, while the buffer is under its budget.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::offsets::{list_offsets, EARLIEST, LATEST};
use super::state::{Buffered, Reset};
use super::Shared;
use crate::producer::TopicPartition;
use crate::records::RecordBatches;
use crate::{Error, ErrorCode};

/// Runs until the consumer closes.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut in_flight_leaders: HashMap<i32, tokio::task::JoinHandle<()>> = HashMap::new();
    loop {
        let woken = shared.fetch_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if shared.lock().closed {
            for (_, h) in in_flight_leaders {
                h.abort();
            }
            return;
        }
        resolve_resets(&shared).await;
        in_flight_leaders.retain(|_, h| !h.is_finished());
        let plan = plan_fetches(&shared, &in_flight_leaders);
        for (leader, parts) in plan {
            let s = shared.clone();
            in_flight_leaders.insert(
                leader,
                tokio::spawn(async move { fetch_from(s, leader, parts).await }),
            );
        }
        let _ = tokio::time::timeout(Duration::from_millis(250), woken).await;
    }
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
            tokio::time::sleep(shared.cluster.config().retry_backoff).await;
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
    let Ok(found) = found else {
        tokio::time::sleep(shared.cluster.config().retry_backoff).await;
        return;
    };
    let fallback = match shared.cluster.config().consumer.auto_offset_reset {
        crate::config::OffsetReset::Earliest => Some(Reset::Earliest),
        crate::config::OffsetReset::Latest => Some(Reset::Latest),
        crate::config::OffsetReset::None => None,
    };
    let mut state = shared.lock();
    for (tp, generation) in wanted {
        let Some(p) = state.parts.get_mut(&tp) else {
            continue;
        };
        if p.generation != generation || p.reset != Some(Reset::Committed) {
            continue;
        }
        match found.get(&tp).cloned().flatten() {
            Some((offset, _)) => p.seek(offset),
            None => p.reset = fallback,
        }
    }
}

type Planned = Vec<(TopicPartition, i64, u64)>;

fn plan_fetches(
    shared: &Shared,
    busy: &HashMap<i32, tokio::task::JoinHandle<()>>,
) -> HashMap<i32, Planned> {
    let meta = shared.cluster.metadata();
    let config = &shared.cluster.config().consumer;
    let now = Instant::now();
    let mut state = shared.lock();
    if state.buffered_bytes >= config.max_buffered_bytes {
        return HashMap::new();
    }
    let mut plan: HashMap<i32, Planned> = HashMap::new();
    let mut missing_leader = false;
    let order = state.order.clone();
    for tp in order {
        let buffered = state.has_buffered(&tp);
        let Some(p) = state.parts.get_mut(&tp) else {
            continue;
        };
        if p.paused
            || p.in_flight
            || buffered
            || p.error.is_some()
            || p.backoff_until.is_some_and(|t| t > now)
        {
            continue;
        }
        let Some(offset) = p.fetch_offset else {
            continue;
        };
        let Some(leader) = meta.leader(&tp.topic, tp.partition) else {
            missing_leader = true;
            continue;
        };
        if busy.contains_key(&leader) {
            continue;
        }
        p.in_flight = true;
        let entry = plan.entry(leader).or_default();
        if p.oversize {
            entry.insert(0, (tp.clone(), offset, p.generation));
        } else {
            entry.push((tp.clone(), offset, p.generation));
        }
    }
    if !state.order.is_empty() {
        state.order.rotate_left(1);
    }
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
        tokio::spawn(async move {
            for t in topics {
                let _ = cluster
                    .topic(&t, Instant::now() + Duration::from_secs(1))
                    .await;
            }
        });
    }
    plan
}

async fn fetch_from(shared: Arc<Shared>, leader: i32, parts: Planned) {
    let config = shared.cluster.config().consumer.clone();
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, offset, _) in &parts {
        let fp = FetchPartition::default()
            .with_partition(tp.partition)
            .with_fetch_offset(*offset)
            .with_partition_max_bytes(config.max_partition_fetch_bytes);
        match topics
            .iter_mut()
            .find(|t| t.topic.as_str() == tp.topic.as_ref())
        {
            Some(t) => t.partitions.push(fp),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(tp.topic.to_string())))
                    .with_partitions(vec![fp]),
            ),
        }
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(config.fetch_max_wait.as_millis().min(i32::MAX as u128) as i32)
        .with_min_bytes(config.fetch_min_bytes)
        .with_max_bytes(config.fetch_max_bytes)
        .with_isolation_level(i8::from(config.read_committed))
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics);
    let result = match shared.cluster.connection(leader).await {
        Ok(conn) => conn.send(&request).await,
        Err(e) => Err(e),
    };
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            shared.cluster.on_error(&e);
            release(
                &shared,
                &parts,
                Some(Instant::now() + shared.cluster.config().retry_backoff),
            );
            shared.fetch_wake.notify_one();
            return;
        }
    };
    let mut state = shared.lock();
    let mut got_data = false;
    for topic in response.responses {
        for pd in topic.partitions {
            let tp = TopicPartition {
                topic: topic.topic.to_string().into(),
                partition: pd.partition_index,
            };
            let Some((_, offset, generation)) = parts.iter().find(|(t, _, _)| t == &tp).cloned()
            else {
                continue;
            };
            let Some(p) = state.parts.get_mut(&tp) else {
                continue;
            };
            if p.generation != generation {
                continue;
            }
            p.in_flight = false;
            let code = ErrorCode::from_code(pd.error_code);
            match code {
                ErrorCode::NoError => {
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
                ErrorCode::OffsetOutOfRange => match config.auto_offset_reset {
                    crate::config::OffsetReset::Earliest => p.request_reset(Reset::Earliest),
                    crate::config::OffsetReset::Latest => p.request_reset(Reset::Latest),
                    crate::config::OffsetReset::None => {
                        p.error = Some(Error::Kafka(code));
                        got_data = true;
                    }
                },
                code if code.is_retriable() || code.invalidates_metadata() => {
                    p.backoff_until = Some(Instant::now() + shared.cluster.config().retry_backoff);
                    shared.cluster.on_error(&Error::Kafka(code));
                }
                code => {
                    p.error = Some(Error::Kafka(code));
                    got_data = true;
                }
            }
        }
    }
    // Partitions the broker left out of the response become fetchable again.
    for (tp, _, generation) in &parts {
        if let Some(p) = state.parts.get_mut(tp) {
            if p.generation == *generation {
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

fn release(shared: &Shared, parts: &Planned, backoff: Option<Instant>) {
    let mut state = shared.lock();
    for (tp, _, generation) in parts {
        if let Some(p) = state.parts.get_mut(tp) {
            if p.generation == *generation {
                p.in_flight = false;
                p.backoff_until = backoff;
            }
        }
    }
}
