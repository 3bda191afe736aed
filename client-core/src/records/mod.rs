//! RecordBatch v2: Kafka's on-the-wire and on-disk unit of records.
//!
//! Layout of a batch (big-endian; offsets in bytes):
//!
//! ```text
//!  0 baseOffset int64        21 attributes int16       43 producerId int64
//!  8 batchLength int32       23 lastOffsetDelta int32  51 producerEpoch int16
//! 12 partitionLeaderEpoch    27 baseTimestamp int64    53 baseSequence int32
//! 16 magic int8 (= 2)        35 maxTimestamp int64     57 recordCount int32
//! 17 crc uint32 (CRC-32C of bytes 21..end)             61 records (maybe compressed)
//! ```
//!
//! [`BatchHeaderView`] is the one place that knows these offsets: it reads every header field in
//! place and, over `&mut [u8]`, rewrites the fields a broker stamps.
//! [`BatchBuilder`] encodes a batch once; [`RecordBatch`] is a zero-copy view that validates a
//! batch and iterates its records lazily; [`RecordBatches`] walks a record set (batches back to
//! back, as a Fetch response carries them), skipping a truncated final batch.

mod batch;
mod builder;
mod compression;
mod control;
mod header;
mod record;
mod record_set;
pub mod varint;

pub use batch::{
    BatchAttributes, RecordBatch, RecordRef, Records, TimestampType, DEFAULT_DECOMPRESSION_LIMIT,
    RECORD_BATCH_OVERHEAD,
};
pub use builder::{restamp_producer, stamp_offsets, BatchBuilder};
pub use compression::{compress, decompress, Compression};
pub use control::{ControlRecordType, EndTxnMarker};
pub use header::{peek_batch_length, peek_magic, BatchHeaderView, LOG_OVERHEAD};
pub use record::{Header, Record};
pub use record_set::RecordBatches;

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

#[cfg(test)]
mod tests;
