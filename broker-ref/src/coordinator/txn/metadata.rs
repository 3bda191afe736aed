//! One transactional id's state (Kafka's `TransactionMetadata`): producer id and epoch, the
//! transaction's partitions, timeout and timestamps, and the state machine
//! Empty → Ongoing → PrepareCommit/PrepareAbort → CompleteCommit/CompleteAbort → Ongoing ...
//! Pure logic; the coordinator persists and writes markers.

use std::collections::BTreeSet;

use odradek::ErrorCode;

/// Transaction states, with the ids Kafka stores in `__transaction_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    /// No transaction open (after InitProducerId).
    Empty,
    /// Partitions were added; data may be written.
    Ongoing,
    /// EndTxn(commit) accepted; markers are being written.
    PrepareCommit,
    /// EndTxn(abort) or a timeout/fence accepted; markers are being written.
    PrepareAbort,
    /// Markers written; committed.
    CompleteCommit,
    /// Markers written; aborted.
    CompleteAbort,
    /// Expired (`transactional.id.expiration.ms`).
    Dead,
    /// Fencing a producer (never persisted by this broker; read for compatibility).
    PrepareEpochFence,
}

impl TxnState {
    /// The id stored in a `TransactionLogValue`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// The state stored as `id`.
    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// Kafka's name (DescribeTransactions, ListTransactions).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }
}

/// A transactional id's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    /// Current producer id.
    pub producer_id: i64,
    /// The producer id before the last rotation (-1: none), for InitProducerId retries.
    pub last_producer_id: i64,
    /// Current epoch (-1 before the first InitProducerId completes).
    pub epoch: i16,
    /// The epoch before the last bump (-1: none), for InitProducerId retries.
    pub last_epoch: i16,
    /// `transaction.timeout.ms` of the producer.
    pub timeout_ms: i32,
    /// State.
    pub state: TxnState,
    /// Partitions of the open (or just completed) transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// When the open transaction started (ms), or -1.
    pub start_ms: i64,
    /// When the state last changed (ms).
    pub last_update_ms: i64,
}

/// Epochs at or above this are exhausted: the next bump rotates the producer id.
const EXHAUSTED_EPOCH: i16 = i16::MAX - 1;

impl TxnMetadata {
    /// A new transactional id with a fresh producer id and no epoch yet.
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            last_producer_id: -1,
            epoch: -1,
            last_epoch: -1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now_ms,
        }
    }

    /// Whether the next InitProducerId must rotate the producer id.
    pub fn epoch_exhausted(&self) -> bool {
        self.epoch >= EXHAUSTED_EPOCH
    }

    /// Checks InitProducerId's optional expected producer id and epoch (KIP-360). `Ok(true)`
    /// means the request is a retry of a bump that already happened: answer with the current
    /// id and epoch without bumping again.
    pub fn check_expected(&self, expected: Option<(i64, i16)>) -> Result<bool, ErrorCode> {
        let Some((pid, epoch)) = expected else {
            return Ok(false);
        };
        if self.epoch == -1 {
            return Ok(false);
        }
        if pid == self.producer_id {
            if epoch == self.epoch {
                return Ok(false);
            }
            if epoch == self.last_epoch {
                return Ok(true);
            }
            return Err(ErrorCode::ProducerFenced);
        }
        if pid == self.last_producer_id && epoch >= EXHAUSTED_EPOCH {
            return Ok(true);
        }
        Err(ErrorCode::ProducerFenced)
    }

    /// Starts a new producer session: the epoch is bumped, or, when the caller passes
    /// `rotated_id` (because the epoch is exhausted), that producer id takes over at epoch 0.
    /// The transaction becomes Empty with `timeout_ms`.
    pub fn init_session(&mut self, timeout_ms: i32, now_ms: i64, rotated_id: Option<i64>) {
        if let Some(id) = rotated_id {
            self.last_producer_id = self.producer_id;
            self.producer_id = id;
            self.last_epoch = -1;
            self.epoch = 0;
        } else {
            self.last_epoch = self.epoch;
            self.epoch = self.epoch.saturating_add(1);
        }
        self.timeout_ms = timeout_ms;
        self.state = TxnState::Empty;
        self.partitions.clear();
        self.start_ms = -1;
        self.last_update_ms = now_ms;
    }

    /// Bumps the epoch to fence the current producer before aborting its transaction (a new
    /// producer took over, or the transaction timed out). At the last epoch the abort uses it.
    pub fn fence(&mut self) {
        if self.epoch < i16::MAX {
            self.last_epoch = self.epoch;
            self.epoch += 1;
        }
    }

    /// Checks the producer id and epoch of AddPartitionsToTxn, AddOffsetsToTxn, EndTxn or a
    /// verification.
    pub fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), ErrorCode> {
        if producer_id != self.producer_id {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if epoch != self.epoch {
            return Err(ErrorCode::ProducerFenced);
        }
        Ok(())
    }

    /// Whether a client request may add partitions now (not while markers are written).
    pub fn can_add_partitions(&self) -> Result<(), ErrorCode> {
        match self.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
                Err(ErrorCode::ConcurrentTransactions)
            }
            TxnState::Dead => Err(ErrorCode::InvalidTxnState),
            _ => Ok(()),
        }
    }

    /// Adds partitions, opening a transaction if none is open. Returns whether anything changed
    /// (a transaction that already holds every partition needs no write).
    pub fn add_partitions(&mut self, partitions: &[(String, i32)], now_ms: i64) -> bool {
        let already = self.state == TxnState::Ongoing
            && partitions.iter().all(|p| self.partitions.contains(p));
        if already {
            return false;
        }
        if self.state != TxnState::Ongoing {
            self.partitions.clear();
            self.start_ms = now_ms;
        }
        self.partitions.extend(partitions.iter().cloned());
        self.state = TxnState::Ongoing;
        self.last_update_ms = now_ms;
        true
    }

    /// What EndTxn(`commit`) should do in the current state: `Ok(true)` to complete the open
    /// transaction, `Ok(false)` when it is a retry of a completed one, else the error.
    pub fn check_end(&self, commit: bool) -> Result<bool, ErrorCode> {
        match (self.state, commit) {
            (TxnState::Ongoing, _) => Ok(true),
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(false),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(ErrorCode::ConcurrentTransactions)
            }
            _ => Err(ErrorCode::InvalidTxnState),
        }
    }

    /// Whether the open transaction ran past its timeout at `now_ms`.
    pub fn timed_out(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing
            && self.start_ms >= 0
            && now_ms.saturating_sub(self.start_ms) > i64::from(self.timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_bump_epochs_and_rotate_exhausted_ids() {
        let mut m = TxnMetadata::new(5, 1000, 0);
        m.init_session(1000, 1, None);
        assert_eq!((m.producer_id, m.epoch), (5, 0));
        m.init_session(1000, 2, None);
        assert_eq!((m.producer_id, m.epoch, m.last_epoch), (5, 1, 0));
        assert_eq!(m.check_expected(Some((5, 1))), Ok(false), "current: bump");
        assert_eq!(m.check_expected(Some((5, 0))), Ok(true), "retry");
        assert_eq!(
            m.check_expected(Some((6, 1))),
            Err(ErrorCode::ProducerFenced)
        );
        m.epoch = EXHAUSTED_EPOCH;
        assert!(m.epoch_exhausted());
        m.init_session(1000, 3, Some(9));
        assert_eq!((m.producer_id, m.epoch, m.last_producer_id), (9, 0, 5));
        assert_eq!(m.check_expected(Some((5, EXHAUSTED_EPOCH))), Ok(true));
    }

    #[test]
    fn transactions_open_end_and_time_out() {
        let mut m = TxnMetadata::new(1, 100, 0);
        m.init_session(100, 0, None);
        assert_eq!(m.check_end(true), Err(ErrorCode::InvalidTxnState));
        assert!(m.add_partitions(&[("t".into(), 0)], 10));
        assert!(!m.add_partitions(&[("t".into(), 0)], 11), "no change");
        assert!(m.add_partitions(&[("t".into(), 1)], 12));
        assert_eq!(
            (m.state, m.start_ms, m.partitions.len()),
            (TxnState::Ongoing, 10, 2)
        );
        assert!(!m.timed_out(110));
        assert!(m.timed_out(111));
        assert_eq!(m.check_end(false), Ok(true));
        m.state = TxnState::CompleteAbort;
        assert_eq!(m.check_end(false), Ok(false), "a retried abort");
        assert_eq!(m.check_end(true), Err(ErrorCode::InvalidTxnState));
        assert_eq!(m.check_producer(1, 0), Ok(()));
        assert_eq!(m.check_producer(1, 1), Err(ErrorCode::ProducerFenced));
        assert_eq!(
            m.check_producer(2, 0),
            Err(ErrorCode::InvalidProducerIdMapping)
        );
        assert!(m.add_partitions(&[("u".into(), 0)], 50));
        assert_eq!(m.partitions.len(), 1, "a new transaction starts empty");
        for id in 0..8 {
            assert_eq!(TxnState::from_id(id).map(TxnState::id), Some(id));
        }
        assert_eq!(TxnState::from_id(8), None);
    }
}
