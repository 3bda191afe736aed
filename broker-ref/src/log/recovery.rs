//! Opening a log: directory listing and cleanup, checkpoints, and crash recovery.
//!
//! Procedure (specified in `docs/storage.md`):
//! 1. Complete segment swaps the log cleaner committed (`*.log.swap`, see `cleaner::swap`), then
//!    remove leftovers of interrupted operations (`*.tmp`, `*.deleted`, `*.cleaned`, other
//!    `*.swap`, index files without a `.log`).
//! 2. Read the recovery point, log start offset and leader epoch checkpoints and note whether
//!    the clean-shutdown marker is present.
//! 3. Open segments in offset order. A segment is *trusted* after a clean shutdown or when the
//!    next segment starts at or below the recovery point; its indexes are sanity-checked and only
//!    its tail after the last index entry is walked. Every other segment is *recovered*: each
//!    batch is checked (framing, magic, CRC-32C, offsets) and the indexes are rebuilt; at the
//!    first bad batch that segment's file is truncated. A trusted segment that fails its checks
//!    is recovered the same way. Later segments are opened as usual: a damaged old segment
//!    costs only its own damaged tail, never newer data, and the lost offset range is logged
//!    (readers skip the gap as they skip compacted offsets).
//! 4. The log end offset is the last segment's next offset; the log start offset is the
//!    checkpoint or the first segment's base, whichever is larger (an empty log restarts at the
//!    log start offset if that lies beyond the recovered end). The epoch cache is trimmed to the
//!    log, everything is fsynced and the recovery point becomes the log end offset. The marker
//!    stays on disk while nothing changes (a clean restart writes and fsyncs nothing) and is
//!    removed durably before the first repair, so a crash while opening leaves either the
//!    marker with unchanged files or no marker (a full recovery next time).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use odradek::ErrorCode;

use super::checkpoint::{
    self, CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE, TMP_SUFFIX,
};
use super::config::LogConfig;
use super::dir_health;
use super::epoch_cache::LeaderEpochCache;
use super::segment::{Segment, INDEX_EXT, LOG_EXT, TIME_INDEX_EXT};
use super::txn_index::TXN_INDEX_EXT;
use super::Log;
use crate::{Error, Result};

/// Suffixes of files an interrupted operation may leave behind; removed on open.
const LEFTOVER_SUFFIXES: &[&str] = &[TMP_SUFFIX, ".deleted", ".cleaned", ".swap"];

/// Kafka's topic name rules, which also keep the directory name safe.
fn check_topic_name(topic: &str) -> Result<()> {
    let legal = !topic.is_empty()
        && topic.len() <= 249
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if legal {
        Ok(())
    } else {
        Err(Error::kafka(
            ErrorCode::InvalidTopic,
            format!("invalid topic name `{topic}`"),
        ))
    }
}

/// Parses `<20 digits>.<ext>`.
fn parse_segment_file(name: &str) -> Option<(i64, &str)> {
    let (stem, ext) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, ext))
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Lists segment base offsets (ascending), removing leftovers and orphaned index files. The
/// flag tells whether anything was removed (the directory then needs an fsync).
fn list_segments(dir: &Path) -> io::Result<(Vec<i64>, bool)> {
    let mut removed = false;
    let mut logs = Vec::new();
    let mut indexes = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if LEFTOVER_SUFFIXES.iter().any(|s| name.ends_with(s)) {
            tracing::info!(dir = %dir.display(), "removing leftover file {name}");
            remove_if_exists(&entry.path())?;
            removed = true;
            continue;
        }
        match parse_segment_file(&name) {
            Some((base, LOG_EXT)) => logs.push(base),
            Some((base, INDEX_EXT | TIME_INDEX_EXT | TXN_INDEX_EXT)) => {
                indexes.push((base, entry.path()))
            }
            _ => {}
        }
    }
    logs.sort_unstable();
    for (base, path) in indexes {
        if logs.binary_search(&base).is_err() {
            tracing::info!(index = %path.display(), "removing index file without a segment");
            remove_if_exists(&path)?;
            removed = true;
        }
    }
    Ok((logs, removed))
}

/// Logs what recovery of a damaged segment lost: its offsets from where the damage starts up
/// to the next segment (kept), or the whole damaged tail when it is the last segment.
fn report_loss(dir: &Path, base: i64, kept_until: i64, next_base: Option<i64>) {
    match next_base {
        Some(next) => tracing::error!(
            dir = %dir.display(),
            segment = base,
            lost_from = kept_until,
            lost_until = next,
            "a damaged segment was truncated: offsets in [lost_from, lost_until) are lost; \
             newer segments are kept"
        ),
        None => tracing::warn!(
            dir = %dir.display(),
            segment = base,
            kept_until,
            "the last segment had a torn or damaged tail: truncated after kept_until"
        ),
    }
}

/// The clean-shutdown marker during [`Log::open`]: kept on disk as long as opening changes
/// nothing (so a clean restart costs no fsync), removed durably before the first change.
struct Marker<'a> {
    dir: &'a Path,
    on_disk: bool,
}

impl Marker<'_> {
    /// Removes the marker (once) before the caller changes a file it vouches for.
    fn before_change(&mut self) -> io::Result<()> {
        if self.on_disk {
            checkpoint::remove_clean_marker(self.dir)?;
            self.on_disk = false;
        }
        Ok(())
    }
}

impl Log {
    /// Opens the log of `topic`-`partition` stored in the partition directory `dir` (by
    /// convention `<log.dir>/<topic>-<partition>`; created if missing), recovering from a crash
    /// if the last shutdown was not clean. Never serves a batch that fails its CRC after a
    /// crash: everything past the recovery point is checked.
    ///
    /// After a clean shutdown, opening writes nothing and fsyncs nothing unless a file needs
    /// repair: the clean-shutdown marker stays until the first change (see `begin_change`), so
    /// a crash before then still finds the files it vouches for unchanged.
    pub fn open(dir: &Path, topic: &str, partition: i32, config: LogConfig) -> Result<Log> {
        check_topic_name(topic)?;
        if partition < 0 {
            return Err(Error::kafka(
                ErrorCode::UnknownTopicOrPartition,
                format!("invalid partition {partition}"),
            ));
        }
        let dir = dir.to_path_buf();
        if !dir.is_dir() {
            fs::create_dir_all(&dir)?;
            if let Some(parent) = dir.parent() {
                checkpoint::sync_dir(parent)?;
            }
        }
        let clean = dir.join(CLEAN_SHUTDOWN_FILE).exists();
        let mut marker = Marker {
            dir: &dir,
            on_disk: clean,
        };
        // A clean shutdown leaves no swap and no leftover; if there are some, the marker goes
        // first (nothing it vouches for changes before it is gone).
        let swapped = super::cleaner::swap::complete_interrupted_swaps(&dir)?;
        let (bases, removed) = list_segments(&dir)?;
        if !swapped.is_empty() || removed {
            marker.before_change()?;
        }
        // Directory entries changed (created, deleted, renamed) and not yet fsynced.
        let mut dir_changed = false;
        let recovery_point = checkpoint::read_offset(&dir, RECOVERY_POINT_FILE).unwrap_or(0);
        let start_checkpoint = checkpoint::read_offset(&dir, LOG_START_OFFSET_FILE);
        let mut epochs = LeaderEpochCache::load(&dir);
        let epochs_before = epochs.entries().to_vec();

        let mut segments = BTreeMap::new();
        let mut relearning = false;
        for (i, &base) in bases.iter().enumerate() {
            let next_base = bases.get(i + 1).copied();
            let trusted = clean || next_base.is_some_and(|n| n <= recovery_point);
            let opened = if trusted {
                Segment::open_trusted(&dir, base, next_base)?
            } else {
                None
            };
            let segment = match opened {
                Some(segment) => segment,
                None => {
                    if trusted {
                        tracing::warn!(dir = %dir.display(), base, "segment failed its checks; rebuilding it");
                    } else if !relearning {
                        // From here on every batch is scanned: re-learn epochs from them.
                        relearning = true;
                        epochs.truncate_from_end(base);
                    }
                    let mut learn = |h: &super::scan::BatchHeader| {
                        if relearning {
                            epochs.assign(h.partition_leader_epoch, h.base_offset);
                        }
                    };
                    marker.before_change()?;
                    dir_changed = true;
                    let (segment, intact) =
                        Segment::recover(&dir, base, next_base, &config, &mut learn)?;
                    if !intact {
                        report_loss(&dir, base, segment.next_offset(), next_base);
                    }
                    segment
                }
            };
            segments.insert(base, segment);
        }
        if segments.is_empty() {
            marker.before_change()?;
            dir_changed = true;
            let base = start_checkpoint.unwrap_or(0).max(0);
            segments.insert(base, Segment::create(&dir, base)?);
        }
        // One directory fsync for every file created or deleted above.
        if dir_changed {
            checkpoint::sync_dir(&dir)?;
        }

        let marker_on_disk = marker.on_disk;
        let first_base = segments.keys().next().copied().unwrap_or(0);
        let log_end_offset = segments
            .values()
            .next_back()
            .map_or(first_base, Segment::next_offset);
        let log_start_offset = start_checkpoint.unwrap_or(first_base).max(first_base);
        let health = dir
            .parent()
            .map_or_else(|| dir_health::for_dir(&dir), dir_health::for_dir);
        let mut log = Log {
            dir,
            topic: topic.to_string(),
            partition,
            config,
            segments,
            log_start_offset,
            log_end_offset,
            recovery_point: log_end_offset,
            epochs,
            unflushed_messages: 0,
            last_flush_ms: None,
            clean_marker: marker_on_disk,
            deleted: false,
            first_unstable_offset: None,
            config_generation: 0,
            health,
            appended_bytes: 0,
        };
        if log.log_start_offset > log.log_end_offset {
            tracing::warn!(
                dir = %log.dir.display(),
                log_start_offset = log.log_start_offset,
                log_end_offset = log.log_end_offset,
                "recovered log ends below its start offset; restarting it empty at the start offset"
            );
            log.begin_change()?;
            log.truncate_fully_and_start_at(log.log_start_offset)?;
        }
        log.epochs.truncate_from_end(log.log_end_offset);
        log.epochs.truncate_from_start(log.log_start_offset);
        if log.epochs.entries() != epochs_before.as_slice() {
            log.begin_change()?;
            log.epochs.persist(&log.dir)?;
        }
        log.recovery_point = log.log_end_offset;
        // Everything is durable now; an unchanged checkpoint is not rewritten (a clean restart
        // finds RP = LEO, as `close` left it).
        if recovery_point != log.recovery_point {
            log.begin_change()?;
            checkpoint::write_offset(&log.dir, RECOVERY_POINT_FILE, log.recovery_point)?;
        }
        // A missing checkpoint means "the first segment's base": no need to write that value.
        if start_checkpoint.unwrap_or(first_base) != log.log_start_offset {
            log.begin_change()?;
            checkpoint::write_offset(&log.dir, LOG_START_OFFSET_FILE, log.log_start_offset)?;
        }
        Ok(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_are_checked() {
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(250)] {
            assert!(check_topic_name(bad).is_err(), "{bad}");
        }
        for good in ["orders", "a.b_c-D9", &"x".repeat(249)] {
            assert!(check_topic_name(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn segment_file_names() {
        assert_eq!(
            parse_segment_file("00000000000000000042.log"),
            Some((42, "log"))
        );
        assert_eq!(
            parse_segment_file("00000000000000000042.timeindex"),
            Some((42, "timeindex"))
        );
        assert_eq!(parse_segment_file("42.log"), None);
        assert_eq!(parse_segment_file("leader-epoch-checkpoint"), None);
    }
}
