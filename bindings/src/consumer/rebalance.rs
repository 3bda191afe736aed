//! Rebalance events served on the application's thread.
//!
//! The core's membership task calls [`Listener`]'s callbacks on a runtime thread. The listener
//! only queues a [`Rebalance`] event and wakes the shell; the shell's `poll` (or the wait in
//! `unsubscribe` / `close`) takes it with `take_group_event`, runs the application's callback
//! on its own thread, and calls `finish_rebalance`. Like librdkafka's rebalance callback, the
//! application may call `assign` / `unassign` / `incremental_assign` / `incremental_unassign`
//! from its callback; if it did not, `finish_rebalance` applies the default (the whole
//! assignment for the eager protocol, the incremental change for the cooperative one). Until
//! then the membership task waits (at most `max.poll.interval.ms`), so offsets committed in a
//! revoke callback are committed before the member rejoins, and nothing is fetched for newly
//! assigned partitions before the application has seen them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;

use odradek::consumer::{Handled, RebalanceListener};
use odradek::producer::TopicPartition;
use tokio::sync::watch;

use super::offsets::CommitReport;
use super::Inner;

/// Which step of a rebalance an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebalanceKind {
    /// Partitions assigned to this member (librdkafka `_ASSIGN_PARTITIONS`).
    Assign,
    /// Partitions taken away in an orderly rebalance (`_REVOKE_PARTITIONS`); committing their
    /// offsets is still possible.
    Revoke,
    /// Partitions lost without a chance to commit (session expired, fenced): another member may
    /// already own them.
    Lost,
}

/// A rebalance event for the application.
#[derive(Debug, Clone)]
pub struct Rebalance {
    /// What happened.
    pub kind: RebalanceKind,
    /// The partitions concerned: for the eager protocol the whole new assignment (assign) or
    /// the whole old one (revoke); for the cooperative protocol only the change.
    pub partitions: Vec<TopicPartition>,
    /// Whether the group's protocol is cooperative: the application then changes its
    /// assignment with `incremental_assign` / `incremental_unassign`.
    pub cooperative: bool,
    pub(crate) seq: u64,
}

/// What a consumer in a group hands to the application besides records, in order.
#[derive(Debug)]
pub enum GroupEvent {
    /// A rebalance step; finish it with `ConsumerClient::finish_rebalance`.
    Rebalance(Rebalance),
    /// The outcome of an asynchronous commit or an auto-commit (librdkafka's
    /// `offset_commit_cb`; queued only when the shell asked with `report_commits(true)`).
    Commit(CommitReport),
}

/// The core's listener: queues events and tells the membership task when they were handled.
#[derive(Debug)]
pub(crate) struct Listener {
    inner: Weak<Inner>,
    issued: AtomicU64,
    handled: watch::Sender<u64>,
}

impl Listener {
    pub fn new(inner: Weak<Inner>) -> Self {
        Listener {
            inner,
            issued: AtomicU64::new(0),
            handled: watch::Sender::new(0),
        }
    }

    fn push(&self, kind: RebalanceKind, partitions: &[TopicPartition]) {
        let seq = self.issued.fetch_add(1, Ordering::AcqRel) + 1;
        let Some(inner) = self.inner.upgrade() else {
            // Nobody can serve it: the consumer is gone.
            self.mark_handled(seq);
            return;
        };
        if kind == RebalanceKind::Assign {
            inner.refresh_group_metadata();
        }
        let cooperative = inner.core.rebalance_protocol() == "COOPERATIVE";
        inner.push_group_event(GroupEvent::Rebalance(Rebalance {
            kind,
            partitions: partitions.to_vec(),
            cooperative,
            seq,
        }));
    }

    /// Marks event `seq` (and every earlier one) handled, releasing the membership task.
    pub fn mark_handled(&self, seq: u64) {
        self.handled.send_if_modified(|h| {
            let newer = seq > *h;
            if newer {
                *h = seq;
            }
            newer
        });
    }
}

impl RebalanceListener for Listener {
    fn on_assigned(&self, partitions: &[TopicPartition]) {
        self.push(RebalanceKind::Assign, partitions);
    }

    fn on_revoked(&self, partitions: &[TopicPartition]) {
        self.push(RebalanceKind::Revoke, partitions);
    }

    fn on_lost(&self, partitions: &[TopicPartition]) {
        self.push(RebalanceKind::Lost, partitions);
    }

    fn applies_assignment(&self) -> bool {
        true
    }

    fn handled(&self) -> Handled {
        let target = self.issued.load(Ordering::Acquire);
        let mut rx = self.handled.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|h| *h >= target).await;
        })
    }
}
