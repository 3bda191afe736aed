//! Storage fault injection for tests: make every fsync of segment data under a directory fail,
//! as a dying disk does, to prove that a failed fsync halts the log directory.
//!
//! Nothing here runs unless a test arms it: the check on the fsync path is one relaxed atomic
//! load. The broker binary never arms it; only code linking the library can (there is no
//! configuration key or request that reaches it).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

static ARMED: AtomicBool = AtomicBool::new(false);
static FAILING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

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
