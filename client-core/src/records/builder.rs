//! Encoding a RecordBatch v2.
//!
//! Besides the producer's path ([`BatchBuilder::append`], consecutive offset deltas), the builder
//! serves the broker's log cleaner, which rewrites a batch after removing some of its records:
//! [`BatchBuilder::append_with_offset_delta`] keeps each record's original offset (leaving gaps),
//! [`BatchBuilder::set_last_offset_delta`] keeps the batch's original offset range,
//! [`BatchBuilder::delete_horizon`] records when the batch's tombstones may be removed, and
//! [`BatchBuilder::log_append_time`] keeps a LogAppendTime batch's timestamp.

use bytes::{BufMut, Bytes, BytesMut};

use super::attributes::{BatchAttributes, TimestampType};
use super::compression::{compress, Compression};
use super::header::{BatchHeaderView, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use super::header::{
    MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
};
use super::record::Header;
use super::varint::{varint_len, varlong_len};
use crate::{Error, Result};

/// Attributes bit 6: `baseTimestamp` holds the delete horizon (KIP-534).
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Appends records to a batch and encodes it once.
///
/// Records are written straight into the output buffer behind space reserved for the header, so
/// an uncompressed batch is never copied; a compressed one is compressed once into a second buffer.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    buf: BytesMut,
    compression: Compression,
    level: Option<i32>,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
    /// Offset delta of the last appended record (-1 before the first).
    last_delta: i32,
    /// `lastOffsetDelta` to write instead of `last_delta` (see `set_last_offset_delta`).
    last_delta_override: Option<i32>,
    /// Set by `delete_horizon`: written as `baseTimestamp`, with the delete-horizon attribute.
    delete_horizon: Option<i64>,
    /// Set by `log_append_time`: the LogAppendTime attribute and this maxTimestamp.
    log_append_time: Option<i64>,
}

impl BatchBuilder {
    /// An empty batch whose records section will use `compression`.
    pub fn new(compression: Compression) -> Self {
        Self::with_capacity(compression, 1024)
    }

    /// Like [`BatchBuilder::new`], pre-sizing the buffer for `capacity` bytes of records.
    pub fn with_capacity(compression: Compression, capacity: usize) -> Self {
        let mut buf = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + capacity);
        buf.put_bytes(0, RECORD_BATCH_OVERHEAD);
        BatchBuilder {
            buf,
            compression,
            level: None,
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            base_timestamp: 0,
            max_timestamp: -1,
            count: 0,
            last_delta: -1,
            last_delta_override: None,
            delete_horizon: None,
            log_append_time: None,
        }
    }

    /// Codec level (`compression.level`); `None` is the codec's default.
    pub fn compression_level(mut self, level: Option<i32>) -> Self {
        self.level = level;
        self
    }
    /// Offset of the first record (brokers overwrite it on append).
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }
    /// Partition leader epoch (set by brokers).
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }
    /// Idempotence fields: producer id, epoch and the sequence of the first record.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }
    /// Marks the batch as part of a transaction.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }
    /// Marks the batch as a control batch (transaction markers).
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// Sets the delete horizon (KIP-534, used by the log cleaner): the batch gets the
    /// delete-horizon attribute (bit 6) and `baseTimestamp = horizon_ms`, the time after which
    /// its tombstones may be removed. Record timestamps are still readable unchanged: every
    /// record's timestamp delta is taken relative to the horizon (as Kafka's builder does), so
    /// `baseTimestamp + delta` is the record's own timestamp.
    ///
    /// Fails if a record was appended already (its delta was relative to another base).
    pub fn delete_horizon(mut self, horizon_ms: i64) -> Result<Self> {
        if self.count > 0 {
            return Err(Error::CorruptBatch(
                "the delete horizon must be set before the first record is appended".into(),
            ));
        }
        self.delete_horizon = Some(horizon_ms);
        self.base_timestamp = horizon_ms;
        Ok(self)
    }

    /// Builds a LogAppendTime batch: the timestamp-type attribute is set and `maxTimestamp` is
    /// `append_time_ms`, which readers report as every record's timestamp. (The broker uses it
    /// to rewrite stored LogAppendTime batches; producers never set it.)
    pub fn log_append_time(mut self, append_time_ms: i64) -> Self {
        self.log_append_time = Some(append_time_ms);
        self
    }

    /// Records appended so far.
    pub fn record_count(&self) -> i32 {
        self.count
    }
    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Size of the batch if encoded uncompressed now (header included).
    pub fn uncompressed_size(&self) -> usize {
        self.buf.len()
    }

    /// Encoded size of a record with these fields, the record-length prefix included; useful to
    /// decide whether a record still fits before appending it.
    pub fn record_size(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> usize {
        let ts_delta = if self.count == 0 && self.delete_horizon.is_none() {
            0
        } else {
            timestamp.wrapping_sub(self.base_timestamp)
        };
        let next_delta = self.last_delta.saturating_add(1);
        let body = body_size(ts_delta, next_delta, key, value, headers);
        varint_len(body as i32) + body
    }

    /// Appends a record and returns its offset delta: one more than the previous record's (0 for
    /// the first). Fails only when the batch would exceed `i32::MAX` records, offsets or bytes.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<i32> {
        let offset_delta = self
            .last_delta
            .checked_add(1)
            .ok_or_else(|| Error::CorruptBatch("batch would exceed i32::MAX offsets".into()))?;
        self.put_record(offset_delta, timestamp, key, value, headers)?;
        Ok(offset_delta)
    }

    /// Appends a record with an explicit offset delta (its offset minus the batch's base offset),
    /// so a rewritten batch can keep each record's original offset and leave gaps where records
    /// were removed (the log cleaner). `offset_delta` must be ≥ 0 and greater than the previous
    /// record's. Mixing with [`BatchBuilder::append`] is allowed; that continues at the last
    /// delta + 1.
    pub fn append_with_offset_delta(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<()> {
        if offset_delta <= self.last_delta {
            return Err(Error::CorruptBatch(format!(
                "offset delta {offset_delta} does not follow the previous delta {}",
                self.last_delta
            )));
        }
        self.put_record(offset_delta, timestamp, key, value, headers)
    }

    /// Makes the header's `lastOffsetDelta` `delta` instead of the last appended record's, so a
    /// rewritten batch keeps the offset range of the original even when its last records were
    /// removed (Kafka's `overrideLastOffset`; the last sequence number of an idempotent batch is
    /// derived from it). [`BatchBuilder::build`] fails if `delta` is below the last record's.
    pub fn set_last_offset_delta(&mut self, delta: i32) {
        self.last_delta_override = Some(delta);
    }

    fn put_record(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<()> {
        if self.count == i32::MAX {
            return Err(Error::CorruptBatch(
                "batch would exceed i32::MAX records".into(),
            ));
        }
        if self.count == 0 && self.delete_horizon.is_none() {
            self.base_timestamp = timestamp;
        }
        let ts_delta = timestamp.wrapping_sub(self.base_timestamp);
        let body = body_size(ts_delta, offset_delta, key, value, headers);
        let body_i32 = i32::try_from(body)
            .ok()
            .filter(|_| self.buf.len() + body < i32::MAX as usize - 16)
            .ok_or_else(|| Error::CorruptBatch("batch would exceed 2 GiB".into()))?;
        let start = self.buf.len();
        self.buf.resize(start + varint_len(body_i32) + body, 0);
        let mut w = SliceWriter {
            out: &mut self.buf[start..],
            pos: 0,
        };
        w.varlong(i64::from(body_i32));
        w.byte(0);
        w.varlong(ts_delta);
        w.varlong(i64::from(offset_delta));
        w.nullable(key);
        w.nullable(value);
        w.varlong(headers.len() as i64);
        for h in headers {
            w.nullable(Some(&h.key));
            w.nullable(h.value.as_deref());
        }
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
        self.last_delta = offset_delta;
        Ok(())
    }

    /// Encodes the batch: compresses the records section if asked, fills the header, writes the
    /// CRC. An empty batch is an error (Kafka has no empty batches on the wire).
    pub fn build(self) -> Result<Bytes> {
        if self.count == 0 {
            return Err(Error::CorruptBatch(
                "cannot build a batch with no records".into(),
            ));
        }
        let last_offset_delta = match self.last_delta_override {
            Some(delta) if delta < self.last_delta => {
                return Err(Error::CorruptBatch(format!(
                    "lastOffsetDelta {delta} is below the last record's delta {}",
                    self.last_delta
                )))
            }
            Some(delta) => delta,
            None => self.last_delta,
        };
        let mut out = match self.compression {
            Compression::None => self.buf,
            codec => {
                let records = &self.buf[RECORD_BATCH_OVERHEAD..];
                let mut out =
                    BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + records.len() / 2 + 64);
                out.put_bytes(0, RECORD_BATCH_OVERHEAD);
                compress(codec, self.level, records, &mut out)?;
                out
            }
        };
        let timestamp_type = if self.log_append_time.is_some() {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        let mut attributes = BatchAttributes::new(
            self.compression,
            timestamp_type,
            self.transactional,
            self.control,
        );
        if self.delete_horizon.is_some() {
            attributes.0 |= DELETE_HORIZON_BIT;
        }
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        let mut h = &mut out[..RECORD_BATCH_OVERHEAD];
        h.put_i64(self.base_offset);
        h.put_i32(batch_length);
        h.put_i32(self.partition_leader_epoch);
        h.put_i8(MAGIC_V2);
        h.put_u32(0); // CRC, filled below
        h.put_i16(attributes.0);
        h.put_i32(last_offset_delta);
        h.put_i64(self.base_timestamp);
        h.put_i64(self.log_append_time.unwrap_or(self.max_timestamp));
        h.put_i64(self.producer_id);
        h.put_i16(self.producer_epoch);
        h.put_i32(self.base_sequence);
        h.put_i32(self.count);
        BatchHeaderView::new_unchecked(&mut out[..]).update_crc();
        Ok(out.freeze())
    }
}

fn nullable_size(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

fn body_size(
    ts_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) -> usize {
    let mut n = 1 + varlong_len(ts_delta) + varint_len(offset_delta);
    n += nullable_size(key) + nullable_size(value);
    n += varint_len(headers.len() as i32);
    for h in headers {
        n += nullable_size(Some(&h.key)) + nullable_size(h.value.as_deref());
    }
    n
}

/// Writes into a slice sized exactly for the record (see `body_size`).
struct SliceWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl SliceWriter<'_> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.out[self.pos] = b;
        self.pos += 1;
    }

    #[inline]
    fn varlong(&mut self, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            self.byte((z as u8) | 0x80);
            z >>= 7;
        }
        self.byte(z as u8);
    }

    #[inline]
    fn nullable(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.varlong(-1),
            Some(b) => {
                self.varlong(b.len() as i64);
                self.out[self.pos..self.pos + b.len()].copy_from_slice(b);
                self.pos += b.len();
            }
        }
    }
}

/// Rewrites the broker-assigned header fields of an encoded batch in place. Neither field is
/// covered by the CRC, so the batch stays valid.
pub fn stamp_offsets(
    batch: &mut [u8],
    base_offset: i64,
    partition_leader_epoch: i32,
) -> Result<()> {
    let mut header = header_of(batch)?;
    header.set_base_offset(base_offset);
    header.set_partition_leader_epoch(partition_leader_epoch);
    Ok(())
}

/// Rewrites the idempotence fields (producer id, epoch, base sequence) of an encoded batch and
/// recomputes its CRC, which covers them. Used when an idempotent producer bumps its epoch and
/// resends batches it had already encoded.
pub fn restamp_producer(
    batch: &mut [u8],
    producer_id: i64,
    epoch: i16,
    base_sequence: i32,
) -> Result<()> {
    let mut header = header_of(batch)?;
    header.set_producer(producer_id, epoch, base_sequence);
    header.update_crc();
    Ok(())
}

/// The header view of an encoded batch, with the error both stamping functions give.
fn header_of(batch: &mut [u8]) -> Result<BatchHeaderView<&mut [u8]>> {
    BatchHeaderView::new(batch)
        .map_err(|_| Error::CorruptBatch("batch shorter than its header".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Record, RecordBatch};

    fn records(bytes: Bytes) -> (RecordBatch, Vec<Record>) {
        let batch = RecordBatch::new(bytes).unwrap();
        batch.validate_crc().unwrap();
        let records = batch.records().unwrap().map(|r| r.unwrap()).collect();
        (batch, records)
    }

    #[test]
    fn offset_deltas_with_gaps_keep_original_offsets() {
        for codec in Compression::ALL {
            let mut b = BatchBuilder::new(codec).base_offset(1_000);
            b.append_with_offset_delta(2, 10, Some(b"a"), Some(b"1"), &[])
                .unwrap();
            b.append_with_offset_delta(5, 11, Some(b"b"), None, &[])
                .unwrap();
            // `append` continues after the last explicit delta.
            assert_eq!(b.append(12, Some(b"c"), Some(b"3"), &[]).unwrap(), 6);
            b.set_last_offset_delta(9);
            let (batch, recs) = records(b.build().unwrap());
            assert_eq!(batch.base_offset(), 1_000);
            assert_eq!(batch.last_offset(), 1_009);
            assert_eq!(batch.record_count(), 3);
            let offsets: Vec<i64> = recs.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, [1_002, 1_005, 1_006]);
            assert_eq!(recs[1].value, None);
        }
    }

    #[test]
    fn offset_deltas_must_increase() {
        let mut b = BatchBuilder::new(Compression::None);
        b.append_with_offset_delta(3, 0, None, None, &[]).unwrap();
        assert!(b.append_with_offset_delta(3, 0, None, None, &[]).is_err());
        assert!(b.append_with_offset_delta(1, 0, None, None, &[]).is_err());
        let mut first = BatchBuilder::new(Compression::None);
        assert!(first
            .append_with_offset_delta(-1, 0, None, None, &[])
            .is_err());
        // A last offset delta below the last record's is refused at build time.
        b.set_last_offset_delta(2);
        assert!(b.build().is_err());
    }

    #[test]
    fn consecutive_appends_are_unchanged() {
        let mut b = BatchBuilder::new(Compression::None);
        for i in 0..4 {
            assert_eq!(b.append(i, None, Some(b"v"), &[]).unwrap(), i as i32);
        }
        let (batch, recs) = records(b.build().unwrap());
        assert_eq!(batch.last_offset_delta(), 3);
        assert_eq!(batch.attributes().0 & DELETE_HORIZON_BIT, 0);
        assert_eq!(
            recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn delete_horizon_keeps_record_timestamps_readable() {
        let horizon = 1_700_000_999_000;
        for codec in Compression::ALL {
            let mut b = BatchBuilder::new(codec)
                .producer(7, 1, 40)
                .delete_horizon(horizon)
                .unwrap();
            let headers = [Header::new(&b"h"[..], Some(&b"x"[..]))];
            b.append_with_offset_delta(1, 1_700_000_000_500, Some(b"k"), None, &headers)
                .unwrap();
            b.append_with_offset_delta(4, 1_700_000_000_100, Some(b"j"), Some(b"v"), &[])
                .unwrap();
            b.set_last_offset_delta(4);
            let (batch, recs) = records(b.build().unwrap());
            assert!(batch.attributes().has_delete_horizon());
            assert_eq!(batch.base_timestamp(), horizon);
            assert_eq!(batch.max_timestamp(), 1_700_000_000_500);
            assert_eq!(batch.last_sequence(), 44);
            assert_eq!(recs[0].timestamp, 1_700_000_000_500);
            assert_eq!(recs[0].headers, headers);
            assert_eq!(recs[1].timestamp, 1_700_000_000_100);
        }
    }

    #[test]
    fn delete_horizon_must_come_first() {
        let mut b = BatchBuilder::new(Compression::None);
        b.append(5, None, None, &[]).unwrap();
        assert!(b.delete_horizon(10).is_err());
        // record_size agrees with what append writes when a horizon is set.
        let mut h = BatchBuilder::new(Compression::None)
            .delete_horizon(1_000_000)
            .unwrap();
        let predicted = h.record_size(3, Some(b"k"), Some(b"v"), &[]);
        let before = h.uncompressed_size();
        h.append(3, Some(b"k"), Some(b"v"), &[]).unwrap();
        assert_eq!(h.uncompressed_size() - before, predicted);
    }

    #[test]
    fn log_append_time_batches() {
        let mut b = BatchBuilder::new(Compression::Lz4).log_append_time(77_000);
        b.append(5, Some(b"k"), Some(b"v"), &[]).unwrap();
        b.append(6, Some(b"k"), Some(b"w"), &[]).unwrap();
        let (batch, recs) = records(b.build().unwrap());
        assert_eq!(
            batch.attributes().timestamp_type(),
            TimestampType::LogAppendTime
        );
        assert_eq!(batch.max_timestamp(), 77_000);
        assert!(recs.iter().all(|r| r.timestamp == 77_000));
    }
}
