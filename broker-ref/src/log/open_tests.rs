//! Tests of validation done once per produced batch and of reopening after a clean shutdown.

use std::fs;

use odradek::records::{BatchBuilder, Compression, RecordBatch, TimestampType};
use odradek::ErrorCode;

use super::checkpoint::CLEAN_SHUTDOWN_FILE;
use super::config::TopicCompression;
use super::test_util::*;
use super::*;

fn values(n: usize, tag: &str) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{tag}-{i}").into_bytes()).collect()
}

fn value_list(records: &[Rec]) -> Vec<Vec<u8>> {
    records
        .iter()
        .map(|r| r.value.clone().unwrap().to_vec())
        .collect()
}

/// Appends `count` batches of 1..=5 records; returns every value in offset order.
fn fill(log: &mut Log, count: usize, tag: &str) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for i in 0..count {
        let vals = values(1 + i % 5, &format!("{tag}{i}"));
        let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
        log.append(batch(Compression::None, NOW, &refs), 0, NOW)
            .unwrap();
        all.extend(vals);
    }
    all
}

#[test]
fn validated_batches_are_checked_again_after_a_config_change() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut keyless = BatchBuilder::new(Compression::None);
    keyless.append(NOW, None, Some(b"v"), &[]).unwrap();
    let view = RecordBatch::new(keyless.build().unwrap()).unwrap();
    let valid = log.validate(&view, NOW).unwrap();
    assert_eq!(valid.info().record_count, 1);
    // Unchanged settings: appended as validated.
    let stale = log.validate(&view, NOW).unwrap();
    let info = log.append_validated(valid, 0, NOW).unwrap();
    assert_eq!((info.base_offset, info.record_count), (0, 1));
    // A compacted topic refuses keyless records: the stale validation is not trusted.
    let mut compacted = LogConfig::default();
    compacted.cleanup_policy.compact = true;
    log.set_config(compacted);
    let err = log.append_validated(stale, 0, NOW).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRecord);
    assert_eq!(log.log_end_offset(), 1);
}

#[test]
fn append_validated_stores_what_append_stores() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        compression_type: TopicCompression::Codec(Compression::Lz4),
        ..LogConfig::default()
    };
    let mut a = open(&dir.path().join("a"), config.clone());
    let mut b = open(&dir.path().join("b"), config);
    let input = batch(Compression::Gzip, NOW - 5, &[b"x", b"y", b"z"]);
    let view = RecordBatch::new(input.clone().freeze()).unwrap();
    let valid = b.validate(&view, NOW).unwrap();
    let from_append = a.append(input, 0, NOW).unwrap();
    let from_validated = b.append_validated(valid, 0, NOW).unwrap();
    assert_eq!(from_append, from_validated);
    assert!(from_validated.recompressed);
    assert_eq!(read_all(&a), read_all(&b));
}

#[test]
fn a_damaged_segment_after_a_clean_shutdown_is_recovered_and_the_marker_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let mut all = fill(&mut log, 10, "d");
    log.roll().unwrap();
    all.extend(fill(&mut log, 10, "e"));
    assert_eq!(log.segment_count(), 2);
    log.close().unwrap();
    drop(log);
    // Garbage in the first segment's offset index: the trusted open fails its checks.
    let index = part_dir(dir.path()).join(format!("{:020}.index", 0));
    fs::write(&index, [0xffu8; 24]).unwrap();
    let log = open(dir.path(), small_config());
    assert!(!part_dir(dir.path()).join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(value_list(&read_all(&log)), all);
    assert_ne!(fs::read(&index).unwrap(), vec![0xffu8; 24]);
}

#[test]
fn a_damaged_old_segment_loses_only_its_damaged_tail_and_keeps_newer_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let old = fill(&mut log, 10, "old");
    log.roll().unwrap();
    let mut newer = fill(&mut log, 10, "mid");
    log.roll().unwrap();
    newer.extend(fill(&mut log, 10, "new"));
    let end = log.log_end_offset();
    assert_eq!(log.segment_count(), 3);
    log.close().unwrap();
    drop(log);
    // Bit rot in the middle of the oldest segment, and no checkpoint to trust: every segment
    // is scanned on open.
    let part = part_dir(dir.path());
    fs::remove_file(part.join(CLEAN_SHUTDOWN_FILE)).unwrap();
    let _ = fs::remove_file(part.join(super::checkpoint::RECOVERY_POINT_FILE));
    let first = part.join(format!("{:020}.log", 0));
    let mut bytes = fs::read(&first).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&first, &bytes).unwrap();

    let log = open(dir.path(), small_config());
    assert_eq!(log.segment_count(), 3, "newer segments are kept");
    assert_eq!(log.log_end_offset(), end);
    let values = value_list(&read_all(&log));
    let kept_old = values.len() - newer.len();
    assert!(
        kept_old > 0 && kept_old < old.len(),
        "only the damaged tail of the old segment is lost: kept {kept_old} of {}",
        old.len()
    );
    assert_eq!(values[..kept_old], old[..kept_old]);
    assert_eq!(values[kept_old..], newer[..]);
    // Reading from inside the lost range continues at the next segment.
    let lost_from = log.segments.values().next().unwrap().next_offset();
    let second_base = *log.segments.keys().nth(1).unwrap();
    assert!(lost_from < second_base);
    let read = log.read(lost_from, 1 << 20, end, true).unwrap();
    assert_eq!(read.first_batch_offset, Some(second_base));
}
