//! Cleaning groups of segments into single replacement segments (Kafka's
//! `groupSegmentsBySize` and `cleanSegments`). Runs without the partition lock: it reads
//! snapshots and writes only `.cleaned` files.
//!
//! Consecutive segments are grouped while their total size stays within `segment.bytes` and
//! their offset range fits a u32 relative offset, so many small cleaned segments merge into
//! one. A group of one segment in which nothing changes is not rewritten at all.

use std::ops::Range;
use std::path::Path;

use super::super::config::LogConfig;
use super::super::scan::BatchHeader;
use super::super::segment::storage_error;
use super::filter::{Filter, Filtered};
use super::snapshot::{FileId, SegmentSnapshot};
use super::swap;
use super::writer::CleanedWriter;
use crate::Result;

/// One replaced segment, as the plan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    /// Base offset.
    pub(super) base: i64,
    /// Size of its `.log` file.
    pub(super) size: u64,
    /// Identity of its `.log` file.
    pub(super) id: FileId,
}

/// A cleaned segment written to `.cleaned` files, waiting to replace `members`.
#[derive(Debug)]
pub(super) struct CleanedGroup {
    /// Base offset of the new segment (the first member's).
    pub(super) base: i64,
    /// Base offset of the segment after the group.
    pub(super) end: i64,
    /// The segments it replaces, in offset order.
    pub(super) members: Vec<Member>,
    /// Size of the new `.log` file.
    pub(super) size: u64,
}

/// Record counts of a group.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct GroupCounts {
    /// Records read.
    pub(super) read: u64,
    /// Records kept.
    pub(super) kept: u64,
}

/// Splits `segments` (consecutive, in offset order) into groups of total size ≤ `max_bytes`
/// (a single larger segment forms its own group) whose offset range fits a u32.
pub(super) fn group_segments(segments: &[SegmentSnapshot], max_bytes: u64) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let first = &segments[i];
        let mut size = first.size;
        let mut j = i + 1;
        while let Some(next) = segments.get(j) {
            let span = next.next_base.saturating_sub(1).saturating_sub(first.base);
            if size + next.size > max_bytes || span > i64::from(u32::MAX) {
                break;
            }
            size += next.size;
            j += 1;
        }
        groups.push(i..j);
        i = j;
    }
    groups
}

/// Cleans `members` (one group) into `<first base>.*.cleaned`. Returns `None` when the group is
/// a single segment that the rules leave unchanged (nothing to swap). On error, files written
/// so far are removed.
pub(super) fn clean_group(
    dir: &Path,
    members: &[SegmentSnapshot],
    filter: &Filter<'_>,
    config: &LogConfig,
) -> Result<(Option<CleanedGroup>, GroupCounts)> {
    let (Some(first), Some(last)) = (members.first(), members.last()) else {
        return Ok((None, GroupCounts::default()));
    };
    let mut counts = GroupCounts::default();
    let written = write_group(dir, members, filter, config, &mut counts);
    let group = match written {
        Ok(Some(writer)) => writer.finish(last.modified).map(|size| {
            Some(CleanedGroup {
                base: first.base,
                end: last.next_base,
                members: members
                    .iter()
                    .map(|m| Member {
                        base: m.base,
                        size: m.size,
                        id: m.id,
                    })
                    .collect(),
                size,
            })
        }),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    if group.is_err() {
        swap::discard_cleaned(dir, first.base);
    }
    Ok((group?, counts))
}

/// Filters every batch of `members` into a writer; the writer is created lazily for a single
/// segment, only once some batch changes (the unchanged prefix is then copied).
fn write_group(
    dir: &Path,
    members: &[SegmentSnapshot],
    filter: &Filter<'_>,
    config: &LogConfig,
    counts: &mut GroupCounts,
) -> Result<Option<CleanedWriter>> {
    let Some(first) = members.first() else {
        return Ok(None);
    };
    let mut writer = if members.len() > 1 {
        Some(CleanedWriter::create(dir, first.base, config)?)
    } else {
        None
    };
    for member in members {
        for item in member.batches(0) {
            let (pos, header, batch) = item?;
            let result = filter.batch(&batch)?;
            counts.read += result.read;
            counts.kept += result.kept;
            if writer.is_none() && !matches!(result.filtered, Filtered::Unchanged) {
                let mut w = CleanedWriter::create(dir, first.base, config)?;
                copy_prefix(member, pos, &mut w)?;
                writer = Some(w);
            }
            let Some(w) = writer.as_mut() else {
                continue;
            };
            match result.filtered {
                Filtered::Unchanged => w.append(batch.as_bytes(), &header)?,
                Filtered::Removed => {}
                Filtered::Rewritten(bytes) => {
                    let rebuilt = BatchHeader::parse(&bytes)
                        .ok_or_else(|| storage_error("rebuilt batch has an invalid header"))?;
                    w.append(&bytes, &rebuilt)?;
                }
            }
        }
    }
    Ok(writer)
}

/// Copies the batches of `member` before byte `end` unchanged.
fn copy_prefix(member: &SegmentSnapshot, end: u64, writer: &mut CleanedWriter) -> Result<()> {
    for item in member.batches(0) {
        let (pos, header, batch) = item?;
        if pos >= end {
            break;
        }
        writer.append(batch.as_bytes(), &header)?;
    }
    if writer.size() != end {
        return Err(storage_error(
            "copied prefix of a cleaned segment disagrees with the source",
        ));
    }
    Ok(())
}
