//! The consumer: assigned partitions, positions, seek, pause/resume, and `poll`.
//!
//! A background fetcher prefetches from every leader (one Fetch in flight per broker, bounded by
//! `max.partition.fetch.bytes`, `fetch.max.bytes` and a memory budget) and buffers the stored
//! batches as they came off the wire. `poll` decodes them lazily: each batch is decompressed once,
//! CRC-checked when `check.crcs` is set, control batches are skipped, and records before the
//! position (a batch may start before it) are dropped. Seeking bumps a partition's generation so
//! data fetched for the old position is discarded. Requests to each broker run on an incremental
//! fetch session (KIP-227, `session.rs`): after the first full fetch only changed partitions are
//! listed and only partitions with news come back. Fetches carry the leader epoch from metadata;
//! when it moves on, the position is validated with the new leader before fetching resumes
//! (KIP-320, `validate.rs`), so a truncated log neither loses nor repeats records.
//!
//! With `isolation.level=read_committed` the broker returns data only up to the last stable
//! offset and lists the aborted transactions in range; their batches are skipped (per producer,
//! from the transaction's first offset to its ABORT marker), so the application sees committed
//! records only. Partitions come from `assign` or from a group (`subscribe`).

mod commit_async;
mod fetcher;
pub mod group;
mod offsets;
mod record;
mod replica;
mod resets;
mod session;
mod shared;
mod state;
mod stats;
mod validate;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

pub use group::{Assignor, Handled, RebalanceListener, Topics};
pub use group::{JoinInfo, RebalanceHistory};
pub use offsets::{list_offsets, EARLIEST, LATEST};
pub use record::ConsumerRecord;
pub use resets::TopicMatch;
pub use stats::{ConsumerDetail, PartitionDetail};

use crate::cluster::Cluster;
use crate::config::{ClientConfig, OffsetReset};
use crate::records::TimestampType;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};
use shared::Shared;
use state::{PartState, Reset, State};

/// An asynchronous Kafka consumer for assigned partitions.
#[derive(Debug)]
pub struct Consumer {
    shared: Arc<Shared>,
    fetcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
    ready: Mutex<VecDeque<ConsumerRecord>>,
    /// The partition and offset of the record `recv` returned last: handled once `recv` is
    /// called again.
    recv_last: Mutex<Option<(TopicPartition, i64)>>,
    membership: Mutex<Option<(Arc<group::Membership>, tokio::task::JoinHandle<()>)>>,
    committer: std::sync::OnceLock<commit_async::AsyncCommitter>,
}

fn default_reset(policy: OffsetReset) -> Option<Reset> {
    match policy {
        OffsetReset::Earliest => Some(Reset::Earliest),
        OffsetReset::Latest => Some(Reset::Latest),
        OffsetReset::None => None,
    }
}

impl Consumer {
    /// Creates a consumer; must be called inside a tokio runtime (the fetcher runs on it).
    pub fn new(config: ClientConfig) -> Result<Consumer> {
        let group_id = config.consumer.group_id.clone();
        let instance_id = config.consumer.group_instance_id.clone();
        let cluster = Cluster::new(config);
        let group_client =
            group_id.map(|g| group::GroupClient::new(cluster.clone(), g, instance_id));
        let committed = group_client.as_ref().map(|g| g.committed_log());
        let group = group_client.map(|g| Arc::new(tokio::sync::Mutex::new(g)));
        let shared = Arc::new(Shared {
            cluster,
            state: Mutex::new(State::default()),
            fetch_wake: Notify::new(),
            data_ready: Notify::new(),
            group,
            error: Mutex::new(None),
            committed,
            resets: Default::default(),
        });
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::config("runtime", "Consumer::new must run inside a tokio runtime")
        })?;
        let fetcher = handle.spawn(fetcher::run(shared.clone()));
        Ok(Consumer {
            shared,
            fetcher: Mutex::new(Some(fetcher)),
            ready: Mutex::new(VecDeque::new()),
            recv_last: Mutex::new(None),
            membership: Mutex::new(None),
            committer: std::sync::OnceLock::new(),
        })
    }

    /// Builds a consumer from Kafka property names.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Consumer> {
        Consumer::new(ClientConfig::from_map(entries)?)
    }

    /// The cluster view.
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.shared.cluster
    }

    /// Replaces the assignment. New partitions start per `auto.offset.reset`; partitions kept
    /// from the previous assignment keep their positions.
    pub fn assign(&self, partitions: &[TopicPartition]) {
        // With group.id set, assigned partitions start from the group's committed offsets.
        let reset = |topic: &str| {
            if self.shared.group.is_some() {
                Some(Reset::Committed)
            } else {
                default_reset(self.shared.reset_policy(topic))
            }
        };
        let mut state = self.shared.lock();
        let mut parts = HashMap::new();
        for tp in partitions {
            let p = state
                .parts
                .remove(tp)
                .unwrap_or_else(|| PartState::new(reset(&tp.topic)));
            parts.insert(tp.clone(), p);
        }
        state.parts = parts;
        state.order = partitions.to_vec();
        let State {
            buffer,
            parts,
            buffered_bytes,
            ..
        } = &mut *state;
        buffer.retain(|b| {
            let keep = parts.contains_key(&b.tp);
            if !keep {
                *buffered_bytes -= b.bytes;
            }
            keep
        });
        drop(state);
        if let Ok(mut ready) = self.ready.lock() {
            ready.retain(|r| {
                partitions
                    .iter()
                    .any(|tp| tp.topic == r.topic && tp.partition == r.partition)
            });
        }
        self.shared.fetch_wake.notify_one();
    }

    /// The current assignment.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.shared.lock().order.clone()
    }

    fn with_part<T>(&self, tp: &TopicPartition, f: impl FnOnce(&mut PartState) -> T) -> Result<T> {
        let mut state = self.shared.lock();
        let p = state.parts.get_mut(tp).ok_or_else(|| {
            Error::config(
                "assignment",
                format!("{}-{} is not assigned", tp.topic, tp.partition),
            )
        })?;
        let out = f(p);
        drop(state);
        self.drop_ready(tp);
        self.shared.fetch_wake.notify_one();
        Ok(out)
    }

    fn drop_ready(&self, tp: &TopicPartition) {
        if let Ok(mut ready) = self.ready.lock() {
            ready.retain(|r| !(r.topic == tp.topic && r.partition == tp.partition));
        }
    }

    /// Moves the position of an assigned partition.
    pub fn seek(&self, tp: &TopicPartition, offset: i64) -> Result<()> {
        self.with_part(tp, |p| p.seek(offset))
    }

    /// Moves positions to the log start offsets.
    pub fn seek_to_beginning(&self, tps: &[TopicPartition]) -> Result<()> {
        for tp in tps {
            self.with_part(tp, |p| p.request_reset(Reset::Earliest))?;
        }
        Ok(())
    }

    /// Moves positions to the ends (high watermark, or LSO for read_committed).
    pub fn seek_to_end(&self, tps: &[TopicPartition]) -> Result<()> {
        for tp in tps {
            self.with_part(tp, |p| p.request_reset(Reset::Latest))?;
        }
        Ok(())
    }

    /// Stops fetching and returning records of these partitions (positions are kept).
    pub fn pause(&self, tps: &[TopicPartition]) -> Result<()> {
        for tp in tps {
            let mut state = self.shared.lock();
            let p = state.parts.get_mut(tp).ok_or_else(|| {
                Error::config(
                    "assignment",
                    format!("{}-{} is not assigned", tp.topic, tp.partition),
                )
            })?;
            p.paused = true;
        }
        Ok(())
    }

    /// Resumes paused partitions.
    pub fn resume(&self, tps: &[TopicPartition]) -> Result<()> {
        for tp in tps {
            self.with_part(tp, |p| p.paused = false)?;
        }
        Ok(())
    }

    /// A snapshot with everything librdkafka's statistics report for a consumer. Starts new
    /// broker windows, so it is for the statistics emitter alone.
    pub fn detailed_stats(&self) -> ConsumerDetail {
        let history = self.shared.group.as_ref().map(|_| {
            self.membership
                .lock()
                .ok()
                .and_then(|m| {
                    m.as_ref()
                        .and_then(|(m, _)| m.history.lock().ok().map(|h| h.clone()))
                })
                .unwrap_or_default()
        });
        stats::detail(&self.shared, history)
    }

    /// Per-topic `auto.offset.reset` (KafkaJS's per-subscription `fromBeginning`): a partition
    /// of a topic a rule covers (first match) that has no valid position starts where the
    /// rule says; other topics follow `auto.offset.reset`. Replaces earlier rules; applies to
    /// positions looked up from now on.
    pub fn set_topic_offset_resets(&self, rules: Vec<(TopicMatch, OffsetReset)>) {
        self.shared.resets.set(rules);
    }

    /// The high watermark and last stable offset of an assigned partition as its latest fetch
    /// reported them (no request; `None` before the first fetch answered or when unassigned).
    pub fn fetched_watermarks(&self, tp: &TopicPartition) -> Option<(i64, i64)> {
        let state = self.shared.lock();
        let p = state.parts.get(tp)?;
        (p.high_watermark >= 0).then_some((p.high_watermark, p.last_stable_offset))
    }

    /// Paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        self.shared
            .lock()
            .parts
            .iter()
            .filter(|(_, p)| p.paused)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// The next offset `poll` will return for `tp`, looking it up if needed.
    pub async fn position(&self, tp: &TopicPartition) -> Result<i64> {
        let deadline = Instant::now() + self.shared.cluster.config().request_timeout;
        loop {
            let (position, reset, error) = {
                let mut state = self.shared.lock();
                let p = state.parts.get_mut(tp).ok_or_else(|| {
                    Error::config(
                        "assignment",
                        format!("{}-{} is not assigned", tp.topic, tp.partition),
                    )
                })?;
                (p.position, p.reset, p.error.take())
            };
            if let Some(e) = error {
                return Err(e);
            }
            if let Some(pos) = position {
                return Ok(pos);
            }
            if reset.is_none() {
                return Err(Error::Kafka(ErrorCode::OffsetOutOfRange));
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!(
                    "position of {}-{}",
                    tp.topic, tp.partition
                )));
            }
            fetcher::resolve_resets(&self.shared).await;
        }
    }

    /// `(low, high)` watermarks: log start offset and high watermark, from the broker.
    pub async fn fetch_watermarks(&self, tp: &TopicPartition) -> Result<(i64, i64)> {
        let rc = self.shared.cluster.config().consumer.read_committed;
        let q = [(tp.clone(), EARLIEST), (tp.clone(), LATEST)];
        let low = list_offsets(&self.shared.cluster, &q[..1], rc).await?;
        let high = list_offsets(&self.shared.cluster, &q[1..], rc).await?;
        let get = |m: &HashMap<TopicPartition, Option<(i64, i64)>>| {
            m.get(tp).copied().flatten().map_or(-1, |(o, _)| o)
        };
        Ok((get(&low), get(&high)))
    }

    /// For each partition, the first offset whose timestamp is at or after the given one, with
    /// that record's timestamp; `None` when no such record exists.
    pub async fn offsets_for_times(
        &self,
        query: &[(TopicPartition, i64)],
    ) -> Result<HashMap<TopicPartition, Option<(i64, i64)>>> {
        let rc = self.shared.cluster.config().consumer.read_committed;
        list_offsets(&self.shared.cluster, query, rc).await
    }

    /// Returns up to `max.poll.records` records, waiting up to `timeout` for some. Raises the
    /// first pending partition error (e.g. OFFSET_OUT_OF_RANGE with `auto.offset.reset=none`).
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>> {
        if let Some(m) = self
            .membership
            .lock()
            .ok()
            .and_then(|m| m.as_ref().map(|(m, _)| m.clone()))
        {
            if let Ok(mut t) = m.last_poll.lock() {
                *t = Instant::now();
            }
        }
        self.mark_processed();
        if let Some(e) = self.shared.error.lock().ok().and_then(|mut e| e.take()) {
            return Err(e);
        }
        // A connection that failed to authenticate: the application hears of it at once
        // (fetching retries with backoff meanwhile).
        if let Some(e) = self.shared.cluster.take_auth_error() {
            return Err(e);
        }
        let max = self.shared.cluster.config().consumer.max_poll_records;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let ready = self.shared.data_ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            let mut out = Vec::new();
            if let Ok(mut r) = self.ready.lock() {
                while out.len() < max {
                    match r.pop_front() {
                        Some(rec) => out.push(rec),
                        None => break,
                    }
                }
            }
            if out.len() < max {
                self.drain(max - out.len(), &mut out)?;
            }
            if !out.is_empty() {
                self.shared.fetch_wake.notify_one();
                return Ok(out);
            }
            if tokio::time::timeout_at(deadline, ready).await.is_err() {
                return Ok(out);
            }
        }
    }

    /// The application asks for more records (`poll`), so it has finished with every record
    /// handed out before: each partition's `processed` offset becomes its position, or the
    /// first offset still waiting in `recv`'s buffer (when the two are mixed).
    fn mark_processed(&self) {
        let mut waiting: HashMap<TopicPartition, i64> = HashMap::new();
        if let Ok(ready) = self.ready.lock() {
            for r in ready.iter() {
                let tp = TopicPartition {
                    topic: r.topic.clone(),
                    partition: r.partition,
                };
                let first = waiting.entry(tp).or_insert(r.offset);
                *first = (*first).min(r.offset);
            }
        }
        let mut state = self.shared.lock();
        for (tp, p) in state.parts.iter_mut() {
            let buffered = waiting.get(tp).copied();
            if let Some(offset) = buffered.or(p.position) {
                p.processed = Some(offset);
            }
        }
    }

    /// Waits for the next record.
    pub async fn recv(&self) -> Result<ConsumerRecord> {
        // The record returned last is handled now (O(1); `poll`, called below only once the
        // buffer is empty, marks everything before it).
        if let Some((tp, offset)) = self.recv_last.lock().ok().and_then(|mut l| l.take()) {
            if let Some(p) = self.shared.lock().parts.get_mut(&tp) {
                p.processed = Some(p.processed.map_or(offset + 1, |o| o.max(offset + 1)));
            }
        }
        loop {
            if let Some(r) = self.ready.lock().ok().and_then(|mut r| r.pop_front()) {
                if let Ok(mut last) = self.recv_last.lock() {
                    *last = Some((
                        TopicPartition {
                            topic: r.topic.clone(),
                            partition: r.partition,
                        },
                        r.offset,
                    ));
                }
                return Ok(r);
            }
            let batch = self.poll(Duration::from_secs(3600)).await?;
            if let Ok(mut r) = self.ready.lock() {
                r.extend(batch);
            }
        }
    }

    /// Moves up to `max` records from the fetch buffer into `out`, advancing positions.
    fn drain(&self, max: usize, out: &mut Vec<ConsumerRecord>) -> Result<()> {
        let check_crcs = self.shared.cluster.config().consumer.check_crcs;
        let mut state = self.shared.lock();
        if let Some((tp, _)) = state
            .parts
            .iter()
            .find(|(_, p)| p.position.is_none() && p.reset.is_none() && !p.paused)
        {
            // auto.offset.reset=none and nothing to start from (Java: NoOffsetForPartitionException).
            return Err(Error::config(
                "auto.offset.reset",
                format!(
                    "no position for {}-{} and auto.offset.reset is none: seek first",
                    tp.topic, tp.partition
                ),
            ));
        }
        let error_tp = state
            .parts
            .iter()
            .find(|(_, p)| p.error.is_some())
            .map(|(tp, _)| tp.clone());
        if let Some(tp) = error_tp {
            if let Some(e) = state.parts.get_mut(&tp).and_then(|p| p.error.take()) {
                return Err(e);
            }
        }
        let mut skipped = VecDeque::new();
        while out.len() < max {
            let Some(mut buffered) = state.buffer.pop_front() else {
                break;
            };
            let Some(part) = state.parts.get_mut(&buffered.tp) else {
                state.buffered_bytes -= buffered.bytes;
                continue;
            };
            if part.generation != buffered.generation {
                state.buffered_bytes -= buffered.bytes;
                continue;
            }
            if part.paused {
                skipped.push_back(buffered);
                continue;
            }
            let mut position = part.position.unwrap_or(0);
            // Leader epoch of the last batch the position moved through (KIP-320).
            let mut last_epoch = part.last_epoch;
            let mut failure = None;
            let mut exhausted = false;
            let (mut rx_records, mut rx_bytes) = (0u64, 0u64);
            while out.len() < max {
                if buffered.current.is_none() {
                    match buffered.batches.next() {
                        None => {
                            exhausted = true;
                            break;
                        }
                        Some(Err(e)) => {
                            failure = Some(e);
                            break;
                        }
                        Some(Ok(batch)) => {
                            if check_crcs {
                                if let Err(e) = batch.validate_crc() {
                                    failure = Some(e);
                                    break;
                                }
                            }
                            let next = batch.next_offset();
                            let epoch = batch.partition_leader_epoch();
                            // Control batches and aborted transactions (read_committed) are
                            // skipped; the position still moves past them.
                            let skip = buffered.skip(&batch);
                            if skip || next <= position {
                                if next > position && epoch >= 0 {
                                    last_epoch = Some(epoch);
                                }
                                position = position.max(next);
                                continue;
                            }
                            let tt = batch.attributes().timestamp_type();
                            match batch.records() {
                                Ok(records) => {
                                    buffered.current = Some(state::CurrentBatch {
                                        records,
                                        next_offset: next,
                                        log_append_time: tt == TimestampType::LogAppendTime,
                                        leader_epoch: (epoch >= 0).then_some(epoch),
                                    })
                                }
                                Err(e) => {
                                    failure = Some(e);
                                    break;
                                }
                            }
                        }
                    }
                }
                let Some(current) = buffered.current.as_mut() else {
                    continue;
                };
                match current.records.next() {
                    None => {
                        position = position.max(current.next_offset);
                        last_epoch = current.leader_epoch.or(last_epoch);
                        buffered.current = None;
                    }
                    Some(Err(e)) => {
                        failure = Some(e);
                        break;
                    }
                    Some(Ok(r)) => {
                        if r.offset < position {
                            continue;
                        }
                        position = r.offset + 1;
                        last_epoch = current.leader_epoch.or(last_epoch);
                        rx_records += 1;
                        rx_bytes += (r.key.as_ref().map_or(0, |k| k.len())
                            + r.value.as_ref().map_or(0, |v| v.len()))
                            as u64;
                        out.push(ConsumerRecord {
                            topic: buffered.tp.topic.clone(),
                            partition: buffered.tp.partition,
                            offset: r.offset,
                            timestamp: r.timestamp,
                            timestamp_type: if current.log_append_time {
                                TimestampType::LogAppendTime
                            } else {
                                TimestampType::CreateTime
                            },
                            key: r.key,
                            value: r.value,
                            headers: r.headers,
                            leader_epoch: current.leader_epoch,
                        });
                    }
                }
            }
            let part = state.parts.get_mut(&buffered.tp);
            if let Some(part) = part {
                part.position = Some(position);
                part.last_epoch = last_epoch;
                part.rx_records += rx_records;
                part.rx_bytes += rx_bytes;
                if let Some(e) = failure {
                    // Do not skip past a corrupt batch silently: stop this partition and raise.
                    part.error = Some(e);
                    part.fetch_offset = Some(position);
                    part.generation = state::next_generation();
                    exhausted = true;
                }
            }
            if exhausted {
                state.buffered_bytes -= buffered.bytes;
            } else {
                state.buffer.push_front(buffered);
                break;
            }
        }
        for b in skipped.into_iter().rev() {
            state.buffer.push_front(b);
        }
        Ok(())
    }

    /// Subscribes to topics (group mode; needs `group.id`). Partitions arrive through rebalances;
    /// `listener` hears about them.
    pub fn subscribe(
        &self,
        topics: &[&str],
        listener: Option<Arc<dyn RebalanceListener>>,
    ) -> Result<()> {
        self.subscribe_to(
            Topics::Names(topics.iter().map(|t| t.to_string()).collect()),
            listener,
        )
    }

    /// Subscribes to every topic matching a regular expression (group mode).
    pub fn subscribe_pattern(
        &self,
        pattern: &str,
        listener: Option<Arc<dyn RebalanceListener>>,
    ) -> Result<()> {
        let re = regex::Regex::new(pattern).map_err(|e| Error::config("pattern", e.to_string()))?;
        self.subscribe_to(Topics::Pattern(re), listener)
    }

    fn subscribe_to(
        &self,
        topics: Topics,
        listener: Option<Arc<dyn RebalanceListener>>,
    ) -> Result<()> {
        if self.shared.group.is_none() {
            return Err(Error::config("group.id", "subscribe needs group.id"));
        }
        let previous = self.membership.lock().ok().and_then(|mut m| m.take());
        if let Some((m, handle)) = previous {
            m.stop.store(true, Ordering::Release);
            m.wake.notify_one();
            handle.abort();
        }
        self.assign(&[]);
        let m = Arc::new(group::Membership::new(topics, listener));
        let handle = tokio::spawn(group::run(self.shared.clone(), m.clone()));
        if let Ok(mut slot) = self.membership.lock() {
            *slot = Some((m, handle));
        }
        Ok(())
    }

    /// Leaves the group (committing delivered offsets first when auto-commit is on).
    pub async fn unsubscribe(&self) {
        let current = self.membership.lock().ok().and_then(|mut m| m.take());
        if let Some((m, handle)) = current {
            m.stop.store(true, Ordering::Release);
            m.wake.notify_one();
            let _ = handle.await;
        }
        self.assign(&[]);
    }

    /// Partitions currently assigned (by `assign` or by the group).
    pub fn subscription_assignment(&self) -> Vec<TopicPartition> {
        self.assignment()
    }

    /// Commits offsets synchronously: the given ones, or the positions of every assigned
    /// partition (the next record the application has not seen yet).
    pub async fn commit_sync(&self, offsets: Option<&[(TopicPartition, i64)]>) -> Result<()> {
        let Some(group) = &self.shared.group else {
            return Err(Error::config(
                "group.id",
                "committing offsets needs group.id",
            ));
        };
        match offsets {
            None => group::commit_positions(&self.shared, None, group::Progress::Delivered).await,
            Some(list) => {
                let list: Vec<(TopicPartition, i64, Option<String>)> =
                    list.iter().map(|(tp, o)| (tp.clone(), *o, None)).collect();
                let results = group.lock().await.commit(&list).await?;
                match results.into_iter().find(|(_, c)| !c.is_ok()) {
                    Some((_, code)) => Err(Error::Kafka(code)),
                    None => Ok(()),
                }
            }
        }
    }

    /// Commits without waiting (Java's `commitAsync`): the given offsets, or the positions of
    /// every assigned partition as they are *now*, are sent by a background task in call order
    /// (a later commit never lands before an earlier one). The returned future reports the
    /// result; it need not be awaited. Must be called inside the consumer's tokio runtime.
    pub fn commit_async(
        &self,
        offsets: Option<&[(TopicPartition, i64)]>,
    ) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let list: Vec<(TopicPartition, i64, Option<String>)> = match offsets {
            Some(list) => list.iter().map(|(tp, o)| (tp.clone(), *o, None)).collect(),
            None => group::positions(&self.shared, None, group::Progress::Delivered),
        };
        let submitted = match &self.shared.group {
            None => Err(Error::config(
                "group.id",
                "committing offsets needs group.id",
            )),
            Some(_) if list.is_empty() => Ok(None),
            Some(group) => Ok(Some(
                self.committer
                    .get_or_init(|| commit_async::AsyncCommitter::start(group.clone()))
                    .submit(list),
            )),
        };
        async move {
            match submitted? {
                Some(result) => result.await,
                None => Ok(()),
            }
        }
    }

    /// Commits `(partition, offset, metadata)` and returns each partition's result code (the
    /// call fails only when the request got no answer). In a group generation the member id and
    /// generation fence stale members; otherwise it is a standalone commit.
    pub async fn commit_offsets(
        &self,
        offsets: &[(TopicPartition, i64, Option<String>)],
    ) -> Result<Vec<(TopicPartition, ErrorCode)>> {
        let Some(group) = &self.shared.group else {
            return Err(Error::config(
                "group.id",
                "committing offsets needs group.id",
            ));
        };
        group.lock().await.commit(offsets).await
    }

    /// The rebalance protocol of the current group generation, as librdkafka names it:
    /// `"COOPERATIVE"`, `"EAGER"`, or `"NONE"` when not subscribed.
    pub fn rebalance_protocol(&self) -> &'static str {
        let membership = self.membership.lock().ok();
        match membership.as_ref().and_then(|m| m.as_ref()) {
            None => "NONE",
            Some((m, _)) if m.cooperative.load(Ordering::Acquire) => "COOPERATIVE",
            Some(_) => "EAGER",
        }
    }

    /// Committed offsets of the group for `partitions` (`None` where nothing is committed).
    pub async fn committed(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<HashMap<TopicPartition, Option<i64>>> {
        let Some(group) = &self.shared.group else {
            return Err(Error::config("group.id", "committed offsets need group.id"));
        };
        let found = group.lock().await.committed(partitions).await?;
        Ok(partitions
            .iter()
            .map(|tp| (tp.clone(), found.get(tp).cloned().flatten().map(|(o, _)| o)))
            .collect())
    }

    /// The member id and generation (for `send_offsets_to_transaction`), when in a group.
    pub async fn group_metadata(&self) -> Option<(String, String, i32)> {
        let g = self.shared.group.as_ref()?.lock().await;
        Some((g.group_id.clone(), g.member_id.clone(), g.generation))
    }

    /// What the latest completed join of the group gave this member (leader, protocol,
    /// generation): KafkaJS's GROUP_JOIN payload. `None` before the first assignment.
    pub fn join_info(&self) -> Option<JoinInfo> {
        let m = self.membership.lock().ok()?;
        let (m, _) = m.as_ref()?;
        let info = m.last_join.lock().ok()?.clone();
        info
    }

    /// The group identity for [`crate::Producer::send_offsets_to_transaction`]: group id,
    /// member id, generation and `group.instance.id`, so the coordinator fences this consumer's
    /// transactional commits once it has lost its partitions (KIP-447). `None` without
    /// `group.id`.
    pub async fn consumer_group_metadata(&self) -> Option<crate::types::GroupMetadata> {
        let g = self.shared.group.as_ref()?.lock().await;
        Some(crate::types::GroupMetadata {
            group_id: g.group_id.clone(),
            member_id: g.member_id.clone(),
            generation_id: g.generation,
            group_instance_id: g.instance_id.clone(),
        })
    }

    /// Stops the fetcher and closes connections.
    pub async fn close(&self) {
        self.unsubscribe().await;
        self.shared.lock().closed = true;
        self.shared.fetch_wake.notify_one();
        let handle = self.fetcher.lock().ok().and_then(|mut f| f.take());
        if let Some(h) = handle {
            let _ = h.await;
        }
        self.shared.cluster.close();
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.fetch_wake.notify_one();
    }
}
