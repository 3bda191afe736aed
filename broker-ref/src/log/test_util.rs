//! Helpers shared by the log's tests.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use odradek::records::{BatchBuilder, Compression, RecordBatches};

use super::{Log, LogConfig};

/// A fixed "now" for tests, in ms.
pub(crate) const NOW: i64 = 1_700_000_000_000;

/// One record as read back: offset, timestamp, key, value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
}

/// A batch of `values`, each with a key, all stamped `timestamp`.
pub(crate) fn batch(codec: Compression, timestamp: i64, values: &[&[u8]]) -> BytesMut {
    let mut b = BatchBuilder::new(codec);
    for v in values {
        b.append(timestamp, Some(b"key"), Some(v), &[]).unwrap();
    }
    BytesMut::from(&b.build().unwrap()[..])
}

/// A batch of `n` records with `size`-byte values and timestamps `timestamp`, `timestamp + 1`...
pub(crate) fn sized_batch(n: usize, size: usize, timestamp: i64) -> BytesMut {
    let mut b = BatchBuilder::new(Compression::None);
    for i in 0..n {
        let value = vec![b'a' + (i % 26) as u8; size];
        b.append(timestamp + i as i64, Some(b"k"), Some(&value), &[])
            .unwrap();
    }
    BytesMut::from(&b.build().unwrap()[..])
}

/// Small segments and dense indexes, so tests exercise rolling and lookups.
pub(crate) fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

/// The partition directory used by tests under `root`.
pub(crate) fn part_dir(root: &Path) -> PathBuf {
    root.join("t-0")
}

/// Opens the test partition under `root`.
pub(crate) fn open(root: &Path, config: LogConfig) -> Log {
    Log::open(&part_dir(root), "t", 0, config).unwrap()
}

/// Decodes every record of a record set.
pub(crate) fn decode(records: Bytes) -> Vec<Rec> {
    let mut out = Vec::new();
    for batch in RecordBatches::new(records) {
        let batch = batch.unwrap();
        batch.validate_crc().unwrap();
        for r in batch.records().unwrap() {
            let r = r.unwrap();
            out.push(Rec {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
            });
        }
    }
    out
}

/// Reads the whole log from its start offset, fetch by fetch, with a small `max_bytes`.
pub(crate) fn read_all(log: &Log) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let info = log.read(offset, 700, log.log_end_offset(), true).unwrap();
        let records = decode(info.records);
        let Some(last) = records.last() else {
            panic!("no progress reading at {offset}");
        };
        offset = last.offset + 1;
        out.extend(
            records
                .into_iter()
                .filter(|r| r.offset >= log.log_start_offset()),
        );
    }
    out
}

/// Names of the files in the partition directory, sorted.
pub(crate) fn files(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(part_dir(root))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Paths of the `.log` files, in offset order.
pub(crate) fn log_files(root: &Path) -> Vec<PathBuf> {
    files(root)
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .map(|n| part_dir(root).join(n))
        .collect()
}
