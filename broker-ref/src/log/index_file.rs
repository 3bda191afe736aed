//! A file of fixed-size big-endian entries, mirrored in memory.
//!
//! Appends go to memory first; [`IndexFile::write_pending`] writes the entries not yet on disk
//! in one `pwrite` (called on flush, roll and close), so the append path never touches the
//! index files. The files grow as needed (no preallocation), so the file length always equals
//! `entries × SIZE` once pending entries are written. No file handle is kept between writes:
//! the file is opened for a write, truncation or fsync and closed after it, so an idle partition
//! holds one descriptor (its active segment's log), not three. Whether written entries still
//! need an fsync is tracked, so [`IndexFile::sync`] reopens the file when it must.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One fixed-size entry.
pub(crate) trait Entry: Copy {
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Appends the big-endian encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Decodes from exactly `SIZE` bytes.
    fn decode(bytes: &[u8]) -> Self;
}

/// An index file and its entries.
#[derive(Debug)]
pub(crate) struct IndexFile<E> {
    path: PathBuf,
    entries: Vec<E>,
    persisted: usize,
    /// Entries were written since the last fsync.
    unsynced: bool,
}

impl<E: Entry> IndexFile<E> {
    /// Creates (or empties) the file at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(IndexFile {
            path: path.to_path_buf(),
            entries: Vec::new(),
            persisted: 0,
            unsynced: false,
        })
    }

    /// Opens an existing file and decodes every entry. `Ok(None)` if the file is missing or its
    /// length is not a whole number of entries (a torn write); the caller rebuilds it.
    pub(crate) fn open_existing(path: &Path) -> io::Result<Option<Self>> {
        let file = match OpenOptions::new().read(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len % E::SIZE as u64 != 0 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| io::Error::other("index file too large"))?;
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, 0)?;
        let entries: Vec<E> = bytes.chunks_exact(E::SIZE).map(E::decode).collect();
        let persisted = entries.len();
        Ok(Some(IndexFile {
            path: path.to_path_buf(),
            entries,
            persisted,
            unsynced: false,
        }))
    }

    /// Opens the file for one write, truncation or fsync.
    fn open_for_write(&self) -> io::Result<File> {
        OpenOptions::new().write(true).open(&self.path)
    }

    /// All entries, oldest first.
    pub(crate) fn entries(&self) -> &[E] {
        &self.entries
    }

    /// Appends an entry in memory.
    pub(crate) fn push(&mut self, entry: E) {
        self.entries.push(entry);
    }

    /// Keeps the first `len` entries, shortening the file if they were written.
    pub(crate) fn truncate(&mut self, len: usize) -> io::Result<()> {
        if len >= self.entries.len() {
            return Ok(());
        }
        self.entries.truncate(len);
        if self.persisted > len {
            self.open_for_write()?.set_len((len * E::SIZE) as u64)?;
            self.persisted = len;
            self.unsynced = true;
        }
        Ok(())
    }

    /// Writes the entries appended since the last call, in one write.
    pub(crate) fn write_pending(&mut self) -> io::Result<()> {
        if self.persisted == self.entries.len() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity((self.entries.len() - self.persisted) * E::SIZE);
        for e in &self.entries[self.persisted..] {
            e.encode(&mut buf);
        }
        let at = (self.persisted * E::SIZE) as u64;
        self.open_for_write()?.write_all_at(&buf, at)?;
        self.persisted = self.entries.len();
        self.unsynced = true;
        Ok(())
    }

    /// fsyncs what was written since the last fsync (nothing to do if nothing was).
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            self.open_for_write()?.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Removes the file.
    pub(crate) fn delete(self) -> io::Result<()> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
