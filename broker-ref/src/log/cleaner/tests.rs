//! Tests of log compaction: what survives, what the rewritten batches look like, when a pass
//! runs, and reading a compacted log.

use std::fs;

use bytes::{Bytes, BytesMut};
use odradek::records::{
    BatchBuilder, Compression, ControlRecordType, EndTxnMarker, Header, RecordBatch, TimestampType,
};

use super::super::cleaner_checkpoint::CLEANER_OFFSET_FILE;
use super::super::config::{CleanupPolicy, LogConfig};
use super::super::segment::{segment_path, LOG_EXT};
use super::super::test_util::{files, part_dir, NOW};
use super::filter::{Filter, Filtered};
use super::offset_map::OffsetMap;
use super::test_support::*;
use super::*;

fn opts() -> CleanerOptions {
    CleanerOptions::default()
}

fn active_base(log: &Log) -> i64 {
    *log.segments.keys().next_back().unwrap()
}

#[test]
fn last_value_per_key_survives_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::None, 6, 9);
    assert!(log.segment_count() > 4, "{}", log.segment_count());
    let bound = active_base(&log);
    let active_bytes = fs::read(segment_path(&part_dir(dir.path()), bound, LOG_EXT)).unwrap();

    let outcome = log.clean(NOW, &opts()).unwrap().unwrap();
    assert_eq!(outcome.first_dirty_offset, 0);
    assert_eq!(outcome.end_offset, bound);
    assert!(outcome.checkpoint_advanced);
    assert!(outcome.records_removed > 0);
    assert!(outcome.bytes_after < outcome.bytes_before);
    let expected = model(&history, bound, true);
    assert_eq!(read_log(&log).0, expected);
    assert_eq!(log.cleaner_checkpoint(), Some(bound));
    // The active segment is untouched.
    let after = fs::read(segment_path(&part_dir(dir.path()), bound, LOG_EXT)).unwrap();
    assert_eq!(after, active_bytes);
    // Nothing left to do until new segments roll.
    assert!(log.clean(NOW, &opts()).unwrap().is_none());

    // The same after a crash (no close) and after a clean close.
    drop(log);
    let mut log = open_log(dir.path(), compact_config());
    assert_eq!(read_log(&log).0, expected);
    log.close().unwrap();
    drop(log);
    let log = open_log(dir.path(), compact_config());
    assert_eq!(read_log(&log).0, expected);
    assert!(files(dir.path())
        .iter()
        .all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")));
}

#[test]
fn later_passes_clean_the_clean_section_again_and_merge_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::None, 4, 6);
    log.roll().unwrap();
    log.clean(NOW, &opts()).unwrap().unwrap();
    let mut merged = false;
    for _ in 0..3 {
        fill(&mut log, &mut history, Compression::None, 3, 6);
        log.roll().unwrap();
        let outcome = log.clean(NOW, &opts()).unwrap().unwrap();
        assert!(outcome.checkpoint_advanced);
        merged |= outcome.segments_replaced > outcome.segments_written;
        let bound = active_base(&log);
        assert_eq!(read_log(&log).0, model(&history, bound, true));
    }
    // Small cleaned segments were merged into fewer, each within segment.bytes.
    assert!(merged);
    for segment in log.segments.values() {
        assert!(segment.size() <= 700, "{}", segment.size());
    }
    let (records, position) = read_log(&log);
    assert_eq!(records.len(), 6);
    // The empty batch kept at the end of the cleaned range lets a reader reach the log end.
    assert_eq!(position, log.log_end_offset());
}

#[test]
fn offsets_are_kept_and_batches_keep_their_offset_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    let mut ranges = Vec::new();
    for i in 0..30 {
        let a = format!("a{}", i % 4);
        let b = format!("b{}", i % 3);
        let c = format!("unique{i}");
        let info = put(
            &mut log,
            &mut history,
            Compression::None,
            NOW + i,
            &[
                (Some(&a), Some("x")),
                (Some(&b), Some("y")),
                (Some(&c), Some("z")),
            ],
        );
        ranges.push((info.base_offset, info.last_offset));
    }
    log.roll().unwrap();
    log.clean(NOW + 100, &opts()).unwrap().unwrap();
    let mut gaps = 0;
    for batch in stored_batches(&log) {
        assert!(
            ranges.contains(&(batch.base_offset(), batch.last_offset())),
            "batch {}..={} is not an original batch",
            batch.base_offset(),
            batch.last_offset()
        );
        if i64::from(batch.record_count()) < batch.last_offset() - batch.base_offset() + 1 {
            gaps += 1;
        }
    }
    assert!(gaps > 0);
    let records = read_log(&log).0;
    for r in &records {
        let original = history.iter().find(|h| h.offset == r.offset).unwrap();
        assert_eq!(r, original);
    }
    assert_eq!(records, model(&history, active_base(&log), true));
}

#[test]
fn tombstones_are_kept_until_the_delete_horizon() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    put(
        &mut log,
        &mut history,
        Compression::Zstd,
        NOW,
        &[(Some("a"), Some("1")), (Some("b"), Some("1"))],
    );
    put(
        &mut log,
        &mut history,
        Compression::Zstd,
        NOW + 1,
        &[(Some("a"), None), (Some("c"), Some("1"))],
    );
    log.roll().unwrap();
    log.clean(NOW + 10, &opts()).unwrap().unwrap();
    let records = read_log(&log).0;
    assert_eq!(records, model(&history, 4, true));
    assert!(records
        .iter()
        .any(|r| r.key.as_deref() == Some("a") && r.value.is_none()));
    let horizon_batch = stored_batches(&log)
        .into_iter()
        .find(|b| b.base_offset() == 2)
        .unwrap();
    assert!(horizon_batch.attributes().has_delete_horizon());
    assert_eq!(horizon_batch.base_timestamp(), NOW + 10 + 10_000);
    assert_eq!(horizon_batch.compression(), Compression::Zstd);

    // A later pass before the horizon keeps the tombstone and its horizon.
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 20,
        &[(Some("d"), Some("1"))],
    );
    log.roll().unwrap();
    log.clean(NOW + 5_000, &opts()).unwrap().unwrap();
    let batches = stored_batches(&log);
    let kept = batches.iter().find(|b| b.base_offset() == 2).unwrap();
    assert_eq!(kept.base_timestamp(), NOW + 10 + 10_000);
    assert!(read_log(&log)
        .0
        .iter()
        .any(|r| r.key.as_deref() == Some("a")));

    // At the horizon the tombstone goes; nothing else does.
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 30,
        &[(Some("e"), Some("1"))],
    );
    log.roll().unwrap();
    log.clean(NOW + 10 + 10_000, &opts()).unwrap().unwrap();
    let records = read_log(&log).0;
    assert_eq!(records, model(&history, active_base(&log), false));
    assert!(records.iter().all(|r| r.key.as_deref() != Some("a")));
    assert_eq!(records.len(), 4); // b, c, d, e
}

#[test]
fn tombstone_timestamps_and_headers_survive_the_horizon_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let headers = [
        Header::new(&b"trace"[..], Some(&b"t-1"[..])),
        Header::new(&b"n"[..], None::<Bytes>),
    ];
    let mut b = BatchBuilder::new(Compression::Gzip).producer(42, 3, 10);
    b.append(NOW - 5_000, Some(b"k1"), None, &headers).unwrap();
    b.append(NOW - 7_000, Some(b"k2"), Some(b"v2"), &headers)
        .unwrap();
    b.append(NOW - 6_000, Some(b"k1"), None, &[]).unwrap();
    log.append(BytesMut::from(&b.build().unwrap()[..]), 5, NOW)
        .unwrap();
    log.roll().unwrap();
    log.clean(NOW, &opts()).unwrap().unwrap();
    let batches = stored_batches(&log);
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    batch.validate_crc().unwrap();
    assert!(batch.attributes().has_delete_horizon());
    assert_eq!((batch.base_offset(), batch.last_offset()), (0, 2));
    assert_eq!(batch.record_count(), 2);
    assert_eq!(
        (
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence()
        ),
        (42, 3, 10)
    );
    assert_eq!(batch.last_sequence(), 12);
    assert_eq!(batch.partition_leader_epoch(), 5);
    assert_eq!(batch.compression(), Compression::Gzip);
    assert_eq!(batch.max_timestamp(), NOW - 6_000);
    let records: Vec<_> = batch.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(records[0].offset, 1);
    assert_eq!(records[0].timestamp, NOW - 7_000);
    assert_eq!(records[0].headers, headers);
    assert_eq!(records[1].offset, 2);
    assert_eq!(records[1].timestamp, NOW - 6_000);
    assert_eq!(records[1].value, None);
}

#[test]
fn rewritten_batches_keep_producer_fields_flags_and_timestamps_in_every_codec() {
    for codec in Compression::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open_log(dir.path(), compact_config());
        let headers = [Header::new(&b"h"[..], Some(&b"1"[..]))];
        let mut b = BatchBuilder::new(codec)
            .producer(7, 2, 100)
            .transactional(true);
        b.append(NOW - 3, Some(b"a"), Some(b"a0"), &headers)
            .unwrap();
        b.append(NOW - 9, Some(b"b"), Some(b"b0"), &headers)
            .unwrap();
        b.append(NOW - 1, Some(b"c"), Some(b"c0"), &[]).unwrap();
        b.append(NOW - 2, Some(b"d"), Some(b"d0"), &[]).unwrap();
        log.append(BytesMut::from(&b.build().unwrap()[..]), 3, NOW)
            .unwrap();
        let mut history = Vec::new();
        put(
            &mut log,
            &mut history,
            codec,
            NOW,
            &[(Some("a"), Some("a1")), (Some("d"), Some("d1"))],
        );
        log.roll().unwrap();
        log.clean(NOW, &opts()).unwrap().unwrap();
        let batches = stored_batches(&log);
        let first = &batches[0];
        first.validate_crc().unwrap();
        assert_eq!(first.compression(), codec, "{codec:?}");
        assert_eq!((first.base_offset(), first.last_offset()), (0, 3));
        assert_eq!(
            (
                first.producer_id(),
                first.producer_epoch(),
                first.base_sequence()
            ),
            (7, 2, 100)
        );
        assert!(first.is_transactional());
        assert!(!first.attributes().has_delete_horizon());
        assert_eq!(first.partition_leader_epoch(), 3);
        assert_eq!(first.max_timestamp(), NOW - 1);
        let recs: Vec<_> = first.records().unwrap().map(Result::unwrap).collect();
        let got: Vec<(i64, i64, &[u8])> = recs
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.as_deref().unwrap()))
            .collect();
        assert_eq!(got, [(1, NOW - 9, &b"b0"[..]), (2, NOW - 1, &b"c0"[..])]);
        assert_eq!(recs[0].headers, headers);
        // The second batch is kept byte for byte.
        assert_eq!(
            (batches[1].base_offset(), batches[1].record_count()),
            (4, 2)
        );
    }
}

#[test]
fn log_append_time_batches_keep_their_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config.clone());
    let mut history = Vec::new();
    put(
        &mut log,
        &mut history,
        Compression::Lz4,
        NOW,
        &[(Some("a"), Some("1")), (Some("b"), Some("1"))],
    );
    put(
        &mut log,
        &mut history,
        Compression::Lz4,
        NOW + 1,
        &[(Some("a"), Some("2"))],
    );
    log.roll().unwrap();
    log.clean(NOW + 2, &opts()).unwrap().unwrap();
    let batches = stored_batches(&log);
    assert_eq!(
        batches[0].attributes().timestamp_type(),
        TimestampType::LogAppendTime
    );
    assert_eq!(batches[0].max_timestamp(), NOW);
    let recs: Vec<_> = batches[0].records().unwrap().map(Result::unwrap).collect();
    assert_eq!((recs.len(), recs[0].offset, recs[0].timestamp), (1, 1, NOW));
}

#[test]
fn min_compaction_lag_holds_back_recent_segments() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_compaction_lag_ms: 60_000,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config);
    let mut history = Vec::new();
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("a"), Some("1")), (Some("a"), Some("2"))],
    );
    log.roll().unwrap();
    let recent = log.log_end_offset();
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 50_000,
        &[
            (Some("a"), Some("3")),
            (Some("b"), Some("1")),
            (Some("b"), Some("2")),
        ],
    );
    log.roll().unwrap();
    // Too early for even the first segment.
    assert!(log.clean(NOW + 30_000, &opts()).unwrap().is_none());
    assert_eq!(
        log.cleanable_state(NOW + 30_000)
            .unwrap()
            .first_uncleanable_offset,
        0
    );
    // The first segment is old enough, the second is not.
    let state = log.cleanable_state(NOW + 70_000).unwrap();
    assert_eq!(state.first_uncleanable_offset, recent);
    let outcome = log.clean(NOW + 70_000, &opts()).unwrap().unwrap();
    assert_eq!(outcome.end_offset, recent);
    assert_eq!(read_log(&log).0, model(&history, recent, true));
    // Later both are.
    log.clean(NOW + 200_000, &opts()).unwrap().unwrap();
    assert_eq!(read_log(&log).0, model(&history, active_base(&log), true));
}

#[test]
fn dirty_ratio_threshold_decides() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_cleanable_dirty_ratio: 0.5,
        segment_bytes: 100_000,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config);
    let mut history = Vec::new();
    for i in 0..20 {
        let v = format!("v{i}");
        put(
            &mut log,
            &mut history,
            Compression::None,
            NOW,
            &[(Some(&format!("k{i}")), Some(&v))],
        );
    }
    log.roll().unwrap();
    assert!(log.cleanable_state(NOW).unwrap().needs_cleaning);
    log.clean(NOW, &opts()).unwrap().unwrap();
    // A little dirty data: ratio well below 0.5.
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("k1"), Some("new"))],
    );
    log.roll().unwrap();
    let state = log.cleanable_state(NOW).unwrap();
    assert!(
        state.dirty_ratio > 0.0 && state.dirty_ratio < 0.5,
        "{}",
        state.dirty_ratio
    );
    assert!(!state.needs_cleaning);
    assert!(log.clean(NOW, &opts()).unwrap().is_none());
    // More dirty data than clean: cleaned.
    for i in 0..30 {
        put(
            &mut log,
            &mut history,
            Compression::None,
            NOW,
            &[(Some(&format!("k{}", i % 20)), Some("newer"))],
        );
    }
    log.roll().unwrap();
    let state = log.cleanable_state(NOW).unwrap();
    assert!(state.dirty_ratio > 0.5, "{}", state.dirty_ratio);
    log.clean(NOW, &opts()).unwrap().unwrap();
    assert_eq!(read_log(&log).0, model(&history, active_base(&log), true));
}

#[test]
fn max_compaction_lag_forces_a_pass_below_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_cleanable_dirty_ratio: 0.99,
        max_compaction_lag_ms: 10_000,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config);
    let mut history = Vec::new();
    for i in 0..10 {
        put(
            &mut log,
            &mut history,
            Compression::None,
            NOW,
            &[(Some(&format!("k{i}")), Some("1"))],
        );
    }
    log.roll().unwrap();
    log.clean(NOW, &opts()).unwrap().unwrap();
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 1_000,
        &[(Some("k1"), Some("2"))],
    );
    log.roll().unwrap();
    assert!(log.clean(NOW + 5_000, &opts()).unwrap().is_none());
    let outcome = log.clean(NOW + 12_000, &opts()).unwrap().unwrap();
    assert_eq!(outcome.records_removed, 1);
    assert_eq!(read_log(&log).0, model(&history, active_base(&log), true));
}

#[test]
fn the_active_segment_is_never_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config);
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::None, 5, 3);
    assert_eq!(log.segment_count(), 1);
    assert!(!log.cleanable_state(NOW).unwrap().needs_cleaning);
    assert!(log.clean(NOW, &opts()).unwrap().is_none());
    assert_eq!(read_log(&log).0, history);
}

#[test]
fn reading_from_zero_returns_the_latest_value_per_key_in_offset_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::Snappy, 8, 11);
    log.roll().unwrap();
    log.clean(NOW, &opts()).unwrap().unwrap();
    let (records, position) = read_log(&log);
    let mut latest = std::collections::BTreeMap::new();
    for e in &history {
        latest.insert(e.key.clone(), e.clone());
    }
    let mut expected: Vec<Entry> = latest.into_values().collect();
    expected.sort_by_key(|e| e.offset);
    assert_eq!(records, expected);
    assert_eq!(position, log.log_end_offset());
    // A single large read from 0 returns whole batches starting at the first kept one.
    let info = log.read(0, 1 << 20, log.log_end_offset(), true).unwrap();
    assert_eq!(
        info.first_batch_offset,
        stored_batches(&log).first().map(RecordBatch::base_offset)
    );
}

#[test]
fn keyless_records_of_a_former_delete_topic_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(
        dir.path(),
        LogConfig {
            cleanup_policy: CleanupPolicy::default(),
            ..compact_config()
        },
    );
    let mut history = Vec::new();
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(None, Some("x")), (Some("k"), Some("1")), (None, Some("y"))],
    );
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("k"), Some("2")), (Some("j"), Some("1"))],
    );
    log.roll().unwrap();
    assert!(
        log.clean(NOW, &opts()).unwrap().is_none(),
        "delete topics are not cleaned"
    );
    log.set_config(compact_config());
    let outcome = log.clean(NOW, &opts()).unwrap().unwrap();
    assert_eq!(outcome.records_removed, 3);
    let records = read_log(&log).0;
    assert_eq!(records, model(&history, active_base(&log), true));
    assert!(records.iter().all(|r| r.key.is_some()));
}

#[test]
fn control_batches_are_kept_unchanged() {
    let marker = EndTxnMarker {
        kind: ControlRecordType::Commit,
        coordinator_epoch: 1,
    };
    let mut b = BatchBuilder::new(Compression::None)
        .control(true)
        .transactional(true)
        .producer(9, 0, -1);
    b.append(
        NOW,
        Some(&ControlRecordType::Commit.encode_key()),
        Some(&marker.encode_value()),
        &[],
    )
    .unwrap();
    let batch = RecordBatch::new(b.build().unwrap()).unwrap();
    let map = OffsetMap::default();
    let config = compact_config();
    let aborted = super::aborted::AbortedRanges::default();
    let filter = Filter {
        map: &map,
        latest_offset: 100,
        upper_bound: 100,
        now_ms: NOW,
        config: &config,
        aborted: &aborted,
    };
    assert!(matches!(
        filter.batch(&batch).unwrap().filtered,
        Filtered::Unchanged
    ));
}

#[test]
fn a_small_dedupe_buffer_cleans_in_several_passes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::None, 5, 8);
    log.roll().unwrap();
    let tiny = CleanerOptions {
        dedupe_buffer_bytes: 1,
    };
    let mut passes = 0;
    let mut last_end = 0;
    while let Some(outcome) = log.clean(NOW, &tiny).unwrap() {
        assert!(outcome.end_offset > last_end);
        last_end = outcome.end_offset;
        passes += 1;
        assert!(passes < 200);
    }
    assert!(passes > 3, "{passes}");
    assert_eq!(last_end, active_base(&log));
    // Each pass deduplicated the whole log against a map of one batch; records superseded
    // later were removed by the pass whose map held the later one.
    assert_eq!(read_log(&log).0, model(&history, active_base(&log), true));
}

#[test]
fn compact_delete_topics_also_get_retention() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: true,
            compact: true,
        },
        retention_ms: 10_000,
        ..compact_config()
    };
    let mut log = open_log(dir.path(), config);
    let mut history = Vec::new();
    // Batches of ~400 bytes: one per segment, and no two segments fit one cleaned group.
    let pad = "p".repeat(300);
    let p = Some(pad.as_str());
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("k0"), p), (Some("k9"), p)],
    );
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 1_000,
        &[(Some("k1"), p)],
    );
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 100_000,
        &[(Some("k2"), p)],
    );
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW + 101_000,
        &[(Some("k0"), p)],
    );
    log.roll().unwrap();
    assert_eq!(log.segment_count(), 5);
    let outcome = log.clean(NOW + 101_000, &opts()).unwrap().unwrap();
    assert_eq!(outcome.records_removed, 1); // the first k0
    assert_eq!(read_log(&log).0, model(&history, active_base(&log), true));
    let out = log.enforce_retention(NOW + 105_000).unwrap();
    assert_eq!(out.deleted_by_time, 2);
    let (records, _) = read_log(&log);
    let keys: Vec<_> = records.iter().map(|r| r.key.clone().unwrap()).collect();
    assert_eq!(keys, ["k2", "k0"]);
}

#[test]
fn cleaner_checkpoint_is_written_and_follows_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::None, 4, 5);
    log.roll().unwrap();
    let end = log.clean(NOW, &opts()).unwrap().unwrap().end_offset;
    let text = fs::read_to_string(part_dir(dir.path()).join(CLEANER_OFFSET_FILE)).unwrap();
    assert_eq!(text, format!("0\n1\n{end}\n"));
    log.truncate_to(end - 3).unwrap();
    assert!(log.cleaner_checkpoint().unwrap() <= end - 3);
    // A checkpoint beyond the log end is ignored: the whole log counts as dirty again.
    super::super::cleaner_checkpoint::write(&part_dir(dir.path()), 1_000_000).unwrap();
    assert_eq!(log.cleanable_state(NOW).unwrap().first_dirty_offset, 0);
}
