//! `cleaner-offset-checkpoint`: the partition's first dirty offset. Everything below it was
//! deduplicated by an earlier cleaning pass (the "clean" section); everything from it on is
//! "dirty". Kafka keeps one such file per log directory; here each partition directory has its
//! own, in the common checkpoint format (version, count, one offset), replaced atomically.

use std::io;
use std::path::Path;

use super::checkpoint;

/// File name of the cleaner checkpoint in the partition directory.
pub(crate) const CLEANER_OFFSET_FILE: &str = "cleaner-offset-checkpoint";

/// The checkpointed first dirty offset; `None` if never written or malformed (then the whole
/// log counts as dirty, which is always safe).
pub(crate) fn read(dir: &Path) -> Option<i64> {
    checkpoint::read_offset(dir, CLEANER_OFFSET_FILE)
}

/// Atomically replaces the checkpoint.
pub(crate) fn write(dir: &Path, offset: i64) -> io::Result<()> {
    checkpoint::write_offset(dir, CLEANER_OFFSET_FILE, offset)
}

/// After a truncation to `end`, a checkpoint beyond it would call future appends clean: lower it
/// (Kafka's `maybeTruncateCheckpoint`).
pub(crate) fn truncate_to(dir: &Path, end: i64) -> io::Result<()> {
    match read(dir) {
        Some(offset) if offset > end => write(dir, end),
        _ => Ok(()),
    }
}
