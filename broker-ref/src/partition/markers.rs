//! Transaction markers in a partition's log: the marker a coordinator writes, finding markers
//! in stored batches, and rebuilding the producer state (sequences, open transactions) from the
//! log at open.

use bytes::Bytes;
use odradek::records::{ControlRecordType, EndTxnMarker, RecordBatch, RecordBatches};

use super::producer_state::{BatchRecord, ProducerState};
use crate::log::{AbortedTxn, Log, ReadInfo};
use crate::Result;

/// A transaction marker to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The producer whose transaction ends.
    pub producer_id: i64,
    /// The producer epoch the coordinator ends it with (may be newer than the data's).
    pub producer_epoch: i16,
    /// Commit (true) or abort.
    pub commit: bool,
    /// The coordinator's epoch.
    pub coordinator_epoch: i32,
}

/// The offset after the last batch of `records` (whole batches as stored).
pub(super) fn end_offset_of(records: &Bytes) -> Option<i64> {
    RecordBatches::new(records.clone())
        .filter_map(|b| b.ok())
        .last()
        .map(|b| b.next_offset())
}

/// The control record of a marker batch.
fn marker_of(batch: &RecordBatch) -> Option<EndTxnMarker> {
    let record = batch.records().ok()?.next()?.ok()?;
    EndTxnMarker::from_record(&record).ok()
}

/// Brings `state` (the producer state of every batch below `from`: a snapshot's, or empty with
/// `from` = the log start offset) up to the log end by replaying the batches from `from`
/// (sequences, epochs and open transactions), and re-adds the aborted-transaction index entries
/// of replayed ABORT markers whose entry was lost in a crash.
pub(super) fn rebuild_producer_state(
    log: &mut Log,
    mut state: ProducerState,
    from: i64,
) -> Result<ProducerState> {
    let mut lost: Vec<AbortedTxn> = Vec::new();
    let end = log.log_end_offset();
    let mut offset = from.max(log.log_start_offset());
    while offset < end {
        let ReadInfo { records, .. } = log.read(offset, 8 << 20, end, true)?;
        let mut progressed = false;
        for batch in RecordBatches::new(records) {
            let batch = batch?;
            let pid = batch.producer_id();
            if pid >= 0 && batch.is_control() {
                if let Some(marker) = marker_of(&batch) {
                    let first = state.complete_txn(
                        pid,
                        batch.producer_epoch(),
                        marker.coordinator_epoch,
                        batch.max_timestamp(),
                    );
                    if let (Some(first), ControlRecordType::Abort) = (first, marker.kind) {
                        let last = batch.base_offset();
                        if !log.has_aborted_txn(last) {
                            let lso = state.first_unstable_offset().unwrap_or(last + 1);
                            lost.push(aborted(pid, first, last, lso));
                        }
                    }
                }
            } else if pid >= 0 && (batch.base_sequence() >= 0 || batch.is_transactional()) {
                state.record(BatchRecord {
                    producer_id: pid,
                    epoch: batch.producer_epoch(),
                    first_seq: batch.base_sequence(),
                    last_seq: batch.last_sequence(),
                    base_offset: batch.base_offset(),
                    max_timestamp: batch.max_timestamp(),
                    transactional: batch.is_transactional(),
                });
            }
            progressed |= batch.next_offset() > offset;
            offset = offset.max(batch.next_offset());
        }
        if !progressed {
            break;
        }
    }
    for entry in lost {
        tracing::info!(dir = %log.dir().display(), marker = entry.last_offset, "re-adding a lost aborted-transaction index entry");
        log.add_aborted_txn(entry)?;
    }
    Ok(state)
}

pub(super) fn aborted(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id,
        first_offset: first,
        last_offset: last,
        last_stable_offset: lso,
    }
}
