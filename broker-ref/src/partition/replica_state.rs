//! The replication state of a partition in cluster mode, as plain data: the role this broker
//! plays, the leader's view of its followers, and the ISR rules that do not need the log
//! (maximal ISR, high watermark candidate). `replication.rs` applies them to a partition.

use std::collections::BTreeMap;

use bytes::Bytes;

/// What this broker is for a partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Role {
    /// Single-node mode: the only replica, always the leader.
    #[default]
    Single,
    /// The leader.
    Leader,
    /// A follower of `leader`.
    Follower {
        /// The leader's node id (-1: none).
        leader: i32,
    },
    /// Not a replica of this partition (or the partition has no leader this broker follows).
    None,
}

/// A partition's leadership as the controller decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsr {
    /// This broker's node id.
    pub me: i32,
    /// The leader (-1: none).
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch.
    pub partition_epoch: i32,
    /// Replica assignment.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// `min.insync.replicas` of the topic.
    pub min_isr: i32,
}

/// A replica a leader may point a consumer to (KIP-392), as its selector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaCandidate {
    /// Its broker id.
    pub broker: i32,
    /// Its log end offset (the leader's own, or the follower's at its last fetch).
    pub log_end_offset: i64,
    /// Milliseconds since it was last caught up (0 for the leader).
    pub ms_since_caught_up: i64,
}

/// What the leader knows of one follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FollowerProgress {
    /// Its log end offset from its latest valid fetch (-1: unknown).
    pub(super) leo: i64,
    /// Its log start offset from its latest valid fetch (-1: unknown).
    pub(super) log_start: i64,
    /// When it last caught up (ms; 0: never).
    pub(super) last_caught_up_ms: i64,
    /// The leader's log end offset at the follower's previous fetch, and when that was.
    pub(super) previous_fetch: (i64, i64),
}

/// The replication state kept beside the log.
#[derive(Debug, Clone, Default)]
pub struct Replication {
    pub(super) role: Role,
    pub(super) me: i32,
    pub(super) leader_epoch: i32,
    pub(super) partition_epoch: i32,
    pub(super) replicas: Vec<i32>,
    pub(super) isr: Vec<i32>,
    /// The ISR an AlterPartition in flight proposes (None: none in flight).
    pub(super) pending_isr: Option<Vec<i32>>,
    /// The leader's log end offset when its epoch began.
    pub(super) epoch_start: i64,
    pub(super) followers: BTreeMap<i32, FollowerProgress>,
    pub(super) min_isr: usize,
}

/// A proposed ISR change for the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    /// The leader epoch it was decided in.
    pub leader_epoch: i32,
    /// The partition epoch it builds on.
    pub partition_epoch: i32,
    /// The proposed ISR.
    pub isr: Vec<i32>,
}

/// A leader's answer to a follower's fetch.
#[derive(Debug, Clone)]
pub enum ReplicaRead {
    /// Batches from the fetch offset (maybe none yet), the leader's high watermark and log
    /// start offset, and an ISR expansion to propose if this fetch earned one.
    Records {
        /// Stored batches.
        records: Bytes,
        /// High watermark.
        high_watermark: i64,
        /// Log start offset.
        log_start_offset: i64,
        /// An ISR expansion to send to the controller.
        expand: Option<IsrChange>,
    },
    /// The follower's log diverges: truncate to this (epoch, end offset) and fetch again.
    Diverging {
        /// The largest epoch ≤ the follower's last fetched epoch.
        epoch: i32,
        /// Where that epoch ends on the leader.
        end_offset: i64,
        /// High watermark.
        high_watermark: i64,
    },
}

/// The leader a follower's fetch was sent to, and the leader epoch it followed then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Followed {
    /// The leader's broker id.
    pub leader: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
}

/// A read-only view of the replication state for request handlers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationView {
    /// This broker's role.
    pub role: Role,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// In-sync replicas (committed).
    pub isr: Vec<i32>,
    /// Replicas.
    pub replicas: Vec<i32>,
    /// `min.insync.replicas`, capped at the replication factor.
    pub min_isr: usize,
    /// The leader's epoch start offset (KIP-207: latest offsets wait until the high watermark
    /// reaches it).
    pub epoch_start: i64,
}

impl Replication {
    /// The ISR plus members an AlterPartition in flight adds (KIP-497's maximal ISR).
    pub(super) fn maximal_isr(&self) -> Vec<i32> {
        let mut all = self.isr.clone();
        if let Some(p) = &self.pending_isr {
            for r in p {
                if !all.contains(r) {
                    all.push(*r);
                }
            }
        }
        all
    }

    /// The high watermark the leader may move to with log end `leo`, or `None` (ISR below
    /// `min.insync.replicas`, or a maximal-ISR member's position unknown).
    pub(super) fn high_watermark_candidate(&self, leo: i64) -> Option<i64> {
        if self.isr.len() < self.min_isr {
            return None;
        }
        let mut hw = leo;
        for r in self.maximal_isr() {
            if r == self.me {
                continue;
            }
            let f = self.followers.get(&r)?;
            if f.leo < 0 {
                return None;
            }
            hw = hw.min(f.leo);
        }
        Some(hw)
    }
}
