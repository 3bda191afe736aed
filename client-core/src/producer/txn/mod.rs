//! Transactions (KIP-98, protocol V1): the transaction manager's state and what the sender asks
//! of it.
//!
//! The manager sits beside the sender, inside the producer's shared state. The application's
//! calls (`init_transactions`, `begin_transaction`, `send_offsets_to_transaction`,
//! `commit_transaction`, `abort_transaction`, in `api.rs`) move the state machine; the sender
//! asks it which partitions may be drained (only those the coordinator has added to the
//! transaction, through AddPartitionsToTxn sent by the sender before their first batch), and
//! reports failed batches to it, which make the transaction abortable or the producer fatal.
//! Requests to the coordinators live in `requests.rs`.
//!
//! Protocol V1 means: an explicit AddPartitionsToTxn (v0..=3) before producing to a partition,
//! Produce at most v11, AddOffsetsToTxn + TxnOffsetCommit (at most v4) for consumed offsets, and
//! EndTxn at most v4. Apache Kafka 4.x brokers serve V1 clients whatever `transaction.version`
//! the cluster finalized.

mod api;
mod requests;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use crate::types::TopicPartition;
use crate::{Error, ErrorCode};

/// Highest Produce version of a protocol-V1 transactional producer (v12 makes the broker add
/// partitions to the transaction implicitly, which is protocol V2).
pub(crate) const PRODUCE_MAX_VERSION_V1: i16 = 11;

/// Where a transactional producer is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionState {
    /// `init_transactions` has not completed.
    Uninitialized,
    /// `init_transactions` is running.
    Initializing,
    /// Initialised, no transaction open: `begin_transaction` is allowed.
    Ready,
    /// A transaction is open: `send` and `send_offsets_to_transaction` are allowed.
    InTransaction,
    /// `commit_transaction` is running.
    Committing,
    /// `abort_transaction` is running.
    Aborting,
    /// The open transaction failed: only `abort_transaction` is allowed.
    AbortableError,
    /// The producer cannot continue and must be closed.
    FatalError,
}

/// Everything under the manager's lock.
#[derive(Debug)]
struct Inner {
    state: TransactionState,
    /// Partitions the coordinator has added to the open transaction. Shared with the sender's
    /// drain as a snapshot (copy on write).
    added: Arc<HashSet<TopicPartition>>,
    /// Partitions written to in this transaction and not yet added.
    pending: HashSet<TopicPartition>,
    /// AddOffsetsToTxn succeeded in this transaction (so EndTxn is needed even without data).
    offsets_added: bool,
    /// The error that put the manager in `AbortableError` or `FatalError`.
    error: Option<Error>,
    /// A batch with a sequence number failed for good: after the abort the producer must bump
    /// its epoch (InitProducerId with its current id and epoch, KIP-360) before sending again.
    bump_epoch: bool,
}

/// What the sender may do with queued batches right now.
#[derive(Debug)]
pub(crate) enum DrainPolicy {
    /// Drain batches of these partitions only (the others wait for AddPartitionsToTxn).
    Added(Arc<HashSet<TopicPartition>>),
    /// Fail every batch not yet sent with this error (the transaction is being aborted or has
    /// failed); batches in flight settle normally.
    FailUnsent(Error),
    /// Nothing may be sent (no transaction open).
    Hold,
}

/// An operation running in the background (`init`, `commit`, `abort`): a caller that timed out
/// can call again and wait for the same one.
#[derive(Debug)]
pub(crate) struct PendingOp {
    pub kind: OpKind,
    pub done: watch::Receiver<Option<Arc<crate::Result<()>>>>,
}

/// The operations that run in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    Init,
    Commit,
    Abort,
}

/// The transaction manager of one transactional producer.
#[derive(Debug)]
pub(crate) struct TransactionManager {
    /// `transactional.id`.
    pub transactional_id: String,
    /// `transaction.timeout.ms`.
    pub timeout: Duration,
    inner: Mutex<Inner>,
    /// The transaction coordinator's node id, once found.
    coordinator: Mutex<Option<i32>>,
    /// The background operation in progress, if any.
    pub(crate) op: tokio::sync::Mutex<Option<PendingOp>>,
}

impl TransactionManager {
    /// A manager for `transactional_id`, before `init_transactions`.
    pub fn new(transactional_id: String, timeout: Duration) -> Self {
        TransactionManager {
            transactional_id,
            timeout,
            inner: Mutex::new(Inner {
                state: TransactionState::Uninitialized,
                added: Arc::new(HashSet::new()),
                pending: HashSet::new(),
                offsets_added: false,
                error: None,
                bump_epoch: false,
            }),
            coordinator: Mutex::new(None),
            op: tokio::sync::Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current state.
    pub fn state(&self) -> TransactionState {
        self.lock().state
    }

    /// The error of `AbortableError` / `FatalError`, as the application sees it.
    fn state_error(inner: &Inner) -> Error {
        match &inner.error {
            Some(e) => e.duplicate(),
            None => Error::State(format!("transaction state {:?}", inner.state)),
        }
    }

    /// Whether `send` is allowed: only inside a transaction. Otherwise the error to return
    /// (abortable or fatal after a failure, a state error before `begin_transaction`).
    pub fn check_send(&self) -> crate::Result<()> {
        let inner = self.lock();
        match inner.state {
            TransactionState::InTransaction => Ok(()),
            TransactionState::AbortableError | TransactionState::FatalError => {
                Err(Self::state_error(&inner))
            }
            state => Err(Error::State(format!(
                "send on a transactional producer needs an open transaction \
                 (begin_transaction); state is {state:?}"
            ))),
        }
    }

    /// Notes that `tp` is written to in this transaction; true when it still needs adding.
    pub fn record_partition(&self, tp: &TopicPartition) -> bool {
        let mut inner = self.lock();
        if inner.added.contains(tp) {
            return false;
        }
        inner.pending.insert(tp.clone())
    }

    /// Partitions to add before their batches can be sent (empty outside an open transaction).
    pub fn partitions_to_add(&self) -> Vec<TopicPartition> {
        let inner = self.lock();
        match inner.state {
            TransactionState::InTransaction | TransactionState::Committing => {
                inner.pending.iter().cloned().collect()
            }
            _ => Vec::new(),
        }
    }

    /// The coordinator added `tps` to the transaction.
    fn partitions_added(&self, tps: &[TopicPartition]) {
        let mut inner = self.lock();
        let added = Arc::make_mut(&mut inner.added);
        for tp in tps {
            added.insert(tp.clone());
        }
        for tp in tps {
            inner.pending.remove(tp);
        }
    }

    /// What the sender may drain now.
    pub fn drain_policy(&self) -> DrainPolicy {
        let inner = self.lock();
        match inner.state {
            TransactionState::InTransaction | TransactionState::Committing => {
                DrainPolicy::Added(inner.added.clone())
            }
            TransactionState::Aborting => DrainPolicy::FailUnsent(Error::Transaction {
                abortable: true,
                code: ErrorCode::TransactionAbortable,
                detail: "the transaction was aborted before this record was sent".into(),
            }),
            TransactionState::AbortableError | TransactionState::FatalError => {
                DrainPolicy::FailUnsent(Self::state_error(&inner))
            }
            _ => DrainPolicy::Hold,
        }
    }

    /// A record of the transaction failed for good (`error`); `sequenced` when its batch had
    /// sequence numbers (they are lost, so the epoch must be bumped). A fatal error makes the
    /// producer unusable; any other makes the open transaction abortable. Failures while
    /// aborting change nothing: the transaction is being aborted anyway.
    pub fn batch_failed(&self, error: &Error, sequenced: bool) {
        let mut inner = self.lock();
        if sequenced {
            inner.bump_epoch = true;
        }
        let fatal = error.is_fatal();
        match inner.state {
            TransactionState::FatalError => {}
            _ if fatal => Self::enter_fatal(&mut inner, error),
            TransactionState::InTransaction | TransactionState::Committing => {
                inner.state = TransactionState::AbortableError;
                inner.error = Some(abortable_from(error));
            }
            _ => {}
        }
    }

    /// The producer cannot continue: every later call returns this error.
    pub fn fail_fatal(&self, error: &Error) {
        Self::enter_fatal(&mut self.lock(), error);
    }

    fn enter_fatal(inner: &mut Inner, error: &Error) {
        if inner.state == TransactionState::FatalError {
            return;
        }
        tracing::warn!(error = %error, "transactional producer failed fatally");
        inner.state = TransactionState::FatalError;
        inner.error = Some(match error {
            Error::Transaction { code, detail, .. } => Error::Transaction {
                abortable: false,
                code: *code,
                detail: detail.clone(),
            },
            other => Error::Transaction {
                abortable: false,
                code: other.kafka_code(),
                detail: other.to_string(),
            },
        });
    }

    /// Moves from one of `from` to `to`, or returns the error explaining why not.
    fn transition(&self, from: &[TransactionState], to: TransactionState) -> crate::Result<()> {
        let mut inner = self.lock();
        if from.contains(&inner.state) {
            inner.state = to;
            return Ok(());
        }
        match inner.state {
            TransactionState::FatalError | TransactionState::AbortableError => {
                Err(Self::state_error(&inner))
            }
            state => Err(Error::State(format!(
                "cannot move to {to:?} from {state:?} (allowed from {from:?})"
            ))),
        }
    }

    /// Back to `Ready` after a commit or abort: the next transaction starts empty.
    fn finish_transaction(&self) {
        let mut inner = self.lock();
        if inner.state == TransactionState::FatalError {
            return;
        }
        inner.state = TransactionState::Ready;
        inner.added = Arc::new(HashSet::new());
        inner.pending.clear();
        inner.offsets_added = false;
        inner.error = None;
    }

    /// Whether anything was added to the open transaction (EndTxn is only sent then).
    fn started(&self) -> bool {
        let inner = self.lock();
        !inner.added.is_empty() || inner.offsets_added
    }

    /// Takes the "bump the epoch after the abort" flag.
    fn take_bump_epoch(&self) -> bool {
        std::mem::take(&mut self.lock().bump_epoch)
    }

    fn set_offsets_added(&self) {
        self.lock().offsets_added = true;
    }

    fn coordinator(&self) -> Option<i32> {
        self.coordinator.lock().ok().and_then(|c| *c)
    }

    fn set_coordinator(&self, node: Option<i32>) {
        if let Ok(mut c) = self.coordinator.lock() {
            *c = node;
        }
    }
}

/// The abortable form of a failure inside a transaction (fatal ones stay fatal).
pub(crate) fn abortable_from(error: &Error) -> Error {
    match error {
        Error::Transaction { .. } => error.duplicate(),
        other => Error::Transaction {
            abortable: !other.is_fatal(),
            code: other.kafka_code(),
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    #[test]
    fn send_needs_an_open_transaction() {
        let m = TransactionManager::new("x".into(), Duration::from_secs(60));
        assert!(matches!(m.check_send(), Err(Error::State(_))));
        m.lock().state = TransactionState::InTransaction;
        assert!(m.check_send().is_ok());
    }

    #[test]
    fn partitions_wait_until_added() {
        let m = TransactionManager::new("x".into(), Duration::from_secs(60));
        m.lock().state = TransactionState::InTransaction;
        assert!(m.record_partition(&tp(0)));
        assert!(!m.record_partition(&tp(0)), "already pending");
        assert_eq!(m.partitions_to_add(), vec![tp(0)]);
        match m.drain_policy() {
            DrainPolicy::Added(a) => assert!(a.is_empty()),
            other => panic!("{other:?}"),
        }
        m.partitions_added(&[tp(0)]);
        assert!(m.partitions_to_add().is_empty());
        assert!(!m.record_partition(&tp(0)), "already added");
        match m.drain_policy() {
            DrainPolicy::Added(a) => assert!(a.contains(&tp(0))),
            other => panic!("{other:?}"),
        }
        assert!(m.started());
        m.finish_transaction();
        assert!(!m.started());
        assert_eq!(m.state(), TransactionState::Ready);
    }

    #[test]
    fn failures_are_abortable_unless_fatal() {
        let m = TransactionManager::new("x".into(), Duration::from_secs(60));
        m.lock().state = TransactionState::InTransaction;
        m.batch_failed(&Error::Kafka(ErrorCode::NotEnoughReplicas), true);
        assert_eq!(m.state(), TransactionState::AbortableError);
        let e = m.check_send().unwrap_err();
        assert!(e.is_abortable() && !e.is_fatal(), "{e}");
        assert!(m.take_bump_epoch());
        assert!(!m.take_bump_epoch());
        m.batch_failed(&Error::Kafka(ErrorCode::ProducerFenced), false);
        assert_eq!(m.state(), TransactionState::FatalError);
        let e = m.check_send().unwrap_err();
        assert!(e.is_fatal() && !e.is_abortable(), "{e}");
        assert_eq!(e.kafka_code(), ErrorCode::ProducerFenced);
        m.finish_transaction();
        assert_eq!(m.state(), TransactionState::FatalError, "fatal is final");
    }

    #[test]
    fn aborting_fails_unsent_batches() {
        let m = TransactionManager::new("x".into(), Duration::from_secs(60));
        m.lock().state = TransactionState::Aborting;
        match m.drain_policy() {
            DrainPolicy::FailUnsent(e) => assert!(e.is_abortable()),
            other => panic!("{other:?}"),
        }
        m.batch_failed(&Error::Kafka(ErrorCode::NotEnoughReplicas), false);
        assert_eq!(m.state(), TransactionState::Aborting);
    }
}
