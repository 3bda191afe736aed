//! Transactions: the bindings' transactional calls, run on the shared runtime.

use std::time::Duration;

use super::NativeProducer;
use crate::spawn::on_runtime;
use crate::{GroupMetadata, NativeError, OffsetCommit};

#[uniffi::export]
impl NativeProducer {
    /// Registers `transactional.id` with its coordinator, fencing older instances; call once
    /// before the first transaction.
    pub async fn init_transactions(&self, timeout_ms: u64) -> Result<(), NativeError> {
        let c = self.client.clone();
        let t = Duration::from_millis(timeout_ms);
        Ok(on_runtime(async move { c.init_transactions(t).await }).await??)
    }

    /// Starts a transaction: records sent from now on belong to it.
    pub fn begin_transaction(&self) -> Result<(), NativeError> {
        Ok(self.client.begin_transaction()?)
    }

    /// Commits a consumer's positions atomically with the transaction.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: Vec<OffsetCommit>,
        group: GroupMetadata,
    ) -> Result<(), NativeError> {
        let c = self.client.clone();
        let list: Vec<_> = offsets
            .iter()
            .map(|o| (o.partition.to_core(), o.offset))
            .collect();
        let group = group.to_core();
        Ok(on_runtime(async move { c.send_offsets_to_transaction(&list, &group).await }).await??)
    }

    /// Delivers every record of the transaction, then commits it.
    pub async fn commit_transaction(&self, timeout_ms: u64) -> Result<(), NativeError> {
        let c = self.client.clone();
        let t = Duration::from_millis(timeout_ms);
        Ok(on_runtime(async move { c.commit_transaction(t).await }).await??)
    }

    /// Aborts the transaction: its records are dropped (their reports carry an error).
    pub async fn abort_transaction(&self, timeout_ms: u64) -> Result<(), NativeError> {
        let c = self.client.clone();
        let t = Duration::from_millis(timeout_ms);
        Ok(on_runtime(async move { c.abort_transaction(t).await }).await??)
    }
}
