//! The sparse time index (`<base>.timeindex`): entries of (timestamp i64, relative offset u32),
//! big-endian, 12 bytes each.
//!
//! An entry (T, r) says "T is the largest timestamp of every record in this segment up to and
//! including the batch whose base offset is `segment base + r`". Entries are added only where
//! the offset index gets one (so `r` always has an exact offset index entry) and only when the
//! segment's max timestamp grew since the previous time entry; both fields strictly increase.
//! To find the first record with timestamp ≥ t, start at the last entry with T < t: every record
//! up to that batch is older than t.

use std::io;
use std::path::Path;

use super::index_file::{Entry, IndexFile};

/// Size of one entry on disk.
pub(crate) const ENTRY_SIZE: usize = 12;

/// One time index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeEntry {
    /// Max timestamp of the segment up to and including the batch at `rel`.
    pub(crate) timestamp: i64,
    /// Batch base offset minus the segment base offset.
    pub(crate) rel: u32,
}

impl Entry for TimeEntry {
    const SIZE: usize = ENTRY_SIZE;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.rel.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[..8]);
        TimeEntry {
            timestamp: i64::from_be_bytes(ts),
            rel: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        }
    }
}

/// The time index of one segment.
#[derive(Debug)]
pub(crate) struct TimeIndex {
    file: IndexFile<TimeEntry>,
}

impl TimeIndex {
    /// A new, empty index at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        Ok(TimeIndex {
            file: IndexFile::create(path)?,
        })
    }

    /// Loads the index at `path` if it exists and passes the sanity check (strictly increasing
    /// fields, relative offsets at most `max_rel`); `Ok(None)` otherwise.
    pub(crate) fn load(path: &Path, max_rel: u64) -> io::Result<Option<Self>> {
        let Some(file) = IndexFile::<TimeEntry>::open_existing(path)? else {
            return Ok(None);
        };
        let entries = file.entries();
        let sane = entries
            .windows(2)
            .all(|w| w[0].timestamp < w[1].timestamp && w[0].rel < w[1].rel)
            && entries.last().is_none_or(|e| u64::from(e.rel) <= max_rel);
        Ok(sane.then_some(TimeIndex { file }))
    }

    /// All entries.
    pub(crate) fn entries(&self) -> &[TimeEntry] {
        self.file.entries()
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.file.entries().len()
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<TimeEntry> {
        self.file.entries().last().copied()
    }

    /// Appends an entry in memory if `timestamp` exceeds the last entry's.
    pub(crate) fn maybe_push(&mut self, timestamp: i64, rel: u32) {
        if self
            .last()
            .is_none_or(|l| timestamp > l.timestamp && rel > l.rel)
        {
            self.file.push(TimeEntry { timestamp, rel });
        }
    }

    /// The last entry whose timestamp is below `timestamp`.
    pub(crate) fn last_before(&self, timestamp: i64) -> Option<TimeEntry> {
        let entries = self.file.entries();
        let n = entries.partition_point(|e| e.timestamp < timestamp);
        n.checked_sub(1).map(|i| entries[i])
    }

    /// Drops entries for batches at relative offset `rel` or later.
    pub(crate) fn truncate_from(&mut self, rel: u64) -> io::Result<()> {
        let keep = self
            .file
            .entries()
            .partition_point(|e| u64::from(e.rel) < rel);
        self.file.truncate(keep)
    }

    /// Writes entries not yet on disk.
    pub(crate) fn write_pending(&mut self) -> io::Result<()> {
        self.file.write_pending()
    }

    /// fsyncs what was written since the last fsync.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.file.sync()
    }

    /// Removes the file.
    pub(crate) fn delete(self) -> io::Result<()> {
        self.file.delete()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_and_monotonic_push() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let mut idx = TimeIndex::create(&path).unwrap();
        idx.maybe_push(100, 2);
        idx.maybe_push(100, 5); // not larger: skipped
        idx.maybe_push(250, 9);
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.last_before(100), None);
        assert_eq!(idx.last_before(101).map(|e| e.rel), Some(2));
        assert_eq!(idx.last_before(i64::MAX).map(|e| e.rel), Some(9));
        idx.write_pending().unwrap();
        let loaded = TimeIndex::load(&path, 9).unwrap().unwrap();
        assert_eq!(loaded.entries(), idx.entries());
        assert!(TimeIndex::load(&path, 8).unwrap().is_none());
        std::fs::write(&path, [0u8; 24]).unwrap();
        assert!(TimeIndex::load(&path, 100).unwrap().is_none());
    }
}
