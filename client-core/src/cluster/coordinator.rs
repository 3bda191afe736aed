//! FindCoordinator: which broker coordinates a consumer group or a transactional id.

use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest};
use kafka_protocol::protocol::StrBytes;

use super::view::Cluster;
use crate::{Error, ErrorCode, Result};

/// The kind of coordinator to look up (the request's `key_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordinatorType {
    /// A consumer group's coordinator (key: the group id).
    Group,
    /// A transactional producer's coordinator (key: the `transactional.id`).
    Transaction,
}

impl CoordinatorType {
    fn key_type(self) -> i8 {
        match self {
            CoordinatorType::Group => 0,
            CoordinatorType::Transaction => 1,
        }
    }
}

impl Cluster {
    /// Asks any broker which node coordinates `key`, and makes sure that node is in the
    /// metadata. Errors (COORDINATOR_NOT_AVAILABLE while the internal topic is created,
    /// authorization failures…) are returned as they came; the caller decides to retry.
    pub async fn find_coordinator(&self, kind: CoordinatorType, key: &str) -> Result<i32> {
        self.find_coordinator_asking_other_than(kind, key, None)
            .await
    }

    /// [`Cluster::find_coordinator`], asked of the most responsive broker other than
    /// `exclude` when there is one: a coordinator whose answer is in doubt may not know yet
    /// that it lost the group, and a frozen one leaves the question unanswered.
    pub async fn find_coordinator_asking_other_than(
        &self,
        kind: CoordinatorType,
        key: &str,
        exclude: Option<i32>,
    ) -> Result<i32> {
        let meta = match self.metadata().brokers.is_empty() {
            true => self.refresh().await?,
            false => self.metadata(),
        };
        if meta.brokers.is_empty() {
            return Err(Error::Kafka(ErrorCode::CoordinatorNotAvailable));
        }
        let node = self
            .least_loaded_broker(exclude)
            .ok_or(Error::Kafka(ErrorCode::CoordinatorNotAvailable))?;
        let conn = self.connection(node).await?;
        let version = conn.versions().version(ApiKey::FindCoordinator)?;
        let key_bytes = StrBytes::from_string(key.to_string());
        // v4+ batches keys in `coordinator_keys` (the single `key` field is gone); earlier
        // versions carry one `key`.
        let request = if version >= 4 {
            FindCoordinatorRequest::default()
                .with_key_type(kind.key_type())
                .with_coordinator_keys(vec![key_bytes])
        } else {
            FindCoordinatorRequest::default()
                .with_key(key_bytes)
                .with_key_type(kind.key_type())
        };
        let response = match conn.send_versioned(&request, version).await {
            Ok(r) => r,
            Err(e) => {
                self.on_error(&e);
                return Err(e);
            }
        };
        let (code, coordinator) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.node_id.0),
            None => (response.error_code, response.node_id.0),
        };
        ErrorCode::from_code(code).into_result()?;
        if !self.metadata().brokers.contains_key(&coordinator) {
            self.refresh().await?;
        }
        Ok(coordinator)
    }
}
