//! Storage fault injection for tests: make every fsync of segment data under a directory fail,
//! as a dying disk does, to prove that a failed fsync halts the log directory; and simulate a
//! power failure, which loses every segment write not yet fsynced, to prove that what the
//! durability contract promises (docs/storage.md) is what is on disk.
//!
//! Nothing here runs unless a test arms it: the check on the fsync path is one relaxed atomic
//! load. The broker binary never arms it; only code linking the library can (there is no
//! configuration key or request that reaches it).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// The extension of segment data files (`segment::LOG_EXT`; not imported, as the segment
/// module calls into this one).
const LOG_EXT: &str = "log";

static ARMED: AtomicBool = AtomicBool::new(false);
static FAILING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

static TRACKING: AtomicBool = AtomicBool::new(false);
/// Directories under power-failure simulation, and the durable length of each segment file in
/// them: its length when it was last fsynced (or when tracking began).
static DURABLE: Mutex<Option<Tracked>> = Mutex::new(None);

#[derive(Debug, Default)]
struct Tracked {
    dirs: Vec<PathBuf>,
    lengths: HashMap<PathBuf, u64>,
}

/// From now on, every fsync of a segment file under `dir` fails with EIO.
pub fn fail_fsyncs_under(dir: &Path) {
    let mut failing = FAILING.lock().unwrap_or_else(PoisonError::into_inner);
    failing.push(dir.to_path_buf());
    ARMED.store(true, Ordering::Relaxed);
}

/// Stops failing fsyncs under `dir`.
pub fn stop_failing_fsyncs_under(dir: &Path) {
    let mut failing = FAILING.lock().unwrap_or_else(PoisonError::into_inner);
    failing.retain(|d| d != dir);
    ARMED.store(!failing.is_empty(), Ordering::Relaxed);
}

/// The injected failure for an fsync of `file`, if a test armed one for a directory above it.
pub(crate) fn before_fsync(file: &Path) -> io::Result<()> {
    if !ARMED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let failing = FAILING.lock().unwrap_or_else(PoisonError::into_inner);
    if failing.iter().any(|d| file.starts_with(d)) {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    }
    Ok(())
}

/// Starts a power-failure simulation for `dir`: from now on, the length of every segment file
/// under it at its last fsync is remembered (files already there count as durable as they are).
pub fn track_durability_under(dir: &Path) -> io::Result<()> {
    let mut existing = Vec::new();
    segment_files(dir, &mut existing)?;
    let mut durable = DURABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let tracked = durable.get_or_insert_with(Tracked::default);
    tracked.dirs.push(dir.to_path_buf());
    for file in existing {
        let len = fs::metadata(&file)?.len();
        tracked.lengths.insert(file, len);
    }
    TRACKING.store(true, Ordering::Relaxed);
    Ok(())
}

/// The power fails: every segment file under `dir` is cut back to its durable length (a file
/// never fsynced loses everything), and tracking of `dir` ends. Returns the bytes lost. Call it
/// once nothing writes there any more (the broker was torn down without a clean shutdown).
///
/// Covers what segments write and fsync themselves (appends, rolls, truncation, recovery);
/// checkpoints are written atomically with fsync and survive as they are; directory entries
/// and the log cleaner's output are not simulated.
pub fn lose_unsynced_writes_under(dir: &Path) -> io::Result<u64> {
    let lengths = {
        let mut durable = DURABLE.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(tracked) = durable.as_mut() else {
            return Ok(0);
        };
        tracked.dirs.retain(|d| d != dir);
        TRACKING.store(!tracked.dirs.is_empty(), Ordering::Relaxed);
        let mut mine = HashMap::new();
        tracked.lengths.retain(|file, len| {
            if file.starts_with(dir) {
                mine.insert(file.clone(), *len);
                false
            } else {
                true
            }
        });
        mine
    };
    let mut files = Vec::new();
    segment_files(dir, &mut files)?;
    let mut lost = 0;
    for file in files {
        let durable = lengths.get(&file).copied().unwrap_or(0);
        let len = fs::metadata(&file)?.len();
        if len > durable {
            fs::OpenOptions::new()
                .write(true)
                .open(&file)?
                .set_len(durable)?;
            lost += len - durable;
        }
    }
    Ok(lost)
}

/// Records that `file` was fsynced at `len` bytes, if a power-failure simulation covers it.
pub(crate) fn after_fsync(file: &Path, len: u64) {
    if !TRACKING.load(Ordering::Relaxed) {
        return;
    }
    let mut durable = DURABLE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(tracked) = durable.as_mut() {
        if tracked.dirs.iter().any(|d| file.starts_with(d)) {
            tracked.lengths.insert(file.to_path_buf(), len);
        }
    }
}

/// Every segment `.log` file under `dir`, recursively.
fn segment_files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            segment_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == LOG_EXT) {
            out.push(path);
        }
    }
    Ok(())
}
