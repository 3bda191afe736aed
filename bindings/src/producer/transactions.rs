//! Transactions for the shells: the core's transactional producer calls, after the binding's own
//! backlog (records accepted by `produce` but not yet handed to the core) has drained, with
//! errors mapped once. The returned futures borrow the client; shells wait on them the way they
//! wait on `flush` (Python: GIL released, Ctrl-C checked; C: blocking; Node: a Promise).

use std::sync::atomic::Ordering;
use std::time::Duration;

use odradek::producer::{GroupMetadata, TopicPartition};

use super::{Inner, ProducerClient};
use crate::{ClientError, Stage};

/// The consumer-group identity a transaction commits offsets for (KIP-447): a consumer's
/// `group_metadata()` in every shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnGroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The member id of the consumer ("" when unknown).
    pub member_id: String,
    /// The generation of that membership (-1 when unknown).
    pub generation_id: i32,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
}

impl From<&TxnGroupMetadata> for GroupMetadata {
    fn from(m: &TxnGroupMetadata) -> Self {
        GroupMetadata {
            group_id: m.group_id.clone(),
            member_id: m.member_id.clone(),
            generation_id: m.generation_id,
            group_instance_id: m.group_instance_id.clone(),
        }
    }
}

fn mapped(e: &odradek::Error) -> ClientError {
    ClientError::from_core(e, Stage::Request)
}

/// Hands the binding's backlog to the core so a commit covers every record produced before it.
async fn drain_backlog<T>(inner: &Inner<T>) {
    while inner.backlog_count.load(Ordering::Acquire) > 0 {
        inner.core.flush().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

impl<T: Send + Unpin + 'static> ProducerClient<T> {
    /// `init_transactions`: registers `transactional.id` with its coordinator, fencing older
    /// instances, and aborts a transaction they left open. Call once, before the first
    /// `begin_transaction`; on a timeout, call again to keep waiting for the same operation.
    pub async fn init_transactions(&self, timeout: Duration) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner
            .core
            .init_transactions(timeout)
            .await
            .map_err(|e| mapped(&e))
    }

    /// `begin_transaction`: records produced from now on belong to the transaction.
    pub fn begin_transaction(&self) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner.core.begin_transaction().map_err(|e| mapped(&e))
    }

    /// `send_offsets_to_transaction`: commits a consumer's positions (the next offset to read per
    /// partition) atomically with the transaction.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: &[(TopicPartition, i64)],
        group: &TxnGroupMetadata,
    ) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner
            .core
            .send_offsets_to_transaction(offsets, &GroupMetadata::from(group))
            .await
            .map_err(|e| mapped(&e))
    }

    /// `commit_transaction`: delivers every record produced in the transaction, then commits it.
    /// Delivery reports of its records are served by the next `poll` as usual.
    pub async fn commit_transaction(&self, timeout: Duration) -> Result<(), ClientError> {
        self.check_usable()?;
        let drained = tokio::time::timeout(timeout, drain_backlog(&self.inner)).await;
        if drained.is_err() {
            return Err(mapped(&odradek::Error::Timeout(format!(
                "records produced in the transaction were not handed over within {timeout:?}"
            ))));
        }
        self.inner
            .core
            .commit_transaction(timeout)
            .await
            .map_err(|e| mapped(&e))
    }

    /// `abort_transaction`: drops the transaction's records (their delivery reports carry
    /// an error) and aborts it.
    pub async fn abort_transaction(&self, timeout: Duration) -> Result<(), ClientError> {
        self.check_usable()?;
        self.inner
            .core
            .abort_transaction(timeout)
            .await
            .map_err(|e| mapped(&e))
    }
}
