//! Transactional offset commits seen while replaying `__consumer_offsets` at startup: held per
//! producer until the transaction's marker publishes (COMMIT) or drops (ABORT) them; those still
//! open at the end of the replay stay pending.

use std::collections::HashMap;

use odradek::records::{ControlRecordType, EndTxnMarker, RecordBatch};

use super::storage::CommittedOffset;
use super::types::TopicPartitionKey;

/// Pending offsets of one group, by producer id.
pub(super) type PendingByProducer = HashMap<i64, HashMap<TopicPartitionKey, CommittedOffset>>;

/// A transactional offset record: group, partition, offset.
type PendingRecord = (String, TopicPartitionKey, CommittedOffset);

/// Transactional offsets seen while replaying `__consumer_offsets`, until their marker.
#[derive(Debug, Default)]
pub(super) struct ReplayPending {
    /// (offsets partition, producer id) → records in log order.
    open: HashMap<(i32, i64), Vec<PendingRecord>>,
}

impl ReplayPending {
    /// A transactional offset record.
    pub(super) fn add(
        &mut self,
        partition: i32,
        producer_id: i64,
        group: String,
        tp: TopicPartitionKey,
        offset: CommittedOffset,
    ) {
        self.open
            .entry((partition, producer_id))
            .or_default()
            .push((group, tp, offset));
    }

    /// A control batch: a COMMIT publishes the producer's pending offsets, an ABORT drops them.
    pub(super) fn on_marker(
        &mut self,
        partition: i32,
        batch: &RecordBatch,
        offsets: &mut HashMap<String, HashMap<TopicPartitionKey, CommittedOffset>>,
    ) {
        let Some(commit) = marker_is_commit(batch) else {
            return;
        };
        let Some(list) = self.open.remove(&(partition, batch.producer_id())) else {
            return;
        };
        if commit {
            for (group, tp, offset) in list {
                offsets.entry(group).or_default().insert(tp, offset);
            }
        }
    }

    /// What is still open after the replay, by group.
    pub(super) fn into_open(self) -> HashMap<String, PendingByProducer> {
        let mut out: HashMap<String, PendingByProducer> = HashMap::new();
        for ((_, pid), list) in self.open {
            for (group, tp, offset) in list {
                out.entry(group)
                    .or_default()
                    .entry(pid)
                    .or_default()
                    .insert(tp, offset);
            }
        }
        out
    }
}

/// `Some(true)` for a COMMIT marker batch, `Some(false)` for ABORT, `None` otherwise.
fn marker_is_commit(batch: &RecordBatch) -> Option<bool> {
    let record = batch.records().ok()?.next()?.ok()?;
    match EndTxnMarker::from_record(&record).ok()?.kind {
        ControlRecordType::Commit => Some(true),
        ControlRecordType::Abort => Some(false),
        ControlRecordType::Unknown(_) => None,
    }
}
