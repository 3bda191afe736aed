//! The transactional producer's public calls, as in Java's `KafkaProducer` and librdkafka:
//! `init_transactions`, `begin_transaction`, `send_offsets_to_transaction`,
//! `commit_transaction`, `abort_transaction`.
//!
//! Errors are classified for the caller ([`Error::is_fatal`], [`Error::is_abortable`]):
//! a fatal error (fenced by a newer instance, not authorized, unsupported) means close the
//! producer; an abortable one (a failed send inside the transaction, a rejected offset commit)
//! means call `abort_transaction` and carry on; [`Error::Timeout`] means the operation is still
//! running in the background and calling it again waits for the same result;
//! [`Error::State`] means the call was not valid now and nothing changed.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::{OpKind, PendingOp, TransactionManager, TransactionState};

use crate::producer::Producer;
use crate::types::{GroupMetadata, TopicPartition};
use crate::{Error, Result};

type OpResult = Option<Arc<Result<()>>>;

fn op_result(r: &Result<()>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(e) => Err(e.duplicate()),
    }
}

/// The application's form of a failed transactional call: fatal errors make the producer
/// unusable, a timeout stays retriable, anything else makes the transaction abortable.
fn classify_failure(txn: &TransactionManager, error: Error) -> Error {
    if matches!(error, Error::Timeout(_) | Error::State(_) | Error::Closed) {
        return error;
    }
    if error.is_fatal() {
        txn.fail_fatal(&error);
    } else {
        txn.batch_failed(&error, false);
    }
    super::abortable_from(&error)
}

impl Producer {
    fn txn(&self) -> Result<&TransactionManager> {
        self.shared.txn.as_ref().ok_or_else(|| {
            Error::State("not a transactional producer: set transactional.id".into())
        })
    }

    /// The transaction state (`None` for a producer without `transactional.id`).
    pub fn transaction_state(&self) -> Option<TransactionState> {
        self.shared.txn.as_ref().map(TransactionManager::state)
    }

    /// Registers the `transactional.id` with its coordinator and gets a producer id and epoch.
    /// This fences any older producer with the same id (its next request fails with
    /// PRODUCER_FENCED) and aborts a transaction it left open. Call once, before the first
    /// transaction. On [`Error::Timeout`] the registration continues; call again to wait.
    pub async fn init_transactions(&self, timeout: Duration) -> Result<()> {
        let txn = self.txn()?;
        let shared = self.shared.clone();
        self.run_op(OpKind::Init, timeout, &[TransactionState::Uninitialized], TransactionState::Initializing, async move {
            let Some(txn) = shared.txn.as_ref() else {
                return Err(Error::State("not a transactional producer".into()));
            };
            let deadline = Instant::now() + shared.cluster.config().producer.delivery_timeout;
            match txn.init_producer_id(&shared, None, deadline).await {
                Ok(id) => {
                    shared.set_producer_id(id);
                    txn.transition(&[TransactionState::Initializing], TransactionState::Ready)
                }
                Err(e) if e.is_fatal() => {
                    txn.fail_fatal(&e);
                    Err(super::abortable_from(&e))
                }
                Err(e) => {
                    let _ = txn.transition(
                        &[TransactionState::Initializing],
                        TransactionState::Uninitialized,
                    );
                    Err(e)
                }
            }
        })
        .await
        .inspect_err(|e| tracing::debug!(error = %e, transactional_id = %txn.transactional_id, "init_transactions failed"))
    }

    /// Opens a transaction: records sent from now on are committed or aborted together.
    pub fn begin_transaction(&self) -> Result<()> {
        self.txn()?
            .transition(&[TransactionState::Ready], TransactionState::InTransaction)
    }

    /// Adds consumed offsets to the open transaction: they are committed to `group`'s offsets
    /// exactly when the transaction commits (the consume-transform-produce pattern). `offsets`
    /// are the next offsets to consume, per partition. Waits up to `max.block.ms`.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: &[(TopicPartition, i64)],
        group: &GroupMetadata,
    ) -> Result<()> {
        let txn = self.txn()?;
        txn.check_send()?;
        if offsets.is_empty() {
            return Ok(());
        }
        let deadline = Instant::now() + self.shared.cluster.config().producer.max_block;
        txn.add_offsets(&self.shared, &group.group_id, deadline)
            .await
            .map_err(|e| classify_failure(txn, e))?;
        txn.txn_offset_commit(&self.shared, offsets, group, deadline)
            .await
            .map_err(|e| classify_failure(txn, e))
    }

    /// Sends everything still queued, then commits the transaction. If a record of the
    /// transaction failed, nothing is committed and the error is abortable: call
    /// `abort_transaction`. On [`Error::Timeout`] the commit continues; call again to wait.
    pub async fn commit_transaction(&self, timeout: Duration) -> Result<()> {
        let shared = self.shared.clone();
        self.txn()?;
        self.run_op(
            OpKind::Commit,
            timeout,
            &[
                TransactionState::InTransaction,
                TransactionState::Committing,
            ],
            TransactionState::Committing,
            async move {
                let Some(txn) = shared.txn.as_ref() else {
                    return Err(Error::State("not a transactional producer".into()));
                };
                shared.wait_resolved(true).await;
                if matches!(
                    txn.state(),
                    TransactionState::AbortableError | TransactionState::FatalError
                ) {
                    return Err(TransactionManager::state_error(&txn.lock()));
                }
                if txn.started() {
                    let deadline =
                        Instant::now() + shared.cluster.config().producer.delivery_timeout;
                    txn.end_txn(&shared, true, deadline)
                        .await
                        .map_err(|e| classify_failure(txn, e))?;
                }
                txn.finish_transaction();
                Ok(())
            },
        )
        .await
    }

    /// Aborts the open transaction: records not yet sent fail, records already written are
    /// discarded by read_committed consumers. After a failed send whose sequence numbers were
    /// lost, the producer also bumps its epoch. On [`Error::Timeout`] the abort continues;
    /// call again to wait.
    pub async fn abort_transaction(&self, timeout: Duration) -> Result<()> {
        let shared = self.shared.clone();
        self.txn()?;
        self.run_op(
            OpKind::Abort,
            timeout,
            &[
                TransactionState::InTransaction,
                TransactionState::AbortableError,
                TransactionState::Aborting,
            ],
            TransactionState::Aborting,
            async move {
                let Some(txn) = shared.txn.as_ref() else {
                    return Err(Error::State("not a transactional producer".into()));
                };
                // The sender now fails every batch not yet sent; wait for those in flight.
                shared.wake.notify_one();
                shared.wait_resolved(false).await;
                if txn.state() == TransactionState::FatalError {
                    return Err(TransactionManager::state_error(&txn.lock()));
                }
                let deadline = Instant::now() + shared.cluster.config().producer.delivery_timeout;
                if txn.started() {
                    txn.end_txn(&shared, false, deadline)
                        .await
                        .map_err(|e| classify_failure(txn, e))?;
                }
                if txn.take_bump_epoch() {
                    let current = shared.producer_id.lock().ok().and_then(|p| *p);
                    match txn.init_producer_id(&shared, current, deadline).await {
                        Ok(id) => shared.set_producer_id(id),
                        Err(e) => {
                            // Try again on the next abort.
                            txn.lock().bump_epoch = true;
                            return Err(classify_failure(txn, e));
                        }
                    }
                }
                txn.finish_transaction();
                Ok(())
            },
        )
        .await
    }

    /// Runs `body` in the background as operation `kind` (after moving the state from one of
    /// `from` to `to`) and waits up to `timeout` for it. A call for an operation of the same
    /// kind still running waits for that one instead.
    async fn run_op(
        &self,
        kind: OpKind,
        timeout: Duration,
        from: &[TransactionState],
        to: TransactionState,
        body: impl Future<Output = Result<()>> + Send + 'static,
    ) -> Result<()> {
        let txn = self.txn()?;
        let mut rx = {
            let mut slot = txn.op.lock().await;
            let running = match slot.as_ref() {
                Some(op) if op.done.borrow().is_none() => Some(op.kind),
                _ => None,
            };
            match running {
                Some(k) if k == kind => slot.as_ref().map(|op| op.done.clone()),
                Some(k) => {
                    return Err(Error::State(format!(
                        "{k:?} is still running; call it again to wait for it"
                    )))
                }
                None => {
                    // A finished operation of the same kind nobody has collected: a success
                    // is the answer (e.g. a commit that completed after the caller timed out).
                    if let Some(op) = slot.take() {
                        if op.kind == kind {
                            if let Some(r) = op.done.borrow().as_ref() {
                                if r.is_ok() {
                                    return Ok(());
                                }
                            }
                        }
                    }
                    None
                }
            }
        };
        if rx.is_none() {
            txn.transition(from, to)?;
            let (tx, done) = watch::channel::<OpResult>(None);
            tokio::spawn(async move {
                let result = body.await;
                let _ = tx.send(Some(Arc::new(result)));
            });
            *txn.op.lock().await = Some(PendingOp {
                kind,
                done: done.clone(),
            });
            rx = Some(done);
        }
        let Some(mut rx) = rx else {
            return Err(Error::State("no operation to wait for".into()));
        };
        let result = {
            match tokio::time::timeout(timeout, rx.wait_for(|v| v.is_some())).await {
                Err(_) => None,
                Ok(Err(_)) => Some(Err(Error::Closed)),
                Ok(Ok(v)) => Some(v.as_ref().map_or(Err(Error::Closed), |r| op_result(r))),
            }
        };
        let Some(result) = result else {
            return Err(Error::Timeout(format!(
                "{kind:?} did not finish within {timeout:?}; it continues, call again to wait"
            )));
        };
        let mut slot = txn.op.lock().await;
        if slot.as_ref().is_some_and(|op| op.done.same_channel(&rx)) {
            *slot = None;
        }
        result
    }
}
