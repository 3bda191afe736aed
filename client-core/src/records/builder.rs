//! Encoding a RecordBatch v2.

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{
    BatchAttributes, TimestampType, ATTRIBUTES, CRC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
};
use super::compression::{compress, Compression};
use super::record::Header;
use super::varint::{put_varint, put_varlong, varint_len, varlong_len};
use super::{MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE};
use crate::{Error, Result};

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
        let ts_delta = if self.count == 0 {
            0
        } else {
            timestamp.wrapping_sub(self.base_timestamp)
        };
        let body = body_size(ts_delta, self.count, key, value, headers);
        varint_len(body as i32) + body
    }

    /// Appends a record and returns its offset delta. Fails only when the batch would exceed
    /// `i32::MAX` records or bytes.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<i32> {
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        let offset_delta = self.count;
        let ts_delta = timestamp.wrapping_sub(self.base_timestamp);
        let body = body_size(ts_delta, offset_delta, key, value, headers);
        let body_i32 = i32::try_from(body)
            .ok()
            .filter(|_| self.buf.len() + body < i32::MAX as usize - 16)
            .ok_or_else(|| Error::CorruptBatch("batch would exceed 2 GiB".into()))?;
        self.buf.reserve(varint_len(body_i32) + body);
        let buf = &mut self.buf;
        put_varint(buf, body_i32);
        buf.put_u8(0);
        put_varlong(buf, ts_delta);
        put_varint(buf, offset_delta);
        put_nullable(buf, key);
        put_nullable(buf, value);
        put_varint(buf, headers.len() as i32);
        for h in headers {
            put_nullable(buf, Some(&h.key));
            put_nullable(buf, h.value.as_deref());
        }
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
        Ok(offset_delta)
    }

    /// Encodes the batch: compresses the records section if asked, fills the header, writes the
    /// CRC. An empty batch is an error (Kafka has no empty batches on the wire).
    pub fn build(self) -> Result<Bytes> {
        if self.count == 0 {
            return Err(Error::CorruptBatch(
                "cannot build a batch with no records".into(),
            ));
        }
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
        let attributes = BatchAttributes::new(
            self.compression,
            TimestampType::CreateTime,
            self.transactional,
            self.control,
        );
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        let mut h = &mut out[..RECORD_BATCH_OVERHEAD];
        h.put_i64(self.base_offset);
        h.put_i32(batch_length);
        h.put_i32(self.partition_leader_epoch);
        h.put_i8(MAGIC_V2);
        h.put_u32(0); // CRC, filled below
        h.put_i16(attributes.0);
        h.put_i32(self.count - 1);
        h.put_i64(self.base_timestamp);
        h.put_i64(self.max_timestamp);
        h.put_i64(self.producer_id);
        h.put_i16(self.producer_epoch);
        h.put_i32(self.base_sequence);
        h.put_i32(self.count);
        let crc = crc32c::crc32c(&out[ATTRIBUTES..]);
        out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
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

fn put_nullable(buf: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => put_varint(buf, -1),
        Some(b) => {
            put_varint(buf, b.len() as i32);
            buf.put_slice(b);
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
    if batch.len() < RECORD_BATCH_OVERHEAD {
        return Err(Error::CorruptBatch("batch shorter than its header".into()));
    }
    batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
    batch[12..16].copy_from_slice(&partition_leader_epoch.to_be_bytes());
    Ok(())
}
