//! What both group protocols share: the rebalance listener, the live membership state of a
//! subscribed consumer, and the steps every rebalance takes (commit the progress of revoked
//! partitions, call the listener, hand the fetcher its new assignment).

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::consumer::shared::Shared;
use crate::types::TopicPartition;
use crate::{Error, Result};

/// A future a [`RebalanceListener`] hands the membership task to wait on.
pub type Handled = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

/// Callbacks around rebalances. They run on the consumer's membership task; keep them short.
///
/// By default the consumer applies every assignment change itself and the callbacks only
/// observe. A listener whose [`RebalanceListener::applies_assignment`] is true takes over, as
/// librdkafka's rebalance callback does: the membership task leaves the fetch assignment alone,
/// and after each callback awaits [`RebalanceListener::handled`] (at most
/// `max.poll.interval.ms`) before the rebalance goes on. The application then calls
/// [`crate::Consumer::assign`] itself, on its own thread, and offsets it commits for revoked
/// partitions are committed before the member rejoins.
pub trait RebalanceListener: Send + Sync + std::fmt::Debug {
    /// Partitions newly assigned to this member (positions are set before the call).
    fn on_assigned(&self, partitions: &[TopicPartition]) {
        let _ = partitions;
    }
    /// Partitions taken away in an orderly rebalance (offsets were committed first when
    /// auto-commit is on).
    fn on_revoked(&self, partitions: &[TopicPartition]) {
        let _ = partitions;
    }
    /// Partitions lost without a chance to commit (session expired, fenced).
    fn on_lost(&self, partitions: &[TopicPartition]) {
        let _ = partitions;
    }
    /// Whether the application applies assignment changes itself (see the trait's docs).
    fn applies_assignment(&self) -> bool {
        false
    }
    /// Completes once the application has handled the event of the last callback; awaited
    /// only when [`RebalanceListener::applies_assignment`] is true.
    fn handled(&self) -> Handled {
        Box::pin(std::future::ready(()))
    }
}

/// What the consumer subscribes to.
#[derive(Debug, Clone)]
pub enum Topics {
    /// Named topics.
    Names(Vec<String>),
    /// Every topic whose name matches.
    Pattern(regex::Regex),
}

/// Live membership state of a subscribed consumer.
#[derive(Debug)]
pub(crate) struct Membership {
    pub topics: Topics,
    pub listener: Option<Arc<dyn RebalanceListener>>,
    pub assigned: Mutex<Vec<TopicPartition>>,
    pub last_poll: Mutex<Instant>,
    pub stop: AtomicBool,
    pub wake: Notify,
    pub stopped: Notify,
    /// Whether the group's current protocol is cooperative (KIP-429).
    pub cooperative: AtomicBool,
    /// Assignment changes (statistics).
    pub history: Mutex<RebalanceHistory>,
    /// The latest completed join (KafkaJS's GROUP_JOIN event).
    pub last_join: Mutex<Option<JoinInfo>>,
}

/// What the latest join of a group generation gave this member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinInfo {
    /// The member id.
    pub member_id: String,
    /// The generation (the member epoch under KIP-848).
    pub generation: i32,
    /// The leader's member id (classic protocol; empty under KIP-848, which has no leader).
    pub leader_id: String,
    /// Whether this member led the generation (computed the assignment).
    pub is_leader: bool,
    /// The assignor the group chose (classic protocol's protocol name; under KIP-848 the
    /// configured `group.remote.assignor`, empty when the broker picks).
    pub protocol: String,
    /// From sending JoinGroup (or the joining heartbeat) to holding the assignment.
    pub duration: Duration,
}

/// Assignment changes a group made (librdkafka's `cgrp` rebalance fields).
#[derive(Debug, Default, Clone)]
pub struct RebalanceHistory {
    /// Assignment changes so far (an assignment and a revocation count one each).
    pub count: u64,
    /// When the latest happened.
    pub last: Option<std::time::Instant>,
    /// What the latest was: `assign`, `revoke`.
    pub reason: &'static str,
    /// Since when the member holds an assignment from the group (`None`: it holds none).
    pub member_since: Option<std::time::Instant>,
}

impl RebalanceHistory {
    /// Counts an assignment change.
    fn changed(&mut self, reason: &'static str) {
        self.count += 1;
        self.last = Some(std::time::Instant::now());
        self.reason = reason;
    }
}

impl Membership {
    pub fn new(topics: Topics, listener: Option<Arc<dyn RebalanceListener>>) -> Self {
        Membership {
            topics,
            listener,
            assigned: Mutex::new(Vec::new()),
            last_poll: Mutex::new(Instant::now()),
            stop: AtomicBool::new(false),
            wake: Notify::new(),
            stopped: Notify::new(),
            cooperative: AtomicBool::new(false),
            history: Mutex::new(RebalanceHistory::default()),
            last_join: Mutex::new(None),
        }
    }

    /// Records a completed join.
    pub(super) fn joined(&self, info: JoinInfo) {
        if let Ok(mut j) = self.last_join.lock() {
            *j = Some(info);
        }
    }

    pub(super) fn assigned(&self) -> Vec<TopicPartition> {
        self.assigned.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub(super) fn set_assigned(&self, v: Vec<TopicPartition>) {
        if let Ok(mut a) = self.assigned.lock() {
            if let Ok(mut h) = self.history.lock() {
                if !minus(&v, &a).is_empty() {
                    h.changed("assign");
                } else if !minus(&a, &v).is_empty() {
                    h.changed("revoke");
                }
                if v.is_empty() {
                    h.member_since = None;
                } else {
                    h.member_since.get_or_insert_with(Instant::now);
                }
            }
            *a = v;
        }
    }
}

pub(super) fn minus(a: &[TopicPartition], b: &[TopicPartition]) -> Vec<TopicPartition> {
    let set: HashSet<&TopicPartition> = b.iter().collect();
    a.iter().filter(|p| !set.contains(p)).cloned().collect()
}

/// Which offset of a partition a commit without explicit offsets sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The position: every record handed to the application (explicit commits, and the
    /// commit on close, which the application makes when it is done).
    Delivered,
    /// Records the application has finished with (`PartState::processed`): what background
    /// auto-commit and commit-on-revoke send, so a crash never commits an unhandled record.
    Processed,
}

/// The offsets of `partitions` (or of every assigned partition) to commit, by `progress`.
pub(crate) fn positions(
    shared: &Shared,
    partitions: Option<&[TopicPartition]>,
    progress: Progress,
) -> Vec<(TopicPartition, i64, Option<String>)> {
    let state = shared.lock();
    state
        .parts
        .iter()
        .filter(|(tp, _)| partitions.is_none_or(|ps| ps.contains(tp)))
        .filter_map(|(tp, p)| {
            let offset = match progress {
                Progress::Delivered => p.position,
                Progress::Processed => p.processed,
            };
            offset.map(|o| (tp.clone(), o, None))
        })
        .collect()
}

/// Commits `positions(shared, partitions, progress)`.
pub(crate) async fn commit_positions(
    shared: &Shared,
    partitions: Option<&[TopicPartition]>,
    progress: Progress,
) -> Result<()> {
    let Some(group) = &shared.group else {
        return Err(Error::config(
            "group.id",
            "committing offsets needs group.id",
        ));
    };
    let offsets = positions(shared, partitions, progress);
    if offsets.is_empty() {
        return Ok(());
    }
    let results = group.lock().await.commit(&offsets).await?;
    match results.into_iter().find(|(_, c)| !c.is_ok()) {
        Some((_, code)) => Err(Error::Kafka(code)),
        None => Ok(()),
    }
}

pub(super) async fn revoke(
    shared: &Shared,
    m: &Membership,
    partitions: &[TopicPartition],
    auto_commit: bool,
) {
    if auto_commit {
        if let Err(e) = commit_positions(shared, Some(partitions), Progress::Processed).await {
            tracing::debug!(error = %e, "commit on revoke failed");
        }
    }
    let max_wait = shared.cluster.config().consumer.max_poll_interval;
    // Removed by the application when it applies assignments and handled the event in time.
    let mut removed = false;
    if let Some(l) = &m.listener {
        l.on_revoked(partitions);
        removed = l.applies_assignment() && settled(l.as_ref(), max_wait).await;
    }
    if !removed {
        shared.remove_partitions(partitions);
    }
    let kept = minus(&m.assigned(), partitions);
    m.set_assigned(kept);
}

pub(super) async fn lose(
    shared: &Shared,
    m: &Membership,
    partitions: &[TopicPartition],
    max_wait: Duration,
) {
    let mut handled = false;
    if let Some(l) = &m.listener {
        if !partitions.is_empty() {
            l.on_lost(partitions);
            handled = l.applies_assignment() && settled(l.as_ref(), max_wait).await;
        }
    }
    if !handled {
        shared.remove_partitions(partitions);
    }
    m.set_assigned(Vec::new());
}

/// On close: commits what was delivered (when `commit`), then gives every owned partition
/// back through the listener (`on_revoked`, waiting for an applying listener).
pub(super) async fn give_back_on_close(shared: &Shared, m: &Membership, commit: bool) {
    let owned = m.assigned();
    if commit && !owned.is_empty() {
        let _ = commit_positions(shared, Some(&owned), Progress::Delivered).await;
    }
    if let Some(l) = &m.listener {
        if !owned.is_empty() {
            l.on_revoked(&owned);
            if l.applies_assignment() {
                let max_wait = shared.cluster.config().consumer.max_poll_interval;
                settled(l.as_ref(), max_wait).await;
            }
        }
    }
}

/// After `max.poll.interval.ms` without a poll the member left its group: waits until the
/// application polls again. `false` when the consumer is stopped meanwhile.
pub(super) async fn wait_for_poll(m: &Membership, max_poll_interval: Duration) -> bool {
    while m
        .last_poll
        .lock()
        .map(|t| t.elapsed() > max_poll_interval)
        .unwrap_or(false)
    {
        if m.stop.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Waits (at most `max_wait`) for the application to handle the last callback's event; `false`
/// when it did not in time, and the membership task applies the change itself.
pub(super) async fn settled(l: &dyn RebalanceListener, max_wait: Duration) -> bool {
    let done = tokio::time::timeout(max_wait, l.handled()).await.is_ok();
    if !done {
        tracing::warn!("rebalance event not handled within max.poll.interval.ms; applying it");
    }
    done
}
