//! Reads: Fetch (whole stored batches) and the ListOffsets lookups by timestamp.
//!
//! A read stays inside one segment, like Kafka's: it returns batches from the segment holding the
//! start offset and stops at that segment's end; the consumer's next fetch continues in the next
//! segment. This keeps every read a single contiguous `pread` returned without copying.

use bytes::Bytes;
use odradek::ErrorCode;

use super::scan::{BatchHeader, HEADER_SIZE};
use super::segment::Segment;
use super::{Log, ReadInfo};
use crate::{Error, Result};

impl Log {
    /// Kafka Fetch semantics. `OFFSET_OUT_OF_RANGE` if `start_offset` is below the log start
    /// offset or above the log end offset. Returns whole batches as stored, starting with the
    /// batch that contains `start_offset`, up to `max_bytes`; if that first batch alone is larger
    /// it is returned whole when `min_one_batch` (KIP-74) and nothing is returned otherwise.
    /// Never returns a batch whose last offset is ≥ `max_offset_exclusive` (the high watermark or
    /// last stable offset), so a batch straddling the bound is left out.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_batch: bool,
    ) -> Result<ReadInfo> {
        self.check_usable()?;
        if start_offset < self.log_start_offset || start_offset > self.log_end_offset {
            return Err(Error::kafka(
                ErrorCode::OffsetOutOfRange,
                format!(
                    "offset {start_offset} is outside [{}, {}]",
                    self.log_start_offset, self.log_end_offset
                ),
            ));
        }
        let bound = max_offset_exclusive.min(self.log_end_offset);
        if start_offset >= bound {
            return Ok(ReadInfo::default());
        }
        let first_key = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(&k, _)| k);
        for segment in self.segments.range(first_key..).map(|(_, s)| s) {
            if segment.base_offset() >= bound {
                break;
            }
            if segment.next_offset() <= start_offset {
                continue;
            }
            if let Some((pos, first)) = segment.find_batch(start_offset)? {
                return read_batches(segment, pos, first, max_bytes, bound, min_one_batch);
            }
        }
        Ok(ReadInfo::default())
    }

    /// ListOffsets by timestamp: the first record (not batch) at or after the log start offset
    /// whose timestamp is ≥ `timestamp`, as (offset, timestamp). A storage error is logged and
    /// reported as "no such record"; [`Log::try_fetch_offset_by_timestamp`] returns it instead.
    pub fn fetch_offset_by_timestamp(&self, timestamp: i64) -> Option<(i64, i64)> {
        self.try_fetch_offset_by_timestamp(timestamp)
            .unwrap_or_else(|e| {
                tracing::error!(dir = %self.dir.display(), "offset lookup by timestamp failed: {e}");
                None
            })
    }

    /// [`Log::fetch_offset_by_timestamp`], with storage errors returned. Segments whose max
    /// timestamp is lower are skipped; inside a segment the time index gives the starting point.
    pub fn try_fetch_offset_by_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
        self.check_usable()?;
        for segment in self.segments.values() {
            if segment.next_offset() <= self.log_start_offset || segment.max_timestamp() < timestamp
            {
                continue;
            }
            if let Some(found) = segment.find_by_timestamp(timestamp, self.log_start_offset)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// ListOffsets MAX_TIMESTAMP (-3): the record with the largest timestamp at or after the log
    /// start offset, as (offset, timestamp); the earliest such record on ties. `None` for a log
    /// without timestamped records. A storage error is logged and reported as `None`;
    /// [`Log::try_max_timestamp_offset`] returns it instead.
    pub fn max_timestamp_offset(&self) -> Option<(i64, i64)> {
        self.try_max_timestamp_offset().unwrap_or_else(|e| {
            tracing::error!(dir = %self.dir.display(), "max timestamp lookup failed: {e}");
            None
        })
    }

    /// [`Log::max_timestamp_offset`], with storage errors returned.
    pub fn try_max_timestamp_offset(&self) -> Result<Option<(i64, i64)>> {
        self.check_usable()?;
        let lso = self.log_start_offset;
        let mut best: Option<(i64, &Segment, Option<i64>)> = None;
        for segment in self.segments.values() {
            if segment.next_offset() <= lso || segment.size() == 0 {
                continue;
            }
            let candidate = if segment.base_offset() < lso {
                // Records below the log start offset may hold the segment's max: look closer.
                segment
                    .scan_max_timestamp(lso)?
                    .map(|(ts, offset)| (ts, Some(offset)))
            } else {
                (segment.max_timestamp() >= 0).then_some((segment.max_timestamp(), None))
            };
            if let Some((ts, offset)) = candidate {
                if best.is_none_or(|(b, _, _)| ts > b) {
                    best = Some((ts, segment, offset));
                }
            }
        }
        match best {
            None => Ok(None),
            Some((ts, _, Some(offset))) => Ok(Some((offset, ts))),
            Some((ts, segment, None)) => segment.find_by_timestamp(ts, lso),
        }
    }
}

/// Reads whole batches from `pos` (where `first` starts) within one segment.
fn read_batches(
    segment: &Segment,
    pos: u64,
    first: BatchHeader,
    max_bytes: usize,
    bound: i64,
    min_one_batch: bool,
) -> Result<ReadInfo> {
    if first.last_offset >= bound {
        return Ok(ReadInfo::default());
    }
    let max_bytes = max_bytes as u64;
    let want = if first.size > max_bytes {
        if !min_one_batch {
            return Ok(ReadInfo::default());
        }
        first.size
    } else {
        // Bytes past the bound's position cannot be returned: do not read them.
        let limit = segment.position_limit(bound).max(pos + first.size);
        max_bytes.min(limit - pos)
    };
    let mut buf = segment.read_exact(pos, want)?;
    let mut cut = 0usize;
    while cut + HEADER_SIZE <= buf.len() {
        let Some(h) = BatchHeader::parse(&buf[cut..]) else {
            tracing::warn!(
                position = pos + cut as u64,
                "unparsable batch header in a read"
            );
            break;
        };
        let end = cut as u64 + h.size;
        if end > buf.len() as u64 || h.last_offset >= bound {
            break;
        }
        cut = end as usize;
    }
    buf.truncate(cut);
    Ok(ReadInfo {
        first_batch_offset: (cut > 0).then_some(first.base_offset),
        records: Bytes::from(buf),
    })
}
