//! A node's copy of the replicated log: a snapshot, then the entries after it, with the leader
//! epoch lookups Kafka's epoch cache answers (`endOffsetFor`) and the fetch validation a leader
//! runs on every follower fetch.

use std::collections::VecDeque;

use crate::types::{Entry, OffsetAndEpoch, Snapshot};

/// The log of one node. Entries are numbered from `start()`, the end of the snapshot (0
/// without one).
#[derive(Debug, Clone, Default)]
pub struct RaftLog {
    snapshot: Option<Snapshot>,
    start: i64,
    entries: VecDeque<Entry>,
    /// (epoch, first offset) for each epoch present in `entries`, ascending.
    epochs: Vec<(i32, i64)>,
}

/// What a leader makes of a follower's fetch position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchValidation {
    /// The follower's log matches this one up to its fetch offset.
    Valid,
    /// The follower's log diverges: it must truncate to (at most) this end of the epoch.
    Diverging(OffsetAndEpoch),
    /// The follower needs the snapshot with this id first.
    Snapshot(OffsetAndEpoch),
}

impl RaftLog {
    /// A log from persisted parts: a snapshot and the entries after it.
    pub fn restore(snapshot: Option<Snapshot>, entries: Vec<Entry>) -> Self {
        let start = snapshot.as_ref().map_or(0, |s| s.id.offset);
        let mut log = RaftLog {
            snapshot,
            start,
            entries: VecDeque::new(),
            epochs: Vec::new(),
        };
        for e in entries {
            log.append(e);
        }
        log
    }

    /// The first offset held as an entry (the snapshot's end offset, or 0).
    pub fn start(&self) -> i64 {
        self.start
    }

    /// The offset the next entry gets (LEO).
    pub fn end_offset(&self) -> i64 {
        self.start + self.entries.len() as i64
    }

    /// The epoch of the last entry, else of the snapshot, else 0.
    pub fn last_epoch(&self) -> i32 {
        self.entries
            .back()
            .map(|e| e.epoch)
            .or_else(|| self.snapshot.as_ref().map(|s| s.id.epoch))
            .unwrap_or(0)
    }

    /// The log end with the last epoch: what a candidate and a fetching follower present.
    pub fn end(&self) -> OffsetAndEpoch {
        OffsetAndEpoch::new(self.end_offset(), self.last_epoch())
    }

    /// The snapshot the log starts with.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The entry at `offset`, if held.
    pub fn entry(&self, offset: i64) -> Option<&Entry> {
        let i = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        self.entries.get(i)
    }

    /// The epoch of the entry just before `offset` (a snapshot's end included), if known.
    pub fn epoch_before(&self, offset: i64) -> Option<i32> {
        if offset == self.start {
            return Some(self.snapshot.as_ref().map_or(0, |s| s.id.epoch));
        }
        self.entry(offset - 1).map(|e| e.epoch)
    }

    /// Entries from `from` on, at most `max_bytes` of them (at least one if there is one).
    pub fn read(&self, from: i64, max_bytes: usize) -> Vec<Entry> {
        let Some(i) = from
            .checked_sub(self.start)
            .and_then(|d| usize::try_from(d).ok())
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for e in self.entries.iter().skip(i) {
            bytes += e.size();
            if !out.is_empty() && bytes > max_bytes {
                break;
            }
            out.push(e.clone());
        }
        out
    }

    /// Appends one entry at the end.
    pub fn append(&mut self, entry: Entry) {
        let offset = self.end_offset();
        if self.epochs.last().is_none_or(|(e, _)| *e < entry.epoch) {
            self.epochs.push((entry.epoch, offset));
        }
        self.entries.push_back(entry);
    }

    /// Removes every entry at `offset` and after (never the snapshot).
    pub fn truncate_to(&mut self, offset: i64) {
        let keep = usize::try_from((offset - self.start).max(0)).unwrap_or(0);
        self.entries.truncate(keep);
        let end = self.end_offset();
        self.epochs.retain(|(_, start)| *start < end);
    }

    /// Replaces the whole log with `snapshot` (a follower that fell behind the leader's log
    /// start).
    pub fn install_snapshot(&mut self, snapshot: Snapshot) {
        self.start = snapshot.id.offset;
        self.entries.clear();
        self.epochs.clear();
        self.snapshot = Some(snapshot);
    }

    /// Keeps `snapshot` as the log's start and drops the entries it covers. The caller checks
    /// that the snapshot ends within the log, on an entry of its epoch.
    pub fn compact(&mut self, snapshot: Snapshot) {
        let drop = usize::try_from(snapshot.id.offset - self.start)
            .unwrap_or(0)
            .min(self.entries.len());
        self.entries.drain(..drop);
        self.start = snapshot.id.offset;
        let first = self.start;
        // Epochs that ended inside the snapshot go; the one running across its end now starts
        // at the log start.
        let mut kept: Vec<(i32, i64)> = Vec::with_capacity(self.epochs.len());
        for (i, (epoch, start)) in self.epochs.iter().enumerate() {
            let next = self.epochs.get(i + 1).map(|(_, s)| *s);
            if next.is_some_and(|n| n <= first) {
                continue;
            }
            kept.push((*epoch, (*start).max(first)));
        }
        if self.entries.is_empty() {
            kept.clear();
        }
        self.epochs = kept;
        self.snapshot = Some(snapshot);
    }

    /// Kafka's leader-epoch-cache answer for `epoch` over the entries held
    /// (`LeaderEpochFileCache.endOffsetFor`): the latest epoch ends at the log end; an older
    /// epoch ends where the next higher one starts, reported as the largest epoch not above
    /// it; an epoch below every one held ends where the first starts; `None` for an epoch
    /// above every one held.
    fn epoch_cache_end(&self, epoch: i32) -> Option<OffsetAndEpoch> {
        if epoch < 0 {
            return None;
        }
        if self.epochs.last().is_some_and(|(e, _)| *e == epoch) {
            return Some(OffsetAndEpoch::new(self.end_offset(), epoch));
        }
        let (_, next) = self.epochs.iter().find(|(e, _)| *e > epoch)?;
        let floor = self.epochs.iter().rev().find(|(e, _)| *e <= epoch);
        Some(OffsetAndEpoch::new(*next, floor.map_or(epoch, |(e, _)| *e)))
    }

    /// Where `epoch` ends in this log: the epoch cache's answer, or the log end with its last
    /// epoch when the cache knows nothing of `epoch` (an epoch above every one held, or no
    /// entries after the snapshot).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> OffsetAndEpoch {
        self.epoch_cache_end(epoch).unwrap_or_else(|| self.end())
    }

    /// What a leader answers a follower fetching from `fetch_offset` whose last entry has
    /// `last_fetched_epoch` (KRaft's `validateOffsetAndEpoch`).
    pub fn validate_fetch(&self, fetch_offset: i64, last_fetched_epoch: i32) -> FetchValidation {
        if let Some(s) = &self.snapshot {
            if fetch_offset < s.id.offset
                || (fetch_offset == s.id.offset && last_fetched_epoch != s.id.epoch)
            {
                return FetchValidation::Snapshot(s.id);
            }
        } else if fetch_offset == 0 {
            return FetchValidation::Valid;
        }
        let end = self.end_offset_for_epoch(last_fetched_epoch);
        if end.epoch != last_fetched_epoch || end.offset < fetch_offset {
            FetchValidation::Diverging(end)
        } else {
            FetchValidation::Valid
        }
    }

    /// Where a follower truncates when its leader reports `diverging` (KRaft's
    /// `truncateToEndOffset`): the end of that epoch in both logs, whichever is lower; the
    /// next fetch checks again from there.
    pub fn truncation_offset(&self, diverging: OffsetAndEpoch) -> i64 {
        let target = match self.epoch_cache_end(diverging.epoch) {
            Some(local) if local.epoch == diverging.epoch => local.offset.min(diverging.offset),
            Some(local) => local.offset,
            // No entry of that epoch or below it after the snapshot: nothing to cut.
            None => self.end_offset(),
        };
        // The snapshot is committed data: a divergence never lies below it.
        target.clamp(self.start, self.end_offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn log_of(epochs: &[i32]) -> RaftLog {
        RaftLog::restore(
            None,
            epochs
                .iter()
                .map(|e| Entry::data(*e, Bytes::from_static(b"x")))
                .collect(),
        )
    }

    #[test]
    fn end_offsets_per_epoch_follow_kafkas_epoch_cache() {
        // offsets: 0,1 epoch 1; 2,3,4 epoch 3; 5 epoch 4
        let log = log_of(&[1, 1, 3, 3, 3, 4]);
        assert_eq!(log.end_offset_for_epoch(4), OffsetAndEpoch::new(6, 4));
        assert_eq!(log.end_offset_for_epoch(3), OffsetAndEpoch::new(5, 3));
        assert_eq!(log.end_offset_for_epoch(2), OffsetAndEpoch::new(2, 1));
        assert_eq!(log.end_offset_for_epoch(1), OffsetAndEpoch::new(2, 1));
        assert_eq!(log.end_offset_for_epoch(0), OffsetAndEpoch::new(0, 0));
        // Above every epoch held: the log end with its last epoch.
        assert_eq!(log.end_offset_for_epoch(5), OffsetAndEpoch::new(6, 4));
    }

    #[test]
    fn fetch_validation_finds_the_divergence() {
        let leader = log_of(&[1, 1, 3, 3]);
        assert_eq!(leader.validate_fetch(0, 0), FetchValidation::Valid);
        assert_eq!(leader.validate_fetch(2, 1), FetchValidation::Valid);
        assert_eq!(leader.validate_fetch(4, 3), FetchValidation::Valid);
        // A follower with entries of epoch 2 (never on this leader) at offsets 2..5.
        assert_eq!(
            leader.validate_fetch(5, 2),
            FetchValidation::Diverging(OffsetAndEpoch::new(2, 1))
        );
        // Ahead of the leader in the leader's own epoch.
        assert_eq!(
            leader.validate_fetch(6, 3),
            FetchValidation::Diverging(OffsetAndEpoch::new(4, 3))
        );
        let follower = log_of(&[1, 1, 2, 2, 2]);
        assert_eq!(follower.truncation_offset(OffsetAndEpoch::new(2, 1)), 2);
    }

    #[test]
    fn truncation_and_compaction_keep_the_epoch_cache_true() {
        let mut log = log_of(&[1, 1, 3, 3, 3, 4]);
        log.truncate_to(5);
        assert_eq!(log.end(), OffsetAndEpoch::new(5, 3));
        assert_eq!(log.end_offset_for_epoch(3), OffsetAndEpoch::new(5, 3));
        log.compact(Snapshot {
            id: OffsetAndEpoch::new(3, 3),
            data: Bytes::new(),
        });
        assert_eq!(log.start(), 3);
        assert_eq!(log.end_offset_for_epoch(3), OffsetAndEpoch::new(5, 3));
        assert_eq!(
            log.validate_fetch(2, 3),
            FetchValidation::Snapshot(OffsetAndEpoch::new(3, 3))
        );
        assert_eq!(log.validate_fetch(3, 3), FetchValidation::Valid);
        assert_eq!(log.epoch_before(3), Some(3));
        log.compact(Snapshot {
            id: OffsetAndEpoch::new(5, 3),
            data: Bytes::new(),
        });
        assert_eq!(log.end(), OffsetAndEpoch::new(5, 3));
        assert_eq!(log.validate_fetch(5, 3), FetchValidation::Valid);
        assert_eq!(
            log.validate_fetch(5, 2),
            FetchValidation::Snapshot(OffsetAndEpoch::new(5, 3))
        );
    }
}
