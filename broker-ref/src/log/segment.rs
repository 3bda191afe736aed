//! One segment: `<base>.log` with its `<base>.index` and `<base>.timeindex`.
//!
//! The log file holds batches back to back exactly as appended. The segment keeps its indexes in
//! memory (written to their files on flush, roll and close) and tracks its size, next offset and
//! max timestamp, so appends are one `pwrite` and lookups touch the disk only for data.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use odradek::records::RecordBatch;
use odradek::ErrorCode;

use super::config::LogConfig;
use super::index::OffsetIndex;
use super::scan::{BatchHeader, ChunkReader, HeaderWalk, Step, HEADER_SIZE, LOG_OVERHEAD};
use super::time_index::TimeIndex;
use super::txn_index::{AbortedTxn, TxnIndex, TXN_INDEX_EXT};
use crate::{Error, Result};

/// Extension of segment data files.
pub(crate) const LOG_EXT: &str = "log";
/// Extension of offset index files.
pub(crate) const INDEX_EXT: &str = "index";
/// Extension of time index files.
pub(crate) const TIME_INDEX_EXT: &str = "timeindex";

/// Chunk size for the recovery scan, which reads whole segments.
const RECOVERY_CHUNK: usize = 1 << 20;

/// Reads exactly `len` bytes at `pos` into a fresh buffer without zero-filling it first (a Fetch
/// reads megabytes; zeroing them cost as much as the read itself).
fn pread_uninit(file: &File, len: usize, pos: u64) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let filled = buf.len();
        let spare = &mut buf.spare_capacity_mut()[..len - filled];
        let offset = libc::off_t::try_from(pos + filled as u64)
            .map_err(|_| std::io::Error::other("read position out of range"))?;
        // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by `buf`; pread writes
        // at most that many bytes into it and reports how many it wrote.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast::<libc::c_void>(),
                spare.len(),
                offset,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        // SAFETY: pread initialised the first `n` (≤ spare.len()) bytes after `filled`.
        unsafe { buf.set_len(filled + n as usize) };
    }
    Ok(buf)
}

/// `<dir>/<base as 20 digits>.<ext>`.
pub(crate) fn segment_path(dir: &Path, base_offset: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{ext}"))
}

/// A storage error for on-disk data that breaks an invariant (the log never serves it).
pub(crate) fn storage_error(message: impl Into<String>) -> Error {
    Error::kafka(ErrorCode::KafkaStorageError, message)
}

/// One segment of a partition's log.
#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    log: File,
    size: u64,
    next_offset: i64,
    max_timestamp: i64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_index_entry: u64,
    roll_base_ms: Option<i64>,
    /// Aborted transactions whose ABORT marker is in this segment.
    txn_index: TxnIndex,
}

impl Segment {
    /// Creates an empty segment starting at `base_offset`. Fails if its log file exists.
    pub(crate) fn create(dir: &Path, base_offset: i64) -> Result<Segment> {
        let log_path = segment_path(dir, base_offset, LOG_EXT);
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&log_path)?;
        Ok(Segment {
            base_offset,
            log_path,
            log,
            size: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_index: OffsetIndex::create(&segment_path(dir, base_offset, INDEX_EXT))?,
            time_index: TimeIndex::create(&segment_path(dir, base_offset, TIME_INDEX_EXT))?,
            bytes_since_index_entry: 0,
            roll_base_ms: None,
            txn_index: TxnIndex::empty(segment_path(dir, base_offset, TXN_INDEX_EXT)),
        })
    }

    fn open_log(dir: &Path, base_offset: i64) -> Result<(PathBuf, File, u64)> {
        let log_path = segment_path(dir, base_offset, LOG_EXT);
        let log = OpenOptions::new().read(true).write(true).open(&log_path)?;
        let size = log.metadata()?.len();
        Ok((log_path, log, size))
    }

    /// Opens a segment whose data is known durable (below the recovery point, or after a clean
    /// shutdown), trusting its index files after a sanity check. Only the batches after the last
    /// offset index entry are walked (headers only) to find the next offset and max timestamp.
    /// `Ok(None)` if the indexes or the walked tail are inconsistent: recover it instead.
    pub(crate) fn open_trusted(
        dir: &Path,
        base_offset: i64,
        next_base: Option<i64>,
    ) -> Result<Option<Segment>> {
        let (log_path, log, size) = Self::open_log(dir, base_offset)?;
        let max_rel = max_relative(base_offset, next_base);
        let index_path = segment_path(dir, base_offset, INDEX_EXT);
        let Some(offset_index) = OffsetIndex::load(&index_path, size, max_rel)? else {
            return Ok(None);
        };
        let time_path = segment_path(dir, base_offset, TIME_INDEX_EXT);
        let Some(time_index) = TimeIndex::load(&time_path, max_rel)? else {
            return Ok(None);
        };
        // Time entries are taken together with offset entries: the two files must agree.
        let consistent = time_index.entries().iter().all(|t| {
            offset_index
                .floor(u64::from(t.rel))
                .is_some_and(|o| o.rel == t.rel)
        });
        if !consistent {
            return Ok(None);
        }
        let mut segment = Segment {
            base_offset,
            log_path,
            log,
            size,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_index,
            time_index,
            bytes_since_index_entry: 0,
            roll_base_ms: None,
            txn_index: TxnIndex::empty(segment_path(dir, base_offset, TXN_INDEX_EXT)),
        };
        if !segment.rescan_tail(next_base)? {
            return Ok(None);
        }
        segment.txn_index = TxnIndex::load(
            segment_path(dir, base_offset, TXN_INDEX_EXT),
            base_offset,
            Some(segment.next_offset),
        )?;
        segment.roll_base_ms = segment.first_batch_timestamp()?;
        Ok(Some(segment))
    }

    /// Recomputes next offset, max timestamp and the bytes since the last index entry by walking
    /// the batches after the last offset index entry. `false` if the tail is not a clean run of
    /// batches ending exactly at the end of the file.
    fn rescan_tail(&mut self, next_base: Option<i64>) -> Result<bool> {
        let (start, mut min_base) = match self.offset_index.last() {
            Some(e) => (u64::from(e.pos), self.base_offset + i64::from(e.rel)),
            None => (0, self.base_offset),
        };
        let expected_first = self
            .offset_index
            .last()
            .map(|e| self.base_offset + i64::from(e.rel));
        let mut max_ts = self.time_index.last().map_or(-1, |e| e.timestamp);
        let mut next = self.base_offset;
        let mut walk = HeaderWalk::new(&self.log, start, self.size);
        let mut first = true;
        loop {
            match walk.step()? {
                Step::Batch(_, h) => {
                    if first && expected_first.is_some_and(|e| e != h.base_offset) {
                        return Ok(false);
                    }
                    first = false;
                    if h.base_offset < min_base
                        || next_base.is_some_and(|n| h.last_offset >= n)
                        || h.last_offset - self.base_offset > i64::from(u32::MAX)
                    {
                        return Ok(false);
                    }
                    max_ts = max_ts.max(h.max_timestamp);
                    min_base = h.last_offset + 1;
                    next = h.last_offset + 1;
                }
                Step::End => break,
                Step::Invalid(_) => return Ok(false),
            }
        }
        if expected_first.is_some() && first {
            return Ok(false);
        }
        self.next_offset = next;
        self.max_timestamp = max_ts;
        self.bytes_since_index_entry = self.size - start;
        Ok(true)
    }

    /// Rebuilds a segment from its log file: every batch is checked (framing, magic 2, CRC-32C,
    /// offsets increasing and inside the segment's range); the file is truncated at the first
    /// batch that fails and the indexes are rebuilt from the batches kept. `on_batch` sees every
    /// kept batch (the log re-learns leader epochs from them). Returns the segment and whether
    /// the whole file was intact.
    pub(crate) fn recover(
        dir: &Path,
        base_offset: i64,
        next_base: Option<i64>,
        config: &LogConfig,
        on_batch: &mut dyn FnMut(&BatchHeader),
    ) -> Result<(Segment, bool)> {
        let (log_path, log, file_size) = Self::open_log(dir, base_offset)?;
        let mut segment = Segment {
            base_offset,
            log_path,
            log,
            size: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_index: OffsetIndex::create(&segment_path(dir, base_offset, INDEX_EXT))?,
            time_index: TimeIndex::create(&segment_path(dir, base_offset, TIME_INDEX_EXT))?,
            bytes_since_index_entry: 0,
            roll_base_ms: None,
            txn_index: TxnIndex::empty(segment_path(dir, base_offset, TXN_INDEX_EXT)),
        };
        let max_rel = max_relative(base_offset, next_base);
        let mut pos = 0u64;
        let mut min_base = base_offset;
        {
            let scan_file = segment.log.try_clone()?;
            let mut reader = ChunkReader::new(&scan_file, file_size, RECOVERY_CHUNK);
            while pos < file_size {
                let Some(head) = reader.bytes_at(pos, LOG_OVERHEAD)? else {
                    break;
                };
                let length = odradek::records::peek_batch_length(&head).unwrap_or(-1);
                if length < (HEADER_SIZE - LOG_OVERHEAD) as i32 {
                    break;
                }
                let total = LOG_OVERHEAD + length as usize;
                let Some(bytes) = reader.bytes_at(pos, total)? else {
                    break;
                };
                let Ok(batch) = RecordBatch::new(bytes) else {
                    break;
                };
                if batch.validate_crc().is_err()
                    || batch.base_offset() < min_base
                    || (batch.last_offset() - base_offset) as u64 > max_rel
                {
                    break;
                }
                let header = BatchHeader::of(&batch);
                segment.account(pos, &header, config);
                on_batch(&header);
                min_base = header.last_offset + 1;
                pos += header.size;
            }
        }
        let intact = pos == file_size;
        if !intact {
            tracing::warn!(
                segment = %segment.log_path.display(),
                position = pos,
                dropped_bytes = file_size - pos,
                "truncating torn or corrupt data found by recovery"
            );
            segment.log.set_len(pos)?;
        }
        segment.size = pos;
        // Entries whose marker did not survive are dropped; the partition layer re-adds the
        // entries of markers it finds without one.
        segment.txn_index = TxnIndex::load(
            segment_path(dir, base_offset, TXN_INDEX_EXT),
            base_offset,
            Some(segment.next_offset),
        )?;
        segment.roll_base_ms = segment.first_batch_timestamp()?;
        segment.offset_index.write_pending()?;
        segment.time_index.write_pending()?;
        segment.sync_all()?;
        Ok((segment, intact))
    }

    /// Updates size, offsets, max timestamp and indexes for a batch written at `pos`.
    fn account(&mut self, pos: u64, header: &BatchHeader, config: &LogConfig) {
        let rel = (header.base_offset - self.base_offset) as u32;
        let max_ts = self.max_timestamp.max(header.max_timestamp);
        let interval = config.index_interval_bytes.max(0) as u64;
        if self.bytes_since_index_entry >= interval {
            if let Ok(pos32) = u32::try_from(pos) {
                let indexed = self
                    .offset_index
                    .last()
                    .is_none_or(|l| l.rel < rel && l.pos < pos32);
                if indexed {
                    self.offset_index.push(rel, pos32);
                    if max_ts >= 0 {
                        self.time_index.maybe_push(max_ts, rel);
                    }
                    self.bytes_since_index_entry = 0;
                }
            }
        }
        self.size = pos + header.size;
        self.bytes_since_index_entry += header.size;
        self.next_offset = header.last_offset + 1;
        self.max_timestamp = max_ts;
    }

    /// Whether `header` (the next batch to append, `header.size` bytes) must go to a new
    /// segment: this one is non-empty and the batch would push it past `segment.bytes`, or it is
    /// older than the topic's max segment age, or an index is full, or the batch's last offset
    /// does not fit a u32 relative offset.
    pub(crate) fn should_roll(
        &self,
        header: &BatchHeader,
        now_ms: i64,
        config: &LogConfig,
    ) -> bool {
        if self.size == 0 {
            return false;
        }
        self.size + header.size > config.segment_bytes.max(0) as u64
            || self
                .roll_base_ms
                .is_some_and(|t| now_ms.saturating_sub(t) > config.max_segment_ms())
            || self.offset_index.len() >= config.max_offset_index_entries()
            || self.time_index.len() >= config.max_time_index_entries()
            || header.last_offset - self.base_offset > i64::from(u32::MAX)
    }

    /// Appends one batch (already validated and stamped) with a single write. On a write error
    /// the file is cut back to its previous size so no partial batch stays behind.
    pub(crate) fn append(
        &mut self,
        batch: &[u8],
        header: &BatchHeader,
        now_ms: i64,
        config: &LogConfig,
    ) -> Result<()> {
        let pos = self.size;
        if let Err(e) = self.log.write_all_at(batch, pos) {
            if let Err(cut) = self.log.set_len(pos) {
                tracing::error!(segment = %self.log_path.display(), "cannot undo a failed write: {cut}");
            }
            return Err(e.into());
        }
        if self.roll_base_ms.is_none() {
            self.roll_base_ms = Some(now_ms);
        }
        self.account(pos, header, config);
        Ok(())
    }

    /// Max timestamp of the first batch (the roll clock of a reopened segment), if it has one.
    fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        if self.size == 0 {
            return Ok(None);
        }
        match HeaderWalk::new(&self.log, 0, self.size).step()? {
            Step::Batch(_, h) if h.max_timestamp >= 0 => Ok(Some(h.max_timestamp)),
            _ => Ok(None),
        }
    }

    /// First offset the segment may hold.
    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }
    /// Offset after the last batch (the base offset when empty).
    pub(crate) fn next_offset(&self) -> i64 {
        self.next_offset
    }
    /// Bytes in the log file.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
    /// Largest batch max timestamp, or -1.
    pub(crate) fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// The timestamp retention compares against: the max timestamp, or the file's modification
    /// time when no batch carries a timestamp (as Kafka does).
    pub(crate) fn largest_timestamp(&self) -> i64 {
        if self.max_timestamp >= 0 {
            return self.max_timestamp;
        }
        fs::metadata(&self.log_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// Writes pending index entries and fsyncs the log data (the indexes of the segment holding
    /// the recovery point are rebuilt after a crash, so they need no fsync here).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.offset_index.write_pending()?;
        self.time_index.write_pending()?;
        super::faults::before_fsync(&self.log_path)?;
        self.log.sync_data()?;
        super::faults::after_fsync(&self.log_path, self.size);
        self.txn_index.sync()?;
        Ok(())
    }

    /// Writes pending index entries and fsyncs all three files: the segment becomes trusted.
    pub(crate) fn seal(&mut self) -> Result<()> {
        self.offset_index.write_pending()?;
        self.time_index.write_pending()?;
        self.sync_all()
    }

    fn sync_all(&mut self) -> Result<()> {
        super::faults::before_fsync(&self.log_path)?;
        self.log.sync_data()?;
        super::faults::after_fsync(&self.log_path, self.size);
        self.offset_index.sync()?;
        self.time_index.sync()?;
        self.txn_index.sync()?;
        Ok(())
    }

    /// The aborted transactions whose marker is in this segment, in marker order.
    pub(crate) fn aborted_txns(&self) -> &[AbortedTxn] {
        self.txn_index.entries()
    }

    /// Whether the abort marker at `last_offset` has its entry.
    pub(crate) fn has_aborted_txn(&self, last_offset: i64) -> bool {
        self.txn_index.contains(last_offset)
    }

    /// Records an aborted transaction whose marker is in this segment (kept in marker order;
    /// an entry for a marker already indexed is ignored).
    pub(crate) fn add_aborted_txn(&mut self, entry: AbortedTxn) -> Result<()> {
        self.txn_index.insert(entry)?;
        Ok(())
    }

    /// Removes the segment's files.
    pub(crate) fn delete(self) -> Result<()> {
        let Segment {
            log_path,
            log,
            offset_index,
            time_index,
            txn_index,
            ..
        } = self;
        drop(log);
        fs::remove_file(&log_path)?;
        offset_index.delete()?;
        time_index.delete()?;
        txn_index.delete()?;
        Ok(())
    }

    /// Where to start walking for `offset`: the offset index entry at or below it, checked
    /// against the batch header it points at (an entry that disagrees is ignored and the walk
    /// starts at the beginning of the file, so a bad index can cost time but never correctness).
    fn walk_for(&self, offset: i64) -> Result<HeaderWalk<'_>> {
        let rel = offset.saturating_sub(self.base_offset).max(0) as u64;
        if let Some(entry) = self.offset_index.floor(rel) {
            let pos = u64::from(entry.pos);
            let mut probe = [0u8; HEADER_SIZE];
            let expected = self.base_offset + i64::from(entry.rel);
            let ok = pos + HEADER_SIZE as u64 <= self.size
                && self.log.read_exact_at(&mut probe, pos).is_ok()
                && BatchHeader::parse(&probe).is_some_and(|h| h.base_offset == expected);
            if ok {
                return Ok(HeaderWalk::new(&self.log, pos, self.size));
            }
            tracing::warn!(
                segment = %self.log_path.display(),
                "offset index entry {entry:?} does not match the log; scanning from the start"
            );
        }
        Ok(HeaderWalk::new(&self.log, 0, self.size))
    }

    /// The first batch whose last offset is ≥ `offset`, with its position; `None` if every
    /// batch of the segment ends below `offset`.
    pub(crate) fn find_batch(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>> {
        let mut walk = self.walk_for(offset)?;
        loop {
            match walk.step()? {
                Step::Batch(pos, h) if h.last_offset >= offset => return Ok(Some((pos, h))),
                Step::Batch(..) => {}
                Step::End => return Ok(None),
                Step::Invalid(pos) => {
                    return Err(storage_error(format!(
                        "{}: no valid batch at position {pos}",
                        self.log_path.display()
                    )))
                }
            }
        }
    }

    /// A position from which every batch starts at an offset ≥ `offset` (the file size if the
    /// index knows none): a read bounded by `offset` never needs bytes past it.
    pub(crate) fn position_limit(&self, offset: i64) -> u64 {
        let rel = offset.saturating_sub(self.base_offset).max(0) as u64;
        self.offset_index
            .ceiling_position(rel)
            .map_or(self.size, u64::from)
            .min(self.size)
    }

    /// Walks the batches from `pos` (a batch boundary) to the end of the segment.
    pub(crate) fn batches_from(&self, pos: u64) -> SegmentBatches<'_> {
        SegmentBatches {
            segment: self,
            walk: HeaderWalk::new(&self.log, pos, self.size),
            done: false,
        }
    }

    /// Reads `len` bytes at `pos` (pread).
    pub(crate) fn read_exact(&self, pos: u64, len: u64) -> Result<Vec<u8>> {
        if pos.checked_add(len).is_none_or(|end| end > self.size) {
            return Err(storage_error(format!(
                "{}: read of {len} bytes at {pos} past the end",
                self.log_path.display()
            )));
        }
        let len = usize::try_from(len).map_err(|_| storage_error("read too large"))?;
        Ok(pread_uninit(&self.log, len, pos)?)
    }

    /// Reads and parses the whole batch at `pos`.
    pub(crate) fn read_batch(&self, pos: u64, header: &BatchHeader) -> Result<RecordBatch> {
        let bytes = Bytes::from(self.read_exact(pos, header.size)?);
        RecordBatch::new(bytes).map_err(|e| {
            storage_error(format!(
                "{}: batch at position {pos} unreadable: {e}",
                self.log_path.display()
            ))
        })
    }

    /// The first record with timestamp ≥ `timestamp` and offset ≥ `min_offset`, as
    /// (offset, timestamp). Starts at the time index entry below `timestamp`.
    pub(crate) fn find_by_timestamp(
        &self,
        timestamp: i64,
        min_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        let from_time = self
            .time_index
            .last_before(timestamp)
            .map_or(self.base_offset, |e| self.base_offset + i64::from(e.rel));
        let Some((pos, _)) = self.find_batch(from_time.max(min_offset))? else {
            return Ok(None);
        };
        for item in self.batches_from(pos) {
            let (pos, h) = item?;
            if h.last_offset < min_offset || h.max_timestamp < timestamp {
                continue;
            }
            let batch = self.read_batch(pos, &h)?;
            for record in batch.records().map_err(|e| storage_error(e.to_string()))? {
                let record = record.map_err(|e| storage_error(e.to_string()))?;
                if record.offset >= min_offset && record.timestamp >= timestamp {
                    return Ok(Some((record.offset, record.timestamp)));
                }
            }
        }
        Ok(None)
    }

    /// The largest record timestamp among records at offset ≥ `min_offset`, with the first
    /// offset carrying it, by reading every batch that could beat the best so far.
    pub(crate) fn scan_max_timestamp(&self, min_offset: i64) -> Result<Option<(i64, i64)>> {
        let Some((pos, _)) = self.find_batch(min_offset)? else {
            return Ok(None);
        };
        let mut best: Option<(i64, i64)> = None;
        for item in self.batches_from(pos) {
            let (pos, h) = item?;
            if best.is_some_and(|(ts, _)| h.max_timestamp <= ts) || h.max_timestamp < 0 {
                continue;
            }
            let batch = self.read_batch(pos, &h)?;
            for record in batch.records().map_err(|e| storage_error(e.to_string()))? {
                let record = record.map_err(|e| storage_error(e.to_string()))?;
                if record.offset >= min_offset && best.is_none_or(|(ts, _)| record.timestamp > ts) {
                    best = Some((record.timestamp, record.offset));
                }
            }
        }
        Ok(best)
    }

    /// Removes every batch whose last offset is ≥ `offset` (whole batches only) and returns the
    /// new next offset: `offset`, or the base offset of the batch it fell inside. fsyncs the log.
    pub(crate) fn truncate_to(&mut self, offset: i64) -> Result<i64> {
        let Some((pos, h)) = self.find_batch(offset)? else {
            self.next_offset = self.next_offset.min(offset.max(self.base_offset));
            return Ok(self.next_offset);
        };
        let rel = (h.base_offset - self.base_offset).max(0) as u64;
        self.log.set_len(pos)?;
        super::faults::before_fsync(&self.log_path)?;
        self.log.sync_data()?;
        super::faults::after_fsync(&self.log_path, pos);
        self.size = pos;
        self.offset_index.truncate_from(rel)?;
        self.time_index.truncate_from(rel)?;
        self.txn_index.truncate_from(h.base_offset)?;
        if !self.rescan_tail(None)? {
            return Err(storage_error(format!(
                "{}: inconsistent after truncation to {offset}",
                self.log_path.display()
            )));
        }
        self.next_offset = h.base_offset.min(offset).max(self.next_offset);
        if self.size == 0 {
            self.roll_base_ms = None;
        }
        Ok(self.next_offset)
    }

    /// Number of (offset, time) index entries, for tests.
    #[cfg(test)]
    pub(crate) fn index_entry_counts(&self) -> (usize, usize) {
        (self.offset_index.len(), self.time_index.len())
    }
}

/// The largest relative offset a segment may hold before `next_base`.
fn max_relative(base_offset: i64, next_base: Option<i64>) -> u64 {
    let cap = u64::from(u32::MAX);
    next_base.map_or(cap, |n| ((n - base_offset - 1).max(0) as u64).min(cap))
}

/// Iterator over (position, header) of a segment's batches; a structural error ends it with an
/// error.
pub(crate) struct SegmentBatches<'a> {
    segment: &'a Segment,
    walk: HeaderWalk<'a>,
    done: bool,
}

impl Iterator for SegmentBatches<'_> {
    type Item = Result<(u64, BatchHeader)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = match self.walk.step() {
            Ok(Step::Batch(pos, h)) => return Some(Ok((pos, h))),
            Ok(Step::End) => None,
            Ok(Step::Invalid(pos)) => Some(Err(storage_error(format!(
                "{}: no valid batch at position {pos}",
                self.segment.log_path.display()
            )))),
            Err(e) => Some(Err(e.into())),
        };
        self.done = true;
        item
    }
}
