//! The consumer every shell wraps: records, errors and partition-EOF events wait in one local
//! queue, handed out one at a time (`poll`) or in batches (`consume`) without touching the
//! runtime while the queue has items. Partitions come from `assign`, or from a consumer group
//! (`subscribe`, in [`group`]): rebalance and commit events ([`GroupEvent`]) wait in a second
//! queue that shells serve first, on the application's thread.
//!
//! The core's `poll` returns up to `max.poll.records` records at once; the queue holds them so
//! the shells' per-message calls cost a lock and a pop. Partition EOF (`enable.partition.eof`)
//! is computed here: a partition is *armed* when assigned, seeked or after it returned a record,
//! and when a core poll comes back empty the armed, unpaused partitions whose position has
//! reached the high watermark (one ListOffsets round trip for all of them) each yield one EOF
//! event and are disarmed.

mod group;
mod offsets;
mod rebalance;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use odradek::consumer::{list_offsets, LATEST};
use odradek::producer::TopicPartition;
use odradek::{Consumer, ConsumerRecord};
use tokio::runtime::Handle;

use crate::config::BindingSettings;
use crate::runtime::{self, ForkGuard, Signal};
use crate::throttle::{Throttle, ThrottleQueue};
use crate::{codes, ClientError, Stage};

pub use group::{EventHook, GroupMetadata};
pub use offsets::{CommitOffset, CommitReport, CommitSource, CommittedOffset};
pub use rebalance::{GroupEvent, Rebalance, RebalanceKind};

/// `OFFSET_BEGINNING`: the log start offset.
pub const OFFSET_BEGINNING: i64 = -2;
/// `OFFSET_END`: the high watermark.
pub const OFFSET_END: i64 = -1;
/// `OFFSET_STORED`: the group's committed offset (`auto.offset.reset` when none).
pub const OFFSET_STORED: i64 = -1000;
/// `OFFSET_INVALID`: no offset given: the committed offset with `group.id`, else
/// `auto.offset.reset`.
pub const OFFSET_INVALID: i64 = -1001;

/// What the consumer hands out.
#[derive(Debug)]
pub enum Item {
    /// A record.
    Record(ConsumerRecord),
    /// A consume error (the partition is not known for core errors).
    Error(ClientError),
    /// The consumer reached the end of a partition.
    Eof {
        /// Topic.
        topic: Arc<str>,
        /// Partition.
        partition: i32,
        /// The end offset (the next record will have it).
        offset: i64,
    },
}

struct Inner {
    core: Consumer,
    handle: Handle,
    fork: ForkGuard,
    settings: BindingSettings,
    queue: Mutex<VecDeque<Item>>,
    /// Paused partitions: their queued items stay queued until resumed.
    paused: Mutex<Vec<TopicPartition>>,
    /// Partition -> armed for an EOF event.
    eof: Mutex<HashMap<TopicPartition, bool>>,
    last_eof_check: Mutex<Option<Instant>>,
    stats: Mutex<VecDeque<String>>,
    closed: AtomicBool,
    group: group::GroupState,
    /// Throttle reports, once the shell asked for them ([`ConsumerClient::report_throttles`]).
    throttles: OnceLock<Arc<ThrottleQueue>>,
    /// Client-level errors for the shell's error callback ([`ConsumerClient::take_errors`]).
    errors: Arc<crate::client_errors::ErrorQueue>,
    /// Held by the one fetch that polls the core and queues what it got: two overlapping
    /// fetches (a shell's poll that returned on a group event while its fetch ran on) would
    /// otherwise queue their batches in whichever order they finish, out of offset order.
    fetch_turn: tokio::sync::Mutex<()>,
}

impl Inner {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// A consumer for a language shell.
pub struct ConsumerClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ConsumerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerClient")
            .field("queued", &self.queued())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn map(e: odradek::Error) -> ClientError {
    ClientError::from_core(&e, Stage::Request)
}

fn map_consume(e: &odradek::Error) -> ClientError {
    match e {
        odradek::Error::Config { key, .. } if key == "auto.offset.reset" => {
            ClientError::new(codes::NO_OFFSET, Some(e.to_string()))
        }
        other => ClientError::from_core(other, Stage::Consume),
    }
}

impl ConsumerClient {
    /// Creates a consumer on the shared runtime from Kafka property names.
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        config: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ClientError> {
        let (config, settings) = crate::config::split(config)?;
        Self::from_config(config, settings)
    }

    /// Creates a consumer from a configuration the shell already split (and completed in code,
    /// e.g. with an OAUTHBEARER token callback).
    pub fn from_config(
        mut config: odradek::ClientConfig,
        settings: crate::config::BindingSettings,
    ) -> Result<Self, ClientError> {
        // Auto-commit commits what was handed to the application (the offset store), so this
        // layer does it; the core's would commit fetch positions.
        let auto_commit = config.consumer.enable_auto_commit && config.consumer.group_id.is_some();
        let auto_commit_interval = config.consumer.auto_commit_interval;
        config.consumer.enable_auto_commit = false;
        let handle = runtime::runtime()?;
        let core = {
            let _enter = handle.enter();
            Consumer::new(config).map_err(map)?
        };
        let inner = Arc::new(Inner {
            core,
            handle: handle.clone(),
            fork: ForkGuard::new(),
            settings,
            queue: Mutex::new(VecDeque::new()),
            paused: Mutex::new(Vec::new()),
            eof: Mutex::new(HashMap::new()),
            last_eof_check: Mutex::new(None),
            stats: Mutex::new(VecDeque::new()),
            closed: AtomicBool::new(false),
            group: group::GroupState::new(auto_commit),
            throttles: OnceLock::new(),
            errors: Arc::default(),
            fetch_turn: tokio::sync::Mutex::new(()),
        });
        {
            let errors = inner.errors.clone();
            inner
                .core
                .cluster()
                .set_error_listener(crate::client_errors::listener(move |e| errors.push(e)));
        }
        if let Some(every) = inner.settings.statistics_interval {
            handle.spawn(stats_ticker(Arc::downgrade(&inner), every));
        }
        if auto_commit {
            handle.spawn(offsets::auto_commit(
                Arc::downgrade(&inner),
                auto_commit_interval,
            ));
        }
        Ok(ConsumerClient { inner })
    }

    /// The core consumer.
    pub fn core(&self) -> &Consumer {
        &self.inner.core
    }

    /// The runtime handle.
    pub fn handle(&self) -> &Handle {
        &self.inner.handle
    }

    /// The binding-level settings.
    pub fn settings(&self) -> &BindingSettings {
        &self.inner.settings
    }

    /// Fails when the consumer is closed or was created before `fork()`.
    pub fn check_usable(&self) -> Result<(), ClientError> {
        self.inner.fork.check()?;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::state("consumer is closed"));
        }
        Ok(())
    }

    /// Whether `close` completed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Forgets local state of partitions outside `keep` (queued items, EOF, pauses, stored
    /// offsets) without touching the core's assignment.
    fn reset_local(&self, keep: &[TopicPartition]) {
        self.forget(|t, p| keep.iter().any(|tp| &*tp.topic == t && tp.partition == p));
        lock(&self.inner.paused).retain(|tp| keep.contains(tp));
        lock(&self.inner.eof).retain(|tp, _| keep.contains(tp));
    }

    /// Newly assigned partitions start without a stored offset (as in librdkafka). Offsets
    /// stored for unassigned partitions are dropped when a revoke is finished.
    fn forget_stored(&self, added: &[TopicPartition]) {
        lock(&self.inner.group.store).retain(|tp| !added.contains(tp));
    }

    fn forget(&self, keep: impl Fn(&str, i32) -> bool) {
        lock(&self.inner.queue).retain(|item| match item {
            Item::Record(r) => keep(&r.topic, r.partition),
            Item::Eof {
                topic, partition, ..
            } => keep(topic, *partition),
            Item::Error(_) => true,
        });
    }

    fn start_at(&self, tp: &TopicPartition, offset: i64) -> Result<(), ClientError> {
        let core = &self.inner.core;
        match offset {
            o if o >= 0 => core.seek(tp, o),
            OFFSET_BEGINNING => core.seek_to_beginning(std::slice::from_ref(tp)),
            OFFSET_END => core.seek_to_end(std::slice::from_ref(tp)),
            OFFSET_STORED | OFFSET_INVALID => Ok(()),
            other => {
                return Err(ClientError::invalid_arg(format!(
                    "invalid offset {other} for {}-{}",
                    tp.topic, tp.partition
                )))
            }
        }
        .map_err(map)
    }

    /// Replaces the assignment; each partition starts at its offset (absolute, or
    /// `OFFSET_BEGINNING` / `OFFSET_END`; `OFFSET_STORED` / `OFFSET_INVALID` follow
    /// `auto.offset.reset`).
    pub fn assign(&self, partitions: &[(TopicPartition, i64)]) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.group.app_assigned.store(true, Ordering::Release);
        self.assign_unchecked(partitions)
    }

    fn assign_unchecked(&self, partitions: &[(TopicPartition, i64)]) -> Result<(), ClientError> {
        let tps: Vec<TopicPartition> = partitions.iter().map(|(tp, _)| tp.clone()).collect();
        let before = self.inner.core.assignment();
        self.inner.core.assign(&tps);
        self.reset_local(&tps);
        let added: Vec<TopicPartition> = tps
            .iter()
            .filter(|tp| !before.contains(tp))
            .cloned()
            .collect();
        self.forget_stored(&added);
        {
            let mut eof = lock(&self.inner.eof);
            eof.clear();
            eof.extend(tps.iter().map(|tp| (tp.clone(), true)));
        }
        for (tp, offset) in partitions {
            self.start_at(tp, *offset)?;
        }
        Ok(())
    }

    /// Adds partitions to the assignment, keeping the others' positions.
    pub fn incremental_assign(
        &self,
        partitions: &[(TopicPartition, i64)],
    ) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.group.app_assigned.store(true, Ordering::Release);
        self.incremental_assign_unchecked(partitions)
    }

    fn incremental_assign_unchecked(
        &self,
        partitions: &[(TopicPartition, i64)],
    ) -> Result<(), ClientError> {
        let mut all = self.inner.core.assignment();
        for (tp, _) in partitions {
            if all.contains(tp) {
                return Err(ClientError::invalid_arg(format!(
                    "{}-{} is already assigned",
                    tp.topic, tp.partition
                )));
            }
            all.push(tp.clone());
        }
        self.inner.core.assign(&all);
        let added: Vec<TopicPartition> = partitions.iter().map(|(tp, _)| tp.clone()).collect();
        self.forget_stored(&added);
        lock(&self.inner.eof).extend(partitions.iter().map(|(tp, _)| (tp.clone(), true)));
        for (tp, offset) in partitions {
            self.start_at(tp, *offset)?;
        }
        Ok(())
    }

    /// Removes partitions from the assignment.
    pub fn incremental_unassign(&self, partitions: &[TopicPartition]) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.group.app_assigned.store(true, Ordering::Release);
        self.incremental_unassign_unchecked(partitions);
        Ok(())
    }

    fn incremental_unassign_unchecked(&self, partitions: &[TopicPartition]) {
        let all: Vec<TopicPartition> = self
            .inner
            .core
            .assignment()
            .into_iter()
            .filter(|tp| !partitions.contains(tp))
            .collect();
        self.inner.core.assign(&all);
        self.reset_local(&all);
    }

    /// The current assignment.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.inner.core.assignment()
    }

    /// Moves a partition's position (absolute or logical offset). Records already queued for it
    /// are discarded.
    pub fn seek(&self, tp: &TopicPartition, offset: i64) -> Result<(), ClientError> {
        self.check_usable()?;
        if !self.inner.core.assignment().contains(tp) {
            return Err(ClientError::state(format!(
                "{}-{} is not assigned: assign() it first (seek only moves an assigned partition)",
                tp.topic, tp.partition
            )));
        }
        self.forget(|t, p| !(&*tp.topic == t && tp.partition == p));
        if let Some(armed) = lock(&self.inner.eof).get_mut(tp) {
            *armed = true;
        }
        self.start_at(tp, offset)
    }

    /// Pauses partitions: nothing more is fetched or handed out for them (items already
    /// queued wait until they are resumed).
    pub fn pause(&self, tps: &[TopicPartition]) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.core.pause(tps).map_err(map)?;
        let mut paused = lock(&self.inner.paused);
        for tp in tps {
            if !paused.contains(tp) {
                paused.push(tp.clone());
            }
        }
        Ok(())
    }

    /// Resumes partitions.
    pub fn resume(&self, tps: &[TopicPartition]) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.core.resume(tps).map_err(map)?;
        lock(&self.inner.paused).retain(|tp| !tps.contains(tp));
        Ok(())
    }

    /// Positions (next offset to hand out) of `tps`: the first queued record's offset while
    /// records of the partition wait in the local queue, else the core's position (looked up if
    /// needed).
    pub fn positions(
        &self,
        tps: Vec<TopicPartition>,
    ) -> impl Future<Output = Vec<Result<i64, ClientError>>> + Send + 'static {
        let inner = self.inner.clone();
        async move {
            let mut out = Vec::with_capacity(tps.len());
            for tp in &tps {
                let queued = lock(&inner.queue).iter().find_map(|item| match item {
                    Item::Record(r) if r.partition == tp.partition && r.topic == tp.topic => {
                        Some(r.offset)
                    }
                    _ => None,
                });
                out.push(match queued {
                    Some(o) => Ok(o),
                    None => inner.core.position(tp).await.map_err(map),
                });
            }
            out
        }
    }

    /// `(low, high)` watermarks of a partition.
    pub fn watermarks(
        &self,
        tp: TopicPartition,
    ) -> impl Future<Output = Result<(i64, i64), ClientError>> + Send + 'static {
        let inner = self.inner.clone();
        async move { inner.core.fetch_watermarks(&tp).await.map_err(map) }
    }

    /// For each `(partition, timestamp)`, the earliest offset whose timestamp is at or after
    /// it, or -1 when there is none.
    pub fn offsets_for_times(
        &self,
        query: Vec<(TopicPartition, i64)>,
    ) -> impl Future<Output = Result<Vec<(TopicPartition, i64)>, ClientError>> + Send + 'static
    {
        let inner = self.inner.clone();
        async move {
            let found = inner.core.offsets_for_times(&query).await.map_err(map)?;
            Ok(query
                .into_iter()
                .map(|(tp, _)| {
                    let offset = found.get(&tp).copied().flatten().map_or(-1, |(o, _)| o);
                    (tp, offset)
                })
                .collect())
        }
    }

    /// Items waiting in the local queue.
    pub fn queued(&self) -> usize {
        lock(&self.inner.queue).len()
    }

    /// Stores the offsets of records handed to the application (`enable.auto.offset.store`).
    fn auto_store<'a>(&self, items: impl Iterator<Item = &'a Item>) {
        if !self.inner.settings.enable_auto_offset_store {
            return;
        }
        let mut store = None;
        for item in items {
            if let Item::Record(r) = item {
                let store = store.get_or_insert_with(|| lock(&self.inner.group.store));
                let tp = TopicPartition {
                    topic: r.topic.clone(),
                    partition: r.partition,
                };
                store.store(&tp, r.offset + 1, None);
            }
        }
    }

    /// Takes up to `max` queued items without waiting (skipping paused partitions'). With
    /// `enable.auto.offset.store` the records' offsets are stored for the next commit.
    pub fn take(&self, max: usize, out: &mut Vec<Item>) -> usize {
        let before = out.len();
        let n = self.take_inner(max, out);
        self.auto_store(out[before..].iter());
        n
    }

    fn take_inner(&self, max: usize, out: &mut Vec<Item>) -> usize {
        let paused = lock(&self.inner.paused);
        let mut q = lock(&self.inner.queue);
        if paused.is_empty() {
            let n = q.len().min(max);
            out.extend(q.drain(..n));
            return n;
        }
        let before = out.len();
        let mut kept = VecDeque::new();
        while out.len() - before < max {
            let Some(item) = q.pop_front() else { break };
            if is_paused(&paused, &item) {
                kept.push_back(item);
            } else {
                out.push(item);
            }
        }
        while let Some(item) = kept.pop_back() {
            q.push_front(item);
        }
        out.len() - before
    }

    /// Takes one queued item without waiting (storing its offset like [`ConsumerClient::take`]).
    pub fn take_one(&self) -> Option<Item> {
        let item = self.take_one_inner()?;
        self.auto_store(std::iter::once(&item));
        Some(item)
    }

    fn take_one_inner(&self) -> Option<Item> {
        let paused = lock(&self.inner.paused);
        let mut q = lock(&self.inner.queue);
        if paused.is_empty() {
            return q.pop_front();
        }
        let i = q.iter().position(|item| !is_paused(&paused, item))?;
        q.remove(i)
    }

    /// Takes the statistics snapshots due (`statistics.interval.ms`).
    pub fn take_stats(&self) -> Vec<String> {
        lock(&self.inner.stats).drain(..).collect()
    }

    /// Takes the client-level errors waiting for the error callback (authentication failures,
    /// brokers down), oldest first.
    pub fn take_errors(&self) -> Vec<ClientError> {
        self.inner.errors.take()
    }

    /// Starts keeping the brokers' throttle reports for [`ConsumerClient::take_throttles`] (the
    /// shell has a `throttle_cb`; serve them with the statistics, between fetches). Installs the
    /// cluster's throttle listener; later calls do nothing.
    pub fn report_throttles(&self) {
        self.inner
            .throttles
            .get_or_init(|| ThrottleQueue::attach(self.inner.core.cluster(), Signal::new()));
    }

    /// Takes the throttle reports waiting (none unless [`ConsumerClient::report_throttles`]
    /// was called), oldest first.
    pub fn take_throttles(&self) -> Vec<Throttle> {
        self.inner
            .throttles
            .get()
            .map_or_else(Vec::new, |q| q.take())
    }

    /// Puts throttle reports back for the next `poll` (a callback raised).
    pub fn requeue_throttles(&self, reports: Vec<Throttle>) {
        if let Some(q) = self.inner.throttles.get() {
            q.requeue(reports);
        }
    }

    /// Waits up to `wait` for the core to return records and queues them (with errors and EOF
    /// events). Returns how many items were queued; returns early when a group event is
    /// queued. Blocks the calling thread: the Python shell calls it with the GIL released.
    pub fn fetch(&self, wait: Duration) -> usize {
        let inner = self.inner.clone();
        runtime::block_on(&self.inner.handle, fetch_into(inner, wait))
    }

    /// Like [`ConsumerClient::fetch`] on the runtime: `done` runs there with the count.
    pub fn fetch_then(&self, wait: Duration, done: impl FnOnce(usize) + Send + 'static) {
        let inner = self.inner.clone();
        runtime::spawn_then(&self.inner.handle, fetch_into(inner, wait), done);
    }

    /// Leaves the group (serve group events while this runs: the final revoke is one), commits
    /// the stored offsets with `enable.auto.commit`, stops fetching and closes connections.
    /// Queued items are dropped. The client counts as closed once this completes.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let inner = self.inner.clone();
        async move {
            group::leave(&inner).await;
            if inner.group.auto_commit {
                if let Ok(list) = offsets::resolve(&inner, CommitSource::Stored) {
                    let report = offsets::send(inner.clone(), list).await;
                    if let Some(e) = report.error {
                        tracing::debug!(error = %e, "commit on close failed");
                    }
                }
            }
            inner.closed.store(true, Ordering::Release);
            lock(&inner.queue).clear();
            lock(&inner.group.events).clear();
            inner.core.close().await
        }
    }
}

fn is_paused(paused: &[TopicPartition], item: &Item) -> bool {
    let (topic, partition) = match item {
        Item::Record(r) => (&r.topic, r.partition),
        Item::Eof {
            topic, partition, ..
        } => (topic, *partition),
        Item::Error(_) => return false,
    };
    paused
        .iter()
        .any(|tp| tp.partition == partition && tp.topic == *topic)
}

/// Polls the core for up to `wait` and queues what it returns. One fetch at a time holds the
/// turn from the poll to the queueing (a second one waits for it within its own `wait`), so
/// batches are queued in the order the core handed them out. A group event ends the wait;
/// the core's poll gives records out without awaiting, so dropping it there loses none.
async fn fetch_into(inner: Arc<Inner>, wait: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + wait;
    let _turn = tokio::select! {
        turn = tokio::time::timeout_at(deadline, inner.fetch_turn.lock()) => match turn {
            Ok(turn) => turn,
            Err(_) => return 0,
        },
        _ = inner.group.wake.notified() => return 0,
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let polled = tokio::select! {
        r = inner.core.poll(left) => r,
        _ = inner.group.wake.notified() => return 0,
    };
    match polled {
        Ok(records) if !records.is_empty() => {
            let n = records.len();
            if inner.settings.enable_partition_eof {
                let mut eof = lock(&inner.eof);
                for r in &records {
                    // Arm only partitions we track (a record of a partition unassigned meanwhile
                    // is dropped below anyway).
                    for (tp, armed) in eof.iter_mut() {
                        if tp.partition == r.partition && tp.topic == r.topic {
                            *armed = true;
                        }
                    }
                }
            }
            let assigned = inner.core.assignment();
            let mut q = lock(&inner.queue);
            q.extend(
                records
                    .into_iter()
                    .filter(|r| {
                        assigned
                            .iter()
                            .any(|tp| tp.partition == r.partition && tp.topic == r.topic)
                    })
                    .map(Item::Record),
            );
            n
        }
        Ok(_) => {
            if inner.settings.enable_partition_eof {
                check_eof(&inner).await
            } else {
                0
            }
        }
        Err(e) => {
            lock(&inner.queue).push_back(Item::Error(map_consume(&e)));
            1
        }
    }
}

/// Queues an EOF event for every armed partition whose position reached the high watermark.
async fn check_eof(inner: &Inner) -> usize {
    {
        let mut last = lock(&inner.last_eof_check);
        if last.is_some_and(|t| t.elapsed() < Duration::from_millis(10)) {
            return 0;
        }
        *last = Some(Instant::now());
    }
    let paused = inner.core.paused();
    let armed: Vec<TopicPartition> = lock(&inner.eof)
        .iter()
        .filter(|(tp, armed)| **armed && !paused.contains(tp))
        .map(|(tp, _)| tp.clone())
        .collect();
    if armed.is_empty() {
        return 0;
    }
    let mut positions = Vec::with_capacity(armed.len());
    for tp in &armed {
        match inner.core.position(tp).await {
            Ok(p) => positions.push((tp.clone(), p)),
            Err(_) => continue,
        }
    }
    let queries: Vec<(TopicPartition, i64)> = positions
        .iter()
        .map(|(tp, _)| (tp.clone(), LATEST))
        .collect();
    let read_committed = inner.core.cluster().config().consumer.read_committed;
    let Ok(ends) = list_offsets(inner.core.cluster(), &queries, read_committed).await else {
        return 0;
    };
    let mut n = 0;
    let mut eof = lock(&inner.eof);
    let mut q = lock(&inner.queue);
    for (tp, position) in positions {
        let Some(Some((end, _))) = ends.get(&tp) else {
            continue;
        };
        if position >= *end {
            if let Some(armed) = eof.get_mut(&tp).filter(|a| **a) {
                *armed = false;
                q.push_back(Item::Eof {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    offset: position,
                });
                n += 1;
            }
        }
    }
    n
}

async fn stats_ticker(inner: Weak<Inner>, every: Duration) {
    let emitter = crate::stats::Emitter::new("consumer");
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        let replyq = lock(&inner.queue).len();
        let stored = |tp: &TopicPartition| lock(&inner.group.store).stored_offset(tp);
        let shell = crate::stats::ConsumerShell {
            replyq,
            stored: &stored,
        };
        let json = crate::stats::consumer_json(&emitter, &inner.core, shell);
        lock(&inner.stats).push_back(json);
    }
}
