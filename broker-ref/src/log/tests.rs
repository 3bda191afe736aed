//! Tests of the whole log: appends, reads, rolling, recovery, retention and lookups.

use std::fs::{self, OpenOptions};
use std::io::Write;

use bytes::{Bytes, BytesMut};
use odradek::records::{
    BatchBuilder, Compression, ControlRecordType, EndTxnMarker, RecordBatch, RecordBatches,
    TimestampType,
};
use odradek::ErrorCode;

use super::checkpoint::CLEAN_SHUTDOWN_FILE;
use super::config::{CleanupPolicy, TopicCompression};
use super::test_util::*;
use super::*;

fn values(n: usize, tag: &str) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{tag}-{i}").into_bytes()).collect()
}

fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Appends `count` batches of 1..=5 records; returns every value in offset order.
fn fill(log: &mut Log, count: usize, tag: &str) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for i in 0..count {
        let vals = values(1 + i % 5, &format!("{tag}{i}"));
        let info = log
            .append(batch(Compression::None, NOW, &refs(&vals)), 0, NOW)
            .unwrap();
        assert_eq!(info.record_count as usize, vals.len());
        all.extend(vals);
    }
    all
}

fn value_list(records: &[Rec]) -> Vec<Vec<u8>> {
    records
        .iter()
        .map(|r| r.value.clone().unwrap().to_vec())
        .collect()
}

#[test]
fn appends_assign_consecutive_offsets_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    let mut expected = 0;
    for i in 0..50 {
        let vals = values(1 + i % 7, "v");
        let info = log
            .append(batch(Compression::None, NOW, &refs(&vals)), 0, NOW)
            .unwrap();
        assert_eq!(info.base_offset, expected);
        assert_eq!(info.last_offset, expected + vals.len() as i64 - 1);
        assert_eq!(info.log_append_time, -1);
        assert_eq!(info.max_timestamp, NOW);
        assert!(!info.recompressed);
        expected += vals.len() as i64;
    }
    assert_eq!(log.log_end_offset(), expected);
    let records = read_all(&log);
    assert_eq!(records.len() as i64, expected);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        assert_eq!(r.key.as_deref(), Some(&b"key"[..]));
    }
    // Stored bytes are the client's bytes with offsets and epoch stamped.
    let info = log.read(0, 1 << 20, expected, false).unwrap();
    let first = RecordBatches::new(info.records).next().unwrap().unwrap();
    assert_eq!(first.partition_leader_epoch(), 0);
    first.validate_crc().unwrap();
}

#[test]
fn segments_roll_by_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let all = fill(&mut log, 200, "s");
    assert!(log.segment_count() > 5, "{}", log.segment_count());
    for path in log_files(dir.path()) {
        assert!(
            fs::metadata(&path).unwrap().len() <= 2048,
            "{}",
            path.display()
        );
    }
    // Segment files are named by their base offset.
    let bases: Vec<i64> = log.segments.keys().copied().collect();
    for (base, path) in bases.iter().zip(log_files(dir.path())) {
        assert!(path.ends_with(format!("{base:020}.log")));
    }
    assert_eq!(value_list(&read_all(&log)), all);
    // A batch larger than segment.bytes still goes in, alone.
    let big = sized_batch(1, 5000, NOW);
    let info = log.append(big, 0, NOW).unwrap();
    assert_eq!(log.segments.keys().next_back(), Some(&info.base_offset));
}

#[test]
fn segments_roll_by_time_and_full_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1_000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    log.append(sized_batch(1, 10, NOW), 0, NOW).unwrap();
    log.append(sized_batch(1, 10, NOW), 0, NOW + 1_000).unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append(sized_batch(1, 10, NOW), 0, NOW + 1_001).unwrap();
    assert_eq!(log.segment_count(), 2);

    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_index_bytes: 24, // three offset entries, two time entries
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    for i in 0..10 {
        log.append(sized_batch(1, 10, NOW + i), 0, NOW).unwrap();
    }
    assert!(log.segment_count() >= 4, "{}", log.segment_count());
    for segment in log.segments.values() {
        let (offsets, times) = segment.index_entry_counts();
        assert!(offsets <= 3 && times <= 2);
    }
    assert_eq!(read_all(&log).len(), 10);
}

#[test]
fn index_lookups_match_a_linear_scan() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 64 * 1024,
        index_interval_bytes: 300,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let mut batches = Vec::new(); // (base, last)
    let mut seed = 7u64;
    for _ in 0..400 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = 1 + (seed >> 60) as usize;
        let size = 10 + (seed >> 50) as usize % 200;
        let info = log.append(sized_batch(n, size, NOW), 0, NOW).unwrap();
        batches.push((info.base_offset, info.last_offset));
    }
    assert!(log.segment_count() > 1);
    let leo = log.log_end_offset();
    for i in 0..leo {
        let offset = (i * 7919) % leo;
        let expected = batches
            .iter()
            .find(|(_, last)| *last >= offset)
            .map(|(base, _)| *base);
        let info = log.read(offset, 1, leo, true).unwrap();
        assert_eq!(info.first_batch_offset, expected, "offset {offset}");
        let got = RecordBatches::new(info.records).next().unwrap().unwrap();
        assert!(got.base_offset() <= offset && got.last_offset() >= offset);
    }
}

#[test]
fn reads_honour_max_bytes_min_one_batch_and_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut sizes = Vec::new();
    for _ in 0..4 {
        let b = sized_batch(4, 100, NOW); // offsets 0-3, 4-7, 8-11, 12-15
        sizes.push(b.len());
        log.append(b, 0, NOW).unwrap();
    }
    let leo = log.log_end_offset();
    // First batch alone exceeds max_bytes.
    let none = log.read(0, sizes[0] - 1, leo, false).unwrap();
    assert!(none.records.is_empty() && none.first_batch_offset.is_none());
    let one = log.read(0, sizes[0] - 1, leo, true).unwrap();
    assert_eq!(one.records.len(), sizes[0]);
    assert_eq!(one.first_batch_offset, Some(0));
    // Whole batches only: 2.5 batches of budget gives two.
    let two = log.read(0, sizes[0] * 5 / 2, leo, false).unwrap();
    assert_eq!(two.records.len(), sizes[0] * 2);
    // Starting inside a batch returns the batch containing the offset.
    let inside = log.read(6, 1 << 20, leo, false).unwrap();
    assert_eq!(inside.first_batch_offset, Some(4));
    assert_eq!(decode(inside.records).len(), 12);
    // The bound excludes a straddling batch and everything after it.
    let bounded = log.read(0, 1 << 20, 10, false).unwrap();
    assert_eq!(decode(bounded.records).last().unwrap().offset, 7);
    let bounded = log.read(0, 1 << 20, 8, false).unwrap();
    assert_eq!(decode(bounded.records).last().unwrap().offset, 7);
    assert!(log.read(8, 1 << 20, 8, true).unwrap().records.is_empty());
    assert!(log.read(9, 1 << 20, 10, true).unwrap().records.is_empty());
    // At the end: nothing; past it or before the start: OFFSET_OUT_OF_RANGE.
    assert!(log.read(leo, 100, leo, true).unwrap().records.is_empty());
    assert_eq!(
        log.read(leo + 1, 100, leo, true).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    log.delete_records_before(4).unwrap();
    assert_eq!(
        log.read(3, 100, leo, true).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
}

#[test]
fn a_read_stays_within_one_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    fill(&mut log, 100, "x");
    let second = *log.segments.keys().nth(1).unwrap();
    let info = log.read(0, 1 << 20, log.log_end_offset(), false).unwrap();
    let records = decode(info.records);
    assert_eq!(records.last().unwrap().offset, second - 1);
    let info = log
        .read(second, 1 << 20, log.log_end_offset(), false)
        .unwrap();
    assert_eq!(info.first_batch_offset, Some(second));
}

/// Appends batches without closing, as a crash would leave them; returns (LEO, file sizes).
fn crashed_log(root: &std::path::Path, batches: usize) -> Vec<i64> {
    let mut log = open(root, LogConfig::default());
    let mut ends = Vec::new();
    for i in 0..batches {
        log.append(sized_batch(3, 50 + i, NOW), 0, NOW).unwrap();
        ends.push(log.log_end_offset());
    }
    drop(log);
    ends
}

#[test]
fn recovery_truncates_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ends = crashed_log(dir.path(), 10);
    let path = log_files(dir.path()).remove(0);
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 30)
        .unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), ends[8]);
    assert_eq!(read_all(&log).len() as i64, ends[8]);
    let info = log.append(sized_batch(1, 5, NOW), 0, NOW).unwrap();
    assert_eq!(info.base_offset, ends[8]);
    assert_eq!(read_all(&log).len() as i64, ends[8] + 1);
}

#[test]
fn recovery_drops_appended_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let ends = crashed_log(dir.path(), 5);
    let path = log_files(dir.path()).remove(0);
    let len = fs::metadata(&path).unwrap().len();
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&[0xAB; 100]).unwrap();
    // A plausible header (magic 2, sane length) with a bad CRC.
    let mut fake = sized_batch(2, 10, NOW).to_vec();
    fake[40] ^= 0xFF;
    f.write_all(&fake).unwrap();
    drop(f);
    let log = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), ends[4]);
    assert_eq!(fs::metadata(&path).unwrap().len(), len);
    assert_eq!(read_all(&log).len() as i64, ends[4]);
}

#[test]
fn recovery_truncates_at_a_crc_failure() {
    let dir = tempfile::tempdir().unwrap();
    let ends = crashed_log(dir.path(), 6);
    let path = log_files(dir.path()).remove(0);
    let mut bytes = fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0x01; // inside the last batch's records
    fs::write(&path, &bytes).unwrap();
    let log = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), ends[4]);
    for r in read_all(&log) {
        assert!(r.offset < ends[4]);
    }
}

#[test]
fn recovery_of_a_corrupt_middle_segment_keeps_the_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    fill(&mut log, 60, "c");
    assert!(log.segment_count() >= 3);
    let bases: Vec<i64> = log.segments.keys().copied().collect();
    let end = log.log_end_offset();
    drop(log);
    // Pretend nothing was ever flushed: every segment is recovered.
    fs::remove_file(part_dir(dir.path()).join("recovery-point-checkpoint")).unwrap();
    let path = &log_files(dir.path())[1];
    let mut bytes = fs::read(path).unwrap();
    bytes[100] ^= 0x40;
    fs::write(path, &bytes).unwrap();
    let log = open(dir.path(), small_config());
    assert_eq!(log.segment_count(), bases.len());
    assert_eq!(log.log_end_offset(), end);
    let damaged_end = log.segments[&bases[1]].next_offset();
    assert!(damaged_end >= bases[1] && damaged_end < bases[2]);
    // Everything but the damaged segment's tail is still readable, in order.
    let offsets: Vec<i64> = read_all(&log).iter().map(|r| r.offset).collect();
    let expected: Vec<i64> = (0..damaged_end).chain(bases[2]..end).collect();
    assert_eq!(offsets, expected);
}

#[test]
fn missing_or_garbled_indexes_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let all = fill(&mut log, 100, "i");
    let counts: Vec<(usize, usize)> = log
        .segments
        .values()
        .map(|s| s.index_entry_counts())
        .collect();
    log.close().unwrap();
    drop(log);
    let root = part_dir(dir.path());
    let indexes: Vec<String> = files(dir.path())
        .into_iter()
        .filter(|n| n.ends_with(".index"))
        .collect();
    fs::remove_file(root.join(&indexes[0])).unwrap();
    fs::remove_file(root.join(indexes[1].replace(".index", ".timeindex"))).unwrap();
    fs::write(root.join(&indexes[2]), [1u8; 13]).unwrap(); // torn
    let log = open(dir.path(), small_config());
    let rebuilt: Vec<(usize, usize)> = log
        .segments
        .values()
        .map(|s| s.index_entry_counts())
        .collect();
    assert_eq!(rebuilt, counts);
    assert!(root.join(&indexes[0]).exists());
    assert_eq!(value_list(&read_all(&log)), all);
}

#[test]
fn a_plausible_but_wrong_index_never_causes_a_wrong_read() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config.clone());
    let all = fill(&mut log, 40, "w");
    log.close().unwrap();
    drop(log);
    // Keep the real last entry (so the open-time tail check passes) and put monotonic entries
    // before it that point into the middle of batches.
    let index = part_dir(dir.path()).join(format!("{:020}.index", 0));
    let real = fs::read(&index).unwrap();
    let last = &real[real.len() - 8..];
    let rel = u32::from_be_bytes(last[..4].try_into().unwrap());
    let pos = u32::from_be_bytes(last[4..].try_into().unwrap());
    assert!(rel > 3 && pos > 20);
    let mut garbage = Vec::new();
    for (r, p) in [(1u32, 7u32), (2, 13), (rel - 1, pos - 1)] {
        garbage.extend_from_slice(&r.to_be_bytes());
        garbage.extend_from_slice(&p.to_be_bytes());
    }
    garbage.extend_from_slice(last);
    fs::write(&index, &garbage).unwrap();
    let log = open(dir.path(), config);
    assert_eq!(value_list(&read_all(&log)), all);
    for offset in 0..log.log_end_offset() {
        let info = log.read(offset, 1, log.log_end_offset(), true).unwrap();
        let b = RecordBatches::new(info.records).next().unwrap().unwrap();
        assert!(b.base_offset() <= offset && offset <= b.last_offset());
    }
}

#[test]
fn a_time_index_disagreeing_with_the_offset_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config.clone());
    for i in 0..30 {
        log.append(sized_batch(2, 40, NOW + i * 10), 0, NOW)
            .unwrap();
    }
    let answers: Vec<_> = (0..320)
        .map(|t| log.fetch_offset_by_timestamp(NOW + t))
        .collect();
    log.close().unwrap();
    drop(log);
    // Monotonic, plausible, but naming batches the offset index has no entry for.
    let mut garbage = Vec::new();
    for (ts, rel) in [(NOW + 290, 1u32), (NOW + 300, 3)] {
        garbage.extend_from_slice(&ts.to_be_bytes());
        garbage.extend_from_slice(&rel.to_be_bytes());
    }
    let path = part_dir(dir.path()).join(format!("{:020}.timeindex", 0));
    fs::write(&path, &garbage).unwrap();
    let log = open(dir.path(), config);
    let again: Vec<_> = (0..320)
        .map(|t| log.fetch_offset_by_timestamp(NOW + t))
        .collect();
    assert_eq!(again, answers);
    assert_ne!(fs::read(&path).unwrap(), garbage);
}

#[test]
fn clean_close_skips_recovery_and_later_changes_remove_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let mut all = fill(&mut log, 30, "a");
    log.close().unwrap();
    assert!(part_dir(dir.path()).join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(log.recovery_point(), log.log_end_offset());
    // Still usable after close; the first change removes the marker.
    all.extend(fill(&mut log, 1, "b"));
    assert!(!part_dir(dir.path()).join(CLEAN_SHUTDOWN_FILE).exists());
    log.close().unwrap();
    drop(log);
    let rp_inode = |root: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(part_dir(root).join("recovery-point-checkpoint"))
            .unwrap()
            .ino()
    };
    let inode_before = rp_inode(dir.path());
    let mut log = open(dir.path(), small_config());
    // A clean open changes nothing: no checkpoint is rewritten and the marker stays until the
    // first change.
    assert!(part_dir(dir.path()).join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(rp_inode(dir.path()), inode_before);
    assert_eq!(value_list(&read_all(&log)), all);
    all.extend(fill(&mut log, 3, "c"));
    assert!(!part_dir(dir.path()).join(CLEAN_SHUTDOWN_FILE).exists());
    drop(log);
    let log = open(dir.path(), small_config());
    assert_eq!(value_list(&read_all(&log)), all);
}

#[test]
fn leftover_files_are_cleaned_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    fill(&mut log, 3, "l");
    drop(log);
    let root = part_dir(dir.path());
    fs::write(root.join("recovery-point-checkpoint.tmp"), "junk").unwrap();
    fs::write(root.join(format!("{:020}.index", 500)), [0u8; 8]).unwrap();
    fs::write(root.join(format!("{:020}.log.deleted", 0)), "old").unwrap();
    let _log = open(dir.path(), LogConfig::default());
    let names = files(dir.path());
    assert!(names
        .iter()
        .all(|n| !n.ends_with(".tmp") && !n.ends_with(".deleted")));
    assert!(!names.contains(&format!("{:020}.index", 500)));
}

#[test]
fn retention_by_time_deletes_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_ms: 10_000,
        ..small_config()
    };
    let mut log = open(dir.path(), config);
    for i in 0..40 {
        log.append(sized_batch(2, 100, NOW + i * 1_000), 0, NOW + i * 1_000)
            .unwrap();
    }
    let before = log.segment_count();
    assert!(before > 4);
    let out = log.enforce_retention(NOW + 40_000).unwrap();
    assert!(out.deleted_by_time > 0 && out.deleted_by_time < before);
    assert_eq!(out.log_start_offset, log.log_start_offset());
    assert_eq!(log.log_start_offset(), *log.segments.keys().next().unwrap());
    // What remains is every segment whose newest record is within the last 10 s.
    let first = log.segments.values().next().unwrap();
    assert!(NOW + 40_000 - first.max_timestamp() <= 10_000);
    assert_eq!(
        log.read(0, 100, log.log_end_offset(), true)
            .unwrap_err()
            .code(),
        ErrorCode::OffsetOutOfRange
    );
    // Everything expired, the active segment included: the log rolls and keeps an empty one.
    let leo = log.log_end_offset();
    let out = log.enforce_retention(NOW + 1_000_000).unwrap();
    assert!(out.deleted_segments() > 0);
    assert_eq!(log.segment_count(), 1);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (leo, leo));
    assert_eq!(log.size_bytes(), 0);
    drop(log);
    let log = open(dir.path(), small_config());
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (leo, leo));
}

#[test]
fn retention_by_size_keeps_at_most_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 5_000,
        ..small_config()
    };
    let mut log = open(dir.path(), config);
    fill(&mut log, 120, "r");
    let total = log.size_bytes();
    let out = log.enforce_retention(NOW).unwrap();
    assert!(out.deleted_by_size > 0);
    assert_eq!(total - out.deleted_bytes, log.size_bytes());
    assert!(log.size_bytes() >= 5_000);
    let first = log.segments.values().next().unwrap().size();
    assert!(log.size_bytes() - first < 5_000);
    // Compact-only topics keep everything.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 100,
        retention_ms: 1,
        cleanup_policy: CleanupPolicy {
            compact: true,
            delete: false,
        },
        ..small_config()
    };
    let mut log = open(dir.path(), config);
    fill(&mut log, 50, "k");
    let n = log.segment_count();
    assert_eq!(
        log.enforce_retention(NOW + 10_000_000)
            .unwrap()
            .deleted_segments(),
        0
    );
    assert_eq!(log.segment_count(), n);
}

#[test]
fn delete_records_raises_the_start_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    fill(&mut log, 100, "d");
    let leo = log.log_end_offset();
    let third = *log.segments.keys().nth(2).unwrap();
    let target = third + 1;
    let segments = log.segment_count();
    assert_eq!(log.delete_records_before(target).unwrap(), target);
    assert_eq!(log.log_start_offset(), target);
    assert_eq!(log.segment_count(), segments - 2);
    // Lower targets change nothing; beyond the end is out of range.
    assert_eq!(log.delete_records_before(5).unwrap(), target);
    assert_eq!(
        log.delete_records_before(leo + 1).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    let records = read_all(&log);
    assert_eq!(records.first().unwrap().offset, target);
    let info = log.read(target, 10, leo, true).unwrap();
    assert!(info.first_batch_offset.unwrap() <= target);
    drop(log);
    let mut log = open(dir.path(), small_config());
    assert_eq!(log.log_start_offset(), target);
    assert_eq!(log.delete_records_before(leo).unwrap(), leo);
    assert!(read_all(&log).is_empty());
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn offsets_by_timestamp_return_the_first_matching_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    let mut all: Vec<(i64, i64)> = Vec::new(); // (offset, timestamp)
    let mut seed = 1u64;
    for _ in 0..150 {
        let mut b = BatchBuilder::new(Compression::None);
        let n = 1 + (seed % 4) as usize;
        let mut stamps = Vec::new();
        for _ in 0..n {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let ts = NOW + (seed >> 40) as i64 % 10_000;
            stamps.push(ts);
            b.append(ts, None, Some(b"x"), &[]).unwrap();
        }
        let info = log
            .append(BytesMut::from(&b.build().unwrap()[..]), 0, NOW)
            .unwrap();
        for (i, ts) in stamps.into_iter().enumerate() {
            all.push((info.base_offset + i as i64, ts));
        }
    }
    for target in (NOW - 10..NOW + 10_010).step_by(97) {
        let expected = all.iter().find(|(_, ts)| *ts >= target).copied();
        assert_eq!(log.fetch_offset_by_timestamp(target), expected, "{target}");
    }
    let max = all.iter().map(|(_, ts)| *ts).max().unwrap();
    let expected = all.iter().find(|(_, ts)| *ts == max).copied();
    assert_eq!(log.max_timestamp_offset(), expected);
    // Records below the log start offset no longer count.
    let cut = expected.unwrap().0 + 1;
    log.delete_records_before(cut).unwrap();
    let rest: Vec<_> = all.iter().filter(|(o, _)| *o >= cut).collect();
    let max = rest.iter().map(|(_, ts)| *ts).max().unwrap();
    let expected = rest.iter().find(|(_, ts)| *ts == max).map(|p| **p);
    assert_eq!(log.try_max_timestamp_offset().unwrap(), expected);
    assert_eq!(
        log.fetch_offset_by_timestamp(NOW - 10).map(|p| p.0),
        Some(cut)
    );
    assert_eq!(log.fetch_offset_by_timestamp(NOW + 20_000), None);
}

#[test]
fn log_append_time_stamps_the_broker_clock() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let info = log
        .append(batch(Compression::Lz4, 5, &[b"a", b"b"]), 0, NOW)
        .unwrap();
    assert_eq!(info.log_append_time, NOW);
    assert_eq!(info.max_timestamp, NOW);
    let records = read_all(&log);
    assert!(records.iter().all(|r| r.timestamp == NOW));
    let stored = log.read(0, 1 << 20, 2, false).unwrap().records;
    let b = RecordBatch::new(stored).unwrap();
    assert_eq!(
        b.attributes().timestamp_type(),
        TimestampType::LogAppendTime
    );
    assert_eq!(log.fetch_offset_by_timestamp(NOW), Some((0, NOW)));
    assert_eq!(log.max_timestamp_offset(), Some((0, NOW)));
}

#[test]
fn batches_are_recompressed_to_the_topic_codec() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        compression_type: TopicCompression::Codec(Compression::Zstd),
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let vals = values(20, "z");
    let info = log
        .append(batch(Compression::Gzip, NOW, &refs(&vals)), 0, NOW)
        .unwrap();
    assert!(info.recompressed);
    let same = log
        .append(batch(Compression::Zstd, NOW, &refs(&vals)), 0, NOW)
        .unwrap();
    assert!(!same.recompressed);
    let stored = log.read(0, 1 << 20, log.log_end_offset(), false).unwrap();
    for b in RecordBatches::new(stored.records) {
        assert_eq!(b.unwrap().compression(), Compression::Zstd);
    }
    let mut expected = vals.clone();
    expected.extend(vals);
    assert_eq!(value_list(&read_all(&log)), expected);
}

#[test]
fn out_of_order_inner_offsets_are_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut b = BatchBuilder::new(Compression::None);
    b.append(NOW, None, Some(b"a"), &[]).unwrap();
    b.append(NOW, None, Some(b"b"), &[]).unwrap();
    let mut raw = b.build().unwrap().to_vec();
    // Record layout: length, attributes, timestampDelta, offsetDelta (zigzag varints).
    let first_len = (raw[61] >> 1) as usize;
    let second = 61 + 1 + first_len;
    assert_eq!(raw[second + 3], 2); // offsetDelta 1
    raw[second + 3] = 0; // offsetDelta 0: a duplicate inner offset
    let crc = crc32c::crc32c(&raw[21..]);
    raw[17..21].copy_from_slice(&crc.to_be_bytes());
    let info = log.append(BytesMut::from(&raw[..]), 0, NOW).unwrap();
    assert!(info.recompressed);
    let offsets: Vec<i64> = read_all(&log).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![0, 1]);
}

#[test]
fn invalid_batches_are_refused_with_kafka_codes() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        max_message_bytes: 500,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let code = |log: &mut Log, b: BytesMut| log.append(b, 0, NOW).unwrap_err().code();
    assert_eq!(
        code(&mut log, sized_batch(1, 600, NOW)),
        ErrorCode::MessageTooLarge
    );
    let mut bad_crc = sized_batch(2, 10, NOW);
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 1;
    assert_eq!(code(&mut log, bad_crc), ErrorCode::CorruptMessage);
    let mut legacy = sized_batch(1, 10, NOW);
    legacy[16] = 1;
    assert_eq!(
        code(&mut log, legacy),
        ErrorCode::UnsupportedForMessageFormat
    );
    let marker = EndTxnMarker {
        kind: ControlRecordType::Abort,
        coordinator_epoch: 0,
    };
    let mut control = BatchBuilder::new(Compression::None)
        .control(true)
        .transactional(true)
        .producer(1, 0, 0);
    control
        .append(
            NOW,
            Some(&ControlRecordType::Abort.encode_key()),
            Some(&marker.encode_value()),
            &[],
        )
        .unwrap();
    let control = BytesMut::from(&control.build().unwrap()[..]);
    assert_eq!(code(&mut log, control), ErrorCode::InvalidRecord);
    assert_eq!(log.log_end_offset(), 0);

    let mut compacted = LogConfig::default();
    compacted.cleanup_policy.compact = true;
    log.set_config(compacted);
    let mut keyless = BatchBuilder::new(Compression::None);
    keyless.append(NOW, None, Some(b"v"), &[]).unwrap();
    let keyless = BytesMut::from(&keyless.build().unwrap()[..]);
    assert_eq!(code(&mut log, keyless), ErrorCode::InvalidRecord);
    assert!(log
        .append(batch(Compression::None, NOW, &[b"v"]), 0, NOW)
        .is_ok());
    // Log::validate applies the same rules without appending.
    let view = RecordBatch::new(Bytes::from(sized_batch(1, 1, NOW).to_vec())).unwrap();
    assert!(log.validate(&view, NOW).is_ok());
    assert_eq!(log.log_end_offset(), 1);
}

#[test]
fn leader_epoch_cache_tracks_epoch_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let append = |log: &mut Log, epoch: i32| {
        log.append(sized_batch(2, 5, NOW), epoch, NOW)
            .unwrap()
            .base_offset
    };
    append(&mut log, 0); // 0-1
    append(&mut log, 0); // 2-3
    let e1 = append(&mut log, 1); // 4-5
    let e3 = append(&mut log, 3); // 6-7
    append(&mut log, 3); // 8-9
    assert_eq!((e1, e3), (4, 6));
    assert_eq!(log.latest_epoch(), Some(3));
    assert_eq!(log.end_offset_for_epoch(0), Some((0, 4)));
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 6)));
    assert_eq!(log.end_offset_for_epoch(2), Some((1, 6)));
    assert_eq!(log.end_offset_for_epoch(3), Some((3, 10)));
    assert_eq!(log.end_offset_for_epoch(4), None);
    assert_eq!(
        log.append(sized_batch(1, 5, NOW), 2, NOW)
            .unwrap_err()
            .code(),
        ErrorCode::FencedLeaderEpoch
    );
    // Survives a crash (checkpoint) and follows truncation.
    drop(log);
    let mut log = open(dir.path(), LogConfig::default());
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 6)));
    log.truncate_to(7).unwrap(); // inside the batch 6-7: whole batch goes
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.latest_epoch(), Some(1));
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 6)));
    // Lost checkpoint: recovery re-learns epochs from the batches.
    drop(log);
    fs::remove_file(part_dir(dir.path()).join("leader-epoch-checkpoint")).unwrap();
    fs::remove_file(part_dir(dir.path()).join("recovery-point-checkpoint")).unwrap();
    let log = open(dir.path(), LogConfig::default());
    assert_eq!(
        log.epoch_entries(),
        &[
            EpochEntry {
                epoch: 0,
                start_offset: 0
            },
            EpochEntry {
                epoch: 1,
                start_offset: 4
            }
        ]
    );
}

#[test]
fn truncate_to_removes_later_segments_and_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config());
    fill(&mut log, 100, "t");
    let bases: Vec<i64> = log.segments.keys().copied().collect();
    let target = bases[2] + 2;
    log.truncate_to(target).unwrap();
    assert!(log.log_end_offset() <= target && log.log_end_offset() > bases[2] - 1);
    assert_eq!(log.segment_count(), 3);
    assert_eq!(read_all(&log).len() as i64, log.log_end_offset());
    let leo = log.log_end_offset();
    let info = log.append(sized_batch(1, 5, NOW), 0, NOW).unwrap();
    assert_eq!(info.base_offset, leo);
    drop(log);
    let log = open(dir.path(), small_config());
    assert_eq!(log.log_end_offset(), leo + 1);
    // Below the first segment: the log restarts empty at the target.
    let mut log = log;
    log.delete_records_before(bases[1]).unwrap();
    log.truncate_to(3).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (3, 3));
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn flush_policy_moves_the_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    fill(&mut log, 3, "f");
    assert_eq!(log.recovery_point(), 0);
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), log.log_end_offset());

    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_messages: 1,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    fill(&mut log, 3, "g");
    assert_eq!(log.recovery_point(), log.log_end_offset());

    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_ms: 1_000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    log.append(sized_batch(1, 5, NOW), 0, NOW).unwrap();
    log.append(sized_batch(1, 5, NOW), 0, NOW + 10).unwrap();
    assert_eq!(log.recovery_point(), 0);
    log.append(sized_batch(1, 5, NOW), 0, NOW + 1_000).unwrap();
    assert_eq!(log.recovery_point(), 3);
    assert!(!log.flush_if_due(NOW + 5_000).unwrap());
}

#[test]
fn delete_removes_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    fill(&mut log, 3, "x");
    log.delete().unwrap();
    assert!(!part_dir(dir.path()).exists());
    assert_eq!(
        log.append(sized_batch(1, 5, NOW), 0, NOW)
            .unwrap_err()
            .code(),
        ErrorCode::KafkaStorageError
    );
    assert!(log.read(0, 10, 10, true).is_err());
}
