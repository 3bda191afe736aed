//! Walking the batches of a segment file: batch headers parsed straight from disk, read in
//! chunks so a walk over many small batches costs few system calls.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use bytes::Bytes;
use odradek::records::{BatchHeaderView, RecordBatch, MAGIC_V2, RECORD_BATCH_OVERHEAD};

pub(crate) use odradek::records::LOG_OVERHEAD;
/// Bytes of a batch header, from baseOffset through recordCount.
pub(crate) const HEADER_SIZE: usize = RECORD_BATCH_OVERHEAD;

/// The fields of a stored batch's header the log needs without decoding records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    /// Offset of the first record.
    pub(crate) base_offset: i64,
    /// Offset of the last record.
    pub(crate) last_offset: i64,
    /// Total size in bytes, the 12-byte log overhead included.
    pub(crate) size: u64,
    /// Leader epoch stamped on append.
    pub(crate) partition_leader_epoch: i32,
    /// Largest timestamp of the batch (the log-append time for such batches).
    pub(crate) max_timestamp: i64,
    /// The attributes field.
    pub(crate) attributes: i16,
}

impl BatchHeader {
    /// Parses the first [`HEADER_SIZE`] bytes of `b`; `None` if they cannot start a v2 batch.
    pub(crate) fn parse(b: &[u8]) -> Option<BatchHeader> {
        let view = BatchHeaderView::new(b).ok()?;
        if view.magic() != MAGIC_V2 {
            return None;
        }
        Some(BatchHeader {
            base_offset: view.base_offset(),
            last_offset: view.last_offset()?,
            size: view.size()? as u64,
            partition_leader_epoch: view.partition_leader_epoch(),
            max_timestamp: view.max_timestamp(),
            attributes: view.attributes().0,
        })
    }

    /// The header of a validated batch view.
    pub(crate) fn of(batch: &RecordBatch) -> BatchHeader {
        BatchHeader {
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            size: batch.size() as u64,
            partition_leader_epoch: batch.partition_leader_epoch(),
            max_timestamp: batch.max_timestamp(),
            attributes: batch.attributes().0,
        }
    }
}

/// Reads byte ranges of a file through a chunk buffer; ranges inside the current chunk are
/// zero-copy slices of it.
pub(crate) struct ChunkReader<'a> {
    file: &'a File,
    end: u64,
    chunk_size: usize,
    chunk: Bytes,
    chunk_start: u64,
}

impl<'a> ChunkReader<'a> {
    /// Reads `file` up to byte `end`, `chunk_size` bytes at a time.
    pub(crate) fn new(file: &'a File, end: u64, chunk_size: usize) -> Self {
        ChunkReader {
            file,
            end,
            chunk_size,
            chunk: Bytes::new(),
            chunk_start: 0,
        }
    }

    /// `len` bytes at `pos`; `None` if they would run past the end.
    pub(crate) fn bytes_at(&mut self, pos: u64, len: usize) -> io::Result<Option<Bytes>> {
        let Some(stop) = pos.checked_add(len as u64).filter(|&s| s <= self.end) else {
            return Ok(None);
        };
        let chunk_end = self.chunk_start + self.chunk.len() as u64;
        if pos < self.chunk_start || stop > chunk_end {
            let size = (len.max(self.chunk_size) as u64).min(self.end - pos);
            let size = usize::try_from(size).map_err(|_| io::Error::other("read too large"))?;
            let mut buf = vec![0u8; size];
            self.file.read_exact_at(&mut buf, pos)?;
            self.chunk = Bytes::from(buf);
            self.chunk_start = pos;
        }
        let at = (pos - self.chunk_start) as usize;
        Ok(Some(self.chunk.slice(at..at + len)))
    }
}

/// One step of a [`HeaderWalk`].
#[derive(Debug)]
pub(crate) enum Step {
    /// A batch starting at this position.
    Batch(u64, BatchHeader),
    /// The walk reached the end exactly.
    End,
    /// Bytes at this position do not form a whole v2 batch (torn or garbage).
    Invalid(u64),
}

/// Walks batch headers from a position to the end of a segment file, without CRC checks.
pub(crate) struct HeaderWalk<'a> {
    reader: ChunkReader<'a>,
    pos: u64,
    end: u64,
}

/// Chunk size for header walks: small, because walks usually cover a few index intervals.
const WALK_CHUNK: usize = 16 * 1024;

impl<'a> HeaderWalk<'a> {
    /// Walks `file` from `pos` to `end`.
    pub(crate) fn new(file: &'a File, pos: u64, end: u64) -> Self {
        HeaderWalk {
            reader: ChunkReader::new(file, end, WALK_CHUNK),
            pos,
            end,
        }
    }

    /// The next batch, or where and why the walk stopped.
    pub(crate) fn step(&mut self) -> io::Result<Step> {
        if self.pos >= self.end {
            return Ok(if self.pos == self.end {
                Step::End
            } else {
                Step::Invalid(self.pos)
            });
        }
        let Some(bytes) = self.reader.bytes_at(self.pos, HEADER_SIZE)? else {
            return Ok(Step::Invalid(self.pos));
        };
        let header = match BatchHeader::parse(&bytes) {
            Some(h) if self.pos + h.size <= self.end => h,
            _ => return Ok(Step::Invalid(self.pos)),
        };
        let at = self.pos;
        self.pos += header.size;
        Ok(Step::Batch(at, header))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odradek::records::{BatchBuilder, Compression};
    use std::io::Write;

    fn batch(base: i64, n: usize) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None).base_offset(base);
        for i in 0..n {
            b.append(1_000 + i as i64, None, Some(b"v"), &[]).unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn walk_reports_batches_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let mut f = File::create(&path).unwrap();
        let (a, b) = (batch(0, 3), batch(3, 2));
        f.write_all(&a).unwrap();
        f.write_all(&b).unwrap();
        f.write_all(&b[..20]).unwrap();
        let f = File::open(&path).unwrap();
        let end = f.metadata().unwrap().len();
        let mut walk = HeaderWalk::new(&f, 0, end);
        match walk.step().unwrap() {
            Step::Batch(0, h) => {
                assert_eq!((h.base_offset, h.last_offset), (0, 2));
                assert_eq!(h.size, a.len() as u64);
                assert_eq!(h.max_timestamp, 1_002);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(walk.step().unwrap(), Step::Batch(p, h) if p == a.len() as u64 && h.last_offset == 4)
        );
        assert!(
            matches!(walk.step().unwrap(), Step::Invalid(p) if p == (a.len() + b.len()) as u64)
        );
        let mut exact = HeaderWalk::new(&f, 0, (a.len() + b.len()) as u64);
        exact.step().unwrap();
        exact.step().unwrap();
        assert!(matches!(exact.step().unwrap(), Step::End));
    }

    #[test]
    fn garbage_headers_are_rejected() {
        assert!(BatchHeader::parse(&[0u8; 61]).is_none());
        let good = batch(7, 1);
        assert!(BatchHeader::parse(&good).is_some());
        let mut bad = good.to_vec();
        bad[16] = 1;
        assert!(BatchHeader::parse(&bad).is_none());
    }
}
