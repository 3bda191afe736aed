//! A produce request's record set, in two steps: [`Partition::validate_record_set`] decodes and
//! checks every batch against a snapshot of the log's settings without any lock (the expensive
//! part: decompression, record checks, re-encoding), and [`Partition::append_valid`] checks the
//! producers' sequences and writes the batches under the partition lock. Either every batch is
//! appended or none is.

use bytes::Bytes;
use odradek::records::{RecordBatch, RecordBatches};
use odradek::ErrorCode;

use super::producer_state::{BatchRecord, SequenceCheck};
use super::state::{Partition, ProduceOutcome};
use crate::log::{DecodeBudget, ValidBatch};
use crate::{Error, Result};

/// Every batch of one record set, validated and prepared ([`Partition::validate_record_set`]).
#[derive(Debug)]
pub struct ValidRecordSet {
    batches: Vec<(RecordBatch, ValidBatch)>,
}

/// Splits a record set into its batches; a partial last batch or an empty set is corrupt.
fn split(records: Bytes) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    let mut set = RecordBatches::new(records);
    for batch in set.by_ref() {
        batches.push(batch?);
    }
    if set.truncated_tail() != 0 || batches.is_empty() {
        return Err(Error::kafka(
            ErrorCode::CorruptMessage,
            "record set ends in a partial batch or holds no batch",
        ));
    }
    Ok(batches)
}

impl ValidRecordSet {
    /// The producer id and epoch of the first batch when it is transactional (its partition
    /// must then be in the producer's open transaction).
    pub fn transactional_producer(&self) -> Option<(i64, i16)> {
        self.batches
            .first()
            .filter(|(b, _)| b.is_transactional())
            .map(|(b, _)| (b.producer_id(), b.producer_epoch()))
    }
}

impl Partition {
    /// Validates every batch of a produce request's record set (charging decompression to the
    /// request's `budget`) and prepares it for writing. Holds the log lock only to copy its
    /// settings; call it off the async workers for large or compressed sets.
    pub fn validate_record_set(
        &self,
        records: Bytes,
        now_ms: i64,
        budget: &mut DecodeBudget,
    ) -> Result<ValidRecordSet> {
        let batches = split(records)?;
        let validator = self.log()?.validator();
        let mut valid = Vec::with_capacity(batches.len());
        for batch in batches {
            let checked = validator.validate(&batch, now_ms, budget)?;
            if batch.is_transactional() && !(batch.producer_id() >= 0 && batch.base_sequence() >= 0)
            {
                return Err(Error::kafka(
                    ErrorCode::InvalidRecord,
                    "a transactional batch needs a producer id and sequence",
                ));
            }
            valid.push((batch, checked));
        }
        Ok(ValidRecordSet { batches: valid })
    }

    /// Appends a validated record set: every idempotent batch is checked against the producer
    /// state first (a retry is acknowledged with its original offset, a gap refuses the whole
    /// set), then the batches are written.
    pub fn append_valid(&self, set: ValidRecordSet, now_ms: i64) -> Result<ProduceOutcome> {
        self.append_valid_guarded(set, now_ms, None)
    }

    /// Whether a transactional batch of `producer_id` at `epoch` must be verified with its
    /// coordinator before it is appended (`None`: its transaction is open here), as a ticket
    /// for [`Partition::append_valid_guarded`].
    pub fn verification_ticket(&self, producer_id: i64, epoch: i16) -> Result<Option<u64>> {
        Ok(self.producers()?.verification_ticket(producer_id, epoch))
    }

    /// [`Partition::append_valid`] of a set whose transaction the coordinator verified with
    /// `guard` = (producer id, ticket): refused with INVALID_TXN_STATE if a marker for the
    /// producer was written since the ticket was taken (the transaction ended meanwhile).
    pub fn append_valid_guarded(
        &self,
        set: ValidRecordSet,
        now_ms: i64,
        guard: Option<(i64, u64)>,
    ) -> Result<ProduceOutcome> {
        let mut log = self.log()?;
        let mut producers = self.producers()?;
        if let Some((producer_id, ticket)) = guard {
            if !producers.ticket_valid(producer_id, ticket) {
                return Err(Error::kafka(
                    ErrorCode::InvalidTxnState,
                    format!("the transaction of producer {producer_id} ended while its write was verified"),
                ));
            }
        }
        let mut checks = Vec::with_capacity(set.batches.len());
        for (batch, _) in &set.batches {
            let check = if batch.producer_id() >= 0 && batch.base_sequence() >= 0 {
                producers
                    .check(
                        batch.producer_id(),
                        batch.producer_epoch(),
                        batch.base_sequence(),
                        batch.last_sequence(),
                    )
                    .map_err(|code| {
                        Error::kafka(
                            code,
                            format!("producer {}: {}", batch.producer_id(), code.name()),
                        )
                    })?
            } else {
                SequenceCheck::Append
            };
            checks.push(check);
        }
        let mut first_offset: Option<i64> = None;
        let mut last_offset = -1;
        let mut log_append_time = -1;
        for ((batch, valid), check) in set.batches.into_iter().zip(checks) {
            if let SequenceCheck::Duplicate { base_offset } = check {
                // A retry of a batch already written: acknowledge the original offset.
                first_offset.get_or_insert(base_offset);
                continue;
            }
            let info = log.append_validated(valid, self.leader_epoch(), now_ms)?;
            self.snapshot_if_rolled(&log, &producers, &info);
            if batch.producer_id() >= 0 && batch.base_sequence() >= 0 {
                producers.record(BatchRecord {
                    producer_id: batch.producer_id(),
                    epoch: batch.producer_epoch(),
                    first_seq: batch.base_sequence(),
                    last_seq: batch.last_sequence(),
                    base_offset: info.base_offset,
                    max_timestamp: info.max_timestamp,
                    transactional: batch.is_transactional(),
                });
            }
            log_append_time = info.log_append_time;
            last_offset = info.last_offset;
            first_offset.get_or_insert(info.base_offset);
        }
        self.publish_offsets(&mut log, &producers);
        drop(producers);
        Ok(ProduceOutcome {
            base_offset: first_offset.unwrap_or(-1),
            log_append_time,
            log_start_offset: log.log_start_offset(),
            last_offset: last_offset.max(first_offset.unwrap_or(-1)),
        })
    }

    /// [`Partition::validate_record_set`] then [`Partition::append_valid`], on the caller's
    /// thread, with no decompression budget beyond the per-batch limit (the coordinators'
    /// own writes, tests and benchmarks).
    pub fn append_record_set(&self, records: Bytes, now_ms: i64) -> Result<ProduceOutcome> {
        let set = self.validate_record_set(records, now_ms, &mut DecodeBudget::unlimited())?;
        self.append_valid(set, now_ms)
    }
}
