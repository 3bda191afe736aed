//! A file of fixed-size big-endian entries, mirrored in memory.
//!
//! Appends go to memory first; [`IndexFile::write_pending`] writes the entries not yet on disk
//! in one `pwrite` (called on flush, roll and close), so the append path never touches the
//! index files. The files grow as needed (no preallocation), so the file length always equals
//! `entries × SIZE` once pending entries are written. Sealed segments release their index file
//! handles ([`IndexFile::release`]); a handle is reopened only if the file must change again.

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
    file: Option<File>,
    entries: Vec<E>,
    persisted: usize,
}

impl<E: Entry> IndexFile<E> {
    /// Creates (or empties) the file at `path`.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(IndexFile {
            path: path.to_path_buf(),
            file: Some(file),
            entries: Vec::new(),
            persisted: 0,
        })
    }

    /// Opens an existing file and decodes every entry. `Ok(None)` if the file is missing or its
    /// length is not a whole number of entries (a torn write); the caller rebuilds it.
    pub(crate) fn open_existing(path: &Path) -> io::Result<Option<Self>> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
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
            file: Some(file),
            entries,
            persisted,
        }))
    }

    /// The open file handle, reopening the file if it was released.
    fn handle(&mut self) -> io::Result<&File> {
        if self.file.is_none() {
            let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
            self.file = Some(file);
        }
        self.file
            .as_ref()
            .ok_or_else(|| io::Error::other("index file handle missing"))
    }

    /// Closes the file handle (entries stay in memory). Pending entries must be written first.
    pub(crate) fn release(&mut self) {
        if self.persisted == self.entries.len() {
            self.file = None;
        }
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
            self.handle()?.set_len((len * E::SIZE) as u64)?;
            self.persisted = len;
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
        self.handle()?.write_all_at(&buf, at)?;
        self.persisted = self.entries.len();
        Ok(())
    }

    /// fsyncs the file's data (a released handle had nothing pending and was synced before).
    pub(crate) fn sync(&self) -> io::Result<()> {
        match &self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }

    /// Removes the file.
    pub(crate) fn delete(self) -> io::Result<()> {
        drop(self.file);
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
