//! The RecordBatch v2 header: where each field sits, and a borrowed view that reads (and, over
//! `&mut [u8]`, rewrites) the fields in place.
//!
//! This module is the one place that knows the header's byte offsets. [`RecordBatch`] reads its
//! fields through the view; the broker uses it to parse headers straight from segment files and
//! to stamp what a leader assigns (base offset, partition leader epoch, log-append time) without
//! decoding records.
//!
//! [`RecordBatch`]: super::RecordBatch

use super::attributes::{BatchAttributes, TimestampType};
use crate::{Error, Result};

/// Magic byte of RecordBatch v2, the only format Kafka 4 accepts.
pub const MAGIC_V2: i8 = 2;
/// `producerId` / `producerEpoch` / `baseSequence` value meaning "not set".
pub const NO_PRODUCER_ID: i64 = -1;
/// See [`NO_PRODUCER_ID`].
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// See [`NO_PRODUCER_ID`].
pub const NO_SEQUENCE: i32 = -1;
/// `partitionLeaderEpoch` value meaning "not stamped by a leader".
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;

/// Size of the batch header that precedes the records section.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes before `batchLength`'s count starts (baseOffset + batchLength), Kafka's `LOG_OVERHEAD`.
pub const LOG_OVERHEAD: usize = 12;

pub(crate) const BASE_OFFSET: usize = 0;
pub(crate) const BATCH_LENGTH: usize = 8;
pub(crate) const PARTITION_LEADER_EPOCH: usize = 12;
pub(crate) const MAGIC: usize = 16;
pub(crate) const CRC: usize = 17;
pub(crate) const ATTRIBUTES: usize = 21;
pub(crate) const LAST_OFFSET_DELTA: usize = 23;
pub(crate) const BASE_TIMESTAMP: usize = 27;
pub(crate) const MAX_TIMESTAMP: usize = 35;
pub(crate) const PRODUCER_ID: usize = 43;
pub(crate) const PRODUCER_EPOCH: usize = 51;
pub(crate) const BASE_SEQUENCE: usize = 53;
pub(crate) const RECORD_COUNT: usize = 57;

#[inline]
pub(crate) fn read_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
pub(crate) fn read_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
#[inline]
pub(crate) fn read_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// The magic byte of bytes that start a batch, if enough of them are present to hold it.
/// (Magic sits after the first 16 bytes, so even a cut batch tells its format.)
pub fn peek_magic(buf: &[u8]) -> Option<i8> {
    buf.get(MAGIC).map(|&b| b as i8)
}

/// The `batchLength` field of bytes that start a batch, if its [`LOG_OVERHEAD`] bytes are
/// present. The whole batch is `LOG_OVERHEAD + batchLength` bytes.
pub fn peek_batch_length(buf: &[u8]) -> Option<i32> {
    (buf.len() >= LOG_OVERHEAD).then(|| read_i32(buf, BATCH_LENGTH))
}

/// A borrowed view of a RecordBatch v2 header: the first [`RECORD_BATCH_OVERHEAD`] bytes of
/// `buf`, which may be the whole batch or only its header (as read from a segment file).
///
/// Construction checks only that the header's bytes are present; every field is then read (or
/// written) in place, big-endian, without allocation. Over `&[u8]` (or `Bytes`) the view reads;
/// over `&mut [u8]` (or `BytesMut`) it also has the setters a broker needs. The fields that the
/// CRC does not cover (base offset, batch length, partition leader epoch, magic, the CRC itself)
/// can be set without touching the CRC; after changing any other field call
/// [`BatchHeaderView::update_crc`] on a view that spans the whole batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeaderView<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> BatchHeaderView<T> {
    /// A view of the header at the start of `buf`; fails if `buf` is shorter than a header.
    pub fn new(buf: T) -> Result<Self> {
        let len = buf.as_ref().len();
        if len < RECORD_BATCH_OVERHEAD {
            return Err(Error::CorruptBatch(format!(
                "{len} bytes are shorter than the {RECORD_BATCH_OVERHEAD}-byte batch header"
            )));
        }
        Ok(BatchHeaderView { buf })
    }

    /// A view of a buffer the caller has already checked (a constructed `RecordBatch`).
    pub(crate) fn new_unchecked(buf: T) -> Self {
        debug_assert!(buf.as_ref().len() >= RECORD_BATCH_OVERHEAD);
        BatchHeaderView { buf }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// The viewed bytes (header and whatever follows it in the buffer).
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// `baseOffset`: offset of the first record (assigned by the broker).
    pub fn base_offset(&self) -> i64 {
        read_i64(self.b(), BASE_OFFSET)
    }
    /// `batchLength`: bytes after this field, to the end of the batch.
    pub fn batch_length(&self) -> i32 {
        read_i32(self.b(), BATCH_LENGTH)
    }
    /// `partitionLeaderEpoch`: the leader epoch stamped by the broker that appended the batch.
    pub fn partition_leader_epoch(&self) -> i32 {
        read_i32(self.b(), PARTITION_LEADER_EPOCH)
    }
    /// `magic`: the format version (2).
    pub fn magic(&self) -> i8 {
        self.b()[MAGIC] as i8
    }
    /// `crc`: the stored CRC-32C of attributes through the end of the batch.
    pub fn crc(&self) -> u32 {
        read_i32(self.b(), CRC) as u32
    }
    /// `attributes`: codec, timestamp type, transactional, control, delete horizon.
    pub fn attributes(&self) -> BatchAttributes {
        BatchAttributes(read_i16(self.b(), ATTRIBUTES))
    }
    /// `lastOffsetDelta`: last offset minus base offset.
    pub fn last_offset_delta(&self) -> i32 {
        read_i32(self.b(), LAST_OFFSET_DELTA)
    }
    /// `baseTimestamp`: timestamp of the first record (or the delete horizon).
    pub fn base_timestamp(&self) -> i64 {
        read_i64(self.b(), BASE_TIMESTAMP)
    }
    /// `maxTimestamp`: the largest timestamp (the log-append time for such batches).
    pub fn max_timestamp(&self) -> i64 {
        read_i64(self.b(), MAX_TIMESTAMP)
    }
    /// `producerId`, or -1.
    pub fn producer_id(&self) -> i64 {
        read_i64(self.b(), PRODUCER_ID)
    }
    /// `producerEpoch`, or -1.
    pub fn producer_epoch(&self) -> i16 {
        read_i16(self.b(), PRODUCER_EPOCH)
    }
    /// `baseSequence`: sequence number of the first record, or -1.
    pub fn base_sequence(&self) -> i32 {
        read_i32(self.b(), BASE_SEQUENCE)
    }
    /// `recordCount`: the number of records the header announces.
    pub fn record_count(&self) -> i32 {
        read_i32(self.b(), RECORD_COUNT)
    }

    /// Offset of the last record; `None` for a negative delta or an overflowing sum (bytes a
    /// peer made up).
    pub fn last_offset(&self) -> Option<i64> {
        let delta = self.last_offset_delta();
        if delta < 0 {
            return None;
        }
        self.base_offset().checked_add(i64::from(delta))
    }

    /// Size of the whole batch (`LOG_OVERHEAD + batchLength`); `None` if `batchLength` is too
    /// small to cover the rest of the header.
    pub fn size(&self) -> Option<usize> {
        let length = usize::try_from(self.batch_length()).ok()?;
        (length >= RECORD_BATCH_OVERHEAD - LOG_OVERHEAD).then_some(LOG_OVERHEAD + length)
    }

    /// CRC-32C over attributes through the end of the viewed buffer (equal to [`Self::crc`]
    /// for an intact batch when the view spans exactly that batch).
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.b()[ATTRIBUTES..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> BatchHeaderView<T> {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.buf.as_mut()[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// Sets `baseOffset` (not covered by the CRC).
    pub fn set_base_offset(&mut self, base_offset: i64) {
        self.put(BASE_OFFSET, &base_offset.to_be_bytes());
    }
    /// Sets `partitionLeaderEpoch` (not covered by the CRC).
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        self.put(PARTITION_LEADER_EPOCH, &epoch.to_be_bytes());
    }
    /// Sets `maxTimestamp` (covered by the CRC: call [`Self::update_crc`] afterwards).
    pub fn set_max_timestamp(&mut self, max_timestamp: i64) {
        self.put(MAX_TIMESTAMP, &max_timestamp.to_be_bytes());
    }
    /// Sets the whole `attributes` field (covered by the CRC).
    pub fn set_attributes(&mut self, attributes: BatchAttributes) {
        self.put(ATTRIBUTES, &attributes.0.to_be_bytes());
    }
    /// Sets only the timestamp-type bit of the attributes (covered by the CRC).
    pub fn set_timestamp_type(&mut self, kind: TimestampType) {
        let attributes = self.attributes().with_timestamp_type(kind);
        self.set_attributes(attributes);
    }
    /// Sets the idempotence fields `producerId`, `producerEpoch` and `baseSequence` (covered by
    /// the CRC).
    pub fn set_producer(&mut self, producer_id: i64, epoch: i16, base_sequence: i32) {
        self.put(PRODUCER_ID, &producer_id.to_be_bytes());
        self.put(PRODUCER_EPOCH, &epoch.to_be_bytes());
        self.put(BASE_SEQUENCE, &base_sequence.to_be_bytes());
    }
    /// Recomputes the CRC over attributes through the end of the viewed buffer and stores it.
    /// The view must span exactly one whole batch.
    pub fn update_crc(&mut self) {
        let crc = self.compute_crc();
        self.put(CRC, &crc.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{BatchBuilder, Compression, RecordBatch};
    use bytes::BytesMut;

    fn sample() -> bytes::Bytes {
        let mut b = BatchBuilder::new(Compression::Lz4)
            .base_offset(40)
            .partition_leader_epoch(3)
            .producer(77, 2, 9)
            .transactional(true);
        b.append(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
        b.append(1_500, None, Some(b"w"), &[]).unwrap();
        b.append(1_200, None, None, &[]).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn reads_every_field_as_record_batch_does() {
        let bytes = sample();
        let view = BatchHeaderView::new(&bytes[..]).unwrap();
        let batch = RecordBatch::new(bytes.clone()).unwrap();
        assert_eq!(view.base_offset(), 40);
        assert_eq!(view.batch_length() as usize + LOG_OVERHEAD, bytes.len());
        assert_eq!(view.size(), Some(bytes.len()));
        assert_eq!(view.partition_leader_epoch(), 3);
        assert_eq!(view.magic(), 2);
        assert_eq!(view.crc(), batch.crc());
        assert_eq!(view.crc(), view.compute_crc());
        assert_eq!(view.attributes(), batch.attributes());
        assert_eq!(view.attributes().compression().unwrap(), Compression::Lz4);
        assert!(view.attributes().is_transactional());
        assert_eq!(view.last_offset_delta(), 2);
        assert_eq!(view.last_offset(), Some(42));
        assert_eq!(view.base_timestamp(), 1_000);
        assert_eq!(view.max_timestamp(), 1_500);
        assert_eq!(
            (
                view.producer_id(),
                view.producer_epoch(),
                view.base_sequence()
            ),
            (77, 2, 9)
        );
        assert_eq!(view.record_count(), 3);
        // A header-only prefix (as read from disk) is enough for every read accessor.
        let head = BatchHeaderView::new(&bytes[..RECORD_BATCH_OVERHEAD]).unwrap();
        assert_eq!(head.size(), Some(bytes.len()));
        assert_eq!(head.max_timestamp(), 1_500);
    }

    #[test]
    fn short_or_made_up_headers_fail_without_panicking() {
        assert!(BatchHeaderView::new(&[0u8; 60][..]).is_err());
        let mut junk = [0xffu8; 61];
        let view = BatchHeaderView::new(&junk[..]).unwrap();
        assert_eq!(view.size(), None, "negative batchLength");
        assert_eq!(view.last_offset(), None, "negative delta");
        junk[..8].copy_from_slice(&i64::MAX.to_be_bytes());
        junk[23..27].copy_from_slice(&5i32.to_be_bytes());
        assert_eq!(BatchHeaderView::new(&junk[..]).unwrap().last_offset(), None);
        assert_eq!(peek_magic(&[0u8; 16]), None);
        assert_eq!(peek_magic(&sample()), Some(2));
        assert_eq!(peek_batch_length(&[0u8; 11]), None);
        let bytes = sample();
        assert_eq!(
            peek_batch_length(&bytes[..12]),
            Some((bytes.len() - 12) as i32)
        );
    }

    #[test]
    fn setters_rewrite_in_place_and_the_crc_follows() {
        let mut m = BytesMut::from(&sample()[..]);
        let mut view = BatchHeaderView::new(&mut m[..]).unwrap();
        view.set_base_offset(1_000);
        view.set_partition_leader_epoch(8);
        assert_eq!(view.crc(), view.compute_crc(), "neither field is covered");
        view.set_max_timestamp(9_999);
        view.set_timestamp_type(TimestampType::LogAppendTime);
        view.set_producer(5, 6, 7);
        assert_ne!(view.crc(), view.compute_crc());
        view.update_crc();
        let batch = RecordBatch::new(m.freeze()).unwrap();
        batch.validate_crc().unwrap();
        assert_eq!(batch.base_offset(), 1_000);
        assert_eq!(batch.partition_leader_epoch(), 8);
        assert_eq!(batch.max_timestamp(), 9_999);
        assert_eq!(
            batch.attributes().timestamp_type(),
            TimestampType::LogAppendTime
        );
        assert!(batch.is_transactional(), "other attribute bits kept");
        assert_eq!(batch.compression(), Compression::Lz4);
        assert_eq!(
            (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence()
            ),
            (5, 6, 7)
        );
        assert_eq!(batch.records().unwrap().count(), 3);

        let mut m = BytesMut::from(&batch.as_bytes()[..]);
        let mut view = BatchHeaderView::new(&mut m[..]).unwrap();
        view.set_timestamp_type(TimestampType::CreateTime);
        view.update_crc();
        let batch = RecordBatch::new(m.freeze()).unwrap();
        batch.validate_crc().unwrap();
        assert_eq!(
            batch.attributes().timestamp_type(),
            TimestampType::CreateTime
        );
    }
}
