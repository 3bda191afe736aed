//! What survives cleaning, batch by batch (Kafka's `shouldRetainRecord` and
//! `MemoryRecords.filterTo`).
//!
//! A record at or below the map's last offset is kept only if it has a key, no later record in
//! the dirty section has the same key, and it is not a tombstone whose batch's delete horizon
//! has passed. Records past the map's last offset are kept. Keyless records (possible in a topic
//! switched from `delete` to `compact`) are dropped, as Kafka's cleaner does.
//!
//! A batch whose records all survive, and which needs no new delete horizon, is kept byte for
//! byte. A batch that loses every record disappears, except the batch that ends exactly at the
//! end of the cleanable range: it stays as an empty batch (header only, no records; Kafka's
//! KAFKA-17076), so a consumer reading to the end of the cleaned section still reaches the
//! offset where the next segment starts even when that segment is empty. Otherwise it is rebuilt with the same base
//! offset, last offset delta, leader epoch, producer id / epoch / base sequence, transactional
//! flag, codec and timestamp type; every kept record keeps its offset (so the deltas have gaps),
//! timestamp, key, value and headers. A rebuilt batch that holds a tombstone and had no delete
//! horizon gets one: `now + delete.retention.ms`, stored as its base timestamp with attribute bit
//! 6 (KIP-534); a later pass after that time removes the tombstones. A horizon, once set, is
//! kept.
//!
//! Control batches (transaction markers) are kept unchanged. Records of aborted transactions are
//! removed (the batch then follows the rules for a batch that lost every record); they never
//! entered the key map. The cleanable range ends before the earliest open transaction, so every
//! transactional batch the filter sees belongs to a completed transaction.

use bytes::{BufMut, Bytes, BytesMut};
use odradek::records::{
    BatchAttributes, BatchBuilder, BatchHeaderView, Compression, Record, RecordBatch,
    TimestampType, LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD,
};

use super::super::config::LogConfig;
use super::super::segment::storage_error;
use super::aborted::AbortedRanges;
use super::offset_map::OffsetMap;
use crate::Result;

/// The rules of one cleaning pass.
#[derive(Debug)]
pub(super) struct Filter<'a> {
    /// Latest offset per key in the dirty section.
    pub(super) map: &'a OffsetMap,
    /// Last offset the map covers; later records are kept as they are.
    pub(super) latest_offset: i64,
    /// End of the cleanable range (the first uncleanable offset): the batch ending right below
    /// it is kept, empty if need be.
    pub(super) upper_bound: i64,
    /// Time of the pass.
    pub(super) now_ms: i64,
    /// The topic's settings (`delete.retention.ms`, compression levels).
    pub(super) config: &'a LogConfig,
    /// Batches of aborted transactions, whose records all go.
    pub(super) aborted: &'a AbortedRanges,
}

/// What happens to one batch.
#[derive(Debug)]
pub(super) enum Filtered {
    /// Kept byte for byte.
    Unchanged,
    /// Every record was removed: the batch goes.
    Removed,
    /// Rebuilt from the records that survive.
    Rewritten(Bytes),
}

/// A batch's fate and its record counts.
#[derive(Debug)]
pub(super) struct BatchResult {
    /// What happens to the batch.
    pub(super) filtered: Filtered,
    /// Records in the batch.
    pub(super) read: u64,
    /// Records that survive.
    pub(super) kept: u64,
}

impl Filter<'_> {
    fn retain(&self, record: &Record, horizon: Option<i64>) -> bool {
        if record.offset > self.latest_offset {
            return true;
        }
        let Some(key) = &record.key else {
            return false;
        };
        let latest_for_key = self.map.get(key).is_none_or(|o| record.offset >= o);
        let tombstone_expired = record.value.is_none() && horizon.is_some_and(|h| self.now_ms >= h);
        latest_for_key && !tombstone_expired
    }

    /// Applies the rules to `batch`.
    pub(super) fn batch(&self, batch: &RecordBatch) -> Result<BatchResult> {
        let count = u64::try_from(batch.record_count()).unwrap_or(0);
        if batch.is_control() {
            return Ok(BatchResult {
                filtered: Filtered::Unchanged,
                read: count,
                kept: count,
            });
        }
        let horizon = batch
            .attributes()
            .has_delete_horizon()
            .then(|| batch.base_timestamp());
        let aborted = self.aborted.contains(batch);
        let mut kept = Vec::new();
        let mut read = 0u64;
        let mut tombstones = false;
        let records = batch
            .records()
            .map_err(|e| storage_error(format!("undecodable batch: {e}")))?;
        for record in records {
            let record = record.map_err(|e| storage_error(format!("undecodable record: {e}")))?;
            read += 1;
            if !aborted && self.retain(&record, horizon) {
                tombstones |= record.value.is_none();
                kept.push(record);
            }
        }
        let kept_count = kept.len() as u64;
        let needs_horizon = tombstones && horizon.is_none();
        let filtered = if kept.is_empty() {
            if batch.next_offset() != self.upper_bound {
                Filtered::Removed
            } else if read == 0 {
                Filtered::Unchanged
            } else {
                Filtered::Rewritten(empty_batch(batch))
            }
        } else if kept_count == read && !needs_horizon {
            Filtered::Unchanged
        } else {
            let horizon = if needs_horizon {
                Some(
                    self.now_ms
                        .saturating_add(self.config.delete_retention_ms.max(0)),
                )
            } else {
                horizon
            };
            Filtered::Rewritten(self.rebuild(batch, &kept, horizon)?)
        };
        Ok(BatchResult {
            filtered,
            read,
            kept: kept_count,
        })
    }

    /// Re-encodes `batch` with only `records`, keeping everything else about it.
    fn rebuild(
        &self,
        batch: &RecordBatch,
        records: &[Record],
        horizon: Option<i64>,
    ) -> Result<Bytes> {
        let codec = batch.compression();
        let mut builder = BatchBuilder::with_capacity(codec, batch.size())
            .compression_level(self.config.compression_level(codec))
            .base_offset(batch.base_offset())
            .partition_leader_epoch(batch.partition_leader_epoch())
            .producer(
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
            )
            .transactional(batch.is_transactional());
        if let Some(horizon) = horizon {
            builder = builder.delete_horizon(horizon)?;
        }
        if batch.attributes().timestamp_type() == TimestampType::LogAppendTime {
            builder = builder.log_append_time(batch.max_timestamp());
        }
        for record in records {
            let delta = i32::try_from(record.offset - batch.base_offset())
                .map_err(|_| storage_error("record offset outside its batch"))?;
            builder.append_with_offset_delta(
                delta,
                record.timestamp,
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
            )?;
        }
        builder.set_last_offset_delta(batch.last_offset_delta());
        Ok(builder.build()?)
    }
}

/// `batch`'s header with no records (Kafka's `writeEmptyHeader`): same base offset, last offset
/// delta, leader epoch, producer fields, timestamp type, flags and max timestamp; no codec, base
/// timestamp -1, record count 0.
fn empty_batch(batch: &RecordBatch) -> Bytes {
    let attributes = BatchAttributes::new(
        Compression::None,
        batch.attributes().timestamp_type(),
        batch.is_transactional(),
        batch.is_control(),
    );
    let mut b = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD);
    b.put_i64(batch.base_offset());
    b.put_i32((RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32);
    b.put_i32(batch.partition_leader_epoch());
    b.put_i8(MAGIC_V2);
    b.put_u32(0);
    b.put_i16(attributes.0);
    b.put_i32(batch.last_offset_delta());
    b.put_i64(-1);
    b.put_i64(batch.max_timestamp());
    b.put_i64(batch.producer_id());
    b.put_i16(batch.producer_epoch());
    b.put_i32(batch.base_sequence());
    b.put_i32(0);
    if let Ok(mut header) = BatchHeaderView::new(&mut b[..]) {
        header.update_crc();
    }
    b.freeze()
}
