//! Read-only handles on sealed segments, so the expensive part of a cleaning pass can run without
//! the partition lock.
//!
//! A sealed segment's `.log` never changes in place: it is only ever deleted (retention,
//! DeleteRecords, truncation) or replaced by the cleaner. A snapshot opens its own file handle
//! while the lock is held; the handle keeps reading the same bytes even if the file is deleted or
//! renamed afterwards. Device, inode, size and modification time identify the file's state, so
//! the commit can tell whether the segment it cleaned is still the one in the log, unchanged.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use odradek::records::RecordBatch;

use super::super::scan::{BatchHeader, ChunkReader, HEADER_SIZE};
use super::super::segment::{segment_path, storage_error, Segment, LOG_EXT};
use crate::Result;

/// Read buffer for walking a segment: large, because cleaning reads whole segments.
const READ_CHUNK: usize = 1 << 20;

/// Which file a segment was, in which state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileId {
    fn of(meta: &fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// The identity and state of the file at `path`, if it exists.
pub(super) fn file_id(path: &Path) -> Option<FileId> {
    fs::metadata(path).ok().map(|m| FileId::of(&m))
}

/// A sealed segment as the plan saw it.
#[derive(Debug)]
pub(super) struct SegmentSnapshot {
    /// Base offset.
    pub(super) base: i64,
    /// Base offset of the following segment (the end of this one's offset range).
    pub(super) next_base: i64,
    /// Bytes of the `.log` file when the plan was made.
    pub(super) size: u64,
    /// Identity of the `.log` file.
    pub(super) id: FileId,
    /// Modification time of the `.log` file (kept on the cleaned segment, as Kafka does).
    pub(super) modified: Option<SystemTime>,
    path: PathBuf,
    file: File,
}

impl SegmentSnapshot {
    /// Opens a handle on `segment` (in `dir`, followed by a segment at `next_base`). Must be
    /// called under the partition lock.
    pub(super) fn open(dir: &Path, segment: &Segment, next_base: i64) -> Result<Self> {
        let path = segment_path(dir, segment.base_offset(), LOG_EXT);
        let file = File::open(&path)?;
        let meta = file.metadata()?;
        if meta.len() < segment.size() {
            return Err(storage_error(format!(
                "{}: file is shorter than the segment's {} bytes",
                path.display(),
                segment.size()
            )));
        }
        Ok(SegmentSnapshot {
            base: segment.base_offset(),
            next_base,
            size: segment.size(),
            id: FileId::of(&meta),
            modified: meta.modified().ok(),
            path,
            file,
        })
    }

    /// The batches from byte `pos` (a batch boundary) to the end, each parsed and CRC-checked.
    pub(super) fn batches(&self, pos: u64) -> SnapshotBatches<'_> {
        SnapshotBatches {
            snapshot: self,
            reader: ChunkReader::new(&self.file, self.size, READ_CHUNK),
            pos,
            failed: false,
        }
    }
}

/// Iterator over (position, header, batch) of a snapshot. Bytes that do not form a valid batch
/// end it with a storage error: the cleaner never rewrites data it cannot vouch for.
pub(super) struct SnapshotBatches<'a> {
    snapshot: &'a SegmentSnapshot,
    reader: ChunkReader<'a>,
    pos: u64,
    failed: bool,
}

impl SnapshotBatches<'_> {
    fn read_next(&mut self) -> Result<(u64, BatchHeader, RecordBatch)> {
        let pos = self.pos;
        let path = &self.snapshot.path;
        let invalid = |what: &str| {
            storage_error(format!(
                "{}: {what} at position {pos}; not cleaning this log",
                path.display()
            ))
        };
        let head = self
            .reader
            .bytes_at(pos, HEADER_SIZE)?
            .ok_or_else(|| invalid("truncated batch header"))?;
        let header = BatchHeader::parse(&head).ok_or_else(|| invalid("invalid batch header"))?;
        let len = usize::try_from(header.size).map_err(|_| invalid("oversized batch"))?;
        let bytes = self
            .reader
            .bytes_at(pos, len)?
            .ok_or_else(|| invalid("truncated batch"))?;
        let batch = RecordBatch::new(bytes).map_err(|e| invalid(&e.to_string()))?;
        batch.validate_crc().map_err(|e| invalid(&e.to_string()))?;
        self.pos = pos + header.size;
        Ok((pos, header, batch))
    }
}

impl Iterator for SnapshotBatches<'_> {
    type Item = Result<(u64, BatchHeader, RecordBatch)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.snapshot.size {
            return None;
        }
        let item = self.read_next();
        self.failed = item.is_err();
        Some(item)
    }
}
