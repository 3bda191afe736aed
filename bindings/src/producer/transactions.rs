//! Transactions for the shells: the core's transactional producer calls, with errors mapped
//! once. The returned futures borrow the client; shells wait on them the way they
//! wait on `flush` (Python: GIL released, Ctrl-C checked; C: blocking; Node: a Promise).

use std::time::Duration;

use odradek::producer::{GroupMetadata, TopicPartition};

use super::ProducerClient;
use crate::{ClientError, Stage};

/// The consumer-group identity a transaction commits offsets for (KIP-447): a consumer's
/// `group_metadata()` in every shell. The core's [`GroupMetadata`], named for the shells.
pub type TxnGroupMetadata = GroupMetadata;

fn mapped(e: &odradek::Error) -> ClientError {
    ClientError::from_core(e, Stage::Request)
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
            .send_offsets_to_transaction(offsets, group)
            .await
            .map_err(|e| mapped(&e))
    }

    /// `commit_transaction`: delivers every record produced in the transaction, then commits it.
    /// Delivery reports of its records are served by the next `poll` as usual.
    pub async fn commit_transaction(&self, timeout: Duration) -> Result<(), ClientError> {
        self.check_usable()?;
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
