//! The key → latest offset map of the dirty section (Kafka's `OffsetMap`).
//!
//! Kafka stores a 16-byte hash per key in a fixed buffer of `log.cleaner.dedupe.buffer.size`
//! bytes and accepts the (tiny) risk of collisions. This map stores the keys themselves, so it
//! is exact, and charges each entry its key length plus [`ENTRY_OVERHEAD`] against the same
//! budget. When the budget is used up the map stops at a batch boundary and the pass cleans only
//! up to there; the next pass continues from that offset (as Kafka does when its map is full).

use std::collections::HashMap;

use bytes::Bytes;

use super::super::segment::storage_error;
use super::aborted::AbortedRanges;
use super::snapshot::SegmentSnapshot;
use crate::Result;

/// Bytes charged per entry besides the key: the hash table slot, the offset and the key's
/// allocation header, roughly.
pub(super) const ENTRY_OVERHEAD: u64 = 64;

/// Latest offset of every key seen in the dirty section.
#[derive(Debug, Default)]
pub(super) struct OffsetMap {
    offsets: HashMap<Bytes, i64>,
    bytes: u64,
}

impl OffsetMap {
    /// Records that `key` occurs at `offset` (offsets are fed in increasing order, so the last
    /// one wins). The key is copied: it must not pin the batch buffer it was sliced from.
    pub(super) fn put(&mut self, key: &[u8], offset: i64) {
        if let Some(latest) = self.offsets.get_mut(key) {
            *latest = offset;
        } else {
            self.bytes += key.len() as u64 + ENTRY_OVERHEAD;
            self.offsets.insert(Bytes::copy_from_slice(key), offset);
        }
    }

    /// The latest offset of `key` in the dirty section.
    pub(super) fn get(&self, key: &[u8]) -> Option<i64> {
        self.offsets.get(key).copied()
    }

    /// Number of distinct keys.
    pub(super) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Memory charged so far.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The map of the dirty section and how far it reaches.
#[derive(Debug)]
pub(super) struct DirtyMap {
    /// Latest offset per key among records in `[first_dirty, end_offset)`.
    pub(super) map: OffsetMap,
    /// First offset the map does not cover: the end of the cleanable range, or where the map
    /// filled up. Records at or past it are kept as they are.
    pub(super) end_offset: i64,
    /// Records decoded while building the map.
    pub(super) records_read: u64,
}

/// Builds the map from the records in `[first_dirty, uncleanable)` of `segments` (the sealed
/// segments in offset order; `first_dirty_pos` is where the batch holding `first_dirty` starts
/// in its segment). Keyless records, control batches and batches of aborted transactions
/// contribute nothing. Stops early once the map has used `budget` bytes, after at least one
/// batch.
pub(super) fn build(
    segments: &[SegmentSnapshot],
    first_dirty: i64,
    first_dirty_pos: u64,
    uncleanable: i64,
    budget: u64,
    aborted: &AbortedRanges,
) -> Result<DirtyMap> {
    let mut dirty = DirtyMap {
        map: OffsetMap::default(),
        end_offset: first_dirty,
        records_read: 0,
    };
    let in_range = segments
        .iter()
        .filter(|s| s.next_base > first_dirty && s.base < uncleanable);
    for segment in in_range {
        let start = if segment.base <= first_dirty {
            first_dirty_pos
        } else {
            0
        };
        let mut batches = segment.batches(start).peekable();
        while let Some(item) = batches.next() {
            let (_, header, batch) = item?;
            if header.last_offset < first_dirty {
                continue;
            }
            if !batch.is_control() && !aborted.contains(&batch) {
                let records = batch
                    .records()
                    .map_err(|e| storage_error(format!("undecodable batch: {e}")))?;
                for record in records {
                    let record =
                        record.map_err(|e| storage_error(format!("undecodable record: {e}")))?;
                    dirty.records_read += 1;
                    if let (Some(key), true) = (&record.key, record.offset >= first_dirty) {
                        dirty.map.put(key, record.offset);
                    }
                }
            }
            dirty.end_offset = header.last_offset + 1;
            if dirty.map.bytes() >= budget && batches.peek().is_some() {
                return Ok(dirty);
            }
        }
        // Gaps (offsets removed by an earlier cleaning) up to the next segment are covered too.
        dirty.end_offset = segment.next_base.min(uncleanable);
        if dirty.map.bytes() >= budget {
            break;
        }
    }
    Ok(dirty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_offset_wins_and_memory_is_charged_once() {
        let mut m = OffsetMap::default();
        m.put(b"a", 1);
        m.put(b"b", 2);
        m.put(b"a", 7);
        assert_eq!(m.get(b"a"), Some(7));
        assert_eq!(m.get(b"b"), Some(2));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.bytes(), 2 * (1 + ENTRY_OVERHEAD));
    }
}
