//! The metadata quorum's durable state in `<log.dir>/__cluster_metadata-0/`:
//!
//! - `quorum-state`: the election state (epoch, vote, leader), JSON, replaced atomically;
//! - `log`: the log's entries as record batches back to back (`entry_codec`), appended and
//!   fsynced before the quorum's next message goes out;
//! - `snapshot`: the latest snapshot (its id, a CRC-32C and the state machine's bytes),
//!   replaced atomically; the log then holds only the entries after it.
//!
//! Opening recovers: the log is read batch by batch and cut at the first damaged, torn or
//! out-of-sequence batch (only an unacknowledged tail can be torn, since every append is
//! fsynced before the quorum acknowledges it).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use odradek::records::RecordBatches;
use odradek_quorum::{ElectionState, Entry, OffsetAndEpoch, Persisted, Snapshot};

use super::entry_codec;
use crate::{Error, Result};

/// The directory's name, as Kafka names the metadata partition's (the topic registry leaves it
/// alone).
pub const DIR_NAME: &str = crate::partition::METADATA_LOG_DIR;

/// One batch in the log file: its first offset, its entry count and where it starts.
#[derive(Debug, Clone, Copy)]
struct BatchPos {
    first: i64,
    count: i64,
    at: u64,
}

/// The open metadata log of one node.
#[derive(Debug)]
pub struct MetadataLogStore {
    dir: PathBuf,
    log: File,
    batches: Vec<BatchPos>,
    /// Where the log's entries start (the snapshot's end offset, or 0).
    start: i64,
    end_pos: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StateFile {
    epoch: i32,
    voted_for: Option<i32>,
    leader: Option<i32>,
}

impl MetadataLogStore {
    /// Opens (creating) the store under `data_dir`, returning what the quorum persisted.
    pub fn open(data_dir: &Path) -> Result<(MetadataLogStore, Persisted)> {
        let dir = data_dir.join(DIR_NAME);
        std::fs::create_dir_all(&dir)?;
        let election = read_state(&dir.join("quorum-state"))?;
        let snapshot = read_snapshot(&dir.join("snapshot"))?;
        let start = snapshot.as_ref().map_or(0, |s| s.id.offset);
        let mut log = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(dir.join("log"))?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes)?;
        let (entries, batches, good) = recover(Bytes::from(bytes), start);
        let len = log.metadata()?.len();
        if good < len {
            tracing::warn!(
                cut = len - good,
                "metadata log: a torn or damaged tail was cut"
            );
            log.set_len(good)?;
            log.sync_all()?;
        }
        let store = MetadataLogStore {
            dir,
            log,
            batches,
            start,
            end_pos: good,
        };
        Ok((
            store,
            Persisted {
                election,
                snapshot,
                entries,
            },
        ))
    }

    /// Makes the election state durable.
    pub fn save_election(&mut self, state: &ElectionState) -> Result<()> {
        let text = serde_json::to_vec(&StateFile {
            epoch: state.epoch,
            voted_for: state.voted_for,
            leader: state.leader,
        })
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        replace_file(&self.dir, "quorum-state", &text)
    }

    fn end_offset(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.start, |b| b.first + b.count)
    }

    /// Appends `entries` at `base_offset` (the log's end) and fsyncs.
    pub fn append(&mut self, base_offset: i64, entries: &[Entry]) -> Result<()> {
        if base_offset != self.end_offset() {
            return Err(Error::kafka(
                odradek::ErrorCode::UnknownServerError,
                format!(
                    "metadata log append at {base_offset}, its end is {}",
                    self.end_offset()
                ),
            ));
        }
        let bytes = entry_codec::encode(base_offset, entries)?;
        let mut offset = base_offset;
        let mut at = self.end_pos;
        for batch in RecordBatches::new(bytes.clone()) {
            let batch = batch?;
            let count = batch.next_offset() - batch.base_offset();
            self.batches.push(BatchPos {
                first: offset,
                count,
                at,
            });
            offset += count;
            at += batch.size() as u64;
        }
        self.log.write_all(&bytes)?;
        self.log.sync_data()?;
        self.end_pos = at;
        Ok(())
    }

    /// Removes every entry at `offset` and after, durably.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let Some(i) = self.batches.iter().position(|b| b.first + b.count > offset) else {
            return Ok(());
        };
        let cut = self.batches[i];
        // Entries of the cut batch below `offset` are written again.
        let kept = if cut.first < offset {
            let mut buf = vec![0u8; (self.batch_end(i) - cut.at) as usize];
            self.log.seek(SeekFrom::Start(cut.at))?;
            self.log.read_exact(&mut buf)?;
            entry_codec::decode(Bytes::from(buf))?
                .map(|(_, entries)| entries[..(offset - cut.first) as usize].to_vec())
        } else {
            None
        };
        self.batches.truncate(i);
        self.log.set_len(cut.at)?;
        self.end_pos = cut.at;
        self.log.seek(SeekFrom::End(0))?;
        match kept {
            Some(entries) if !entries.is_empty() => self.append(cut.first, &entries),
            _ => {
                self.log.sync_all()?;
                Ok(())
            }
        }
    }

    fn batch_end(&self, i: usize) -> u64 {
        self.batches.get(i + 1).map_or(self.end_pos, |b| b.at)
    }

    /// Replaces the whole log with `snapshot` (a follower that installed the leader's).
    pub fn install_snapshot(&mut self, snapshot: &Snapshot) -> Result<()> {
        write_snapshot(&self.dir, snapshot)?;
        self.log.set_len(0)?;
        self.log.sync_all()?;
        self.batches.clear();
        self.end_pos = 0;
        self.start = snapshot.id.offset;
        Ok(())
    }

    /// Keeps `snapshot` (taken at or below the high watermark) and drops the entries it covers.
    pub fn save_snapshot(&mut self, snapshot: &Snapshot) -> Result<()> {
        write_snapshot(&self.dir, snapshot)?;
        let from = snapshot.id.offset;
        let Some(i) = self.batches.iter().position(|b| b.first + b.count > from) else {
            return self.install_snapshot(snapshot);
        };
        // Rewrite the log from the first batch still needed (entries it holds below the
        // snapshot go too).
        let mut rest = vec![0u8; (self.end_pos - self.batches[i].at) as usize];
        self.log.seek(SeekFrom::Start(self.batches[i].at))?;
        self.log.read_exact(&mut rest)?;
        let (first, entries) =
            entry_codec::decode(Bytes::from(rest))?.unwrap_or((from, Vec::new()));
        let skip = usize::try_from(from - first)
            .unwrap_or(0)
            .min(entries.len());
        let kept = &entries[skip..];
        let bytes = if kept.is_empty() {
            Bytes::new()
        } else {
            entry_codec::encode(from, kept)?
        };
        replace_file(&self.dir, "log", &bytes)?;
        self.log = OpenOptions::new()
            .read(true)
            .append(true)
            .open(self.dir.join("log"))?;
        let (_, batches, good) = recover(bytes, from);
        self.batches = batches;
        self.end_pos = good;
        self.start = from;
        Ok(())
    }
}

/// Reads batches from the start of `bytes`, numbering entries from `start`; stops at the first
/// damaged, torn or out-of-sequence batch. Returns the entries, their batches and the length
/// of the good prefix.
fn recover(bytes: Bytes, start: i64) -> (Vec<Entry>, Vec<BatchPos>, u64) {
    let mut entries = Vec::new();
    let mut batches = Vec::new();
    let mut at = 0u64;
    for batch in RecordBatches::new(bytes) {
        let Ok(batch) = batch else { break };
        let size = batch.size() as u64;
        let expected = start + entries.len() as i64;
        let Ok(Some((first, decoded))) = entry_codec::decode(batch.into_bytes()) else {
            break;
        };
        if first != expected {
            break;
        }
        batches.push(BatchPos {
            first,
            count: decoded.len() as i64,
            at,
        });
        entries.extend(decoded);
        at += size;
    }
    (entries, batches, at)
}

fn read_state(path: &Path) -> Result<ElectionState> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let s: StateFile = serde_json::from_slice(&bytes).map_err(|e| {
                Error::config("log.dirs", format!("{} is damaged: {e}", path.display()))
            })?;
            Ok(ElectionState {
                epoch: s.epoch,
                voted_for: s.voted_for,
                leader: s.leader,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ElectionState::default()),
        Err(e) => Err(e.into()),
    }
}

/// Snapshot file: end offset (i64), epoch (i32), CRC-32C of the data (u32), the data.
fn write_snapshot(dir: &Path, snapshot: &Snapshot) -> Result<()> {
    let mut bytes = Vec::with_capacity(16 + snapshot.data.len());
    bytes.extend_from_slice(&snapshot.id.offset.to_be_bytes());
    bytes.extend_from_slice(&snapshot.id.epoch.to_be_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&snapshot.data).to_be_bytes());
    bytes.extend_from_slice(&snapshot.data);
    replace_file(dir, "snapshot", &bytes)
}

fn read_snapshot(path: &Path) -> Result<Option<Snapshot>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let damaged = || Error::config("log.dirs", format!("{} is damaged", path.display()));
    if bytes.len() < 16 {
        return Err(damaged());
    }
    let offset = i64::from_be_bytes(bytes[0..8].try_into().map_err(|_| damaged())?);
    let epoch = i32::from_be_bytes(bytes[8..12].try_into().map_err(|_| damaged())?);
    let crc = u32::from_be_bytes(bytes[12..16].try_into().map_err(|_| damaged())?);
    let data = Bytes::copy_from_slice(&bytes[16..]);
    if crc32c::crc32c(&data) != crc {
        return Err(damaged());
    }
    Ok(Some(Snapshot {
        id: OffsetAndEpoch::new(offset, epoch),
        data,
    }))
}

/// Writes `name` in `dir` through a temporary file, fsynced and renamed, then fsyncs `dir`.
fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(epoch: i32, s: &'static str) -> Entry {
        Entry::data(epoch, Bytes::from_static(s.as_bytes()))
    }

    #[test]
    fn appends_truncations_and_snapshots_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, p) = MetadataLogStore::open(dir.path()).unwrap();
        assert!(p.entries.is_empty() && p.snapshot.is_none());
        store
            .append(0, &[data(1, "a"), data(1, "b"), data(2, "c")])
            .unwrap();
        store.append(3, &[data(2, "d")]).unwrap();
        store.truncate_to(2).unwrap();
        store.append(2, &[data(3, "e")]).unwrap();
        let state = ElectionState {
            epoch: 3,
            voted_for: Some(2),
            leader: Some(2),
        };
        store.save_election(&state).unwrap();
        drop(store);
        let (mut store, p) = MetadataLogStore::open(dir.path()).unwrap();
        assert_eq!(p.election, state);
        assert_eq!(p.entries, vec![data(1, "a"), data(1, "b"), data(3, "e")]);
        let snap = Snapshot {
            id: OffsetAndEpoch::new(2, 1),
            data: Bytes::from_static(b"state"),
        };
        store.save_snapshot(&snap).unwrap();
        store.append(3, &[data(3, "f")]).unwrap();
        drop(store);
        let (_, p) = MetadataLogStore::open(dir.path()).unwrap();
        assert_eq!(p.snapshot, Some(snap));
        assert_eq!(p.entries, vec![data(3, "e"), data(3, "f")]);
    }

    #[test]
    fn a_torn_tail_is_cut_on_opening() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, _) = MetadataLogStore::open(dir.path()).unwrap();
        store.append(0, &[data(1, "a")]).unwrap();
        store.append(1, &[data(1, "b")]).unwrap();
        drop(store);
        let path = dir.path().join(DIR_NAME).join("log");
        let len = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let (mut store, p) = MetadataLogStore::open(dir.path()).unwrap();
        assert_eq!(p.entries, vec![data(1, "a")]);
        store.append(1, &[data(2, "c")]).unwrap();
        drop(store);
        let (_, p) = MetadataLogStore::open(dir.path()).unwrap();
        assert_eq!(p.entries, vec![data(1, "a"), data(2, "c")]);
    }
}
