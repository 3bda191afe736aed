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

mod attributes;
mod batch;
mod builder;
mod compression;
mod control;
mod header;
mod lz4;
mod record;
mod record_set;
pub mod varint;

pub use attributes::{BatchAttributes, TimestampType};
pub use batch::{
    RecordBatch, RecordRef, Records, DEFAULT_DECOMPRESSION_LIMIT, RECORD_BATCH_OVERHEAD,
};
pub use builder::{restamp_producer, stamp_offsets, BatchBuilder};
pub use compression::{compress, decompress, Compression};
pub use control::{ControlRecordType, EndTxnMarker};
pub use header::{
    peek_batch_length, peek_magic, BatchHeaderView, LOG_OVERHEAD, MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
};
pub use record::{Header, Record};
pub use record_set::RecordBatches;

#[cfg(test)]
mod tests;
