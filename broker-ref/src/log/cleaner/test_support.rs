//! Helpers for the cleaner's tests: a model of the expected result and a reader that walks a
//! compacted log the way a consumer does.

use std::collections::HashMap;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use odradek::records::{BatchBuilder, Compression, RecordBatch, RecordBatches};

use super::super::config::{CleanupPolicy, LogConfig};
use super::super::test_util::NOW;
use super::super::{AppendInfo, Log};

/// One record as written or read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) offset: i64,
    pub(super) key: Option<String>,
    pub(super) value: Option<String>,
    pub(super) timestamp: i64,
}

/// A compacted topic with small segments and dense indexes.
pub(super) fn compact_config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        segment_bytes: 700,
        index_interval_bytes: 100,
        min_cleanable_dirty_ratio: 0.01,
        delete_retention_ms: 10_000,
        ..LogConfig::default()
    }
}

/// Opens the test log under `root`.
pub(super) fn open_log(root: &Path, config: LogConfig) -> Log {
    super::super::test_util::open(root, config)
}

/// Appends one batch of `records` (key, value) stamped `ts`, at broker time `ts`, and records
/// what was written in `history`.
pub(super) fn put(
    log: &mut Log,
    history: &mut Vec<Entry>,
    codec: Compression,
    ts: i64,
    records: &[(Option<&str>, Option<&str>)],
) -> AppendInfo {
    let mut b = BatchBuilder::new(codec);
    for (key, value) in records {
        b.append(ts, key.map(str::as_bytes), value.map(str::as_bytes), &[])
            .unwrap();
    }
    let epoch = log.latest_epoch().unwrap_or(0);
    let info = log
        .append(BytesMut::from(&b.build().unwrap()[..]), epoch, ts.max(NOW))
        .unwrap();
    for (i, (key, value)) in records.iter().enumerate() {
        history.push(Entry {
            offset: info.base_offset + i as i64,
            key: key.map(str::to_string),
            value: value.map(str::to_string),
            timestamp: ts,
        });
    }
    info
}

/// `rounds` rounds of updates to `keys` keys, one to three records per batch, keys interleaved.
pub(super) fn fill(
    log: &mut Log,
    history: &mut Vec<Entry>,
    codec: Compression,
    rounds: usize,
    keys: usize,
) {
    let mut n = 0usize;
    for round in 0..rounds {
        let mut k = 0;
        while k < keys {
            let per_batch = 1 + (n % 3);
            let owned: Vec<(String, String)> = (k..(k + per_batch).min(keys))
                .map(|i| {
                    (
                        format!("key-{}", (i * 7 + round) % keys),
                        format!("r{round}-n{n}-{i}"),
                    )
                })
                .collect();
            let recs: Vec<(Option<&str>, Option<&str>)> = owned
                .iter()
                .map(|(a, b)| (Some(a.as_str()), Some(b.as_str())))
                .collect();
            put(log, history, codec, NOW + n as i64, &recs);
            k += per_batch;
            n += 1;
        }
    }
}

/// What a pass that deduplicated everything below `bound` leaves: each keyed record below
/// `bound` that is the last of its key there (tombstones only if `keep_tombstones`), and every
/// record from `bound` on.
pub(super) fn model(history: &[Entry], bound: i64, keep_tombstones: bool) -> Vec<Entry> {
    let mut latest: HashMap<&str, i64> = HashMap::new();
    for e in history.iter().filter(|e| e.offset < bound) {
        if let Some(k) = &e.key {
            latest.insert(k, e.offset);
        }
    }
    history
        .iter()
        .filter(|e| {
            e.offset >= bound
                || e.key.as_deref().is_some_and(|k| {
                    latest.get(k) == Some(&e.offset) && (e.value.is_some() || keep_tombstones)
                })
        })
        .cloned()
        .collect()
}

fn text(b: Option<Bytes>) -> Option<String> {
    b.map(|b| String::from_utf8(b.to_vec()).unwrap())
}

/// Reads the log from its start offset as a consumer does (the next fetch starts after the last
/// batch returned) and returns the records and the position reached. Checks every CRC and that
/// offsets strictly increase.
pub(super) fn read_log(log: &Log) -> (Vec<Entry>, i64) {
    let mut out: Vec<Entry> = Vec::new();
    let mut position = log.log_start_offset();
    while position < log.log_end_offset() {
        let info = log
            .read(position, 1 << 20, log.log_end_offset(), true)
            .unwrap();
        let mut progressed = false;
        for batch in RecordBatches::new(info.records) {
            let batch = batch.unwrap();
            batch.validate_crc().unwrap();
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                if r.offset < position {
                    continue;
                }
                assert!(out.last().is_none_or(|l| l.offset < r.offset));
                out.push(Entry {
                    offset: r.offset,
                    key: text(r.key),
                    value: text(r.value),
                    timestamp: r.timestamp,
                });
            }
            position = batch.next_offset();
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    (out, position)
}

/// Every stored batch of the log, in order.
pub(super) fn stored_batches(log: &Log) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut position = log.log_start_offset();
    while position < log.log_end_offset() {
        let info = log
            .read(position, 1 << 20, log.log_end_offset(), true)
            .unwrap();
        let before = out.len();
        for batch in RecordBatches::new(info.records) {
            let batch = batch.unwrap();
            position = batch.next_offset();
            out.push(batch);
        }
        if out.len() == before {
            break;
        }
    }
    out
}
