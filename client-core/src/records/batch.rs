//! A zero-copy, validating view of one RecordBatch v2 and a lazy iterator over its records.

use bytes::Bytes;

use super::attributes::{BatchAttributes, TimestampType};
use super::compression::{decompress, Compression};
use super::header::MAGIC_V2;
use super::record::{Header, Record};
use super::varint::{get_varint, get_varlong};
use crate::{Error, Result};

pub use super::header::RECORD_BATCH_OVERHEAD;
use super::header::{BatchHeaderView, LOG_OVERHEAD};

/// Default cap on the decompressed size of one batch's records section (128 MiB).
pub const DEFAULT_DECOMPRESSION_LIMIT: usize = 128 << 20;
/// The smallest encoded record: length, attributes, three deltas/lengths and a header count.
const MIN_RECORD_SIZE: usize = 7;

/// One RecordBatch v2 over shared bytes. Construction checks the framing (sizes, magic); the CRC
/// is checked by [`RecordBatch::validate_crc`], records are decoded only when iterated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    buf: Bytes,
}

impl RecordBatch {
    /// Wraps exactly one batch. Fails on v0/v1 messages, on a size that disagrees with
    /// `batchLength`, and on an unknown codec.
    pub fn new(buf: Bytes) -> Result<RecordBatch> {
        if let Some(magic) = super::header::peek_magic(&buf) {
            if magic != MAGIC_V2 {
                return Err(if (0..MAGIC_V2).contains(&magic) {
                    Error::UnsupportedMessageFormat(magic)
                } else {
                    Error::CorruptBatch(format!("unknown magic byte {magic}"))
                });
            }
        }
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(Error::CorruptBatch(format!(
                "batch of {} bytes is smaller than its {RECORD_BATCH_OVERHEAD}-byte header",
                buf.len()
            )));
        }
        let declared = BatchHeaderView::new_unchecked(&buf[..]).batch_length();
        if declared < 0 || declared as usize + LOG_OVERHEAD != buf.len() {
            return Err(Error::CorruptBatch(format!(
                "batchLength {declared} does not match the {} bytes present",
                buf.len()
            )));
        }
        let batch = RecordBatch { buf };
        batch.attributes().compression()?;
        let count = batch.record_count();
        if count < 0 {
            return Err(Error::CorruptBatch(format!(
                "negative record count {count}"
            )));
        }
        if batch.last_offset_delta() < 0 {
            return Err(Error::CorruptBatch("negative lastOffsetDelta".into()));
        }
        Ok(batch)
    }

    /// The header's fields, read in place.
    pub fn header(&self) -> BatchHeaderView<&[u8]> {
        BatchHeaderView::new_unchecked(&self.buf[..])
    }
    /// The whole batch as stored and sent.
    pub fn as_bytes(&self) -> &Bytes {
        &self.buf
    }
    /// Consumes the view, returning its bytes.
    pub fn into_bytes(self) -> Bytes {
        self.buf
    }
    /// Total size in bytes.
    pub fn size(&self) -> usize {
        self.buf.len()
    }
    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.header().base_offset()
    }
    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        // Wrapping: the base offset of an unstamped batch is whatever the peer sent.
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }
    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }
    /// Leader epoch stamped by the broker that appended the batch.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.header().partition_leader_epoch()
    }
    /// Magic byte (always 2 here).
    pub fn magic(&self) -> i8 {
        self.header().magic()
    }
    /// The stored CRC-32C.
    pub fn crc(&self) -> u32 {
        self.header().crc()
    }
    /// The attributes.
    pub fn attributes(&self) -> BatchAttributes {
        self.header().attributes()
    }
    /// Codec of the records section (validated at construction).
    pub fn compression(&self) -> Compression {
        self.attributes().compression().unwrap_or(Compression::None)
    }
    /// Last offset minus base offset.
    pub fn last_offset_delta(&self) -> i32 {
        self.header().last_offset_delta()
    }
    /// Timestamp of the first record (or the delete horizon; see attributes).
    pub fn base_timestamp(&self) -> i64 {
        self.header().base_timestamp()
    }
    /// Largest timestamp in the batch (the log-append time for such batches).
    pub fn max_timestamp(&self) -> i64 {
        self.header().max_timestamp()
    }
    /// Producer id, or -1.
    pub fn producer_id(&self) -> i64 {
        self.header().producer_id()
    }
    /// Producer epoch, or -1.
    pub fn producer_epoch(&self) -> i16 {
        self.header().producer_epoch()
    }
    /// Sequence number of the first record, or -1.
    pub fn base_sequence(&self) -> i32 {
        self.header().base_sequence()
    }
    /// Sequence number of the last record (wrapping as Kafka does), or -1.
    pub fn last_sequence(&self) -> i32 {
        let base = self.base_sequence();
        if base < 0 {
            return -1;
        }
        let last = i64::from(base) + i64::from(self.last_offset_delta());
        (last % (i64::from(i32::MAX) + 1)) as i32
    }
    /// Number of records the header announces.
    pub fn record_count(&self) -> i32 {
        self.header().record_count()
    }
    /// Part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes().is_transactional()
    }
    /// A control batch (transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes().is_control()
    }

    /// CRC-32C over everything from the attributes to the end, as stored in the header.
    pub fn compute_crc(&self) -> u32 {
        self.header().compute_crc()
    }

    /// Checks the stored CRC against the contents.
    pub fn validate_crc(&self) -> Result<()> {
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored != computed {
            return Err(Error::CrcMismatch { stored, computed });
        }
        Ok(())
    }

    /// The records section, still compressed if the batch is.
    pub fn records_section(&self) -> Bytes {
        self.buf.slice(RECORD_BATCH_OVERHEAD..)
    }

    /// Iterates the records, decompressing once with the default limit.
    pub fn records(&self) -> Result<Records> {
        self.records_with_limit(DEFAULT_DECOMPRESSION_LIMIT)
    }

    /// Iterates the records, refusing to decompress more than `limit` bytes.
    pub fn records_with_limit(&self, limit: usize) -> Result<Records> {
        let section = self.records_section();
        let data = match self.compression() {
            Compression::None => section,
            codec => Bytes::from(decompress(codec, &section, limit)?),
        };
        let log_append_time = self.attributes().timestamp_type() == TimestampType::LogAppendTime;
        Ok(Records {
            data,
            pos: 0,
            remaining: self.record_count(),
            base_offset: self.base_offset(),
            base_timestamp: self.base_timestamp(),
            log_append_time: log_append_time.then(|| self.max_timestamp()),
            failed: false,
        })
    }
}

/// Lazy iterator over a batch's records; yields an error (once) for malformed data, including a
/// record count that disagrees with the bytes present.
#[derive(Debug, Clone)]
pub struct Records {
    data: Bytes,
    pos: usize,
    remaining: i32,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    failed: bool,
}

impl Records {
    /// Size of the decoded records section: the decompressed bytes for a compressed batch.
    /// Lets a decoder of untrusted batches charge a budget wider than one batch.
    pub fn decoded_len(&self) -> usize {
        self.data.len()
    }

    /// Records not yet yielded, per the batch header.
    pub fn remaining(&self) -> usize {
        self.remaining.max(0) as usize
    }

    /// The next record borrowed from the batch buffer: no allocation and no reference counting,
    /// for consumers that process records in place. Mixes freely with `next()`.
    pub fn next_ref(&mut self) -> Option<Result<RecordRef<'_>>> {
        if !self.advance_check()? {
            return self.trailing_error().map(Err);
        }
        match parse_record(
            &self.data,
            self.pos,
            self.base_offset,
            self.base_timestamp,
            self.log_append_time,
        ) {
            Ok((record, next)) => {
                self.pos = next;
                self.remaining -= 1;
                Some(Ok(record))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// `Some(true)` if a record should be parsed, `Some(false)` at a clean end, `None` after a
    /// failure; trailing bytes after the announced count are reported once as an error.
    fn advance_check(&mut self) -> Option<bool> {
        if self.failed {
            return None;
        }
        if self.remaining > 0 {
            return Some(true);
        }
        Some(false)
    }

    fn trailing_error(&mut self) -> Option<Error> {
        if self.pos < self.data.len() {
            self.failed = true;
            return Some(Error::CorruptBatch(format!(
                "{} bytes left after the announced record count",
                self.data.len() - self.pos
            )));
        }
        None
    }
}

/// A record borrowed from its batch's (decompressed) buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Absolute offset.
    pub offset: i64,
    /// Timestamp in ms (create time or the batch's log-append time).
    pub timestamp: i64,
    /// Key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// Value; `None` is null.
    pub value: Option<&'a [u8]>,
    headers: &'a [u8],
    header_count: usize,
}

impl<'a> RecordRef<'a> {
    /// Number of headers.
    pub fn header_count(&self) -> usize {
        self.header_count
    }

    /// The headers in wire order, as `(key, value)` slices (validated when the record was parsed).
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        let data = self.headers;
        let mut pos = 0;
        (0..self.header_count).map_while(move |_| {
            let key = read_slice(data, &mut pos).ok()??;
            let value = read_slice(data, &mut pos).ok()?;
            Some((key, value))
        })
    }

    /// Copies the record into an owned [`Record`] whose bytes share `buffer` (the buffer this
    /// record was parsed from).
    fn into_owned_in(self, buffer: &Bytes) -> Record {
        let share = |s: &[u8]| buffer.slice_ref(s);
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(share),
            value: self.value.map(share),
            headers: self
                .headers()
                .map(|(k, v)| Header {
                    key: share(k),
                    value: v.map(share),
                })
                .collect(),
        }
    }
}

/// Reads a varint-length-prefixed nullable byte string.
#[inline]
fn read_slice<'a>(body: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>> {
    let len = get_varint(body, pos)?;
    if len == -1 {
        return Ok(None);
    }
    let len = usize::try_from(len)
        .map_err(|_| Error::CorruptBatch(format!("invalid field length {len}")))?;
    let end = pos
        .checked_add(len)
        .filter(|&e| e <= body.len())
        .ok_or_else(|| Error::CorruptBatch("field runs past the end of its record".into()))?;
    let out = &body[*pos..end];
    *pos = end;
    Ok(Some(out))
}

/// Parses the record at `pos`, returning it and the position after it.
#[inline]
fn parse_record(
    data: &[u8],
    mut pos: usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<(RecordRef<'_>, usize)> {
    let len = get_varint(data, &mut pos)?;
    let len = usize::try_from(len)
        .map_err(|_| Error::CorruptBatch(format!("negative record length {len}")))?;
    let end = pos
        .checked_add(len)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| Error::CorruptBatch("record runs past the end of the batch".into()))?;
    let body = &data[..end];
    pos += 1; // attributes: unused in v2
    let ts_delta = get_varlong(body, &mut pos)?;
    let offset_delta = get_varint(body, &mut pos)?;
    let key = read_slice(body, &mut pos)?;
    let value = read_slice(body, &mut pos)?;
    let header_count = get_varint(body, &mut pos)?;
    let header_count = usize::try_from(header_count)
        .map_err(|_| Error::CorruptBatch(format!("negative header count {header_count}")))?;
    let headers_start = pos.min(end);
    for _ in 0..header_count {
        read_slice(body, &mut pos)?.ok_or_else(|| Error::CorruptBatch("null header key".into()))?;
        read_slice(body, &mut pos)?;
    }
    if pos != end {
        return Err(Error::CorruptBatch(format!(
            "record length {len} disagrees with the fields it holds"
        )));
    }
    Ok((
        RecordRef {
            // Wrapping, like the timestamp: the base offset is whatever the peer sent (a broker
            // restamps it), and made-up bytes must not panic.
            offset: base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp: log_append_time.unwrap_or_else(|| base_timestamp.wrapping_add(ts_delta)),
            key,
            value,
            headers: &body[headers_start..end],
            header_count,
        },
        end,
    ))
}

impl Iterator for Records {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        if !self.advance_check()? {
            return self.trailing_error().map(Err);
        }
        let parsed = parse_record(
            &self.data,
            self.pos,
            self.base_offset,
            self.base_timestamp,
            self.log_append_time,
        );
        match parsed {
            Ok((record, next)) => {
                let owned = record.into_owned_in(&self.data);
                self.pos = next;
                self.remaining -= 1;
                Some(Ok(owned))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let upper = self
            .remaining()
            .min((self.data.len() - self.pos) / MIN_RECORD_SIZE + 1);
        (0, Some(upper))
    }
}
