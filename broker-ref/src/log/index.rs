//! The sparse offset index (`<base>.index`): entries of (relative offset u32, file position
//! u32), big-endian, 8 bytes each. An entry says "the batch whose base offset is
//! `segment base + relative offset` starts at byte `position` of the `.log` file". Entries are
//! strictly increasing in both fields. One is added before a batch once at least
//! `index.interval.bytes` of log were written since the previous entry.

use std::io;
use std::path::Path;

use super::index_file::{Entry, IndexFile};

/// Size of one entry on disk.
pub(crate) const ENTRY_SIZE: usize = 8;

/// One offset index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetEntry {
    /// Batch base offset minus the segment base offset.
    pub(crate) rel: u32,
    /// Byte position of the batch in the `.log` file.
    pub(crate) pos: u32,
}

impl Entry for OffsetEntry {
    const SIZE: usize = ENTRY_SIZE;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rel.to_be_bytes());
        out.extend_from_slice(&self.pos.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        OffsetEntry {
            rel: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            pos: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// The offset index of one segment.
#[derive(Debug)]
pub(crate) struct OffsetIndex {
    file: IndexFile<OffsetEntry>,
}

impl OffsetIndex {
    /// A new, empty index at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        Ok(OffsetIndex {
            file: IndexFile::create(path)?,
        })
    }

    /// Loads the index at `path` if it exists and passes the sanity check against a log of
    /// `log_size` bytes whose relative offsets are at most `max_rel`; `Ok(None)` otherwise.
    pub(crate) fn load(path: &Path, log_size: u64, max_rel: u64) -> io::Result<Option<Self>> {
        let Some(file) = IndexFile::open_existing(path)? else {
            return Ok(None);
        };
        let sane = is_sane(file.entries(), log_size, max_rel);
        Ok(sane.then_some(OffsetIndex { file }))
    }

    /// All entries.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[OffsetEntry] {
        self.file.entries()
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.file.entries().len()
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<OffsetEntry> {
        self.file.entries().last().copied()
    }

    /// Appends an entry in memory (written by [`OffsetIndex::write_pending`]).
    pub(crate) fn push(&mut self, rel: u32, pos: u32) {
        self.file.push(OffsetEntry { rel, pos });
    }

    /// The entry with the largest relative offset ≤ `rel`.
    pub(crate) fn floor(&self, rel: u64) -> Option<OffsetEntry> {
        let entries = self.file.entries();
        let n = entries.partition_point(|e| u64::from(e.rel) <= rel);
        n.checked_sub(1).map(|i| entries[i])
    }

    /// The position of the first entry whose relative offset is ≥ `rel`.
    pub(crate) fn ceiling_position(&self, rel: u64) -> Option<u32> {
        let entries = self.file.entries();
        let n = entries.partition_point(|e| u64::from(e.rel) < rel);
        entries.get(n).map(|e| e.pos)
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

/// Strictly increasing relative offsets and positions, positions inside the log, relative
/// offsets within the segment's range.
fn is_sane(entries: &[OffsetEntry], log_size: u64, max_rel: u64) -> bool {
    let ordered = entries
        .windows(2)
        .all(|w| w[0].rel < w[1].rel && w[0].pos < w[1].pos);
    ordered
        && entries
            .last()
            .is_none_or(|e| u64::from(e.pos) < log_size && u64::from(e.rel) <= max_rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_lookup_and_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let mut idx = OffsetIndex::create(&path).unwrap();
        for (rel, pos) in [(3, 100), (10, 400), (20, 900)] {
            idx.push(rel, pos);
        }
        assert_eq!(idx.floor(2), None);
        assert_eq!(idx.floor(3).map(|e| e.pos), Some(100));
        assert_eq!(idx.floor(19).map(|e| e.pos), Some(400));
        assert_eq!(idx.floor(1_000).map(|e| e.pos), Some(900));
        assert_eq!(idx.ceiling_position(4), Some(400));
        assert_eq!(idx.ceiling_position(10), Some(400));
        assert_eq!(idx.ceiling_position(21), None);
        idx.write_pending().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 24);
        idx.truncate_from(10).unwrap();
        assert_eq!(idx.len(), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8);
        let loaded = OffsetIndex::load(&path, 1_000, 100).unwrap().unwrap();
        assert_eq!(loaded.entries(), &[OffsetEntry { rel: 3, pos: 100 }]);
    }

    #[test]
    fn insane_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let mut idx = OffsetIndex::create(&path).unwrap();
        idx.push(5, 100);
        idx.push(4, 200);
        idx.write_pending().unwrap();
        assert!(OffsetIndex::load(&path, 1_000, 100).unwrap().is_none());
        std::fs::write(&path, [0u8; 7]).unwrap();
        assert!(OffsetIndex::load(&path, 1_000, 100).unwrap().is_none());
        std::fs::write(&path, [0, 0, 0, 1, 0, 0, 0x10, 0]).unwrap();
        // Position 4096 lies past a 1000-byte log.
        assert!(OffsetIndex::load(&path, 1_000, 100).unwrap().is_none());
        assert!(OffsetIndex::load(&dir.path().join("missing"), 1, 1)
            .unwrap()
            .is_none());
    }
}
