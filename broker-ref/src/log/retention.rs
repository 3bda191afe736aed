//! Removing old data: DeleteRecords (raising the log start offset) and retention by time and
//! size, always whole segments from the front.
//!
//! Rules, following Kafka's `UnifiedLog.deleteOldSegments`:
//! - segments whose successor starts at or below the log start offset are deleted (any policy);
//! - with `cleanup.policy` containing `delete`: segments are deleted from the front while
//!   `now - largest timestamp > retention.ms` (largest timestamp = the segment's max record
//!   timestamp, or the file's mtime if no record has one), and while the log without them still
//!   holds at least `retention.bytes`;
//! - the empty active segment is never deleted; if every segment is deletable, the log first
//!   rolls so the expired active segment can go and an empty one at the log end offset remains.
//!
//! The log start offset is raised and checkpointed before the files are removed, so a crash in
//! between leaves at worst segments below the start offset, removed by the next pass.

use odradek::ErrorCode;

use super::checkpoint::{self, LOG_START_OFFSET_FILE};
use super::segment::Segment;
use super::{Log, RetentionOutcome};
use crate::{Error, Result};

impl Log {
    /// DeleteRecords: raises the log start offset to `offset` (the new low watermark) and
    /// deletes segments that end below it. `OFFSET_OUT_OF_RANGE` if `offset` is negative or
    /// beyond the log end offset; an offset at or below the current start changes nothing.
    /// Returns the log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64> {
        if offset < 0 || offset > self.log_end_offset {
            return Err(Error::kafka(
                ErrorCode::OffsetOutOfRange,
                format!(
                    "cannot delete records before {offset}: the log ends at {}",
                    self.log_end_offset
                ),
            ));
        }
        self.check_usable()?;
        if offset > self.log_start_offset {
            self.begin_change()?;
            self.raise_log_start_offset(offset)?;
            self.delete_segments_below_start()?;
        }
        Ok(self.log_start_offset)
    }

    /// Applies retention at broker time `now_ms` (see the module docs).
    pub fn enforce_retention(&mut self, now_ms: i64) -> Result<RetentionOutcome> {
        self.check_usable()?;
        let mut out = RetentionOutcome::default();
        let (n, bytes) = self.delete_segments_below_start()?;
        out.deleted_below_start_offset = n;
        out.deleted_bytes += bytes;
        if self.config.is_delete() && self.config.retention_ms >= 0 {
            let retention = self.config.retention_ms;
            let n =
                self.deletable_prefix(|s| now_ms.saturating_sub(s.largest_timestamp()) > retention);
            let (n, bytes) = self.delete_oldest(n)?;
            out.deleted_by_time = n;
            out.deleted_bytes += bytes;
        }
        if self.config.is_delete() && self.config.retention_bytes >= 0 {
            let mut excess =
                i128::from(self.size_bytes()) - i128::from(self.config.retention_bytes);
            let n = self.deletable_prefix(|s| {
                let size = i128::from(s.size());
                if excess - size >= 0 {
                    excess -= size;
                    true
                } else {
                    false
                }
            });
            let (n, bytes) = self.delete_oldest(n)?;
            out.deleted_by_size = n;
            out.deleted_bytes += bytes;
        }
        out.log_start_offset = self.log_start_offset;
        Ok(out)
    }

    fn raise_log_start_offset(&mut self, offset: i64) -> Result<()> {
        self.begin_change()?;
        self.log_start_offset = offset;
        checkpoint::write_offset(&self.dir, LOG_START_OFFSET_FILE, offset)?;
        if self.epochs.truncate_from_start(offset) {
            self.epochs.persist(&self.dir)?;
        }
        Ok(())
    }

    /// How many segments from the front satisfy `deletable`, stopping at the first that does
    /// not and never counting an empty active segment.
    fn deletable_prefix(&self, mut deletable: impl FnMut(&Segment) -> bool) -> usize {
        let count = self.segments.len();
        let mut n = 0;
        for (i, segment) in self.segments.values().enumerate() {
            let empty_active = i + 1 == count && segment.size() == 0;
            if empty_active || !deletable(segment) {
                break;
            }
            n += 1;
        }
        n
    }

    /// Deletes the `n` oldest segments, rolling first if that is all of them.
    fn delete_oldest(&mut self, n: usize) -> Result<(usize, u64)> {
        if n == 0 {
            return Ok((0, 0));
        }
        if n >= self.segments.len() {
            self.roll()?;
        }
        let Some(&new_first) = self.segments.keys().nth(n) else {
            return Ok((0, 0));
        };
        if new_first > self.log_start_offset {
            self.raise_log_start_offset(new_first)?;
        }
        self.remove_front(n)
    }

    /// Deletes segments whose successor starts at or below the log start offset.
    fn delete_segments_below_start(&mut self) -> Result<(usize, u64)> {
        let n = self
            .segments
            .keys()
            .skip(1)
            .take_while(|&&next| next <= self.log_start_offset)
            .count();
        self.remove_front(n)
    }

    fn remove_front(&mut self, n: usize) -> Result<(usize, u64)> {
        if n > 0 {
            self.begin_change()?;
        }
        let mut bytes = 0;
        for _ in 0..n {
            if let Some((_, segment)) = self.segments.pop_first() {
                bytes += segment.size();
                segment.delete()?;
            }
        }
        if n > 0 {
            checkpoint::sync_dir(&self.dir)?;
        }
        Ok((n, bytes))
    }
}
