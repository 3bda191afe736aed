//! Validating and preparing a client batch away from the partition lock.
//!
//! Validation decodes every record (decompressing the batch) and preparation may re-encode it:
//! the expensive part of an append. A [`Validator`] is a snapshot of a log's settings taken
//! under the lock; the work then runs without it (on a blocking-pool thread for the produce
//! path), and [`crate::log::Log::append_validated`] only writes the result, checking the batch
//! again only if the settings changed in between.

use bytes::Bytes;
use odradek::records::{Compression, RecordBatch};

use super::budget::DecodeBudget;
use super::config::LogConfig;
use super::prepare::{self, Prepared};
use super::validate::{validate_batch_for, AppendOrigin, PartitionName, ValidatedBatch};
use crate::Result;

/// A log's settings at one moment, for validating batches without holding the log.
#[derive(Debug, Clone)]
pub struct Validator {
    pub(crate) config: LogConfig,
    /// The log's settings generation the snapshot was taken at.
    pub(crate) generation: u64,
    /// The log's topic and partition, named in record errors.
    pub(crate) topic: String,
    pub(crate) partition: i32,
}

/// A client batch that passed validation against a log's settings ([`Validator::validate`]),
/// prepared for writing. [`crate::log::Log::append_validated`] appends it without checking it
/// again, unless the log's settings changed in between.
#[derive(Debug)]
pub struct ValidBatch {
    /// The batch as the client sent it (validated again if the settings changed).
    pub(crate) original: Bytes,
    pub(crate) prepared: Prepared,
    pub(crate) config_generation: u64,
}

impl ValidBatch {
    /// What validation learned.
    pub fn info(&self) -> &ValidatedBatch {
        &self.prepared.validated
    }

    /// The batch as the client sent it.
    pub fn as_bytes(&self) -> &Bytes {
        &self.original
    }
}

impl Validator {
    /// The settings batches are checked against.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Validates one client batch at broker time `now_ms` and prepares it (timestamp type,
    /// re-encoding for the topic's `compression.type`), charging every decompression to
    /// `budget`. Never panics on hostile input.
    pub fn validate(
        &self,
        batch: &RecordBatch,
        now_ms: i64,
        budget: &mut DecodeBudget,
    ) -> Result<ValidBatch> {
        let original = batch.as_bytes().clone();
        let info = validate_batch_for(
            &original,
            &self.config,
            now_ms,
            AppendOrigin::Client,
            PartitionName(&self.topic, self.partition),
            budget,
        )?;
        if info.compression != Compression::None && prepare::needs_rebuild(&info, &self.config) {
            // Re-encoding decompresses the batch a second time.
            if budget.batch_limit() < info.decoded_bytes {
                budget.exhaust();
                return Err(budget.exceeded_error());
            }
            budget.charge(info.decoded_bytes);
        }
        let prepared = prepare::prepare_validated(original.clone(), info, &self.config, now_ms)?;
        Ok(ValidBatch {
            original,
            prepared,
            config_generation: self.generation,
        })
    }
}
