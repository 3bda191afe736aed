//! The leader's side of replication: what each voter and observer has fetched, the high
//! watermark a majority of voters reached, fetches held until there is something to send, and
//! the check that a majority still follows (else the leader resigns).

use std::collections::{BTreeMap, BTreeSet};

use crate::types::NodeId;

/// What the leader knows of one replica's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// The replica's log end, from its latest valid fetch.
    pub end_offset: Option<i64>,
    /// When it last fetched (ms).
    pub last_fetch_ms: Option<u64>,
    /// When it last fetched up to the leader's log end (ms).
    pub last_caught_up_ms: Option<u64>,
    /// The high watermark the leader last sent it: a fetch from a replica that has not seen
    /// the current one is answered at once, not held (it would otherwise learn of a commit
    /// only when its wait ends).
    pub sent_high_watermark: i64,
}

/// A fetch the leader holds until new entries or a new high watermark arrive, or its wait ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedFetch {
    /// Who sent it.
    pub from: NodeId,
    /// Its request id.
    pub id: u64,
    /// Where it reads from.
    pub fetch_offset: i64,
    /// When it is answered empty.
    pub deadline: u64,
    /// The replica it fetches for.
    pub replica: NodeId,
}

/// The leader's state for its epoch.
#[derive(Debug, Clone)]
pub struct LeaderState {
    /// The offset of the epoch's first entry (its LeaderChange record): nothing is committed in
    /// this epoch before a majority has it.
    pub epoch_start: i64,
    /// When leadership began (ms).
    pub since_ms: u64,
    /// Progress of every voter but the leader.
    pub voters: BTreeMap<NodeId, Progress>,
    /// Progress of observers (brokers that follow the log without voting).
    pub observers: BTreeMap<NodeId, Progress>,
    /// Voters that acknowledged BeginQuorumEpoch (or fetched in this epoch).
    pub acknowledged: BTreeSet<NodeId>,
    /// When BeginQuorumEpoch is sent next to each voter that has not acknowledged it.
    pub begin_due: BTreeMap<NodeId, u64>,
    /// Fetches waiting for data.
    pub parked: Vec<ParkedFetch>,
}

impl LeaderState {
    /// A new leadership over `others` (the voters but the leader) from `epoch_start`.
    pub fn new(others: impl Iterator<Item = NodeId>, epoch_start: i64, now: u64) -> Self {
        let voters: BTreeMap<NodeId, Progress> = others.map(|v| (v, Progress::default())).collect();
        let begin_due = voters.keys().map(|v| (*v, now)).collect();
        LeaderState {
            epoch_start,
            since_ms: now,
            voters,
            observers: BTreeMap::new(),
            acknowledged: BTreeSet::new(),
            begin_due,
            parked: Vec::new(),
        }
    }

    /// Notes a valid fetch from `replica` at `fetch_offset` while the leader's log ends at
    /// `leader_end`.
    pub fn record_fetch(&mut self, replica: NodeId, fetch_offset: i64, leader_end: i64, now: u64) {
        let p = match self.voters.get_mut(&replica) {
            Some(p) => {
                self.acknowledged.insert(replica);
                self.begin_due.remove(&replica);
                p
            }
            None => self.observers.entry(replica).or_default(),
        };
        p.end_offset = Some(fetch_offset);
        p.last_fetch_ms = Some(now);
        if fetch_offset >= leader_end {
            p.last_caught_up_ms = Some(now);
        }
    }

    /// The high watermark last sent to `replica` (0 before any).
    pub fn sent_high_watermark(&self, replica: NodeId) -> i64 {
        self.voters
            .get(&replica)
            .or_else(|| self.observers.get(&replica))
            .map_or(0, |p| p.sent_high_watermark)
    }

    /// Notes that `replica` was sent `high_watermark`.
    pub fn note_sent_high_watermark(&mut self, replica: NodeId, high_watermark: i64) {
        if let Some(p) = self
            .voters
            .get_mut(&replica)
            .or_else(|| self.observers.get_mut(&replica))
        {
            p.sent_high_watermark = p.sent_high_watermark.max(high_watermark);
        }
    }

    /// The offset a majority of the voters (the leader, at `leader_end`, among them) have
    /// reached, if that commits a record of this epoch (KRaft's `maybeUpdateHighWatermark`).
    pub fn majority_end(&self, leader_end: i64) -> Option<i64> {
        let mut ends: Vec<i64> = self
            .voters
            .values()
            .map(|p| p.end_offset.unwrap_or(-1))
            .collect();
        ends.push(leader_end);
        ends.sort_unstable_by(|a, b| b.cmp(a));
        let reached = ends[ends.len() / 2];
        (reached > self.epoch_start).then_some(reached)
    }

    /// Whether a majority of voters (the leader included) fetched within `window` ms of `now`.
    pub fn majority_fetched_within(&self, now: u64, window: u64) -> bool {
        let recent = self
            .voters
            .values()
            .filter(|p| {
                p.last_fetch_ms
                    .is_some_and(|t| now.saturating_sub(t) <= window)
            })
            .count();
        (recent + 1) * 2 > self.voters.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_watermark_is_the_majority_end_past_the_epoch_start() {
        let mut l = LeaderState::new([2, 3].into_iter(), 5, 0);
        assert_eq!(l.majority_end(9), None, "nobody else fetched yet");
        l.record_fetch(2, 5, 9, 1);
        assert_eq!(
            l.majority_end(9),
            None,
            "the epoch's first record is not on a majority"
        );
        l.record_fetch(2, 7, 9, 2);
        assert_eq!(l.majority_end(9), Some(7));
        l.record_fetch(3, 9, 9, 3);
        assert_eq!(l.majority_end(9), Some(9));
        assert!(l.majority_fetched_within(3, 0));
    }
}
