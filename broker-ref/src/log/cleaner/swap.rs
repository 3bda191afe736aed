//! Replacing segments with their cleaned version, crash-safely (Kafka's `.cleaned` → `.swap` →
//! final scheme).
//!
//! A group of old segments `[b, end)` is replaced by one new segment with base `b`:
//!
//! 1. The cleaner writes `<b>.log.cleaned`, `<b>.index.cleaned` and `<b>.timeindex.cleaned` and
//!    fsyncs them (no lock held); the commit step adds `<b>.txnindex.cleaned` (the replaced
//!    segments' aborted transactions, merged) when there are any.
//! 2. [`commit`]: the index files are renamed to `.swap`, then `<b>.log.cleaned` →
//!    `<b>.log.swap`, then the directory is fsynced. **The `.log.swap` rename is the commit
//!    point.**
//! 3. [`install`]: the old segments' files are deleted (highest base first), the `.swap` files are
//!    renamed to their final names, the directory is fsynced.
//!
//! On open ([`complete_interrupted_swaps`], before segments are listed): a `<b>.log.swap` means
//! the replacement was committed, so it is completed: every `.log` segment whose base lies in
//! `[b, max(next, b + 1))`, where `next` is the offset after the swap file's last batch, is
//! deleted with its indexes, the index files of `b` are deleted (they are rebuilt from the data),
//! the swap file becomes `<b>.log` and a `<b>.txnindex.swap` becomes `<b>.txnindex`. Old segments of the group with a base ≥ `next` can
//! survive a crash in step 3; every record in them was removed by the cleaning (all offsets of
//! the kept records are < `next`), so they hold only superseded data, never overlap the new
//! segment, and are cleaned again by a later pass. Files ending in `.cleaned`, and index `.swap`
//! files without a `.log.swap`, are leftovers of a cleaning that never committed: the generic
//! leftover rule of `Log::open` deletes them.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::super::checkpoint::sync_dir;
use super::super::scan::{HeaderWalk, Step};
use super::super::segment::{segment_path, INDEX_EXT, LOG_EXT, TIME_INDEX_EXT};
use super::super::txn_index::TXN_INDEX_EXT;

/// Suffix of a cleaned segment's files while they are written.
pub(crate) const CLEANED_SUFFIX: &str = "cleaned";
/// Suffix of a cleaned segment's files once the replacement is committed.
pub(crate) const SWAP_SUFFIX: &str = "swap";

const EXTS: [&str; 4] = [LOG_EXT, INDEX_EXT, TIME_INDEX_EXT, TXN_INDEX_EXT];

/// `<dir>/<base>.<ext>.<suffix>`.
pub(crate) fn suffixed_path(dir: &Path, base: i64, ext: &str, suffix: &str) -> PathBuf {
    segment_path(dir, base, &format!("{ext}.{suffix}"))
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes a cleaned segment that will not be committed (best effort; leftovers are also
/// removed on open).
pub(crate) fn discard_cleaned(dir: &Path, base: i64) {
    for ext in EXTS {
        let path = suffixed_path(dir, base, ext, CLEANED_SUFFIX);
        if let Err(e) = remove_if_exists(&path) {
            tracing::warn!(file = %path.display(), "cannot remove an abandoned cleaned file: {e}");
        }
    }
}

/// Step 2: renames the cleaned files of `base` to `.swap`, the log file last (the commit point),
/// and fsyncs the directory.
pub(crate) fn commit(dir: &Path, base: i64) -> io::Result<()> {
    let txn = suffixed_path(dir, base, TXN_INDEX_EXT, CLEANED_SUFFIX);
    if txn.exists() {
        fs::rename(&txn, suffixed_path(dir, base, TXN_INDEX_EXT, SWAP_SUFFIX))?;
    }
    for ext in [INDEX_EXT, TIME_INDEX_EXT, LOG_EXT] {
        fs::rename(
            suffixed_path(dir, base, ext, CLEANED_SUFFIX),
            suffixed_path(dir, base, ext, SWAP_SUFFIX),
        )?;
    }
    sync_dir(dir)
}

/// Step 3: deletes the replaced segments' files (highest base first) and gives the swap files of
/// `base` their final names, then fsyncs the directory.
pub(crate) fn install(dir: &Path, base: i64, replaced: &[i64]) -> io::Result<()> {
    let mut old = replaced.to_vec();
    old.sort_unstable_by(|a, b| b.cmp(a));
    for b in old {
        for ext in EXTS {
            remove_if_exists(&segment_path(dir, b, ext))?;
        }
    }
    for ext in [INDEX_EXT, TIME_INDEX_EXT, LOG_EXT] {
        fs::rename(
            suffixed_path(dir, base, ext, SWAP_SUFFIX),
            segment_path(dir, base, ext),
        )?;
    }
    // Last: while `<b>.log.swap` exists, a `<b>.txnindex.swap` (if any) is the new index.
    install_txn_index(dir, base)?;
    sync_dir(dir)
}

/// Renames `<b>.txnindex.swap` (written only when the cleaned segment has aborted
/// transactions) to its final name.
fn install_txn_index(dir: &Path, base: i64) -> io::Result<()> {
    let swap = suffixed_path(dir, base, TXN_INDEX_EXT, SWAP_SUFFIX);
    if swap.exists() {
        fs::rename(&swap, segment_path(dir, base, TXN_INDEX_EXT))?;
    }
    Ok(())
}

/// The offset after the last whole batch of the file at `path` (`base` if it has none).
fn next_offset_of(path: &Path, base: i64) -> io::Result<i64> {
    let file = fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut walk = HeaderWalk::new(&file, 0, size);
    let mut next = base;
    loop {
        match walk.step()? {
            Step::Batch(_, h) => next = next.max(h.last_offset + 1),
            Step::End => return Ok(next),
            Step::Invalid(pos) => {
                tracing::warn!(file = %path.display(), position = pos, "swap file ends in an invalid batch; recovery will truncate it");
                return Ok(next);
            }
        }
    }
}

/// Parses `<20 digits>.<rest>` into (base, rest).
fn parse_name(name: &str) -> Option<(i64, &str)> {
    let (stem, rest) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, rest))
}

/// Completes every replacement that was committed (a `<b>.log.swap` exists) but not installed
/// when the process stopped. Called by `Log::open` before it lists the segments. Returns the
/// bases of the completed swaps.
pub(crate) fn complete_interrupted_swaps(dir: &Path) -> io::Result<Vec<i64>> {
    let mut swaps = Vec::new();
    let mut logs = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(name) = entry?.file_name().into_string() else {
            continue;
        };
        match parse_name(&name) {
            Some((base, rest)) if rest == format!("{LOG_EXT}.{SWAP_SUFFIX}") => swaps.push(base),
            Some((base, LOG_EXT)) => logs.push(base),
            _ => {}
        }
    }
    swaps.sort_unstable();
    for &base in &swaps {
        let swap = suffixed_path(dir, base, LOG_EXT, SWAP_SUFFIX);
        let end = next_offset_of(&swap, base)?.max(base + 1);
        tracing::warn!(dir = %dir.display(), base, end, "completing an interrupted segment swap of the log cleaner");
        for &old in logs.iter().filter(|&&b| b >= base && b < end) {
            for ext in EXTS {
                remove_if_exists(&segment_path(dir, old, ext))?;
            }
        }
        for ext in [INDEX_EXT, TIME_INDEX_EXT, TXN_INDEX_EXT] {
            remove_if_exists(&segment_path(dir, base, ext))?;
        }
        for ext in [INDEX_EXT, TIME_INDEX_EXT] {
            remove_if_exists(&suffixed_path(dir, base, ext, SWAP_SUFFIX))?;
        }
        fs::rename(&swap, segment_path(dir, base, LOG_EXT))?;
        install_txn_index(dir, base)?;
    }
    if !swaps.is_empty() {
        sync_dir(dir)?;
    }
    Ok(swaps)
}
