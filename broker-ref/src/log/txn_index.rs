//! The aborted-transaction index of a segment, `<base>.txnindex` (Kafka's `TransactionIndex`).
//!
//! One entry per transaction whose ABORT marker lies in the segment: producer id, the offset of
//! the transaction's first record, the offset of the marker, and the partition's last stable
//! offset once the abort completed. A read_committed Fetch answers with the aborted transactions
//! that overlap the fetched range, so the consumer can drop their records.
//!
//! Entries are 34 bytes, big-endian: `version: i16 (0), producer_id: i64, first_offset: i64,
//! last_offset: i64, last_stable_offset: i64`, in marker order. The file is created with the
//! first entry, appended to with each abort, fsynced with the segment, and rewritten atomically
//! when entries are dropped (a torn tail after a crash, or entries past a truncation). The
//! partition layer re-adds entries whose marker is in the log but whose entry was lost, so the
//! file is a cache of what the markers say.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::checkpoint::TMP_SUFFIX;

/// Extension of aborted-transaction index files.
pub(crate) const TXN_INDEX_EXT: &str = "txnindex";

const ENTRY_SIZE: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer that aborted.
    pub producer_id: i64,
    /// Offset of the transaction's first record in this partition.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The partition's last stable offset after the abort completed.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        out[..2].copy_from_slice(&VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<AbortedTxn> {
        let i64_at = |at: usize| -> Option<i64> {
            Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
        };
        if i16::from_be_bytes([*b.first()?, *b.get(1)?]) != VERSION {
            return None;
        }
        let e = AbortedTxn {
            producer_id: i64_at(2)?,
            first_offset: i64_at(10)?,
            last_offset: i64_at(18)?,
            last_stable_offset: i64_at(26)?,
        };
        (e.first_offset <= e.last_offset && e.producer_id >= 0).then_some(e)
    }
}

/// A segment's aborted-transaction index, kept in memory and mirrored to its file.
#[derive(Debug)]
pub(crate) struct TxnIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    /// Entries appended since the last fsync.
    unsynced: bool,
}

impl TxnIndex {
    /// An index with no entries (its file is created by the first append).
    pub(crate) fn empty(path: PathBuf) -> TxnIndex {
        TxnIndex {
            path,
            entries: Vec::new(),
            unsynced: false,
        }
    }

    /// Loads the file at `path`, keeping the entries whose marker lies in `[base, next)`, in
    /// increasing marker order; a torn tail or an entry outside the range ends the usable part,
    /// and the file is rewritten without what was dropped.
    pub(crate) fn load(path: PathBuf, base: i64, next: Option<i64>) -> io::Result<TxnIndex> {
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TxnIndex::empty(path)),
            Err(e) => return Err(e),
        };
        let mut entries: Vec<AbortedTxn> = Vec::new();
        for chunk in bytes.chunks(ENTRY_SIZE) {
            let Some(e) = AbortedTxn::decode(chunk) else {
                break;
            };
            let in_range = e.last_offset >= base && next.is_none_or(|n| e.last_offset < n);
            let ordered = entries.last().is_none_or(|l| l.last_offset < e.last_offset);
            if !in_range || !ordered {
                break;
            }
            entries.push(e);
        }
        let mut index = TxnIndex {
            path,
            entries,
            unsynced: false,
        };
        if index.entries.len() * ENTRY_SIZE != bytes.len() {
            tracing::warn!(file = %index.path.display(), kept = index.entries.len(), "dropping unusable aborted-transaction index entries");
            index.rewrite()?;
        }
        Ok(index)
    }

    /// The entries, in marker order.
    pub(crate) fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Whether an entry for the marker at `last_offset` exists.
    pub(crate) fn contains(&self, last_offset: i64) -> bool {
        self.entries
            .binary_search_by_key(&last_offset, |e| e.last_offset)
            .is_ok()
    }

    /// Appends an entry (its marker must follow every existing one; others are ignored).
    pub(crate) fn append(&mut self, entry: AbortedTxn) -> io::Result<()> {
        if self
            .entries
            .last()
            .is_some_and(|l| l.last_offset >= entry.last_offset)
        {
            return Ok(());
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let len = file.metadata()?.len();
        let expected = (self.entries.len() * ENTRY_SIZE) as u64;
        if len != expected {
            // A previous write failed half way: restore the file to the entries we know.
            drop(file);
            self.rewrite()?;
            file = OpenOptions::new().append(true).open(&self.path)?;
        }
        file.write_all(&entry.encode())?;
        self.entries.push(entry);
        self.unsynced = true;
        Ok(())
    }

    /// Inserts an entry re-derived from the log, keeping marker order (rewrites the file).
    pub(crate) fn insert(&mut self, entry: AbortedTxn) -> io::Result<()> {
        match self
            .entries
            .binary_search_by_key(&entry.last_offset, |e| e.last_offset)
        {
            Ok(_) => Ok(()),
            Err(i) if i == self.entries.len() => self.append(entry),
            Err(i) => {
                self.entries.insert(i, entry);
                self.rewrite()
            }
        }
    }

    /// Drops every entry whose marker is at or after `offset`.
    pub(crate) fn truncate_from(&mut self, offset: i64) -> io::Result<()> {
        let keep = self.entries.partition_point(|e| e.last_offset < offset);
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.rewrite()?;
        }
        Ok(())
    }

    /// fsyncs the file if entries were appended since the last fsync.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            if let Ok(file) = File::open(&self.path) {
                file.sync_all()?;
            }
            self.unsynced = false;
        }
        Ok(())
    }

    /// Removes the file.
    pub(crate) fn delete(self) -> io::Result<()> {
        remove_if_exists(&self.path)
    }

    /// Writes the entries to `path` (a new file, fsynced); nothing when there are none.
    pub(crate) fn write_to(entries: &[AbortedTxn], path: &Path) -> io::Result<()> {
        if entries.is_empty() {
            return remove_if_exists(path);
        }
        let mut bytes = Vec::with_capacity(entries.len() * ENTRY_SIZE);
        for e in entries {
            bytes.extend_from_slice(&e.encode());
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.write_all_at(&bytes, 0)?;
        file.sync_all()
    }

    /// Atomically replaces the file with the in-memory entries (removes it when empty).
    fn rewrite(&mut self) -> io::Result<()> {
        if self.entries.is_empty() {
            self.unsynced = false;
            return remove_if_exists(&self.path);
        }
        let tmp = PathBuf::from(format!("{}{TMP_SUFFIX}", self.path.display()));
        Self::write_to(&self.entries, &tmp)?;
        fs::rename(&tmp, &self.path)?;
        self.unsynced = false;
        Ok(())
    }
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        }
    }

    #[test]
    fn entries_survive_reload_and_torn_tails_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000010.txnindex");
        let mut index = TxnIndex::empty(path.clone());
        index.append(entry(1, 10, 12)).unwrap();
        index.append(entry(2, 11, 15)).unwrap();
        index.append(entry(3, 9, 14)).unwrap(); // out of order: ignored
        index.sync().unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 68);
        let loaded = TxnIndex::load(path.clone(), 10, None).unwrap();
        assert_eq!(loaded.entries(), &[entry(1, 10, 12), entry(2, 11, 15)]);

        // A torn third entry is cut off on load.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0, 0, 0, 0, 0, 7]).unwrap();
        let loaded = TxnIndex::load(path.clone(), 10, None).unwrap();
        assert_eq!(loaded.entries().len(), 2);
        assert_eq!(fs::metadata(&path).unwrap().len(), 68);

        // Entries past the segment's end (a truncated log) are dropped.
        let mut loaded = TxnIndex::load(path.clone(), 10, Some(14)).unwrap();
        assert_eq!(loaded.entries(), &[entry(1, 10, 12)]);
        loaded.insert(entry(4, 13, 13)).unwrap();
        loaded.insert(entry(5, 10, 11)).unwrap();
        assert!(loaded.contains(11) && loaded.contains(13));
        let reloaded = TxnIndex::load(path.clone(), 10, None).unwrap();
        assert_eq!(
            reloaded
                .entries()
                .iter()
                .map(|e| e.producer_id)
                .collect::<Vec<_>>(),
            [5, 1, 4]
        );
        loaded.truncate_from(0).unwrap();
        assert!(!path.exists(), "an empty index has no file");
    }

    #[test]
    fn garbage_is_not_an_entry() {
        assert_eq!(AbortedTxn::decode(&[0xff; 34]), None);
        assert_eq!(AbortedTxn::decode(&[0; 10]), None);
        let e = entry(7, 5, 9);
        assert_eq!(AbortedTxn::decode(&e.encode()), Some(e));
    }
}
