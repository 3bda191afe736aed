//! The state a consumer handle shares with its fetcher and its group membership task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::group::client::GroupClient;
use super::state::{PartState, Reset, State};
use crate::cluster::Cluster;
use crate::types::TopicPartition;
use crate::Error;

/// State shared with the fetcher and the group membership task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) state: Mutex<State>,
    pub(crate) fetch_wake: Notify,
    pub(crate) data_ready: Notify,
    /// The group client when `group.id` is set.
    pub(crate) group: Option<Arc<tokio::sync::Mutex<GroupClient>>>,
    /// An error for the next `poll` that is not tied to a partition (e.g. fenced member).
    pub(crate) error: Mutex<Option<Error>>,
    /// The group client's committed offsets (statistics; `None` without a group).
    pub(crate) committed: Option<super::group::client::CommittedLog>,
    /// Per-topic `auto.offset.reset` overrides.
    pub(crate) resets: super::resets::TopicResets,
}

impl Shared {
    /// `topic`'s `auto.offset.reset`: its per-topic override, else the consumer's.
    pub(crate) fn reset_policy(&self, topic: &str) -> crate::config::OffsetReset {
        self.resets
            .policy(topic, self.cluster.config().consumer.auto_offset_reset)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_error(&self, e: Error) {
        if let Ok(mut slot) = self.error.lock() {
            *slot = Some(e);
        }
        self.data_ready.notify_waiters();
    }

    /// Adopts a group assignment: kept partitions keep their positions, `added` ones start from
    /// the committed offsets.
    pub(crate) fn set_group_assignment(&self, all: &[TopicPartition], added: &[TopicPartition]) {
        let mut state = self.lock();
        let mut parts = HashMap::new();
        for tp in all {
            let p = match state.parts.remove(tp) {
                Some(p) if !added.contains(tp) => p,
                _ => PartState::new(Some(Reset::Committed)),
            };
            parts.insert(tp.clone(), p);
        }
        state.parts = parts;
        state.order = all.to_vec();
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
        self.fetch_wake.notify_one();
    }

    /// Drops partitions from the assignment (revoked or lost).
    pub(crate) fn remove_partitions(&self, partitions: &[TopicPartition]) {
        let mut state = self.lock();
        for tp in partitions {
            state.parts.remove(tp);
        }
        state.order.retain(|tp| !partitions.contains(tp));
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
    }
}
