//! Producer-state snapshots: `<offset>.snapshot` files in the partition directory, each holding
//! the producer state of every batch below `offset` (Kafka's `ProducerStateManager` snapshots).
//! They are written when a segment rolls, at clean shutdown and after segments are deleted, so
//! opening a partition replays only the log after the newest snapshot, and a producer whose
//! batches were all deleted (retention, DeleteRecords) is still known.
//!
//! Format (big-endian; specified in `docs/storage.md`):
//!
//! ```text
//! version        i16   1
//! crc            u32   CRC-32C of every byte after this field
//! producer count i32
//! per producer:  producer id i64, epoch i16, coordinator epoch i32, last timestamp i64,
//!                open transaction's first offset i64 (-1: none), batch count i8 (0..=5),
//!                per batch (oldest first): first sequence i32, last sequence i32, base offset i64
//! ```
//!
//! A file is written as `<offset>.snapshot.tmp`, fsynced and renamed, so a reader sees a whole
//! file or none (a `.tmp` leftover is removed when the log opens). A file that fails its CRC or
//! framing is deleted and the next older one is tried; with none left, the whole log is replayed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::producer_state::{ProducerSnapshotEntry, SnapshotBatch, BATCHES_PER_PRODUCER};
use super::ProducerState;

/// Extension of snapshot files.
const EXT: &str = "snapshot";
/// The only format version written and read.
const VERSION: i16 = 1;
/// version + crc + producer count.
const HEADER: usize = 2 + 4 + 4;
/// Fixed part of one producer entry.
const ENTRY: usize = 8 + 2 + 4 + 8 + 8 + 1;
/// One batch of an entry.
const BATCH: usize = 4 + 4 + 8;

fn path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}.{EXT}"))
}

/// Offsets of the snapshot files in `dir`, ascending.
pub(crate) fn list(dir: &Path) -> io::Result<Vec<i64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(name) = entry?.file_name().into_string() else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".snapshot") else {
            continue;
        };
        if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(offset) = stem.parse::<i64>() {
                out.push(offset);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Encodes `state`.
pub(crate) fn encode(state: &ProducerState) -> Vec<u8> {
    let entries = state.snapshot_entries();
    let mut body = Vec::with_capacity(4 + entries.len() * (ENTRY + BATCHES_PER_PRODUCER * BATCH));
    body.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in &entries {
        body.extend_from_slice(&e.producer_id.to_be_bytes());
        body.extend_from_slice(&e.epoch.to_be_bytes());
        body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        body.extend_from_slice(&e.last_timestamp.to_be_bytes());
        body.extend_from_slice(&e.txn_first_offset.unwrap_or(-1).to_be_bytes());
        body.push(e.batches.len() as u8);
        for b in &e.batches {
            body.extend_from_slice(&b.first_seq.to_be_bytes());
            body.extend_from_slice(&b.last_seq.to_be_bytes());
            body.extend_from_slice(&b.base_offset.to_be_bytes());
        }
    }
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Reads big-endian integers from a byte slice, failing on a short read.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| "truncated".to_string())?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.data[self.pos..end]);
        self.pos = end;
        Ok(a)
    }
    fn i8(&mut self) -> Result<i8, String> {
        Ok(i8::from_be_bytes(self.take()?))
    }
    fn i16(&mut self) -> Result<i16, String> {
        Ok(i16::from_be_bytes(self.take()?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(self.take()?))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_be_bytes(self.take()?))
    }
}

/// Decodes a snapshot file's bytes; the reason on any inconsistency.
pub(crate) fn decode(data: &[u8]) -> Result<ProducerState, String> {
    if data.len() < HEADER {
        return Err("truncated header".into());
    }
    let mut r = Reader { data, pos: 0 };
    let version = r.i16()?;
    if version != VERSION {
        return Err(format!("unknown version {version}"));
    }
    let crc = u32::from_be_bytes(r.take()?);
    if crc32c::crc32c(&data[r.pos..]) != crc {
        return Err("CRC mismatch".into());
    }
    let count = r.i32()?;
    if count < 0 || count as usize > (data.len() - HEADER) / ENTRY {
        return Err(format!("bad producer count {count}"));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let producer_id = r.i64()?;
        let epoch = r.i16()?;
        let coordinator_epoch = r.i32()?;
        let last_timestamp = r.i64()?;
        let txn = r.i64()?;
        let batches = r.i8()?;
        if !(0..=BATCHES_PER_PRODUCER as i8).contains(&batches) {
            return Err(format!("bad batch count {batches}"));
        }
        let mut list = Vec::with_capacity(batches as usize);
        for _ in 0..batches {
            list.push(SnapshotBatch {
                first_seq: r.i32()?,
                last_seq: r.i32()?,
                base_offset: r.i64()?,
            });
        }
        if producer_id < 0 || txn < -1 {
            return Err(format!("bad producer {producer_id}"));
        }
        entries.push(ProducerSnapshotEntry {
            producer_id,
            epoch,
            coordinator_epoch,
            last_timestamp,
            txn_first_offset: (txn >= 0).then_some(txn),
            batches: list,
        });
    }
    if r.pos != data.len() {
        return Err("trailing bytes".into());
    }
    Ok(ProducerState::from_snapshot_entries(entries))
}

/// Writes the snapshot of `state` at `offset`: temporary file, fsync, rename. The rename is
/// made durable by the caller's next directory fsync (every roll, segment deletion, checkpoint
/// and the clean-shutdown marker fsync the directory); losing it in a crash costs replay time.
pub(crate) fn write(dir: &Path, offset: i64, state: &ProducerState) -> io::Result<()> {
    let final_path = path(dir, offset);
    let tmp = final_path.with_extension("snapshot.tmp");
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(&encode(state))?;
        file.sync_data()?;
    }
    fs::rename(&tmp, &final_path)
}

/// Deletes the snapshot at `offset` (missing is fine).
pub(crate) fn delete(dir: &Path, offset: i64) -> io::Result<()> {
    match fs::remove_file(path(dir, offset)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Loads the newest usable snapshot at or below `log_end_offset`: newer files (a log cut back
/// by recovery) and unreadable ones are deleted on the way. `None`: replay the whole log.
pub(crate) fn load_latest(
    dir: &Path,
    log_end_offset: i64,
) -> io::Result<Option<(i64, ProducerState)>> {
    for offset in list(dir)?.into_iter().rev() {
        if offset > log_end_offset {
            tracing::info!(dir = %dir.display(), offset, log_end_offset, "deleting a producer snapshot past the log end");
            delete(dir, offset)?;
            continue;
        }
        let data = match fs::read(path(dir, offset)) {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match decode(&data) {
            Ok(state) => return Ok(Some((offset, state))),
            Err(reason) => {
                tracing::warn!(dir = %dir.display(), offset, "producer snapshot unusable ({reason}); deleting it");
                delete(dir, offset)?;
            }
        }
    }
    Ok(None)
}

/// Deletes every snapshot below `log_start_offset`. Returns whether one at or above it is left.
pub(crate) fn delete_below(dir: &Path, log_start_offset: i64) -> io::Result<bool> {
    let mut left = false;
    for offset in list(dir)? {
        if offset < log_start_offset {
            delete(dir, offset)?;
        } else {
            left = true;
        }
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{BatchRecord, SequenceCheck};

    fn state() -> ProducerState {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record(BatchRecord {
                producer_id: 9,
                epoch: 2,
                first_seq: i * 3,
                last_seq: i * 3 + 2,
                base_offset: i64::from(i) * 10,
                max_timestamp: 77,
                transactional: false,
            });
        }
        s.record(BatchRecord {
            producer_id: 4,
            epoch: 0,
            first_seq: 0,
            last_seq: 0,
            base_offset: 70,
            max_timestamp: 78,
            transactional: true,
        });
        s.complete_txn(5, 1, 3, 79);
        s
    }

    #[test]
    fn round_trip() {
        let s = state();
        let back = decode(&encode(&s)).unwrap();
        assert_eq!(back.summaries(), s.summaries());
        assert_eq!(back.first_unstable_offset(), Some(70));
        assert_eq!(
            back.check(9, 2, 18, 20),
            Ok(SequenceCheck::Duplicate { base_offset: 60 })
        );
        assert_eq!(
            back.check(9, 2, 6, 8),
            Ok(SequenceCheck::Duplicate { base_offset: 20 })
        );
        assert!(back.check(9, 2, 3, 5).is_err(), "only five batches kept");
    }

    #[test]
    fn damage_is_detected() {
        let bytes = encode(&state());
        for cut in [0, 5, HEADER, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[HEADER + 3] ^= 1;
        assert!(decode(&flipped).is_err());
        let mut longer = bytes;
        longer.push(0);
        assert!(decode(&longer).is_err());
    }

    #[test]
    fn files_newest_usable_first() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), 10, &ProducerState::default()).unwrap();
        write(dir.path(), 20, &state()).unwrap();
        write(dir.path(), 30, &state()).unwrap();
        fs::write(path(dir.path(), 25), b"garbage").unwrap();
        // 30 is past the log end, 25 is garbage: 20 is used, the other two are deleted.
        let (offset, s) = load_latest(dir.path(), 27).unwrap().unwrap();
        assert_eq!((offset, s.len()), (20, 3));
        assert_eq!(list(dir.path()).unwrap(), vec![10, 20]);
        assert!(delete_below(dir.path(), 15).unwrap());
        assert_eq!(list(dir.path()).unwrap(), vec![20]);
        assert!(!delete_below(dir.path(), 21).unwrap());
        assert!(load_latest(dir.path(), 100).unwrap().is_none());
    }
}
