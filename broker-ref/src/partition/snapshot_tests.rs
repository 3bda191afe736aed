//! Producer state across restarts with snapshots: deleted segments, crashes, damaged files.

use bytes::Bytes;
use odradek::records::{BatchBuilder, Compression};
use odradek::ErrorCode;

use super::snapshot;
use super::Partition;
use crate::log::LogConfig;

const NOW: i64 = 1_700_000_000_000;

fn idempotent(pid: i64, seq: i32, records: usize) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None).producer(pid, 0, seq);
    for i in 0..records {
        b.append(NOW, Some(b"k"), Some(format!("v{seq}-{i}").as_bytes()), &[])
            .unwrap();
    }
    b.build().unwrap()
}

fn plain(records: usize) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None);
    for _ in 0..records {
        b.append(NOW, Some(b"k"), Some(&[b'x'; 100]), &[]).unwrap();
    }
    b.build().unwrap()
}

fn small() -> LogConfig {
    LogConfig {
        segment_bytes: 1_000,
        ..LogConfig::default()
    }
}

fn open(dir: &std::path::Path) -> Partition {
    Partition::open(dir, "t", 0, small()).unwrap()
}

/// Producer 7 writes batches 0..=2 (3 records each), then others fill several segments.
fn fill(p: &Partition) -> Vec<i64> {
    let bases = (0..3)
        .map(|i| {
            p.append_record_set(idempotent(7, i * 3, 3), NOW)
                .unwrap()
                .base_offset
        })
        .collect();
    for _ in 0..20 {
        p.append_record_set(plain(3), NOW).unwrap();
    }
    bases
}

/// A retry of producer 7's last batch is a duplicate answered with its original offset; a
/// sequence gap is refused; nothing is written.
fn assert_producer_known(p: &Partition, last_base: i64) {
    let end = p.high_watermark();
    let again = p.append_record_set(idempotent(7, 6, 3), NOW).unwrap();
    assert_eq!(again.base_offset, last_base, "duplicate acknowledged");
    assert_eq!(p.high_watermark(), end, "not written twice");
    let gap = p.append_record_set(idempotent(7, 20, 1), NOW).unwrap_err();
    assert_eq!(gap.code(), ErrorCode::OutOfOrderSequenceNumber);
}

#[test]
fn duplicates_are_detected_after_the_producers_segments_were_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    let bases = fill(&p);
    let part = dir.path().join("t-0");
    assert!(!snapshot::list(&part).unwrap().is_empty(), "rolls snapshot");
    // Every segment holding producer 7's batches goes.
    let start = p.delete_records_before(-1).unwrap();
    assert!(start > bases[2]);
    assert!(snapshot::list(&part).unwrap().iter().all(|&o| o >= start));
    p.close().unwrap();
    drop(p);
    let p = open(dir.path());
    assert_eq!(p.log_start_offset(), start);
    assert_producer_known(&p, bases[2]);
}

#[test]
fn a_crash_after_deleting_segments_keeps_the_state_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    let bases = fill(&p);
    p.delete_records_before(-1).unwrap();
    // No close: the next open recovers the log without a clean-shutdown marker.
    drop(p);
    let p = open(dir.path());
    assert_producer_known(&p, bases[2]);
}

#[test]
fn a_damaged_snapshot_falls_back_to_replaying_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    let bases = fill(&p);
    p.close().unwrap();
    let end = p.high_watermark();
    drop(p);
    let part = dir.path().join("t-0");
    // Every snapshot damaged: the newest truncated, the others with a flipped byte.
    for offset in snapshot::list(&part).unwrap() {
        let path = part.join(format!("{offset:020}.snapshot"));
        let mut data = std::fs::read(&path).unwrap();
        if offset == end {
            data.truncate(data.len() - 3);
        } else {
            let last = data.len() - 1;
            data[last] ^= 0x55;
        }
        std::fs::write(&path, data).unwrap();
    }
    let p = open(dir.path());
    assert!(
        snapshot::list(&part).unwrap().is_empty(),
        "bad files deleted"
    );
    assert_producer_known(&p, bases[2]);
}

#[test]
fn a_clean_restart_replays_only_the_log_after_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    let bases = fill(&p);
    p.close().unwrap();
    let end = p.high_watermark();
    drop(p);
    let part = dir.path().join("t-0");
    assert_eq!(snapshot::list(&part).unwrap().last(), Some(&end));
    let p = open(dir.path());
    assert_producer_known(&p, bases[2]);
    p.close().unwrap();
    drop(p);
    // An (empty) snapshot at the log end is believed: the log before it is not read again.
    let path = part.join(format!("{end:020}.snapshot"));
    std::fs::write(&path, snapshot::encode(&super::ProducerState::default())).unwrap();
    let p = open(dir.path());
    assert!(p.producer_summaries().unwrap().is_empty());
}
