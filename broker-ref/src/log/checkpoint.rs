//! Checkpoint files: small text files in the partition directory, always replaced atomically.
//!
//! Format (the one Kafka's checkpoint files use): a version line (`0`), a line with the number of
//! entries, then one line per entry with its integer fields separated by single spaces.
//! Replacement writes `<name>.tmp`, fsyncs it, renames it over `<name>` and fsyncs the directory,
//! so a reader sees either the old or the new file, never a torn one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Offset below which everything is durable on disk (written by flush, roll, close).
pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point-checkpoint";
/// The log start offset (raised by retention and DeleteRecords).
pub(crate) const LOG_START_OFFSET_FILE: &str = "log-start-offset-checkpoint";
/// The leader epoch cache: `epoch start_offset` per line.
pub(crate) const LEADER_EPOCH_FILE: &str = "leader-epoch-checkpoint";
/// Present only while the log is closed cleanly: segments and indexes are complete and durable.
pub(crate) const CLEAN_SHUTDOWN_FILE: &str = "clean-shutdown";
/// Suffix of a checkpoint being replaced (removed on open if a crash left one behind).
pub(crate) const TMP_SUFFIX: &str = ".tmp";

const VERSION: &str = "0";

/// fsyncs a directory so that file creations, renames and deletions in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Atomically replaces `dir/name` with a checkpoint holding `entries`.
pub(crate) fn write_entries(dir: &Path, name: &str, entries: &[&[i64]]) -> io::Result<()> {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for entry in entries {
        let fields: Vec<String> = entry.iter().map(i64::to_string).collect();
        text.push_str(&fields.join(" "));
        text.push('\n');
    }
    let tmp = dir.join(format!("{name}{TMP_SUFFIX}"));
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}

/// Atomically replaces `dir/name` with a single-offset checkpoint.
pub(crate) fn write_offset(dir: &Path, name: &str, offset: i64) -> io::Result<()> {
    write_entries(dir, name, &[&[offset]])
}

/// Reads a checkpoint whose entries have `width` fields. `Ok(None)` if the file does not exist;
/// `Err` with a reason if it is malformed (the caller decides on a safe fallback).
pub(crate) fn read_entries(
    dir: &Path,
    name: &str,
    width: usize,
) -> Result<Option<Vec<Vec<i64>>>, String> {
    let text = match fs::read_to_string(dir.join(name)) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {name}: {e}")),
    };
    let mut lines = text.lines();
    if lines.next() != Some(VERSION) {
        return Err(format!("{name}: unknown version"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("{name}: bad entry count"))?;
    let mut entries = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let line = lines
            .next()
            .ok_or_else(|| format!("{name}: fewer entries than announced"))?;
        let fields: Vec<i64> = line
            .split(' ')
            .map(|f| f.parse::<i64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{name}: bad entry `{line}`"))?;
        if fields.len() != width {
            return Err(format!("{name}: entry `{line}` has the wrong field count"));
        }
        entries.push(fields);
    }
    if lines.any(|l| !l.trim().is_empty()) {
        return Err(format!("{name}: more entries than announced"));
    }
    Ok(Some(entries))
}

/// Reads a single-offset checkpoint; `None` if missing or malformed (malformed is logged).
pub(crate) fn read_offset(dir: &Path, name: &str) -> Option<i64> {
    match read_entries(dir, name, 1) {
        Ok(Some(entries)) if entries.len() == 1 => Some(entries[0][0]),
        Ok(None) => None,
        Ok(Some(_)) => {
            tracing::warn!(dir = %dir.display(), "{name}: expected exactly one entry; ignored");
            None
        }
        Err(reason) => {
            tracing::warn!(dir = %dir.display(), "{reason}; ignored");
            None
        }
    }
}

/// Creates the clean-shutdown marker durably.
pub(crate) fn write_clean_marker(dir: &Path) -> io::Result<()> {
    File::create(dir.join(CLEAN_SHUTDOWN_FILE))?.sync_all()?;
    sync_dir(dir)
}

/// Removes the clean-shutdown marker durably (before the log accepts writes again).
pub(crate) fn remove_clean_marker(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(CLEAN_SHUTDOWN_FILE)) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_atomic_replace() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_entries(dir.path(), "x", 2), Ok(None));
        write_entries(dir.path(), "x", &[&[1, 0], &[4, 100]]).unwrap();
        assert_eq!(
            read_entries(dir.path(), "x", 2),
            Ok(Some(vec![vec![1, 0], vec![4, 100]]))
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("x")).unwrap(),
            "0\n2\n1 0\n4 100\n"
        );
        write_offset(dir.path(), "y", 42).unwrap();
        assert_eq!(read_offset(dir.path(), "y"), Some(42));
        assert!(!dir.path().join("y.tmp").exists());
    }

    #[test]
    fn malformed_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for text in [
            "",
            "1\n0\n",
            "0\n2\n1 2\n",
            "0\n1\n1\n",
            "0\n1\n1 x\n",
            "0\n1\n1 2\n3 4\n",
        ] {
            fs::write(dir.path().join("x"), text).unwrap();
            assert!(read_entries(dir.path(), "x", 2).is_err(), "{text:?}");
        }
        fs::write(dir.path().join("y"), "garbage").unwrap();
        assert_eq!(read_offset(dir.path(), "y"), None);
    }
}
