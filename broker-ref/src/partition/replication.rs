//! A partition's replication state in cluster mode, with Kafka's rules (`Partition.scala`,
//! `Replica.scala`):
//!
//! - **Leader.** Tracks each follower's log end offset from its fetches and when it last caught
//!   up (`lastCaughtUpTimeMs`: the fetch reached the leader's log end now, or the log end the
//!   leader had at the follower's previous fetch). The high watermark is the lowest log end
//!   offset over the maximal ISR (the committed ISR plus additions in flight, KIP-497) and moves
//!   only forward, and not at all while the ISR is smaller than `min.insync.replicas` (capped
//!   at the replication factor, KAFKA-15583). A follower joins the ISR once it reaches the high
//!   watermark and the leader's epoch start offset; an ISR member that has not caught up for
//!   `replica.lag.time.max.ms` leaves it. ISR changes are proposed to the controller
//!   (AlterPartition) by the cluster layer; one at a time.
//! - **Follower.** Appends the leader's batches unchanged (offsets and epochs kept), truncates
//!   where the leader reports a divergence, and takes `min(leader's high watermark, own log
//!   end)` as its high watermark.
//!
//! On a single node (no cluster) none of this runs: the high watermark follows the log end.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use odradek::records::RecordBatches;
use odradek::ErrorCode;
use tokio::sync::Notify;

use super::markers;
use super::producer_state::ProducerState;
use super::replica_state::{
    Followed, FollowerProgress, IsrChange, LeaderAndIsr, ReplicaCandidate, ReplicaRead,
    Replication, ReplicationView, Role,
};
use super::snapshot;
use super::state::Partition;
use crate::log::ReadInfo;
use crate::{Error, Result};

impl Partition {
    fn replication(&self) -> std::sync::MutexGuard<'_, Replication> {
        self.replication
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The high watermark a leader may move to with log end `leo` (`None`: not a leader, or
    /// no advance allowed now). Called under the log lock by `publish_offsets`.
    pub(super) fn leader_high_watermark(&self, leo: i64) -> Option<i64> {
        let r = self.replication();
        match r.role {
            Role::Leader => r.high_watermark_candidate(leo),
            _ => None,
        }
    }

    /// Whether replication moves this partition's high watermark (cluster mode).
    pub fn is_replicated(&self) -> bool {
        self.replicated.load(Ordering::Acquire)
    }

    /// The replication state as request handlers need it.
    pub fn replication_view(&self) -> ReplicationView {
        let r = self.replication();
        ReplicationView {
            role: r.role.clone(),
            leader_epoch: r.leader_epoch,
            isr: r.isr.clone(),
            replicas: r.replicas.clone(),
            min_isr: r.min_isr,
            epoch_start: r.epoch_start,
        }
    }

    /// Applies the controller's decision for this partition: leader, follower or neither. A
    /// new leader epoch starts in the log at once; a new leader's followers start with unknown
    /// positions (ISR members counted as caught up now, so they are not dropped before their
    /// first fetch).
    pub fn apply_leadership(&self, decision: &LeaderAndIsr, now_ms: i64) -> Result<Role> {
        self.replicated.store(true, Ordering::Release);
        let mut log = self.log()?;
        let leo = log.log_end_offset();
        let role = if decision.leader == decision.me {
            Role::Leader
        } else if decision.replicas.contains(&decision.me) {
            Role::Follower {
                leader: decision.leader,
            }
        } else {
            Role::None
        };
        let mut r = self.replication();
        let new_epoch = decision.leader_epoch != r.leader_epoch || role != r.role;
        let removed = role == Role::None
            && matches!(r.role, Role::Leader | Role::Follower { .. })
            && decision.leader_epoch >= r.leader_epoch;
        if role == Role::Leader && !new_epoch {
            // The replicas changed under the same leader (a reassignment): new followers start
            // with unknown positions, removed ones are forgotten.
            r.followers.retain(|id, _| decision.replicas.contains(id));
            for id in decision.replicas.iter().filter(|id| **id != decision.me) {
                r.followers.entry(*id).or_insert(FollowerProgress {
                    leo: -1,
                    log_start: -1,
                    last_caught_up_ms: if decision.isr.contains(id) { now_ms } else { 0 },
                    previous_fetch: (-1, 0),
                });
            }
        }
        if role == Role::Leader && new_epoch {
            log.start_leader_epoch(decision.leader_epoch)?;
            r.epoch_start = leo;
            r.followers = decision
                .replicas
                .iter()
                .filter(|id| **id != decision.me)
                .map(|id| {
                    let in_sync = decision.isr.contains(id);
                    (
                        *id,
                        FollowerProgress {
                            leo: -1,
                            log_start: -1,
                            last_caught_up_ms: if in_sync { now_ms } else { 0 },
                            previous_fetch: (-1, 0),
                        },
                    )
                })
                .collect();
            r.pending_isr = None;
        }
        if decision.partition_epoch != r.partition_epoch || new_epoch {
            // A committed change: whatever was in flight is settled by it.
            r.pending_isr = None;
        }
        r.role = role.clone();
        r.me = decision.me;
        r.leader_epoch = decision.leader_epoch;
        r.partition_epoch = decision.partition_epoch;
        r.replicas = decision.replicas.clone();
        r.isr = decision.isr.clone();
        r.min_isr = usize::try_from(decision.min_isr.max(1))
            .unwrap_or(1)
            .min(decision.replicas.len().max(1));
        self.leader_epoch
            .store(decision.leader_epoch, Ordering::Release);
        let hw_move = if role == Role::Leader {
            r.high_watermark_candidate(leo)
        } else {
            None
        };
        drop(r);
        if removed {
            // No longer a replica (reassigned away): its data goes, as Kafka deletes the log.
            log.truncate_fully_and_start_at(0)?;
            *self.producers()? = ProducerState::default();
            self.high_watermark.store(0, Ordering::Release);
            tracing::info!(
                topic = self.topic(),
                partition = self.index(),
                "no longer a replica: local data deleted"
            );
        }
        let producers = self.producers()?;
        if let Some(hw) = hw_move {
            self.raise_high_watermark(&mut log, &producers, hw);
        } else {
            self.publish_offsets(&mut log, &producers);
        }
        drop(producers);
        drop(log);
        self.wake_for_change();
        Ok(role)
    }

    /// The leader serves a follower's fetch: checks the follower's position against the
    /// leader epoch cache, records its progress (maybe advancing the high watermark and
    /// earning it an ISR expansion), and reads up to the log end.
    pub fn serve_follower(
        &self,
        replica: i32,
        fetch_offset: i64,
        last_fetched_epoch: i32,
        max_bytes: usize,
        now_ms: i64,
    ) -> Result<ReplicaRead> {
        let mut log = self.log()?;
        let leo = log.log_end_offset();
        let start = log.log_start_offset();
        if self.replication().role != Role::Leader {
            return Err(ErrorCode::NotLeaderOrFollower.into());
        }
        if last_fetched_epoch >= 0 && fetch_offset > start {
            // An epoch this leader never had beyond its own latest: the follower keeps at most
            // what precedes its first epoch above the leader's latest.
            let (epoch, end) = log
                .end_offset_for_epoch(last_fetched_epoch)
                .unwrap_or((log.latest_epoch().unwrap_or(0), leo));
            if epoch != last_fetched_epoch || end < fetch_offset {
                return Ok(ReplicaRead::Diverging {
                    epoch,
                    end_offset: end,
                    high_watermark: self.high_watermark(),
                });
            }
        }
        if fetch_offset < start || fetch_offset > leo {
            return Err(ErrorCode::OffsetOutOfRange.into());
        }
        let (hw_move, expand) = {
            let mut r = self.replication();
            let hw = self.high_watermark();
            let epoch_start = r.epoch_start;
            let Some(f) = r.followers.get_mut(&replica) else {
                return Err(Error::kafka(
                    ErrorCode::NotLeaderOrFollower,
                    format!("broker {replica} is not a replica of this partition"),
                ));
            };
            // Replica.updateFetchStateOrThrow.
            if fetch_offset >= leo {
                f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
            } else if fetch_offset >= f.previous_fetch.0 && f.previous_fetch.0 >= 0 {
                f.last_caught_up_ms = f.last_caught_up_ms.max(f.previous_fetch.1);
            }
            f.previous_fetch = (leo, now_ms);
            f.leo = fetch_offset;
            let eligible = fetch_offset >= hw && fetch_offset >= epoch_start;
            let expand = if eligible && !r.isr.contains(&replica) && r.pending_isr.is_none() {
                let mut isr = r.isr.clone();
                isr.push(replica);
                r.pending_isr = Some(isr.clone());
                Some(IsrChange {
                    leader_epoch: r.leader_epoch,
                    partition_epoch: r.partition_epoch,
                    isr,
                })
            } else {
                None
            };
            (r.high_watermark_candidate(leo), expand)
        };
        if let Some(hw) = hw_move {
            let producers = self.producers()?;
            self.raise_high_watermark(&mut log, &producers, hw);
        }
        let ReadInfo { records, .. } = log.read(fetch_offset, max_bytes, leo, true)?;
        Ok(ReplicaRead::Records {
            records,
            high_watermark: self.high_watermark(),
            log_start_offset: start,
            expand,
        })
    }

    /// The ISR members that have not caught up for `lag_max_ms` (Kafka's
    /// `getOutOfSyncReplicas`), as a shrink to propose; `None` when all are in sync, this
    /// broker does not lead, or a change is in flight.
    pub fn isr_shrink(&self, now_ms: i64, lag_max_ms: i64) -> Option<IsrChange> {
        let leo = self.log().ok()?.log_end_offset();
        let mut r = self.replication();
        if r.role != Role::Leader || r.pending_isr.is_some() {
            return None;
        }
        let me = r.me;
        let lagging: Vec<i32> = r
            .isr
            .iter()
            .copied()
            .filter(|id| *id != me)
            .filter(|id| {
                r.followers
                    .get(id)
                    .is_none_or(|f| f.leo != leo && now_ms - f.last_caught_up_ms > lag_max_ms)
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let isr: Vec<i32> = r
            .isr
            .iter()
            .copied()
            .filter(|id| !lagging.contains(id))
            .collect();
        r.pending_isr = Some(isr.clone());
        Some(IsrChange {
            leader_epoch: r.leader_epoch,
            partition_epoch: r.partition_epoch,
            isr,
        })
    }

    /// The controller refused `change` or could not be asked: it stops being pending, unless
    /// a newer leadership or another proposal has replaced it meanwhile.
    pub fn isr_change_refused(&self, change: &IsrChange) -> Result<()> {
        {
            let r = self.replication();
            let same = r.pending_isr.as_ref() == Some(&change.isr)
                && r.leader_epoch == change.leader_epoch
                && r.partition_epoch == change.partition_epoch;
            if !same {
                return Ok(());
            }
        }
        self.isr_change_done(None)
    }

    /// The controller answered an ISR change: `Some((isr, partition_epoch))` when it took it,
    /// `None` when it refused it (the next metadata update settles the state).
    pub fn isr_change_done(&self, accepted: Option<(Vec<i32>, i32)>) -> Result<()> {
        let mut log = self.log()?;
        let leo = log.log_end_offset();
        let hw_move = {
            let mut r = self.replication();
            r.pending_isr = None;
            if let Some((isr, partition_epoch)) = accepted {
                if partition_epoch >= r.partition_epoch {
                    r.isr = isr;
                    r.partition_epoch = partition_epoch;
                }
            }
            match r.role {
                Role::Leader => r.high_watermark_candidate(leo),
                _ => None,
            }
        };
        if let Some(hw) = hw_move {
            let producers = self.producers()?;
            self.raise_high_watermark(&mut log, &producers, hw);
        }
        self.wake_for_change();
        Ok(())
    }

    /// Moves the high watermark up to `hw` (never down, never past the log end).
    fn raise_high_watermark(&self, log: &mut crate::log::Log, producers: &ProducerState, hw: i64) {
        let target = hw.min(log.log_end_offset());
        if target > self.high_watermark.load(Ordering::Acquire) {
            self.high_watermark.store(target, Ordering::Release);
        }
        self.publish_offsets(log, producers);
    }

    /// The position a follower fetches from: its log end offset and the epoch of its last
    /// batch.
    pub fn follower_position(&self) -> Result<(i64, i32)> {
        let log = self.log()?;
        Ok((log.log_end_offset(), log.latest_epoch().unwrap_or(-1)))
    }

    /// Whether this replica still follows `followed` (checked under the log lock, which
    /// leadership changes also take): an answer to a fetch sent before a leadership change
    /// must not touch the log (a former leader's late answer once truncated the new leader's
    /// acknowledged records).
    fn check_following(&self, followed: Followed) -> Result<()> {
        let r = self.replication();
        match r.role {
            Role::Follower { leader }
                if leader == followed.leader && r.leader_epoch == followed.leader_epoch =>
            {
                Ok(())
            }
            _ => Err(Error::kafka(
                ErrorCode::FencedLeaderEpoch,
                format!(
                    "no longer following broker {} in leader epoch {}",
                    followed.leader, followed.leader_epoch
                ),
            )),
        }
    }

    /// A follower appends what its leader sent (batches exactly as the leader stored them),
    /// brings its producer state and transaction index along, and follows the leader's high
    /// watermark. A batch that does not continue the log ends the append (the next fetch
    /// starts at the new log end).
    pub fn append_as_follower(
        &self,
        followed: Followed,
        records: Bytes,
        leader_hw: i64,
        now_ms: i64,
    ) -> Result<()> {
        let mut log = self.log()?;
        self.check_following(followed)?;
        let from = log.log_end_offset();
        for batch in RecordBatches::new(records) {
            let batch = batch?;
            if batch.base_offset() != log.log_end_offset() {
                break;
            }
            log.append_as_follower(batch.into_bytes(), now_ms)?;
        }
        let mut producers = self.producers()?;
        if log.log_end_offset() > from {
            let state = std::mem::take(&mut *producers);
            *producers = markers::rebuild_producer_state(&mut log, state, from)?;
        }
        let hw = leader_hw.min(log.log_end_offset());
        if hw > self.high_watermark.load(Ordering::Acquire) {
            self.high_watermark.store(hw, Ordering::Release);
        }
        self.publish_offsets(&mut log, &producers);
        Ok(())
    }

    /// A follower cuts its log back to `offset` (the leader reported a divergence there), and
    /// rebuilds its producer state for what is left.
    pub fn truncate_as_follower(&self, followed: Followed, offset: i64) -> Result<()> {
        let mut log = self.log()?;
        self.check_following(followed)?;
        if offset >= log.log_end_offset() {
            // No record goes, but an epoch begun at the log end does.
            return log.truncate_to(offset);
        }
        log.truncate_to(offset)?;
        let end = log.log_end_offset();
        let (from, state) = match snapshot::load_latest(log.dir(), end)? {
            Some((at, state)) => (at, state),
            None => (log.log_start_offset(), ProducerState::default()),
        };
        let rebuilt = markers::rebuild_producer_state(&mut log, state, from)?;
        let mut producers = self.producers()?;
        *producers = rebuilt;
        if self.high_watermark.load(Ordering::Acquire) > end {
            self.high_watermark.store(end, Ordering::Release);
        }
        self.publish_offsets(&mut log, &producers);
        tracing::info!(
            topic = self.topic(),
            partition = self.index(),
            offset = end,
            "follower truncated to the leader's log"
        );
        Ok(())
    }

    /// Where a follower truncates when its leader reports a divergence at (`epoch`,
    /// `end_offset`) (Kafka's `getOffsetTruncationState`): the end of that epoch in both logs,
    /// whichever is lower; the end of the largest smaller epoch when this log does not have
    /// `epoch`; the high watermark when the leader knows no such epoch.
    pub fn divergence_truncation(&self, epoch: i32, end_offset: i64) -> Result<i64> {
        let log = self.log()?;
        if epoch < 0 || end_offset < 0 {
            return Ok(self.high_watermark().min(log.log_end_offset()));
        }
        Ok(match log.end_offset_for_epoch(epoch) {
            Some((e, o)) if e == epoch => o.min(end_offset),
            Some((_, o)) => o.min(end_offset),
            None => self.high_watermark(),
        }
        .min(log.log_end_offset()))
    }

    /// A follower so far behind that the leader no longer has its next offset starts over
    /// empty at the leader's log start offset.
    pub fn restart_as_follower_at(&self, followed: Followed, offset: i64) -> Result<()> {
        let mut log = self.log()?;
        self.check_following(followed)?;
        log.truncate_fully_and_start_at(offset)?;
        let mut producers = self.producers()?;
        *producers = ProducerState::default();
        self.high_watermark.store(offset, Ordering::Release);
        self.publish_offsets(&mut log, &producers);
        tracing::warn!(
            topic = self.topic(),
            partition = self.index(),
            offset,
            "follower restarted at the leader's log start"
        );
        Ok(())
    }

    /// Whether replica `replica` of this partition is throttled (KIP-73): listed by the
    /// topic's `leader.replication.throttled.replicas` (`leader_side`, with this leader's id,
    /// as Kafka matches it) or `follower.replication.throttled.replicas` (with this follower's
    /// id), and not in the ISR.
    pub fn replication_throttled(
        &self,
        leader_side: bool,
        listed_broker: i32,
        replica: i32,
    ) -> bool {
        let listed = match self.log() {
            Ok(log) => {
                let c = log.config();
                let list = if leader_side {
                    &c.leader_replication_throttled_replicas
                } else {
                    &c.follower_replication_throttled_replicas
                };
                !list.is_empty()
                    && crate::log::config::lists_replica(list, self.index(), listed_broker)
            }
            Err(_) => false,
        };
        listed && !self.replication().isr.contains(&replica)
    }

    /// The leader takes note of a follower's log start offset from its fetch (KIP-392: a
    /// follower is a consumer's read replica only if it still has the consumer's offset).
    pub fn note_follower_log_start(&self, replica: i32, log_start: i64) {
        if let Some(f) = self.replication().followers.get_mut(&replica) {
            f.log_start = log_start;
        }
    }

    /// KIP-392: the replicas a leader may send a consumer at `fetch_offset` to, as Kafka's
    /// `findPreferredReadReplica` lists them: every ISR follower whose last fetch showed it
    /// holds that offset (log start ≤ offset ≤ log end), then the leader itself (never
    /// lagging). `None` when this broker does not lead the partition.
    pub fn read_replica_candidates(
        &self,
        fetch_offset: i64,
        now_ms: i64,
    ) -> Option<Vec<ReplicaCandidate>> {
        let leo = self.log().ok()?.log_end_offset();
        let r = self.replication();
        if r.role != Role::Leader {
            return None;
        }
        let mut out: Vec<ReplicaCandidate> = r
            .followers
            .iter()
            .filter(|(id, f)| {
                r.isr.contains(id)
                    && f.leo >= fetch_offset
                    && f.log_start >= 0
                    && f.log_start <= fetch_offset
            })
            .map(|(id, f)| ReplicaCandidate {
                broker: *id,
                log_end_offset: f.leo,
                ms_since_caught_up: now_ms.saturating_sub(f.last_caught_up_ms).max(0),
            })
            .collect();
        out.push(ReplicaCandidate {
            broker: r.me,
            log_end_offset: leo,
            ms_since_caught_up: 0,
        });
        Some(out)
    }

    /// Checks that a consumer's fetch may read here: this broker leads, or (a fetch that
    /// carries client metadata, KIP-392) follows; `current_leader_epoch` (≥ 0) must be the
    /// partition's (FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer).
    pub fn check_readable(&self, current_leader_epoch: i32, followers_serve: bool) -> Result<()> {
        let r = self.replication();
        let epoch = match r.role {
            Role::Single => super::state::LEADER_EPOCH,
            Role::Leader => r.leader_epoch,
            Role::Follower { .. } if followers_serve => r.leader_epoch,
            Role::Follower { .. } | Role::None => return Err(ErrorCode::NotLeaderOrFollower.into()),
        };
        if current_leader_epoch >= 0 {
            if current_leader_epoch < epoch {
                return Err(ErrorCode::FencedLeaderEpoch.into());
            }
            if current_leader_epoch > epoch {
                return Err(ErrorCode::UnknownLeaderEpoch.into());
            }
        }
        Ok(())
    }

    /// Checks a client's view of the leadership (Fetch, ListOffsets, OffsetForLeaderEpoch):
    /// this broker must lead, and a `current_leader_epoch` (≥ 0) must be the partition's
    /// (FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer).
    pub fn check_leader(&self, current_leader_epoch: i32) -> Result<()> {
        self.check_readable(current_leader_epoch, false)
    }

    /// Whether a produce with `acks` may append now: this broker leads, and for acks=all the
    /// ISR is at least `min.insync.replicas` (NOT_ENOUGH_REPLICAS before the append).
    pub fn check_produce(&self, acks: i16) -> Result<()> {
        let r = self.replication();
        match r.role {
            Role::Single => Ok(()),
            Role::Leader if acks == -1 && r.isr.len() < r.min_isr => Err(Error::kafka(
                ErrorCode::NotEnoughReplicas,
                format!(
                    "the ISR {:?} is smaller than min.insync.replicas {}",
                    r.isr, r.min_isr
                ),
            )),
            Role::Leader => Ok(()),
            _ => Err(ErrorCode::NotLeaderOrFollower.into()),
        }
    }

    /// acks=all: waits until the high watermark passes `last_offset`, up to `timeout`.
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below `min.insync.replicas`
    /// meanwhile, NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT otherwise.
    pub async fn wait_replicated(
        &self,
        last_offset: i64,
        timeout: std::time::Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        let waiter = Arc::new(Notify::new());
        loop {
            self.register_waiter(&waiter);
            if self.high_watermark() > last_offset {
                return Ok(());
            }
            {
                let r = self.replication();
                match r.role {
                    Role::Single => return Ok(()),
                    Role::Leader if r.isr.len() < r.min_isr => {
                        return Err(ErrorCode::NotEnoughReplicasAfterAppend.into())
                    }
                    Role::Leader => {}
                    _ => return Err(ErrorCode::NotLeaderOrFollower.into()),
                }
            }
            if tokio::time::timeout_at(deadline, waiter.notified())
                .await
                .is_err()
            {
                return Err(ErrorCode::RequestTimedOut.into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::LogConfig;
    use odradek::records::{BatchBuilder, Compression};

    fn batch(values: usize) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None);
        for i in 0..values {
            b.append(0, None, Some(format!("v{i}").as_bytes()), &[])
                .unwrap();
        }
        b.build().unwrap()
    }

    fn decision(me: i32, leader: i32, epoch: i32, isr: &[i32]) -> LeaderAndIsr {
        LeaderAndIsr {
            me,
            leader,
            leader_epoch: epoch,
            partition_epoch: epoch,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            min_isr: 2,
        }
    }

    fn open(dir: &std::path::Path) -> Partition {
        Partition::open(dir, "t", 0, LogConfig::default()).unwrap()
    }

    /// Broker 1 leads epoch 1 with 2 records; broker 2 follows and has copied them.
    fn leader_and_copy(
        leader_dir: &std::path::Path,
        follower_dir: &std::path::Path,
    ) -> (Partition, Partition) {
        let leader = open(leader_dir);
        let follower = open(follower_dir);
        leader
            .apply_leadership(&decision(1, 1, 1, &[1, 2]), 0)
            .unwrap();
        follower
            .apply_leadership(&decision(2, 1, 1, &[1, 2]), 0)
            .unwrap();
        leader.append_record_set(batch(2), 0).unwrap();
        let ReplicaRead::Records { records, .. } =
            leader.serve_follower(2, 0, -1, 1 << 20, 1).unwrap()
        else {
            panic!("diverging");
        };
        let of_1_in_1 = Followed {
            leader: 1,
            leader_epoch: 1,
        };
        follower
            .append_as_follower(of_1_in_1, records, 0, 1)
            .unwrap();
        assert_eq!(follower.follower_position().unwrap(), (2, 1));
        (leader, follower)
    }

    #[test]
    fn the_high_watermark_waits_for_the_isr_and_followers_join_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path());
        p.apply_leadership(&decision(1, 1, 1, &[1, 2]), 0).unwrap();
        p.append_record_set(batch(3), 0).unwrap();
        assert_eq!(p.high_watermark(), 0, "follower 2 has not fetched");
        // Follower 2 fetches from 0 (has nothing): the high watermark stays, it reads 3.
        let read = p.serve_follower(2, 0, -1, 1 << 20, 10).unwrap();
        assert!(matches!(read, ReplicaRead::Records { ref records, .. } if !records.is_empty()));
        assert_eq!(p.high_watermark(), 0);
        // Its next fetch acknowledges all three.
        p.serve_follower(2, 3, 1, 1 << 20, 20).unwrap();
        assert_eq!(p.high_watermark(), 3);
        // Follower 3 (out of the ISR) reaching the high watermark earns an expansion.
        let ReplicaRead::Records { expand, .. } = p.serve_follower(3, 3, 1, 1 << 20, 30).unwrap()
        else {
            panic!("diverging");
        };
        assert_eq!(expand.unwrap().isr, vec![1, 2, 3]);
        // While it is in flight, 3 counts for the high watermark (maximal ISR).
        p.append_record_set(batch(1), 40).unwrap();
        p.serve_follower(2, 4, 1, 1 << 20, 41).unwrap();
        assert_eq!(p.high_watermark(), 3, "3 has not fetched offset 3 yet");
        p.serve_follower(3, 4, 1, 1 << 20, 42).unwrap();
        assert_eq!(p.high_watermark(), 4);
    }

    #[test]
    fn a_leader_alone_in_the_isr_commits_each_append() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path());
        let alone = LeaderAndIsr {
            min_isr: 1,
            replicas: vec![1],
            ..decision(1, 1, 1, &[1])
        };
        p.apply_leadership(&alone, 0).unwrap();
        p.append_record_set(batch(2), 0).unwrap();
        assert_eq!(p.high_watermark(), 2);
        p.append_record_set(batch(1), 1).unwrap();
        assert_eq!(p.high_watermark(), 3);
    }

    #[test]
    fn a_lagging_follower_is_dropped_and_min_isr_stops_the_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path());
        p.apply_leadership(&decision(1, 1, 1, &[1, 2, 3]), 0)
            .unwrap();
        p.append_record_set(batch(2), 0).unwrap();
        p.serve_follower(2, 2, 1, 1 << 20, 5).unwrap();
        assert_eq!(p.isr_shrink(100, 1_000), None, "within the lag time");
        let change = p.isr_shrink(2_000, 1_000).unwrap();
        assert_eq!(change.isr, vec![1, 2], "3 never fetched");
        // The controller takes it; with min.insync.replicas 2 the ISR [1, 2] still commits.
        p.isr_change_done(Some((vec![1, 2], 2))).unwrap();
        assert_eq!(p.high_watermark(), 2);
        assert!(p.check_produce(-1).is_ok());
        p.isr_change_done(Some((vec![1], 3))).unwrap();
        let e = p.check_produce(-1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotEnoughReplicas);
        p.append_record_set(batch(1), 10).unwrap();
        assert_eq!(
            p.high_watermark(),
            2,
            "no advance below min.insync.replicas"
        );
    }

    /// Broker 1 (`leader`) leads epoch 3 with broker 2 (`follower`) in its ISR.
    fn broker_1_leads_epoch_3(leader: &Partition, follower: &Partition, now_ms: i64) {
        leader
            .apply_leadership(&decision(1, 1, 3, &[1, 2]), now_ms)
            .unwrap();
        follower
            .apply_leadership(&decision(2, 1, 3, &[1, 2]), now_ms)
            .unwrap();
    }

    #[test]
    fn a_follower_appends_truncates_and_sees_divergence() {
        let leader_dir = tempfile::tempdir().unwrap();
        let follower_dir = tempfile::tempdir().unwrap();
        let (leader, follower) = leader_and_copy(leader_dir.path(), follower_dir.path());
        // The follower leads epoch 2 and takes a record broker 1 (epoch 3) never sees.
        follower
            .apply_leadership(&decision(2, 2, 2, &[2]), 2)
            .unwrap();
        follower.append_record_set(batch(1), 3).unwrap();
        let follower_again = follower;
        broker_1_leads_epoch_3(&leader, &follower_again, 4);
        let (offset, epoch) = follower_again.follower_position().unwrap();
        assert_eq!((offset, epoch), (3, 2));
        match leader.serve_follower(2, offset, epoch, 1 << 20, 5).unwrap() {
            ReplicaRead::Diverging {
                epoch, end_offset, ..
            } => {
                assert_eq!((epoch, end_offset), (1, 2));
                let of_1_in_3 = Followed {
                    leader: 1,
                    leader_epoch: 3,
                };
                follower_again
                    .truncate_as_follower(of_1_in_3, end_offset)
                    .unwrap();
            }
            other => panic!("expected a divergence, got {other:?}"),
        }
        assert_eq!(follower_again.follower_position().unwrap(), (2, 1));
    }

    #[test]
    fn a_former_leaders_late_answer_does_not_touch_the_new_leaders_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path());
        // Broker 2 follows broker 1 in epoch 1 and sends it a fetch...
        p.apply_leadership(&decision(2, 1, 1, &[1, 2, 3]), 0)
            .unwrap();
        let stale = Followed {
            leader: 1,
            leader_epoch: 1,
        };
        // ...then leads in epoch 2 and takes records before the answer comes back.
        p.apply_leadership(&decision(2, 2, 2, &[2, 3]), 1).unwrap();
        p.append_record_set(batch(3), 2).unwrap();
        let e = p.truncate_as_follower(stale, 0).unwrap_err();
        assert_eq!(e.code(), ErrorCode::FencedLeaderEpoch);
        let e = p.append_as_follower(stale, batch(1), 0, 3).unwrap_err();
        assert_eq!(e.code(), ErrorCode::FencedLeaderEpoch);
        let e = p.restart_as_follower_at(stale, 100).unwrap_err();
        assert_eq!(e.code(), ErrorCode::FencedLeaderEpoch);
        assert_eq!(
            p.follower_position().unwrap(),
            (3, 2),
            "the log is untouched"
        );
        // Following broker 3 in epoch 3, an answer fetched in epoch 2 is refused as well.
        p.apply_leadership(&decision(2, 3, 3, &[2, 3]), 4).unwrap();
        let e = p
            .append_as_follower(
                Followed {
                    leader: 3,
                    leader_epoch: 2,
                },
                Bytes::new(),
                0,
                5,
            )
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::FencedLeaderEpoch);
    }

    #[test]
    fn an_epoch_led_without_records_is_dropped_when_the_new_leader_reports_divergence() {
        let leader_dir = tempfile::tempdir().unwrap();
        let follower_dir = tempfile::tempdir().unwrap();
        // Both have 2 records of epoch 1; the follower then led epoch 2 and appended nothing.
        let (leader, follower) = leader_and_copy(leader_dir.path(), follower_dir.path());
        follower
            .apply_leadership(&decision(2, 2, 2, &[2]), 2)
            .unwrap();
        assert_eq!(follower.follower_position().unwrap(), (2, 2));
        // Broker 1 leads again in epoch 3: it never had epoch 2.
        broker_1_leads_epoch_3(&leader, &follower, 3);
        let ReplicaRead::Diverging {
            epoch, end_offset, ..
        } = leader.serve_follower(2, 2, 2, 1 << 20, 4).unwrap()
        else {
            panic!("expected a divergence");
        };
        assert_eq!((epoch, end_offset), (1, 2));
        let of_1_in_3 = Followed {
            leader: 1,
            leader_epoch: 3,
        };
        let to = follower.divergence_truncation(epoch, end_offset).unwrap();
        follower.truncate_as_follower(of_1_in_3, to).unwrap();
        assert_eq!(
            follower.follower_position().unwrap(),
            (2, 1),
            "epoch 2 is gone, so the next fetch does not diverge again"
        );
        assert!(matches!(
            leader.serve_follower(2, 2, 1, 1 << 20, 5).unwrap(),
            ReplicaRead::Records { .. }
        ));
    }
}
