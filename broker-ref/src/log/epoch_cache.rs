//! The leader epoch cache: for each leader epoch that wrote to the log, the offset of its first
//! batch. OffsetForLeaderEpoch and (later) follower truncation are answered from it.
//!
//! Entries are strictly increasing in both epoch and start offset. Persisted as
//! `leader-epoch-checkpoint` (`epoch start_offset` per line) whenever it changes.

use std::io;
use std::path::Path;

use super::checkpoint::{self, LEADER_EPOCH_FILE};

/// One leader epoch and the offset of its first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// Offset of the first batch appended under this epoch.
    pub start_offset: i64,
}

/// In-memory epoch → start offset map, kept monotonic.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// Loads the checkpoint in `dir`; a missing or malformed file gives an empty cache (recovery
    /// then re-learns epochs from the batches it scans).
    pub(crate) fn load(dir: &Path) -> Self {
        let mut cache = LeaderEpochCache::default();
        match checkpoint::read_entries(dir, LEADER_EPOCH_FILE, 2) {
            Ok(Some(rows)) => {
                for row in rows {
                    if let Ok(epoch) = i32::try_from(row[0]) {
                        cache.assign(epoch, row[1]);
                    }
                }
            }
            Ok(None) => {}
            Err(reason) => tracing::warn!(dir = %dir.display(), "{reason}; starting empty"),
        }
        cache
    }

    /// Writes the checkpoint atomically.
    pub(crate) fn persist(&self, dir: &Path) -> io::Result<()> {
        let rows: Vec<[i64; 2]> = self
            .entries
            .iter()
            .map(|e| [i64::from(e.epoch), e.start_offset])
            .collect();
        let rows: Vec<&[i64]> = rows.iter().map(|r| &r[..]).collect();
        checkpoint::write_entries(dir, LEADER_EPOCH_FILE, &rows)
    }

    /// The entries, oldest first.
    pub(crate) fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The newest epoch, if any batch carried one.
    pub(crate) fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset`. Entries that would break monotonicity
    /// (an epoch ≥ `epoch` or a start ≥ `start_offset`) are removed first, as Kafka does.
    /// Negative epochs (batches written without a leader epoch) are ignored. Returns whether
    /// the cache changed.
    pub(crate) fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || start_offset < 0 {
            return false;
        }
        let needed = self
            .entries
            .last()
            .is_none_or(|l| l.epoch != epoch || start_offset < l.start_offset);
        if !needed {
            return false;
        }
        while self
            .entries
            .last()
            .is_some_and(|l| l.epoch >= epoch || l.start_offset >= start_offset)
        {
            self.entries.pop();
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// Removes entries starting at or after `end_offset` (the log was truncated there).
    pub(crate) fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        self.entries.len() != before
    }

    /// Drops entries wholly below a new log start offset; the epoch in force at `start_offset`
    /// is kept with its start moved up to `start_offset`.
    pub(crate) fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let covered = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        if covered == 0 {
            return false;
        }
        let changed = covered > 1 || self.entries[covered - 1].start_offset != start_offset;
        self.entries.drain(..covered - 1);
        self.entries[0].start_offset = start_offset;
        changed
    }

    /// OffsetForLeaderEpoch: the largest epoch ≤ `requested` and the end offset of that epoch
    /// (the start of the next larger epoch, or `log_end_offset` for the latest epoch). `None`
    /// where Kafka answers UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET (-1, -1).
    pub(crate) fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        if requested < 0 {
            return None;
        }
        if self.latest_epoch() == Some(requested) {
            return Some((requested, log_end_offset));
        }
        let higher = self.entries.partition_point(|e| e.epoch <= requested);
        let next = self.entries.get(higher)?;
        if higher == 0 {
            // Older than anything we know: the data was removed; point at the first known epoch.
            return Some((requested, next.start_offset));
        }
        Some((self.entries[higher - 1].epoch, next.start_offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut c = LeaderEpochCache::default();
        for &(e, o) in entries {
            c.assign(e, o);
        }
        c
    }

    #[test]
    fn assign_keeps_entries_monotonic() {
        let mut c = cache(&[(1, 0), (1, 5), (3, 10)]);
        assert_eq!(c.entries().len(), 2);
        assert_eq!(c.latest_epoch(), Some(3));
        assert!(!c.assign(3, 20));
        assert!(!c.assign(-1, 30));
        // A conflicting entry (a lower epoch at a later offset) replaces the newer ones.
        assert!(c.assign(2, 12));
        assert_eq!(
            c.entries(),
            &[
                EpochEntry {
                    epoch: 1,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 2,
                    start_offset: 12
                }
            ]
        );
    }

    #[test]
    fn end_offsets_follow_kafka() {
        let c = cache(&[(2, 10), (4, 20), (7, 35)]);
        assert_eq!(c.end_offset_for(7, 50), Some((7, 50)));
        assert_eq!(c.end_offset_for(4, 50), Some((4, 35)));
        assert_eq!(c.end_offset_for(5, 50), Some((4, 35)));
        assert_eq!(c.end_offset_for(2, 50), Some((2, 20)));
        assert_eq!(c.end_offset_for(1, 50), Some((1, 10)));
        assert_eq!(c.end_offset_for(8, 50), None);
        assert_eq!(c.end_offset_for(-1, 50), None);
        assert_eq!(LeaderEpochCache::default().end_offset_for(0, 5), None);
    }

    #[test]
    fn truncation_from_both_ends() {
        let mut c = cache(&[(2, 10), (4, 20), (7, 35)]);
        assert!(c.truncate_from_end(35));
        assert_eq!(c.latest_epoch(), Some(4));
        assert!(c.truncate_from_start(25));
        assert_eq!(
            c.entries(),
            &[EpochEntry {
                epoch: 4,
                start_offset: 25
            }]
        );
        assert!(!c.truncate_from_start(5));
    }

    #[test]
    fn persists_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(&[(0, 0), (3, 17)]);
        c.persist(dir.path()).unwrap();
        let loaded = LeaderEpochCache::load(dir.path());
        assert_eq!(loaded.entries(), c.entries());
        std::fs::write(dir.path().join(LEADER_EPOCH_FILE), "junk").unwrap();
        assert!(LeaderEpochCache::load(dir.path()).entries().is_empty());
    }
}
