//! Consumer groups for the shells: subscribe, rebalance events, commits, the offset store and
//! group metadata, with librdkafka's semantics (see `offsets` and `rebalance`).
//!
//! A shell with a poll model serves [`GroupEvent`]s before records: `take_group_event`, run the
//! application's callback, then `finish_rebalance` for a [`Rebalance`]. Calls that wait for the
//! group (`unsubscribe`, `close`) need the same serving while they run: use
//! [`ConsumerClient::run_serving`] in slices and serve events in between. Push-style shells
//! register a hook with [`ConsumerClient::set_event_hook`] to learn that an event is waiting.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odradek::producer::TopicPartition;
use tokio::sync::Notify;

use super::offsets::{self, CommitOffset, CommitReport, CommitSource, OffsetStore};
use super::rebalance::{GroupEvent, Listener, Rebalance, RebalanceKind};
use super::{lock, map, ConsumerClient, Inner, OFFSET_INVALID};
use crate::{runtime, ClientError};

/// What a transactional producer needs to commit offsets for this consumer
/// (`send_offsets_to_transaction`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The member id ("" before joining).
    pub member_id: String,
    /// The generation (-1 before joining).
    pub generation: i32,
    /// `group.instance.id`, for static members.
    pub group_instance_id: Option<String>,
}

/// A callback a push-style shell registers to hear that a group event is waiting.
pub type EventHook = Arc<dyn Fn() + Send + Sync>;

/// Group state of a consumer client.
#[derive(Default)]
pub(crate) struct GroupState {
    pub events: Mutex<VecDeque<GroupEvent>>,
    pub store: Mutex<OffsetStore>,
    listener: Mutex<Option<Arc<Listener>>>,
    /// Set by assign / unassign / incremental_*: the application applied a rebalance itself.
    pub app_assigned: AtomicBool,
    report_commits: AtomicBool,
    hook: Mutex<Option<EventHook>>,
    /// Wakes a thread waiting in `fetch` or `run_serving` when an event is queued.
    pub wake: Notify,
    metadata: Mutex<Option<(String, i32)>>,
    /// `enable.auto.commit` as the application set it (the core's own is switched off).
    pub auto_commit: bool,
}

impl GroupState {
    pub fn new(auto_commit: bool) -> Self {
        GroupState {
            auto_commit,
            ..GroupState::default()
        }
    }
}

impl Inner {
    pub(crate) fn push_group_event(&self, event: GroupEvent) {
        lock(&self.group.events).push_back(event);
        self.group.wake.notify_one();
        let hook = lock(&self.group.hook).clone();
        if let Some(hook) = hook {
            hook();
        }
    }

    pub(crate) fn push_commit_report(&self, report: CommitReport) {
        if self.group.report_commits.load(Ordering::Acquire) {
            self.push_group_event(GroupEvent::Commit(report));
        }
    }

    /// Caches the member id and generation (read without waiting; the membership task does
    /// not hold the group client while it calls the listener).
    pub(crate) fn refresh_group_metadata(&self) {
        let mut fut = std::pin::pin!(self.core.group_metadata());
        if let std::task::Poll::Ready(Some((_, member, generation))) =
            runtime::poll_once(&self.handle, fut.as_mut())
        {
            *lock(&self.group.metadata) = Some((member, generation));
        }
    }

    fn listener(&self) -> Option<Arc<Listener>> {
        lock(&self.group.listener).clone()
    }
}

/// A subscription pattern matching `topics`: names match exactly, entries starting with `^`
/// are regular expressions (librdkafka's convention).
fn pattern(topics: &[String]) -> String {
    topics
        .iter()
        .map(|t| {
            if t.starts_with('^') {
                format!("(?:{t})")
            } else {
                format!("(?:^{}$)", regex::escape(t))
            }
        })
        .collect::<Vec<_>>()
        .join("|")
}

impl ConsumerClient {
    /// Subscribes to `topics` (names, or regular expressions starting with `^`), replacing any
    /// previous subscription or assignment. Partitions arrive as [`RebalanceKind::Assign`]
    /// events. Needs `group.id` (`_INVALID_ARG` otherwise).
    pub fn subscribe(&self, topics: &[String]) -> Result<(), ClientError> {
        self.check_usable()?;
        if topics.is_empty() || topics.iter().any(|t| t.is_empty()) {
            return Err(ClientError::invalid_arg(
                "subscribe needs at least one topic, and no empty names",
            ));
        }
        let listener = Arc::new(Listener::new(Arc::downgrade(&self.inner)));
        // The previous subscription's listener releases its membership task at once.
        if let Some(old) = lock(&self.inner.group.listener).replace(listener.clone()) {
            old.mark_handled(u64::MAX);
        }
        self.reset_local(&[]);
        lock(&self.inner.group.events).retain(|e| !matches!(e, GroupEvent::Rebalance(_)));
        let _enter = self.inner.handle.enter();
        let result = if topics.iter().any(|t| t.starts_with('^')) {
            self.inner
                .core
                .subscribe_pattern(&pattern(topics), Some(listener))
        } else {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            self.inner.core.subscribe(&names, Some(listener))
        };
        result.map_err(map)
    }

    /// Leaves the group: the partitions are revoked (a [`RebalanceKind::Revoke`] event the
    /// caller must serve while this runs, see [`ConsumerClient::run_serving`]; with
    /// `enable.auto.commit` their stored offsets are committed first), then the member leaves.
    pub fn unsubscribe(&self) -> impl Future<Output = ()> + Send + 'static {
        let inner = self.inner.clone();
        async move { leave(&inner).await }
    }

    /// Runs `fut` on the calling thread for at most `slice`, returning early (with `None`) when
    /// a group event is queued so the caller can serve it. `None` also means still pending.
    pub fn run_serving<F: Future>(&self, fut: Pin<&mut F>, slice: Duration) -> Option<F::Output> {
        if self.has_group_events() {
            return match runtime::poll_once(&self.inner.handle, fut) {
                std::task::Poll::Ready(out) => Some(out),
                std::task::Poll::Pending => None,
            };
        }
        let wake = &self.inner.group.wake;
        self.inner.handle.block_on(async move {
            tokio::select! {
                out = fut => Some(out),
                _ = wake.notified() => None,
                _ = tokio::time::sleep(slice) => None,
            }
        })
    }

    /// Whether a group event waits to be served.
    pub fn has_group_events(&self) -> bool {
        !lock(&self.inner.group.events).is_empty()
    }

    /// Takes the next group event (serve these before records). Taking a rebalance event
    /// starts tracking whether the application changes the assignment itself.
    pub fn take_group_event(&self) -> Option<GroupEvent> {
        let event = lock(&self.inner.group.events).pop_front()?;
        if matches!(event, GroupEvent::Rebalance(_)) {
            self.inner
                .group
                .app_assigned
                .store(false, Ordering::Release);
        }
        Some(event)
    }

    /// Completes a rebalance event after the application's callback ran (or when it has
    /// none): applies the default assignment change unless the application made one, commits
    /// the stored offsets of revoked partitions with `enable.auto.commit`, and releases the
    /// membership task. Returns the default change's error, if any.
    pub fn finish_rebalance(&self, event: Rebalance) -> Result<(), ClientError> {
        let result = if self.inner.group.app_assigned.swap(false, Ordering::AcqRel) {
            Ok(())
        } else {
            self.apply_default(&event)
        };
        let listener = self.inner.listener();
        let commit = match event.kind {
            RebalanceKind::Revoke if self.inner.group.auto_commit => {
                Some(offsets::stored_for(&self.inner, &event.partitions))
            }
            _ => None,
        };
        if event.kind != RebalanceKind::Assign {
            let gone = &event.partitions;
            lock(&self.inner.group.store).retain(|tp| !gone.contains(tp));
        }
        match (commit.filter(|c| !c.is_empty()), listener) {
            (Some(list), listener) => {
                let inner = self.inner.clone();
                self.inner.handle.spawn(async move {
                    let report = offsets::send(inner.clone(), list).await;
                    inner.push_commit_report(report);
                    if let Some(l) = listener {
                        l.mark_handled(event.seq);
                    }
                });
            }
            (None, Some(l)) => l.mark_handled(event.seq),
            (None, None) => {}
        }
        result
    }

    /// Applies a rebalance event's default assignment change now, before the application's
    /// callback runs, so the callback sees the new assignment and may `seek` in it (the Java
    /// client's `onPartitionsAssigned` order; the Kotlin shell uses it). `finish_rebalance`
    /// then leaves the assignment as it is. A revoke is applied by `finish_rebalance`, after
    /// the callback, so the callback can still commit the revoked partitions.
    pub fn apply_rebalance(&self, event: &Rebalance) -> Result<(), ClientError> {
        self.apply_default(event)?;
        self.inner.group.app_assigned.store(true, Ordering::Release);
        Ok(())
    }

    fn apply_default(&self, event: &Rebalance) -> Result<(), ClientError> {
        let parts = &event.partitions;
        match (event.kind, event.cooperative) {
            (RebalanceKind::Assign, false) => {
                let list: Vec<_> = parts
                    .iter()
                    .map(|tp| (tp.clone(), OFFSET_INVALID))
                    .collect();
                self.assign_unchecked(&list)
            }
            (RebalanceKind::Assign, true) => {
                let owned = self.inner.core.assignment();
                let list: Vec<_> = parts
                    .iter()
                    .filter(|tp| !owned.contains(tp))
                    .map(|tp| (tp.clone(), OFFSET_INVALID))
                    .collect();
                self.incremental_assign_unchecked(&list)
            }
            (_, false) => self.assign_unchecked(&[]),
            (_, true) => {
                self.incremental_unassign_unchecked(parts);
                Ok(())
            }
        }
    }

    /// Queue [`GroupEvent::Commit`] events for asynchronous commits and auto-commits (off by
    /// default; a shell turns it on when the application has a commit callback).
    pub fn report_commits(&self, on: bool) {
        self.inner.group.report_commits.store(on, Ordering::Release);
    }

    /// Registers a hook called (on a runtime thread) whenever a group event is queued.
    pub fn set_event_hook(&self, hook: Option<EventHook>) {
        *lock(&self.inner.group.hook) = hook;
    }

    /// The rebalance protocol: `"COOPERATIVE"`, `"EAGER"` or `"NONE"` (not subscribed).
    pub fn rebalance_protocol(&self) -> &'static str {
        self.inner.core.rebalance_protocol()
    }

    /// Stores offsets for the next commit (`store_offsets`). Fails with `_INVALID_ARG` when
    /// `enable.auto.offset.store` is on, as librdkafka does.
    pub fn store_offsets(&self, list: &[CommitOffset]) -> Result<(), ClientError> {
        self.check_usable()?;
        if self.settings().enable_auto_offset_store {
            return Err(ClientError::invalid_arg(
                "StoreOffsets failed: set enable.auto.offset.store=false to store offsets explicitly",
            ));
        }
        let mut store = lock(&self.inner.group.store);
        for o in list {
            store.store(&o.partition, o.offset, o.metadata.clone());
        }
        Ok(())
    }

    /// Commits now: resolves what to send on the caller's thread (`_NO_OFFSET` when nothing is
    /// stored) and returns the request to wait for.
    pub fn commit(
        &self,
        source: CommitSource,
    ) -> Result<impl Future<Output = CommitReport> + Send + 'static, ClientError> {
        self.check_usable()?;
        let assigned = match source {
            CommitSource::Stored => self.inner.core.assignment(),
            CommitSource::Offsets(_) => Vec::new(),
        };
        let offsets = offsets::resolve(&self.inner, source)?;
        let inner = self.inner.clone();
        Ok(async move {
            let report = offsets::send(inner, offsets).await;
            offsets::with_assignment(report, &assigned)
        })
    }

    /// Commits in the background; the outcome arrives as a [`GroupEvent::Commit`] (when
    /// `report_commits` is on), including `_NO_OFFSET` when nothing was stored.
    pub fn commit_async(&self, source: CommitSource) -> Result<(), ClientError> {
        self.check_usable()?;
        let assigned = match source {
            CommitSource::Stored => self.inner.core.assignment(),
            CommitSource::Offsets(_) => Vec::new(),
        };
        match offsets::resolve(&self.inner, source) {
            Ok(list) => {
                let inner = self.inner.clone();
                self.inner.handle.spawn(async move {
                    let report = offsets::send(inner.clone(), list).await;
                    inner.push_commit_report(offsets::with_assignment(report, &assigned));
                });
            }
            Err(e) => self.inner.push_commit_report(CommitReport {
                error: Some(e),
                offsets: Vec::new(),
            }),
        }
        Ok(())
    }

    /// The group's committed offsets of `partitions` (`OFFSET_INVALID` where none).
    pub fn committed(
        &self,
        partitions: Vec<TopicPartition>,
    ) -> impl Future<Output = Result<Vec<(TopicPartition, i64)>, ClientError>> + Send + 'static
    {
        let inner = self.inner.clone();
        async move {
            let found = inner.core.committed(&partitions).await.map_err(map)?;
            Ok(partitions
                .into_iter()
                .map(|tp| {
                    let offset = found.get(&tp).copied().flatten().unwrap_or(OFFSET_INVALID);
                    (tp, offset)
                })
                .collect())
        }
    }

    /// Group id, member id, generation and instance id (member "" and generation -1 outside a
    /// generation); `None` without `group.id`.
    pub fn group_metadata(&self) -> Option<GroupMetadata> {
        let config = &self.inner.core.cluster().config().consumer;
        let group_id = config.group_id.clone()?;
        let (member_id, generation) = lock(&self.inner.group.metadata)
            .clone()
            .unwrap_or_else(|| (String::new(), -1));
        Some(GroupMetadata {
            group_id,
            member_id,
            generation,
            group_instance_id: config.group_instance_id.clone(),
        })
    }

    /// The member id while in a group.
    pub fn member_id(&self) -> Option<String> {
        self.group_metadata()
            .map(|m| m.member_id)
            .filter(|m| !m.is_empty())
    }
}

/// Leaves the group and forgets local group state.
pub(crate) async fn leave(inner: &Arc<Inner>) {
    inner.core.unsubscribe().await;
    *lock(&inner.group.metadata) = None;
    if let Some(l) = lock(&inner.group.listener).take() {
        l.mark_handled(u64::MAX);
    }
    lock(&inner.group.events).retain(|e| !matches!(e, GroupEvent::Rebalance(_)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_mix_names_and_regexes() {
        let p = pattern(&["a.b".to_string(), "^c-.*".to_string()]);
        let re = regex::Regex::new(&p).unwrap();
        assert!(re.is_match("a.b"));
        assert!(!re.is_match("axb"));
        assert!(!re.is_match("a.bc"));
        assert!(re.is_match("c-1"));
        assert!(!re.is_match("d-c-1"));
    }
}
