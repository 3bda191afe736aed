//! Log compaction ("cleaning") for topics whose `cleanup.policy` contains `compact`, following
//! Apache Kafka's log cleaner (`docs/storage.md`, *Compaction*).
//!
//! A pass has three steps, so the partition lock is held only briefly:
//!
//! 1. [`Log::plan_cleaning`] (lock held, cheap): decides from segment sizes and timestamps
//!    whether the log needs cleaning (`select`), and opens read handles on the sealed segments
//!    below the first uncleanable offset (`snapshot`).
//! 2. [`CleaningPlan::build`] (no lock, the expensive part): builds the key → latest offset map
//!    of the dirty section (`offset_map`), then filters every batch below the map's end
//!    (`filter`) into cleaned segments, grouping small segments (`group`, `writer`). Only
//!    `.cleaned` files are written.
//! 3. [`Log::commit_cleaning`] (lock held): checks that every replaced segment is still the same
//!    file with the same size (retention, DeleteRecords or truncation may have removed it
//!    meanwhile), swaps the cleaned segments in crash-safely (`swap`), and advances the cleaner
//!    checkpoint (`offset_checkpoint`).
//!
//! [`Log::clean`] runs all three with the log borrowed throughout.

mod aborted;
mod filter;
mod group;
mod offset_map;
mod select;
mod snapshot;
pub(crate) mod swap;
mod writer;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use super::config::LogConfig;
use super::segment::{segment_path, Segment, LOG_EXT};
use super::txn_index::{AbortedTxn, TxnIndex, TXN_INDEX_EXT};
use super::Log;
use crate::Result;

use aborted::AbortedRanges;
use filter::Filter;
use group::{clean_group, group_segments, CleanedGroup};
use select::Cleanable;
use snapshot::{file_id, SegmentSnapshot};

/// Broker-level settings of the cleaner (topic-level ones are in [`LogConfig`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanerOptions {
    /// `log.cleaner.dedupe.buffer.size`: memory the key map of one pass may use. When it is
    /// full, the pass cleans up to there and the next pass continues.
    pub dedupe_buffer_bytes: u64,
}

impl Default for CleanerOptions {
    fn default() -> Self {
        CleanerOptions {
            dedupe_buffer_bytes: 128 << 20,
        }
    }
}

/// What a cleaning pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanOutcome {
    /// Where the dirty section started.
    pub first_dirty_offset: i64,
    /// Where the pass's key map ended: everything below was cleaned.
    pub end_offset: i64,
    /// Whether the cleaner checkpoint moved to `end_offset` (not when a replaced segment changed
    /// under the cleaner; the next pass then redoes the work).
    pub checkpoint_advanced: bool,
    /// Old segments replaced.
    pub segments_replaced: usize,
    /// Cleaned segments swapped in.
    pub segments_written: usize,
    /// Cleaned groups dropped because their segments changed or disappeared meanwhile.
    pub groups_abandoned: usize,
    /// Records read while filtering.
    pub records_read: u64,
    /// Records removed.
    pub records_removed: u64,
    /// Size of the replaced segments.
    pub bytes_before: u64,
    /// Size of the segments that replaced them.
    pub bytes_after: u64,
}

/// A log's state as the cleaner sees it (diagnostics and tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanableState {
    /// Start of the dirty section (the cleaner checkpoint, clamped to the log).
    pub first_dirty_offset: i64,
    /// End of what a pass may clean now: the active segment's base, or the first segment still
    /// within `min.compaction.lag.ms`.
    pub first_uncleanable_offset: i64,
    /// cleanable bytes / (clean + cleanable bytes).
    pub dirty_ratio: f64,
    /// Whether a pass would run now.
    pub needs_cleaning: bool,
}

/// Step 1's result: what to clean, with read handles on the segments involved. Build it with
/// [`CleaningPlan::build`] without holding the partition lock.
#[derive(Debug)]
pub struct CleaningPlan {
    dir: PathBuf,
    config: LogConfig,
    options: CleanerOptions,
    now_ms: i64,
    range: Cleanable,
    first_dirty_pos: u64,
    segments: Vec<SegmentSnapshot>,
    aborted: AbortedRanges,
}

/// Step 2's result: cleaned segments written to `.cleaned` files, waiting for
/// [`Log::commit_cleaning`]. Dropping it removes those files.
#[derive(Debug)]
pub struct BuiltCleaning {
    dir: PathBuf,
    groups: Vec<CleanedGroup>,
    outcome: CleanOutcome,
}

impl Drop for BuiltCleaning {
    fn drop(&mut self) {
        for group in self.groups.drain(..) {
            swap::discard_cleaned(&self.dir, group.base);
        }
    }
}

impl CleaningPlan {
    /// Step 2 (see the module docs): reads the planned segments and writes their cleaned
    /// replacements. Needs no lock on the log; the log may be appended to, rolled, read or
    /// have retention applied meanwhile.
    pub fn build(self) -> Result<BuiltCleaning> {
        let dirty = offset_map::build(
            &self.segments,
            self.range.first_dirty,
            self.first_dirty_pos,
            self.range.first_uncleanable,
            self.options.dedupe_buffer_bytes.max(1),
            &self.aborted,
        )?;
        let filter = Filter {
            map: &dirty.map,
            latest_offset: dirty.end_offset - 1,
            upper_bound: self.range.first_uncleanable,
            now_ms: self.now_ms,
            config: &self.config,
            aborted: &self.aborted,
        };
        let mut built = BuiltCleaning {
            dir: self.dir.clone(),
            groups: Vec::new(),
            outcome: CleanOutcome {
                first_dirty_offset: self.range.first_dirty,
                end_offset: dirty.end_offset,
                ..CleanOutcome::default()
            },
        };
        let cleanable = self
            .segments
            .iter()
            .take_while(|s| s.base < dirty.end_offset)
            .count();
        let segments = &self.segments[..cleanable];
        let max_bytes = self.config.segment_bytes.max(1) as u64;
        for range in group_segments(segments, max_bytes) {
            let (group, counts) = clean_group(&self.dir, &segments[range], &filter, &self.config)?;
            built.outcome.records_read += counts.read;
            built.outcome.records_removed += counts.read - counts.kept;
            built.groups.extend(group);
        }
        tracing::debug!(
            dir = %self.dir.display(),
            first_dirty = self.range.first_dirty,
            end = dirty.end_offset,
            keys = dirty.map.len(),
            map_records = dirty.records_read,
            groups = built.groups.len(),
            "cleaned segments written"
        );
        Ok(built)
    }
}

/// Whether a planned group can be swapped in.
enum Verdict {
    /// Every member is unchanged.
    Intact,
    /// No member is left (retention or DeleteRecords removed them all).
    Gone,
    /// Some member changed.
    Changed,
}

impl Log {
    /// The cleaner's view of this log at `now_ms` (see `docs/storage.md`, *Compaction*).
    pub fn cleanable_state(&self, now_ms: i64) -> Result<CleanableState> {
        self.check_usable()?;
        let range = self.cleanable_range(now_ms)?;
        Ok(CleanableState {
            first_dirty_offset: range.first_dirty,
            first_uncleanable_offset: range.first_uncleanable,
            dirty_ratio: range.dirty_ratio(),
            needs_cleaning: self.config.is_compacted()
                && range.should_clean(self.config.min_cleanable_dirty_ratio),
        })
    }

    /// Step 1 of a cleaning pass: `None` if the topic is not compacted or the log does not need
    /// cleaning at `now_ms` (dirty ratio not above `min.cleanable.dirty.ratio` and
    /// `max.compaction.lag.ms` not exceeded); otherwise a plan holding read handles on the sealed
    /// segments below the first uncleanable offset.
    pub fn plan_cleaning(
        &self,
        now_ms: i64,
        options: &CleanerOptions,
    ) -> Result<Option<CleaningPlan>> {
        self.check_usable()?;
        if !self.config.is_compacted() {
            return Ok(None);
        }
        let range = self.cleanable_range(now_ms)?;
        if !range.should_clean(self.config.min_cleanable_dirty_ratio) {
            return Ok(None);
        }
        let mut segments = Vec::new();
        let mut sealed = self.segments.iter().peekable();
        while let Some((&base, segment)) = sealed.next() {
            let Some((&next_base, _)) = sealed.peek() else {
                break;
            };
            if base >= range.first_uncleanable {
                break;
            }
            segments.push(SegmentSnapshot::open(&self.dir, segment, next_base)?);
        }
        let first_dirty_pos = match self.segments.range(..=range.first_dirty).next_back() {
            Some((_, segment)) => segment
                .find_batch(range.first_dirty)?
                .map_or(segment.size(), |(pos, _)| pos),
            None => 0,
        };
        Ok(Some(CleaningPlan {
            dir: self.dir.clone(),
            config: self.config.clone(),
            options: options.clone(),
            now_ms,
            range,
            first_dirty_pos,
            segments,
            aborted: AbortedRanges::new(&self.all_aborted_txns()),
        }))
    }

    /// Step 3 of a cleaning pass: swaps in every cleaned segment whose replaced segments are
    /// still in the log unchanged, then advances the cleaner checkpoint (only if no group had
    /// to be abandoned because its segments changed). Each swap is crash-safe on its own.
    pub fn commit_cleaning(&mut self, mut built: BuiltCleaning) -> Result<CleanOutcome> {
        self.begin_change()?;
        let groups = std::mem::take(&mut built.groups);
        let mut outcome = built.outcome.clone();
        // A topic switched away from `compact` meanwhile is not touched.
        let compacted = self.config.is_compacted();
        let mut complete = compacted;
        let mut pending = groups.into_iter();
        while let Some(group) = pending.next() {
            let verdict = if compacted {
                self.verify(&group)
            } else {
                Verdict::Changed
            };
            match verdict {
                Verdict::Intact => {
                    if let Err(e) = self.swap_in(&group) {
                        built.groups.extend(pending);
                        return Err(e);
                    }
                    outcome.segments_replaced += group.members.len();
                    outcome.segments_written += 1;
                    outcome.bytes_before += group.members.iter().map(|m| m.size).sum::<u64>();
                    outcome.bytes_after += group.size;
                }
                Verdict::Gone | Verdict::Changed => {
                    // A group whose segments are all gone needs no redo; a changed one does.
                    complete &= matches!(verdict, Verdict::Gone);
                    outcome.groups_abandoned += 1;
                    swap::discard_cleaned(&self.dir, group.base);
                }
            }
        }
        if complete {
            let end = outcome.end_offset.min(self.log_end_offset);
            super::cleaner_checkpoint::write(&self.dir, end)?;
            outcome.checkpoint_advanced = true;
        }
        if outcome.segments_written > 0 {
            tracing::info!(
                dir = %self.dir.display(),
                replaced = outcome.segments_replaced,
                written = outcome.segments_written,
                removed_records = outcome.records_removed,
                bytes_before = outcome.bytes_before,
                bytes_after = outcome.bytes_after,
                "log cleaned"
            );
        }
        Ok(outcome)
    }

    /// Plans, builds and commits a pass with the log borrowed throughout. `None` if the log
    /// does not need cleaning.
    pub fn clean(&mut self, now_ms: i64, options: &CleanerOptions) -> Result<Option<CleanOutcome>> {
        let Some(plan) = self.plan_cleaning(now_ms, options)? else {
            return Ok(None);
        };
        let built = plan.build()?;
        self.commit_cleaning(built).map(Some)
    }

    /// The checkpointed first dirty offset, if any.
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        super::cleaner_checkpoint::read(&self.dir)
    }

    /// Whether `group`'s members are still in the log exactly as planned.
    fn verify(&self, group: &CleanedGroup) -> Verdict {
        let present = group
            .members
            .iter()
            .filter(|m| self.segments.contains_key(&m.base))
            .count();
        if present == 0 {
            return Verdict::Gone;
        }
        let intact = present == group.members.len()
            && group.members.iter().all(|m| {
                let path = segment_path(&self.dir, m.base, LOG_EXT);
                self.segments
                    .get(&m.base)
                    .is_some_and(|s| s.size() == m.size)
                    && file_id(&path) == Some(m.id)
            })
            && self
                .segments
                .range(group.base..)
                .map(|(&b, _)| b)
                .take(group.members.len() + 1)
                .eq(group
                    .members
                    .iter()
                    .map(|m| m.base)
                    .chain(std::iter::once(group.end)));
        if intact {
            Verdict::Intact
        } else {
            Verdict::Changed
        }
    }

    /// Replaces `group`'s members with its cleaned segment: commit, install, reopen. Until the
    /// new segment is open, the map keeps the old segments (whose open handles still read the
    /// old data), so a failure leaves reads working and the next open completes the swap.
    fn swap_in(&mut self, group: &CleanedGroup) -> Result<()> {
        // Markers are never removed, so every aborted transaction of the replaced segments
        // still has its marker in the cleaned one.
        let aborted: Vec<AbortedTxn> = group
            .members
            .iter()
            .filter_map(|m| self.segments.get(&m.base))
            .flat_map(|s| s.aborted_txns().iter().copied())
            .collect();
        TxnIndex::write_to(
            &aborted,
            &swap::suffixed_path(&self.dir, group.base, TXN_INDEX_EXT, swap::CLEANED_SUFFIX),
        )?;
        swap::commit(&self.dir, group.base)?;
        let bases: Vec<i64> = group.members.iter().map(|m| m.base).collect();
        swap::install(&self.dir, group.base, &bases)?;
        let segment = match Segment::open_trusted(&self.dir, group.base, Some(group.end))? {
            Some(segment) => segment,
            None => {
                tracing::warn!(dir = %self.dir.display(), base = group.base, "cleaned segment failed its checks; rebuilding its indexes");
                let (segment, intact) = Segment::recover(
                    &self.dir,
                    group.base,
                    Some(group.end),
                    &self.config,
                    &mut |_| {},
                )?;
                if !intact {
                    tracing::error!(dir = %self.dir.display(), base = group.base, "cleaned segment was cut by recovery");
                }
                segment
            }
        };
        for base in bases {
            self.segments.remove(&base);
        }
        self.segments.insert(group.base, segment);
        Ok(())
    }
}
