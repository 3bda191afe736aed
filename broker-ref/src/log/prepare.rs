//! Turning a validated client batch into the bytes the log stores.
//!
//! The batch is kept as the client encoded it whenever possible. It is re-encoded only when the
//! topic's `compression.type` names a codec other than the batch's, or when its inner offset
//! deltas are not 0, 1, 2, ... (Kafka rebuilds those too). For `LogAppendTime` topics the
//! timestamp-type attribute and maxTimestamp are rewritten in place and the CRC recomputed; for
//! `CreateTime` topics maxTimestamp is corrected the same way if it disagrees with the records
//! (as Kafka's `setMaxTimestamp` does). Base offset and leader epoch are stamped later by the
//! log; neither is covered by the CRC.

use bytes::{Bytes, BytesMut};
use odradek::records::{BatchBuilder, BatchHeaderView, Compression, RecordBatch, TimestampType};
use odradek::ErrorCode;

use super::config::LogConfig;
use super::validate::{validate_batch_from, AppendOrigin, ValidatedBatch};
use crate::{Error, Result};

/// A batch ready to be stamped and written.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The batch bytes to store.
    pub(crate) bytes: BytesMut,
    /// What validation learned.
    pub(crate) validated: ValidatedBatch,
    /// The log-append time written into the batch, or -1 for CreateTime topics.
    pub(crate) log_append_time: i64,
    /// Whether the broker re-encoded the batch.
    pub(crate) rebuilt: bool,
}

/// Validates `batch` (from `origin`) and applies the topic's timestamp type and compression.
pub(crate) fn prepare(
    batch: BytesMut,
    config: &LogConfig,
    now_ms: i64,
    origin: AppendOrigin,
) -> Result<Prepared> {
    let frozen = batch.freeze();
    let validated = validate_batch_from(&frozen, config, now_ms, origin)?;
    prepare_validated(frozen, validated, config, now_ms)
}

/// [`prepare`] for a batch that already passed validation against `config` (the produce path
/// validates every batch of a request before appending any, and does not validate twice).
/// A batch that is not uniquely owned (a slice of the request buffer) is copied once here.
pub(crate) fn prepare_validated(
    frozen: Bytes,
    validated: ValidatedBatch,
    config: &LogConfig,
    now_ms: i64,
) -> Result<Prepared> {
    let target = target_codec(&validated, config);
    let rebuilt = needs_rebuild(&validated, config);
    let mut bytes = if rebuilt {
        let bytes = rebuild(&frozen, target, config)?;
        if bytes.len() > config.max_message_bytes.max(0) as usize {
            return Err(Error::kafka(
                ErrorCode::MessageTooLarge,
                format!(
                    "record batch of {} bytes after recompression exceeds max.message.bytes {}",
                    bytes.len(),
                    config.max_message_bytes
                ),
            ));
        }
        bytes
    } else {
        into_mut(frozen)
    };
    let mut header = BatchHeaderView::new(&mut bytes[..])?;
    let log_append_time = match config.message_timestamp_type {
        TimestampType::LogAppendTime => {
            set_max_timestamp(&mut header, TimestampType::LogAppendTime, now_ms);
            now_ms
        }
        TimestampType::CreateTime => {
            // A LogAppendTime attribute from the producer (accepted when the timestamps are in
            // range, as Kafka does) is stored as CreateTime.
            if header.max_timestamp() != validated.max_timestamp
                || header.attributes().timestamp_type() != TimestampType::CreateTime
            {
                set_max_timestamp(
                    &mut header,
                    TimestampType::CreateTime,
                    validated.max_timestamp,
                );
            }
            -1
        }
    };
    Ok(Prepared {
        bytes,
        validated,
        log_append_time,
        rebuilt,
    })
}

/// The codec the stored batch uses: the topic's `compression.type`, or the producer's.
fn target_codec(validated: &ValidatedBatch, config: &LogConfig) -> Compression {
    config
        .compression_type
        .target()
        .unwrap_or(validated.compression)
}

/// Whether the batch must be re-encoded: another codec than the topic's, or inner offset deltas
/// other than 0, 1, 2, ...
pub(crate) fn needs_rebuild(validated: &ValidatedBatch, config: &LogConfig) -> bool {
    target_codec(validated, config) != validated.compression || !validated.offsets_in_order
}

/// Reclaims the buffer without copying when nothing else holds it.
fn into_mut(bytes: Bytes) -> BytesMut {
    bytes
        .try_into_mut()
        .unwrap_or_else(|shared| BytesMut::from(&shared[..]))
}

/// Re-encodes every record of `batch` with `codec`, keeping producer fields and timestamps.
fn rebuild(batch: &Bytes, codec: Compression, config: &LogConfig) -> Result<BytesMut> {
    let view = RecordBatch::new(batch.clone())?;
    let mut builder = BatchBuilder::with_capacity(codec, batch.len())
        .compression_level(config.compression_level(codec))
        .producer(
            view.producer_id(),
            view.producer_epoch(),
            view.base_sequence(),
        )
        .transactional(view.is_transactional());
    for record in view.records()? {
        let record = record?;
        builder.append(
            record.timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        )?;
    }
    Ok(into_mut(builder.build()?))
}

/// Sets the timestamp-type attribute and maxTimestamp, then recomputes the CRC (the view spans
/// the whole batch).
fn set_max_timestamp(
    header: &mut BatchHeaderView<&mut [u8]>,
    kind: TimestampType,
    max_timestamp: i64,
) {
    header.set_timestamp_type(kind);
    header.set_max_timestamp(max_timestamp);
    header.update_crc();
}

#[cfg(test)]
mod tests {
    use super::super::config::TopicCompression;
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn batch(codec: Compression, n: usize) -> BytesMut {
        let mut b = BatchBuilder::new(codec).producer(5, 1, 10);
        for i in 0..n {
            b.append(NOW - 10 + i as i64, Some(b"k"), Some(&[b'x'; 64]), &[])
                .unwrap();
        }
        BytesMut::from(&b.build().unwrap()[..])
    }

    #[test]
    fn untouched_when_nothing_changes() {
        let input = batch(Compression::Lz4, 3);
        let original = input.clone();
        let p = prepare(input, &LogConfig::default(), NOW, AppendOrigin::Client).unwrap();
        assert_eq!(p.bytes, original);
        assert!(!p.rebuilt);
        assert_eq!(p.log_append_time, -1);
    }

    #[test]
    fn log_append_time_rewrites_header_and_crc() {
        let config = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..LogConfig::default()
        };
        let p = prepare(
            batch(Compression::None, 3),
            &config,
            NOW + 99,
            AppendOrigin::Client,
        )
        .unwrap();
        let view = RecordBatch::new(p.bytes.freeze()).unwrap();
        view.validate_crc().unwrap();
        assert_eq!(
            view.attributes().timestamp_type(),
            TimestampType::LogAppendTime
        );
        assert_eq!(view.max_timestamp(), NOW + 99);
        assert!(view
            .records()
            .unwrap()
            .all(|r| r.unwrap().timestamp == NOW + 99));
    }

    #[test]
    fn recompresses_to_the_topic_codec() {
        let config = LogConfig {
            compression_type: TopicCompression::Codec(Compression::Zstd),
            ..LogConfig::default()
        };
        let p = prepare(
            batch(Compression::Gzip, 20),
            &config,
            NOW,
            AppendOrigin::Client,
        )
        .unwrap();
        assert!(p.rebuilt);
        let view = RecordBatch::new(p.bytes.freeze()).unwrap();
        view.validate_crc().unwrap();
        assert_eq!(view.compression(), Compression::Zstd);
        assert_eq!(view.producer_id(), 5);
        assert_eq!(view.base_sequence(), 10);
        let ts: Vec<i64> = view
            .records()
            .unwrap()
            .map(|r| r.unwrap().timestamp)
            .collect();
        assert_eq!(ts, (0..20).map(|i| NOW - 10 + i).collect::<Vec<_>>());
        let uncompressed = LogConfig {
            compression_type: TopicCompression::Uncompressed,
            ..LogConfig::default()
        };
        let p = prepare(
            batch(Compression::Snappy, 2),
            &uncompressed,
            NOW,
            AppendOrigin::Client,
        )
        .unwrap();
        assert_eq!(
            RecordBatch::new(p.bytes.freeze()).unwrap().compression(),
            Compression::None
        );
    }

    #[test]
    fn wrong_header_max_timestamp_is_corrected() {
        let mut b = batch(Compression::None, 2);
        let mut header = BatchHeaderView::new(&mut b[..]).unwrap();
        header.set_max_timestamp(5);
        header.update_crc();
        let p = prepare(b, &LogConfig::default(), NOW, AppendOrigin::Client).unwrap();
        let view = RecordBatch::new(p.bytes.freeze()).unwrap();
        view.validate_crc().unwrap();
        assert_eq!(view.max_timestamp(), NOW - 9);
    }
}
