//! Walking a record set: batches back to back, as a Fetch response or a log segment holds them.

use bytes::Bytes;

use super::batch::RecordBatch;
use super::header::MAGIC_V2;
use super::header::{peek_batch_length, peek_magic, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use crate::{Error, Result};

/// Iterates the batches of a record set. A final batch cut short (normal when a fetch hits its
/// byte limit) ends the iteration quietly; [`RecordBatches::truncated_tail`] says how many bytes
/// were left over. A malformed batch is yielded once as an error and ends the iteration.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    data: Bytes,
    pos: usize,
    done: bool,
}

impl RecordBatches {
    /// Walks `data`.
    pub fn new(data: Bytes) -> Self {
        RecordBatches {
            data,
            pos: 0,
            done: false,
        }
    }

    /// Bytes after the last complete batch that were not yielded (a partial batch).
    pub fn truncated_tail(&self) -> usize {
        self.data.len() - self.pos
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        let rest = &self.data[self.pos..];
        let length = peek_batch_length(rest)?;
        if let Some(magic) = peek_magic(rest) {
            if magic != MAGIC_V2 {
                return Some(Err(if (0..MAGIC_V2).contains(&magic) {
                    Error::UnsupportedMessageFormat(magic)
                } else {
                    Error::CorruptBatch(format!("unknown magic byte {magic}"))
                }));
            }
        }
        if length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
            return Some(Err(Error::CorruptBatch(format!(
                "batchLength {length} is smaller than a batch header"
            ))));
        }
        let total = LOG_OVERHEAD + length as usize;
        if rest.len() < total {
            return None;
        }
        let batch = self.data.slice(self.pos..self.pos + total);
        self.pos += total;
        Some(RecordBatch::new(batch))
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.done {
            return None;
        }
        let item = self.next_batch();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}
