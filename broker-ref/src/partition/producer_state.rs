//! Per-partition producer state: for each producer id, its epoch and the sequence ranges and
//! offsets of its last five batches, so a retried batch is acknowledged with its original offset
//! instead of being written twice and gaps are refused; and, for transactional producers, the
//! first offset of the transaction open on this partition, which bounds the last stable offset.
//!
//! When a partition opens, the state is loaded from the newest producer snapshot
//! (`partition::snapshot`) and the batch headers and markers of the log after it are replayed
//! (see `partition::txn`), so it survives restarts and the deletion of old segments.

use std::collections::{BTreeSet, HashMap, VecDeque};

use odradek::ErrorCode;

/// How many recent batches per producer are remembered for duplicate detection (Kafka's value,
/// and the reason clients allow at most five in-flight requests with idempotence).
pub const BATCHES_PER_PRODUCER: usize = 5;

/// One remembered batch of a producer (also the unit of a snapshot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SnapshotBatch {
    /// Sequence of its first record.
    pub(crate) first_seq: i32,
    /// Sequence of its last record.
    pub(crate) last_seq: i32,
    /// Offset of its first record.
    pub(crate) base_offset: i64,
}

type BatchMeta = SnapshotBatch;

/// One producer as a snapshot stores it (`partition::snapshot`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProducerSnapshotEntry {
    pub(crate) producer_id: i64,
    pub(crate) epoch: i16,
    pub(crate) coordinator_epoch: i32,
    pub(crate) last_timestamp: i64,
    pub(crate) txn_first_offset: Option<i64>,
    /// At most [`BATCHES_PER_PRODUCER`], oldest first.
    pub(crate) batches: Vec<SnapshotBatch>,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// Epoch of the coordinator that wrote the producer's last marker (-1: none yet).
    coordinator_epoch: i32,
    /// Max timestamp of the producer's last batch.
    last_timestamp: i64,
    /// First offset of the producer's open transaction on this partition.
    txn_first_offset: Option<i64>,
    /// Markers written for the producer since this broker loaded it (not persisted): a
    /// transactional produce verified with the coordinator is appended only if none was
    /// written while it was verified ([`ProducerState::verification_ticket`]).
    markers: u64,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            coordinator_epoch: -1,
            last_timestamp: -1,
            txn_first_offset: None,
            markers: 0,
        }
    }
}

/// What to do with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Write it.
    Append,
    /// Already written at this base offset: acknowledge without writing.
    Duplicate {
        /// Offset of the original write.
        base_offset: i64,
    },
}

/// A written batch, as the producer state records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRecord {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub epoch: i16,
    /// Sequence of the first record, or -1 (a coordinator's transactional offset commit).
    pub first_seq: i32,
    /// Sequence of the last record, or -1.
    pub last_seq: i32,
    /// Offset of the first record.
    pub base_offset: i64,
    /// The batch's max timestamp.
    pub max_timestamp: i64,
    /// Part of a transaction.
    pub transactional: bool,
}

/// One producer as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSummary {
    /// Producer id.
    pub producer_id: i64,
    /// Current epoch.
    pub epoch: i16,
    /// Last sequence written, or -1.
    pub last_sequence: i32,
    /// Max timestamp of its last batch, or -1.
    pub last_timestamp: i64,
    /// Epoch of the coordinator that wrote its last marker, or -1.
    pub coordinator_epoch: i32,
    /// First offset of its open transaction, or -1.
    pub current_txn_start_offset: i64,
}

/// The producer state of one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
    /// (first offset, producer id) of every open transaction.
    ongoing: BTreeSet<(i64, i64)>,
}

/// The sequence after `seq`, wrapping at `i32::MAX` as Kafka does.
fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

impl ProducerState {
    /// Checks a batch from `producer_id`/`epoch` covering sequences `first_seq..=last_seq`.
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<SequenceCheck, ErrorCode> {
        let Some(entry) = self.producers.get(&producer_id) else {
            // Unknown producer (new, or its state aged out): accept any starting sequence.
            return Ok(SequenceCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(ErrorCode::InvalidProducerEpoch);
        }
        if epoch > entry.epoch {
            return if first_seq == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ErrorCode::OutOfOrderSequenceNumber)
            };
        }
        if let Some(b) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
        {
            return Ok(SequenceCheck::Duplicate {
                base_offset: b.base_offset,
            });
        }
        match entry.batches.back() {
            Some(last) if first_seq != next_seq(last.last_seq) => {
                Err(ErrorCode::OutOfOrderSequenceNumber)
            }
            _ => Ok(SequenceCheck::Append),
        }
    }

    /// Checks a transactional batch without sequence numbers (a coordinator's transactional
    /// offset commit): only the epoch matters.
    pub fn check_epoch(&self, producer_id: i64, epoch: i16) -> Result<(), ErrorCode> {
        match self.producers.get(&producer_id) {
            Some(entry) if epoch < entry.epoch => Err(ErrorCode::InvalidProducerEpoch),
            _ => Ok(()),
        }
    }

    /// Records a written batch; a transactional one opens the producer's transaction on this
    /// partition if none is open.
    pub fn record(&mut self, batch: BatchRecord) {
        let entry = self.producers.entry(batch.producer_id).or_default();
        if batch.epoch != entry.epoch {
            entry.batches.clear();
            entry.epoch = batch.epoch;
        }
        entry.last_timestamp = batch.max_timestamp;
        if batch.first_seq >= 0 {
            entry.batches.push_back(BatchMeta {
                first_seq: batch.first_seq,
                last_seq: batch.last_seq,
                base_offset: batch.base_offset,
            });
            while entry.batches.len() > BATCHES_PER_PRODUCER {
                entry.batches.pop_front();
            }
        }
        if batch.transactional && entry.txn_first_offset.is_none() {
            entry.txn_first_offset = Some(batch.base_offset);
            self.ongoing.insert((batch.base_offset, batch.producer_id));
        }
    }

    /// Checks that a marker at producer `epoch` from a coordinator at `coordinator_epoch` may
    /// end `producer_id`'s transaction: a marker older than the producer's epoch is refused, and
    /// so is one from an older coordinator than the one whose marker was written last (a
    /// coordinator that lost its partition, TRANSACTION_COORDINATOR_FENCED).
    pub fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ErrorCode> {
        if self
            .producers
            .get(&producer_id)
            .is_some_and(|e| coordinator_epoch < e.coordinator_epoch)
        {
            return Err(ErrorCode::TransactionCoordinatorFenced);
        }
        self.check_epoch(producer_id, epoch)
    }

    /// Applies a COMMIT or ABORT marker written at `timestamp`: the producer moves to the
    /// marker's epoch (a bumped epoch resets its sequences) and its open transaction, if any,
    /// closes. Returns that transaction's first offset.
    pub fn complete_txn(
        &mut self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        timestamp: i64,
    ) -> Option<i64> {
        let entry = self.producers.entry(producer_id).or_default();
        if epoch != entry.epoch {
            entry.batches.clear();
            entry.epoch = epoch;
        }
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp = timestamp;
        entry.markers += 1;
        let first = entry.txn_first_offset.take()?;
        self.ongoing.remove(&(first, producer_id));
        Some(first)
    }

    /// Whether a transactional batch of `producer_id` at `epoch` must be verified with the
    /// transaction coordinator before it is appended (KIP-890 part 1): `None` when the
    /// producer's transaction at that epoch is already open here, else a ticket that
    /// [`ProducerState::ticket_valid`] checks at the append.
    pub fn verification_ticket(&self, producer_id: i64, epoch: i16) -> Option<u64> {
        match self.producers.get(&producer_id) {
            Some(e) if e.epoch == epoch && e.txn_first_offset.is_some() => None,
            Some(e) => Some(e.markers),
            None => Some(0),
        }
    }

    /// Whether no marker for `producer_id` was written since `ticket` was taken (a verified
    /// batch appended after its transaction's marker would hang a transaction).
    pub fn ticket_valid(&self, producer_id: i64, ticket: u64) -> bool {
        self.producers.get(&producer_id).map_or(0, |e| e.markers) == ticket
    }

    /// First offset of the earliest open transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.iter().next().map(|&(offset, _)| offset)
    }

    /// Every producer, ordered by id.
    pub fn summaries(&self) -> Vec<ProducerSummary> {
        let mut out: Vec<ProducerSummary> = self
            .producers
            .iter()
            .map(|(&id, e)| ProducerSummary {
                producer_id: id,
                epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: e.last_timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.txn_first_offset.unwrap_or(-1),
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }

    /// Every producer, ordered by id, as a snapshot stores it.
    pub(crate) fn snapshot_entries(&self) -> Vec<ProducerSnapshotEntry> {
        let mut out: Vec<ProducerSnapshotEntry> = self
            .producers
            .iter()
            .map(|(&id, e)| ProducerSnapshotEntry {
                producer_id: id,
                epoch: e.epoch,
                coordinator_epoch: e.coordinator_epoch,
                last_timestamp: e.last_timestamp,
                txn_first_offset: e.txn_first_offset,
                batches: e.batches.iter().copied().collect(),
            })
            .collect();
        out.sort_by_key(|e| e.producer_id);
        out
    }

    /// The state a snapshot describes (the open transactions follow from the entries).
    pub(crate) fn from_snapshot_entries(entries: Vec<ProducerSnapshotEntry>) -> ProducerState {
        let mut state = ProducerState::default();
        for e in entries {
            if let Some(first) = e.txn_first_offset {
                state.ongoing.insert((first, e.producer_id));
            }
            let mut batches: VecDeque<BatchMeta> = e.batches.into_iter().collect();
            while batches.len() > BATCHES_PER_PRODUCER {
                batches.pop_front();
            }
            state.producers.insert(
                e.producer_id,
                ProducerEntry {
                    epoch: e.epoch,
                    batches,
                    coordinator_epoch: e.coordinator_epoch,
                    last_timestamp: e.last_timestamp,
                    txn_first_offset: e.txn_first_offset,
                    markers: 0,
                },
            );
        }
        state
    }

    /// Kafka's `removeExpiredProducers` (`producer.id.expiration.ms`): forgets every producer
    /// without an open transaction whose last batch or marker is `expiration_ms` or more older
    /// than `now_ms`. Returns how many were forgotten.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.txn_first_offset.is_some() || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pid: i64, epoch: i16, first: i32, last: i32, offset: i64) -> BatchRecord {
        BatchRecord {
            producer_id: pid,
            epoch,
            first_seq: first,
            last_seq: last,
            base_offset: offset,
            max_timestamp: 1,
            transactional: false,
        }
    }

    #[test]
    fn duplicates_gaps_and_epochs() {
        let mut s = ProducerState::default();
        assert_eq!(s.check(7, 0, 0, 4), Ok(SequenceCheck::Append));
        s.record(rec(7, 0, 0, 4, 100));
        assert_eq!(
            s.check(7, 0, 0, 4),
            Ok(SequenceCheck::Duplicate { base_offset: 100 })
        );
        assert_eq!(
            s.check(7, 0, 6, 9),
            Err(ErrorCode::OutOfOrderSequenceNumber),
            "gap"
        );
        assert_eq!(s.check(7, 0, 5, 9), Ok(SequenceCheck::Append));
        s.record(rec(7, 0, 5, 9, 105));
        assert_eq!(
            s.check(7, 1, 3, 3),
            Err(ErrorCode::OutOfOrderSequenceNumber),
            "new epoch starts at 0"
        );
        assert_eq!(s.check(7, 1, 0, 0), Ok(SequenceCheck::Append));
        s.record(rec(7, 1, 0, 0, 110));
        assert_eq!(
            s.check(7, 0, 10, 10),
            Err(ErrorCode::InvalidProducerEpoch),
            "fenced epoch"
        );
        assert_eq!(
            s.check(8, 3, 42, 50),
            Ok(SequenceCheck::Append),
            "unknown producers may start anywhere"
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record(rec(1, 0, i, i, i64::from(i) * 10));
        }
        assert_eq!(
            s.check(1, 0, 6, 6),
            Ok(SequenceCheck::Duplicate { base_offset: 60 })
        );
        assert_eq!(
            s.check(1, 0, 2, 2),
            Ok(SequenceCheck::Duplicate { base_offset: 20 })
        );
        assert_eq!(
            s.check(1, 0, 1, 1),
            Err(ErrorCode::OutOfOrderSequenceNumber)
        );
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn transactions_bound_the_first_unstable_offset() {
        let mut s = ProducerState::default();
        let txn = |pid, seq, offset| BatchRecord {
            transactional: true,
            ..rec(pid, 0, seq, seq, offset)
        };
        s.record(txn(1, 0, 10));
        s.record(txn(1, 1, 11));
        s.record(txn(2, 0, 12));
        assert_eq!(s.first_unstable_offset(), Some(10));
        assert_eq!(s.summaries()[0].current_txn_start_offset, 10);
        assert_eq!(
            s.verification_ticket(1, 0),
            None,
            "its transaction is open here"
        );
        assert_eq!(s.complete_txn(1, 0, 3, 99), Some(10));
        assert_eq!(s.first_unstable_offset(), Some(12));
        assert_eq!(
            s.check_marker(1, 0, 2),
            Err(ErrorCode::TransactionCoordinatorFenced),
            "a marker from an older coordinator"
        );
        assert_eq!(s.check_marker(1, 0, 3), Ok(()));
        let ticket = s.verification_ticket(1, 0).expect("no open transaction");
        assert!(s.ticket_valid(1, ticket));
        s.complete_txn(1, 0, 3, 100);
        assert!(!s.ticket_valid(1, ticket), "a marker came in between");
        assert_eq!(s.complete_txn(1, 0, 3, 99), None, "already closed");
        assert_eq!(
            s.complete_txn(2, 1, 3, 99),
            Some(12),
            "a bumped-epoch abort"
        );
        assert_eq!(s.first_unstable_offset(), None);
        assert_eq!(
            s.check(2, 0, 1, 1),
            Err(ErrorCode::InvalidProducerEpoch),
            "the old epoch is fenced"
        );
        assert_eq!(
            s.check_marker(2, 0, 3),
            Err(ErrorCode::InvalidProducerEpoch)
        );
        let p2 = s.summaries()[1];
        assert_eq!(
            (p2.epoch, p2.coordinator_epoch, p2.last_sequence),
            (1, 3, -1)
        );
    }

    #[test]
    fn sequences_wrap() {
        let mut s = ProducerState::default();
        s.record(rec(1, 0, i32::MAX - 1, i32::MAX, 0));
        assert_eq!(s.check(1, 0, 0, 3), Ok(SequenceCheck::Append));
    }

    #[test]
    fn idle_producers_expire_unless_in_a_transaction() {
        let mut s = ProducerState::default();
        let mut old = rec(1, 0, 0, 0, 0);
        old.max_timestamp = 1_000;
        s.record(old);
        let mut fresh = rec(2, 0, 0, 0, 1);
        fresh.max_timestamp = 9_500;
        s.record(fresh);
        let mut txn = rec(3, 0, 0, 0, 2);
        txn.max_timestamp = 1_000;
        txn.transactional = true;
        s.record(txn);
        assert_eq!(s.remove_expired(10_000, 5_000), 1);
        let left: Vec<i64> = s.summaries().iter().map(|p| p.producer_id).collect();
        assert_eq!(left, [2, 3]);
        // A retry of the forgotten producer's batch is no longer recognised as a duplicate.
        assert_eq!(s.check(1, 0, 0, 0), Ok(SequenceCheck::Append));
    }
}
