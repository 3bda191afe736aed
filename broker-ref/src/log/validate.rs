//! Validation of one batch a client sent, before the broker assigns offsets to it.
//!
//! The checks and error codes follow Apache Kafka 4's `UnifiedLog.analyzeAndValidateRecords`
//! and `LogValidator`:
//!
//! | check                                                          | error code                       |
//! |----------------------------------------------------------------|----------------------------------|
//! | magic byte is 2 (0 and 1 are legacy formats)                   | `UNSUPPORTED_FOR_MESSAGE_FORMAT` |
//! | size ≤ `max.message.bytes`                                     | `MESSAGE_TOO_LARGE`              |
//! | framing (batchLength, header), CRC-32C                         | `CORRUPT_MESSAGE`                |
//! | codec id known                                                 | `UNSUPPORTED_COMPRESSION_TYPE`   |
//! | recordCount > 0 and lastOffsetDelta + 1 = recordCount          | `INVALID_RECORD`                 |
//! | not a control batch (only the coordinator writes markers)      | `INVALID_RECORD`                 |
//! | a producer id comes with a base sequence ≥ 0                   | `INVALID_RECORD`                 |
//! | every record decodes, and their number matches recordCount     | `CORRUPT_MESSAGE`                |
//! | per record: compacted topic, the record has a key              | `INVALID_RECORD`                 |
//! | per record: CreateTime, a timestamp within before/after.max.ms | `INVALID_TIMESTAMP`              |
//! | per record: no LogAppendTime attribute where the check above   | `INVALID_TIMESTAMP`              |
//! | does not apply (LogAppendTime topic, or a record without one)  |                                  |
//!
//! The per-record checks are Kafka's `LogValidator.validateRecord`: each record gets at most one
//! error (the key is checked first), every failed record of the batch is listed by its index
//! ([`Error::InvalidRecords`], sent as Produce's `record_errors`), and the batch is refused with
//! INVALID_TIMESTAMP if any record's timestamp failed, INVALID_RECORD otherwise, with Kafka's
//! partition-level message.
//!
//! Inner offset deltas that are not exactly 0, 1, 2, ... are not an error: Kafka rebuilds such
//! batches (old clients wrote them) and so do we ([`ValidatedBatch::offsets_in_order`]).
//! A LogAppendTime attribute on a CreateTime topic with in-range timestamps is accepted, as
//! Kafka does, and the stored batch says CreateTime.

use bytes::Bytes;
use odradek::records::{Compression, RecordBatch, TimestampType, MAGIC_V2};
use odradek::ErrorCode;

use super::budget::DecodeBudget;
use super::config::LogConfig;
use crate::{Error, RecordError, Result};

/// What validation learned about a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// Records in the batch.
    pub record_count: i32,
    /// The largest record timestamp (-1 if no record has one); for LogAppendTime topics this is
    /// the producer's value and is replaced on append.
    pub max_timestamp: i64,
    /// The batch's codec.
    pub compression: Compression,
    /// Whether the records' offset deltas are exactly 0..recordCount (else the batch is rebuilt).
    pub offsets_in_order: bool,
    /// Producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence of the first record, or -1.
    pub base_sequence: i32,
    /// Part of a transaction.
    pub is_transactional: bool,
    /// Size of the records section once decompressed (its stored size when uncompressed).
    pub decoded_bytes: usize,
}

/// How many record errors the partition-level message lists (Kafka shows three as well).
const LISTED_RECORD_ERRORS: usize = 3;

/// A partition as Kafka's `TopicPartition` prints it (`topic-partition`), for record errors;
/// formatted only when a record fails.
#[derive(Debug, Clone, Copy)]
pub struct PartitionName<'a>(pub &'a str, pub i32);

impl std::fmt::Display for PartitionName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

fn kafka(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::kafka(code, message)
}

/// Who is appending a batch (Kafka's `AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer: every check of the table above applies.
    Client,
    /// This broker's coordinators: transaction markers (control batches) and transactional
    /// offset commits (a producer id without a sequence) are allowed.
    Coordinator,
}

/// Validates `batch`, one RecordBatch as a client sent it, against the topic's `config` at
/// broker time `now_ms`. Never panics on hostile input.
pub fn validate_batch(batch: &Bytes, config: &LogConfig, now_ms: i64) -> Result<ValidatedBatch> {
    validate_batch_from(batch, config, now_ms, AppendOrigin::Client)
}

/// [`validate_batch`] for a batch from `origin`.
pub fn validate_batch_from(
    batch: &Bytes,
    config: &LogConfig,
    now_ms: i64,
    origin: AppendOrigin,
) -> Result<ValidatedBatch> {
    validate_batch_for(
        batch,
        config,
        now_ms,
        origin,
        PartitionName("", -1),
        &mut DecodeBudget::unlimited(),
    )
}

/// [`validate_batch_from`] for a batch of `partition` (named in record errors), charging the
/// decompressed size to `budget`, the request's [`DecodeBudget`]: a compressed batch is
/// decompressed only up to what the budget has left, and a batch that would go beyond it fails
/// with the budget's error (and spends it).
pub fn validate_batch_for(
    batch: &Bytes,
    config: &LogConfig,
    now_ms: i64,
    origin: AppendOrigin,
    partition: PartitionName<'_>,
    budget: &mut DecodeBudget,
) -> Result<ValidatedBatch> {
    if let Some(magic) = odradek::records::peek_magic(batch) {
        if magic != MAGIC_V2 {
            let code = if (0..MAGIC_V2).contains(&magic) {
                ErrorCode::UnsupportedForMessageFormat
            } else {
                ErrorCode::CorruptMessage
            };
            return Err(kafka(
                code,
                format!("record batch magic {magic} is not supported (only v2)"),
            ));
        }
    }
    if batch.len() > config.max_message_bytes.max(0) as usize {
        return Err(kafka(
            ErrorCode::MessageTooLarge,
            format!(
                "record batch of {} bytes exceeds max.message.bytes {}",
                batch.len(),
                config.max_message_bytes
            ),
        ));
    }
    let view = RecordBatch::new(batch.clone()).map_err(|e| match e {
        odradek::Error::UnsupportedCompression(_) => {
            kafka(ErrorCode::UnsupportedCompressionType, e.to_string())
        }
        other => kafka(ErrorCode::CorruptMessage, other.to_string()),
    })?;
    view.validate_crc()
        .map_err(|e| kafka(ErrorCode::CorruptMessage, e.to_string()))?;
    check_header(&view, origin)?;
    check_records(&view, config, now_ms, partition, budget)
}

fn check_header(view: &RecordBatch, origin: AppendOrigin) -> Result<()> {
    let count = view.record_count();
    if count <= 0 {
        return Err(kafka(
            ErrorCode::InvalidRecord,
            format!("invalid record count {count}"),
        ));
    }
    if i64::from(view.last_offset_delta()) + 1 != i64::from(count) {
        return Err(kafka(
            ErrorCode::InvalidRecord,
            format!(
                "lastOffsetDelta {} is inconsistent with the record count {count}",
                view.last_offset_delta()
            ),
        ));
    }
    if view.is_control() && origin == AppendOrigin::Client {
        return Err(kafka(
            ErrorCode::InvalidRecord,
            "clients are not allowed to write control records",
        ));
    }
    if view.producer_id() >= 0 && view.base_sequence() < 0 && origin == AppendOrigin::Client {
        return Err(kafka(
            ErrorCode::InvalidRecord,
            format!(
                "invalid sequence number {} for producer id {}",
                view.base_sequence(),
                view.producer_id()
            ),
        ));
    }
    Ok(())
}

/// Whether `timestamp` lies outside the window Kafka allows around `now_ms`.
fn timestamp_out_of_range(timestamp: i64, now_ms: i64, config: &LogConfig) -> bool {
    let diff = i128::from(now_ms) - i128::from(timestamp);
    diff > i128::from(config.message_timestamp_before_max_ms)
        || -diff > i128::from(config.message_timestamp_after_max_ms)
}

/// Kafka's `validateRecord` for one record: the key on a compacted topic first, then the
/// timestamp; `None` when the record is fine.
fn record_problem(
    record: &odradek::records::RecordRef<'_>,
    view: &RecordBatch,
    config: &LogConfig,
    now_ms: i64,
    partition: PartitionName<'_>,
) -> Option<(ErrorCode, String)> {
    if config.is_compacted() && record.key.is_none() {
        return Some((
            ErrorCode::InvalidRecord,
            format!(
                "Compacted topic cannot accept message without key in topic partition {partition}"
            ),
        ));
    }
    if config.message_timestamp_type == TimestampType::CreateTime && record.timestamp != -1 {
        if timestamp_out_of_range(record.timestamp, now_ms, config) {
            return Some((
                ErrorCode::InvalidTimestamp,
                format!(
                    "Timestamp {} of message with offset {} is out of range. The timestamp should be within [{}, {}]",
                    record.timestamp,
                    record.offset,
                    now_ms.saturating_sub(config.message_timestamp_before_max_ms),
                    now_ms.saturating_add(config.message_timestamp_after_max_ms)
                ),
            ));
        }
    } else if view.attributes().timestamp_type() == TimestampType::LogAppendTime {
        return Some((
            ErrorCode::InvalidTimestamp,
            format!(
                "Invalid timestamp type in message DefaultRecord(offset={}, timestamp={}, key={} bytes, value={} bytes). Producer should not set timestamp type to LogAppendTime.",
                record.offset,
                record.timestamp,
                record.key.map_or(0, <[u8]>::len),
                record.value.map_or(0, <[u8]>::len)
            ),
        ));
    }
    None
}

fn check_records(
    view: &RecordBatch,
    config: &LogConfig,
    now_ms: i64,
    partition: PartitionName<'_>,
    budget: &mut DecodeBudget,
) -> Result<ValidatedBatch> {
    let compressed = view.compression() != Compression::None;
    if compressed && budget.is_spent() {
        return Err(budget.exceeded_error());
    }
    let mut records = match view.records_with_limit(budget.batch_limit()) {
        Ok(records) => records,
        Err(_) if compressed && budget.is_binding() => {
            // Beyond what the request may still cost (it may be corrupt as well; either way
            // the rest of the request is not worth decompressing).
            budget.exhaust();
            return Err(budget.exceeded_error());
        }
        Err(e) => return Err(kafka(ErrorCode::CorruptMessage, e.to_string())),
    };
    let decoded_bytes = records.decoded_len();
    if compressed {
        budget.charge(decoded_bytes);
    }
    let mut failed: Vec<RecordError> = Vec::new();
    let mut timestamp_error = false;
    let mut count: i64 = 0;
    let mut max_timestamp = -1i64;
    let mut offsets_in_order = true;
    let mut index = 0usize;
    // Borrowed records: no per-record allocation or reference counting on the produce path.
    while let Some(record) = records.next_ref() {
        let record = record.map_err(|e| kafka(ErrorCode::CorruptMessage, e.to_string()))?;
        let this = index;
        index += 1;
        if record.offset.wrapping_sub(view.base_offset()) != this as i64 {
            offsets_in_order = false;
        }
        max_timestamp = max_timestamp.max(record.timestamp);
        count += 1;
        if let Some((code, message)) = record_problem(&record, view, config, now_ms, partition) {
            timestamp_error |= code == ErrorCode::InvalidTimestamp;
            failed.push(RecordError {
                batch_index: i32::try_from(this).unwrap_or(i32::MAX),
                message,
            });
        }
    }
    if count != i64::from(view.record_count()) {
        return Err(kafka(
            ErrorCode::CorruptMessage,
            format!(
                "batch announces {} records but holds {count}",
                view.record_count()
            ),
        ));
    }
    if !failed.is_empty() {
        return Err(record_errors(failed, timestamp_error));
    }
    Ok(ValidatedBatch {
        record_count: view.record_count(),
        max_timestamp,
        compression: view.compression(),
        offsets_in_order,
        producer_id: view.producer_id(),
        producer_epoch: view.producer_epoch(),
        base_sequence: view.base_sequence(),
        is_transactional: view.is_transactional(),
        decoded_bytes,
    })
}

/// The batch-level error for its failed records, with Kafka's `processRecordErrors` wording.
fn record_errors(records: Vec<RecordError>, timestamp_error: bool) -> Error {
    let (code, message) = if timestamp_error {
        (
            ErrorCode::InvalidTimestamp,
            "One or more records have been rejected due to invalid timestamp".to_string(),
        )
    } else {
        let listed: Vec<String> = records
            .iter()
            .take(LISTED_RECORD_ERRORS)
            .map(|r| {
                format!(
                    "RecordError(batchIndex={}, message='{}')",
                    r.batch_index, r.message
                )
            })
            .collect();
        (
            ErrorCode::InvalidRecord,
            format!(
                "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
                records.len(),
                listed.join(", ")
            ),
        )
    };
    Error::InvalidRecords {
        code,
        message,
        records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odradek::records::{BatchBuilder, ControlRecordType, EndTxnMarker};

    const NOW: i64 = 1_700_000_000_000;

    fn build(records: &[(Option<&[u8]>, i64)]) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None);
        for (key, ts) in records {
            b.append(*ts, *key, Some(b"value"), &[]).unwrap();
        }
        b.build().unwrap()
    }

    fn code(batch: &Bytes, config: &LogConfig) -> ErrorCode {
        validate_batch(batch, config, NOW).unwrap_err().code()
    }

    fn patched(batch: &Bytes, at: usize, bytes: &[u8], fix_crc: bool) -> Bytes {
        let mut v = batch.to_vec();
        v[at..at + bytes.len()].copy_from_slice(bytes);
        if fix_crc {
            let crc = crc32c::crc32c(&v[21..]);
            v[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        Bytes::from(v)
    }

    #[test]
    fn a_made_up_base_offset_near_i64_max_does_not_panic() {
        // The client's base offset is restamped on append; validation must survive any value.
        let mut b = BatchBuilder::new(Compression::None).base_offset(i64::MAX - 1);
        for _ in 0..3 {
            b.append(NOW, None, Some(b"v"), &[]).unwrap();
        }
        let v = validate_batch(&b.build().unwrap(), &LogConfig::default(), NOW).unwrap();
        assert!(v.offsets_in_order);
    }

    #[test]
    fn accepts_a_good_batch() {
        let b = build(&[(Some(b"k"), NOW), (None, NOW - 5)]);
        let v = validate_batch(&b, &LogConfig::default(), NOW).unwrap();
        assert_eq!(v.record_count, 2);
        assert_eq!(v.max_timestamp, NOW);
        assert!(v.offsets_in_order);
        assert_eq!(v.compression, Compression::None);
    }

    #[test]
    fn error_codes_match_kafka() {
        let c = LogConfig::default();
        let b = build(&[(Some(b"k"), NOW)]);
        assert_eq!(
            code(&patched(&b, 16, &[1], false), &c),
            ErrorCode::UnsupportedForMessageFormat
        );
        assert_eq!(
            code(&patched(&b, 16, &[9], false), &c),
            ErrorCode::CorruptMessage
        );
        assert_eq!(
            code(&patched(&b, b.len() - 1, &[0xAA], false), &c),
            ErrorCode::CorruptMessage
        );
        let small = LogConfig {
            max_message_bytes: 20,
            ..LogConfig::default()
        };
        assert_eq!(code(&b, &small), ErrorCode::MessageTooLarge);
        // lastOffsetDelta 5 for one record.
        assert_eq!(
            code(&patched(&b, 23, &5i32.to_be_bytes(), true), &c),
            ErrorCode::InvalidRecord
        );
        // Unknown codec id 6.
        assert_eq!(
            code(&patched(&b, 21, &[0, 6], true), &c),
            ErrorCode::UnsupportedCompressionType
        );
        // LogAppendTime attribute set by the producer: accepted on a CreateTime topic when the
        // timestamp is in range (Kafka too), refused per record on a LogAppendTime topic.
        let lat_attribute = patched(&b, 21, &[0, 8], true);
        assert!(validate_batch(&lat_attribute, &c, NOW).is_ok());
        let lat_topic = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..LogConfig::default()
        };
        let err = validate_batch(&lat_attribute, &lat_topic, NOW).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidTimestamp);
        assert!(matches!(&err, Error::InvalidRecords { records, .. } if records.len() == 1));
        // Record count says 2, one record present.
        let two = patched(&b, 57, &2i32.to_be_bytes(), true);
        let two = patched(&two, 23, &1i32.to_be_bytes(), true);
        assert_eq!(code(&two, &c), ErrorCode::CorruptMessage);
        assert_eq!(
            code(&Bytes::from_static(&[0u8; 10]), &c),
            ErrorCode::CorruptMessage
        );
    }

    #[test]
    fn control_batches_and_bad_sequences_are_refused() {
        let marker = EndTxnMarker {
            kind: ControlRecordType::Commit,
            coordinator_epoch: 1,
        };
        let mut b = BatchBuilder::new(Compression::None)
            .control(true)
            .transactional(true)
            .producer(7, 0, 0);
        b.append(
            NOW,
            Some(&ControlRecordType::Commit.encode_key()),
            Some(&marker.encode_value()),
            &[],
        )
        .unwrap();
        let control = b.build().unwrap();
        assert_eq!(
            code(&control, &LogConfig::default()),
            ErrorCode::InvalidRecord
        );
        let mut b = BatchBuilder::new(Compression::None).producer(7, 0, -1);
        b.append(NOW, None, Some(b"v"), &[]).unwrap();
        assert_eq!(
            code(&b.build().unwrap(), &LogConfig::default()),
            ErrorCode::InvalidRecord
        );
    }

    #[test]
    fn compacted_topics_need_keys() {
        let compacted = LogConfig {
            cleanup_policy: super::super::config::CleanupPolicy {
                compact: true,
                delete: false,
            },
            ..LogConfig::default()
        };
        let b = build(&[
            (Some(b"k"), NOW),
            (None, NOW),
            (Some(b"k"), NOW),
            (None, NOW),
        ]);
        let Err(Error::InvalidRecords {
            code,
            message,
            records,
        }) = validate_batch_for(
            &b,
            &compacted,
            NOW,
            AppendOrigin::Client,
            PartitionName("t", 3),
            &mut DecodeBudget::unlimited(),
        )
        else {
            panic!("keyless records accepted on a compacted topic");
        };
        assert_eq!(code, ErrorCode::InvalidRecord);
        let indexes: Vec<i32> = records.iter().map(|r| r.batch_index).collect();
        assert_eq!(indexes, [1, 3]);
        assert_eq!(
            records[0].message,
            "Compacted topic cannot accept message without key in topic partition t-3"
        );
        assert!(
            message.starts_with(
                "One or more records have been rejected due to 2 record errors in total"
            ),
            "{message}"
        );
        assert!(
            message.contains("RecordError(batchIndex=3, message='Compacted topic"),
            "{message}"
        );
        assert!(validate_batch(&build(&[(Some(b"k"), NOW)]), &compacted, NOW).is_ok());
    }

    #[test]
    fn timestamps_are_bounded_for_create_time() {
        let c = LogConfig {
            message_timestamp_before_max_ms: 1_000,
            ..LogConfig::default()
        };
        assert_eq!(
            code(&build(&[(None, NOW - 1_001)]), &c),
            ErrorCode::InvalidTimestamp
        );
        assert_eq!(
            code(&build(&[(None, NOW + 3_600_001)]), &c),
            ErrorCode::InvalidTimestamp
        );
        assert!(validate_batch(&build(&[(None, NOW - 1_000)]), &c, NOW).is_ok());
        // Mixed with a bad key on a compacted topic: one error per record, and the batch is
        // INVALID_TIMESTAMP because one of them is a timestamp error (Kafka's rule).
        let compacted = LogConfig {
            cleanup_policy: super::super::config::CleanupPolicy {
                compact: true,
                delete: false,
            },
            ..c.clone()
        };
        let mixed = build(&[
            (None, NOW - 5_000),
            (Some(b"k"), NOW - 5_000),
            (Some(b"k"), NOW),
        ]);
        let Err(Error::InvalidRecords {
            code,
            message,
            records,
        }) = validate_batch(&mixed, &compacted, NOW)
        else {
            panic!("mixed batch accepted");
        };
        assert_eq!(code, ErrorCode::InvalidTimestamp);
        assert_eq!(
            message,
            "One or more records have been rejected due to invalid timestamp"
        );
        assert_eq!(
            records.iter().map(|r| r.batch_index).collect::<Vec<_>>(),
            [0, 1]
        );
        assert!(records[0].message.starts_with("Compacted topic"));
        assert!(
            records[1].message.starts_with("Timestamp "),
            "{}",
            records[1].message
        );
        assert!(validate_batch(&build(&[(None, -1)]), &c, NOW).is_ok());
        let lat = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..c
        };
        assert!(validate_batch(&build(&[(None, 0)]), &lat, NOW).is_ok());
        // i64 extremes do not overflow.
        assert!(
            validate_batch(&build(&[(None, i64::MAX)]), &LogConfig::default(), i64::MIN).is_err()
        );
    }

    #[test]
    fn compressed_batches_are_decoded_and_checked() {
        let mut b = BatchBuilder::new(Compression::Lz4);
        for i in 0..50 {
            b.append(
                NOW,
                Some(format!("k{i}").as_bytes()),
                Some(&[7u8; 100]),
                &[],
            )
            .unwrap();
        }
        let v = validate_batch(&b.build().unwrap(), &LogConfig::default(), NOW).unwrap();
        assert_eq!((v.record_count, v.compression), (50, Compression::Lz4));
    }
}
