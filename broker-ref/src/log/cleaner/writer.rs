//! Writing one cleaned segment: `<base>.log.cleaned` with its `.index.cleaned` and
//! `.timeindex.cleaned`, indexed by the same rules as an append (`docs/storage.md`): an offset
//! entry before a batch once `index.interval.bytes` were written since the previous one, a time
//! entry with it when the segment's max timestamp grew. If the index files would exceed
//! `segment.index.bytes`, further entries are left out (a sparser index costs lookup time, never
//! correctness).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::config::LogConfig;
use super::super::index::OffsetIndex;
use super::super::scan::BatchHeader;
use super::super::segment::{storage_error, INDEX_EXT, LOG_EXT, TIME_INDEX_EXT};
use super::super::time_index::TimeIndex;
use super::swap::{suffixed_path, CLEANED_SUFFIX};
use crate::Result;

/// Write buffer of the cleaned log file.
const WRITE_BUFFER: usize = 1 << 20;

/// A cleaned segment being written.
pub(super) struct CleanedWriter {
    base: i64,
    path: PathBuf,
    log: BufWriter<File>,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_index_entry: u64,
    max_timestamp: i64,
    next_offset: i64,
    interval: u64,
    max_offset_entries: usize,
    max_time_entries: usize,
}

impl CleanedWriter {
    /// Creates (or empties) the three `.cleaned` files of a segment at `base`.
    pub(super) fn create(dir: &Path, base: i64, config: &LogConfig) -> Result<Self> {
        let path = suffixed_path(dir, base, LOG_EXT, CLEANED_SUFFIX);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(CleanedWriter {
            base,
            path,
            log: BufWriter::with_capacity(WRITE_BUFFER, file),
            size: 0,
            offset_index: OffsetIndex::create(&suffixed_path(
                dir,
                base,
                INDEX_EXT,
                CLEANED_SUFFIX,
            ))?,
            time_index: TimeIndex::create(&suffixed_path(
                dir,
                base,
                TIME_INDEX_EXT,
                CLEANED_SUFFIX,
            ))?,
            bytes_since_index_entry: 0,
            max_timestamp: -1,
            next_offset: base,
            interval: config.index_interval_bytes.max(0) as u64,
            max_offset_entries: config.max_offset_index_entries(),
            max_time_entries: config.max_time_index_entries(),
        })
    }

    /// Appends one batch (`bytes`, described by `header`).
    pub(super) fn append(&mut self, bytes: &[u8], header: &BatchHeader) -> Result<()> {
        let rel = header
            .base_offset
            .checked_sub(self.base)
            .and_then(|r| u32::try_from(r).ok())
            .filter(|_| header.base_offset >= self.next_offset)
            .ok_or_else(|| {
                storage_error(format!(
                    "{}: batch at offset {} does not fit the cleaned segment",
                    self.path.display(),
                    header.base_offset
                ))
            })?;
        let max_ts = self.max_timestamp.max(header.max_timestamp);
        if self.bytes_since_index_entry >= self.interval
            && self.offset_index.len() < self.max_offset_entries
        {
            if let Ok(pos) = u32::try_from(self.size) {
                if self
                    .offset_index
                    .last()
                    .is_none_or(|l| l.rel < rel && l.pos < pos)
                {
                    self.offset_index.push(rel, pos);
                    if max_ts >= 0 && self.time_index.len() < self.max_time_entries {
                        self.time_index.maybe_push(max_ts, rel);
                    }
                    self.bytes_since_index_entry = 0;
                }
            }
        }
        self.log.write_all(bytes)?;
        self.size += bytes.len() as u64;
        self.bytes_since_index_entry += bytes.len() as u64;
        self.max_timestamp = max_ts;
        self.next_offset = header.last_offset + 1;
        Ok(())
    }

    /// Bytes written so far.
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Writes everything out, gives the log file the modification time `modified` (the newest
    /// replaced segment's, as Kafka does, so time-based retention of record-less segments is
    /// unaffected) and fsyncs the three files. Returns the log file's size.
    pub(super) fn finish(mut self, modified: Option<SystemTime>) -> Result<u64> {
        self.log.flush()?;
        let file = self
            .log
            .into_inner()
            .map_err(|e| storage_error(format!("cannot flush a cleaned segment: {e}")))?;
        if let Some(time) = modified {
            file.set_modified(time)?;
        }
        file.sync_all()?;
        self.offset_index.write_pending()?;
        self.offset_index.sync()?;
        self.time_index.write_pending()?;
        self.time_index.sync()?;
        Ok(self.size)
    }
}
