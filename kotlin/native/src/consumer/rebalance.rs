//! Rebalance events served on the thread that polls, in the Java client's order: revoked
//! partitions are reported while still assigned (so the listener can commit them), assigned
//! ones after they are assigned (so the listener can seek in them).

use std::future::Future;

use odradek_bindings::consumer::{GroupEvent, RebalanceKind};

use super::{lock, NativeConsumer};
use crate::spawn::on_runtime;
use crate::types::from_core_list;
use crate::{NativeError, TopicPartition};

/// The application's rebalance callbacks (the Java client's `ConsumerRebalanceListener`).
/// Called on the thread that polls; an implementation must not throw.
#[uniffi::export(with_foreign)]
pub trait RebalanceListener: Send + Sync {
    /// Partitions taken away in an orderly rebalance; their offsets can still be committed.
    fn on_partitions_revoked(&self, partitions: Vec<TopicPartition>);
    /// Partitions now assigned (the whole new assignment for the eager protocol, the added
    /// ones for the cooperative one).
    fn on_partitions_assigned(&self, partitions: Vec<TopicPartition>);
    /// Partitions lost without a chance to commit (session expired, fenced).
    fn on_partitions_lost(&self, partitions: Vec<TopicPartition>);
}

impl NativeConsumer {
    /// Serves every queued group event: runs the listener (if any) and finishes the event.
    pub(super) fn serve_group_events(&self) -> Result<(), NativeError> {
        while let Some(event) = self.client.take_group_event() {
            let GroupEvent::Rebalance(r) = event else {
                continue;
            };
            let listener = lock(&self.listener).clone();
            let partitions = from_core_list(&r.partitions);
            match r.kind {
                RebalanceKind::Assign => {
                    let applied = self.client.apply_rebalance(&r);
                    if let Some(l) = &listener {
                        l.on_partitions_assigned(partitions);
                    }
                    let finished = self.client.finish_rebalance(r);
                    applied?;
                    finished?;
                }
                RebalanceKind::Revoke | RebalanceKind::Lost => {
                    if let Some(l) = &listener {
                        if r.kind == RebalanceKind::Revoke {
                            l.on_partitions_revoked(partitions);
                        } else {
                            l.on_partitions_lost(partitions);
                        }
                    }
                    self.client.finish_rebalance(r)?;
                }
            }
        }
        Ok(())
    }

    /// Runs `fut` on the runtime while serving group events on this thread (leaving the group
    /// revokes partitions, and the membership task waits for that event to be served).
    pub(super) async fn serving<F>(&self, fut: F) -> Result<F::Output, NativeError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let mut task = std::pin::pin!(on_runtime(fut));
        loop {
            self.serve_group_events()?;
            tokio::select! {
                out = &mut task => return out,
                _ = self.group_event.notified() => {}
            }
        }
    }
}
