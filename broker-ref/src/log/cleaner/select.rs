//! Which part of a log may be cleaned, and whether it should be now (Kafka's
//! `LogCleanerManager.cleanableOffsets`, `calculateCleanableBytes`, `maxCompactionDelay` and the
//! `LogToClean` ratio).
//!
//! - *First dirty offset*: the cleaner checkpoint, or the log start offset if there is none or
//!   it lies outside `[log start, log end]`.
//! - *First uncleanable offset*: the active segment's base, or earlier the base of the first
//!   sealed dirty segment whose largest timestamp is newer than `now - min.compaction.lag.ms`;
//!   never below the first dirty offset, and never past the segment holding the first offset of
//!   the earliest open transaction. (The high watermark equals the log end offset on this
//!   single-node broker, so it never limits more than the active segment does.)
//! - *Clean bytes*: the segments below the first dirty offset; *cleanable bytes*: the segments
//!   from the first dirty offset up to the first uncleanable one. The dirty ratio is cleanable /
//!   (clean + cleanable).
//! - The log is cleaned when the ratio is **greater** than `min.cleanable.dirty.ratio` (Kafka
//!   compares with `>`), or when there are cleanable bytes and the oldest dirty segment's first
//!   batch is older than `now - max.compaction.lag.ms`.

use super::super::cleaner_checkpoint as offset_checkpoint;
use super::super::segment::Segment;
use super::super::Log;
use crate::Result;

/// The cleanable range of a log at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cleanable {
    /// Start of the dirty section.
    pub(super) first_dirty: i64,
    /// End of the range a pass may clean (a segment base).
    pub(super) first_uncleanable: i64,
    /// Bytes of the segments below the first dirty offset.
    pub(super) clean_bytes: u64,
    /// Bytes of the segments in the cleanable range.
    pub(super) cleanable_bytes: u64,
    /// How long past `max.compaction.lag.ms` the oldest dirty record is (0 if not past).
    pub(super) compaction_delay_ms: i64,
}

impl Cleanable {
    /// cleanable / (clean + cleanable); 0 for an empty log.
    pub(super) fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.cleanable_bytes;
        if total == 0 {
            0.0
        } else {
            self.cleanable_bytes as f64 / total as f64
        }
    }

    /// Whether a pass should run now.
    pub(super) fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        if self.clean_bytes + self.cleanable_bytes == 0
            || self.first_dirty >= self.first_uncleanable
        {
            return false;
        }
        (self.compaction_delay_ms > 0 && self.cleanable_bytes > 0)
            || self.dirty_ratio() > min_cleanable_dirty_ratio
    }
}

impl Log {
    /// The segment holding `offset` (the last one with base ≤ `offset`), or the first segment.
    fn floor_base(&self, offset: i64) -> i64 {
        self.segments
            .range(..=offset)
            .next_back()
            .or_else(|| self.segments.iter().next())
            .map_or(offset, |(&b, _)| b)
    }

    /// Computes the cleanable range at time `now_ms` (see the module docs).
    pub(super) fn cleanable_range(&self, now_ms: i64) -> Result<Cleanable> {
        let (start, end) = (self.log_start_offset, self.log_end_offset);
        let first_dirty = match offset_checkpoint::read(&self.dir) {
            Some(o) if (start..=end).contains(&o) => o,
            Some(o) => {
                if !self.config.is_delete() {
                    tracing::warn!(
                        dir = %self.dir.display(),
                        "cleaner checkpoint {o} is outside [{start}, {end}]; cleaning from the log start offset"
                    );
                }
                start
            }
            None => start,
        };
        let active_base = self.active()?.base_offset();
        let dirty_from = self.floor_base(first_dirty);
        let dirty_sealed = || self.segments.range(dirty_from..active_base).map(|(_, s)| s);
        // Never past the earliest open transaction: whether its records stay depends on how
        // it ends.
        let mut uncleanable = match self.first_unstable_offset {
            Some(o) => active_base.min(o),
            None => active_base,
        };
        let min_lag = self.config.min_compaction_lag_ms.max(0);
        if min_lag > 0 {
            let horizon = now_ms.saturating_sub(min_lag);
            if let Some(s) = dirty_sealed().find(|s| s.largest_timestamp() > horizon) {
                uncleanable = uncleanable.min(s.base_offset());
            }
        }
        let uncleanable = uncleanable.max(first_dirty);
        let first_uncleanable = self.floor_base(uncleanable);
        let size_of = |from: i64, to: i64| -> u64 {
            self.segments.range(from..to).map(|(_, s)| s.size()).sum()
        };
        let clean_bytes = size_of(i64::MIN, first_dirty);
        let cleanable_bytes = size_of(
            self.floor_base(first_dirty.min(first_uncleanable)),
            first_uncleanable,
        );
        let max_lag = self.config.max_compaction_lag_ms.max(0);
        let clean_until = now_ms.saturating_sub(max_lag);
        let mut compaction_delay_ms = 0;
        if clean_until > 0 {
            let mut earliest = i64::MAX;
            for segment in dirty_sealed() {
                if let Some(ts) = first_batch_timestamp(segment)? {
                    earliest = earliest.min(ts);
                }
            }
            if earliest < clean_until {
                compaction_delay_ms = clean_until - earliest;
            }
        }
        Ok(Cleanable {
            first_dirty,
            first_uncleanable,
            clean_bytes,
            cleanable_bytes,
            compaction_delay_ms,
        })
    }
}

/// The max timestamp of a segment's first batch, if positive (Kafka's `getFirstBatchTimestamp`).
fn first_batch_timestamp(segment: &Segment) -> Result<Option<i64>> {
    match segment.batches_from(0).next() {
        Some(item) => Ok(Some(item?.1.max_timestamp).filter(|&t| t > 0)),
        None => Ok(None),
    }
}
