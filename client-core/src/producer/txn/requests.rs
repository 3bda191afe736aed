//! Requests to the transaction coordinator (InitProducerId, AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn) and to the group coordinator (TxnOffsetCommit), each retried while
//! the error allows: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE rediscover the coordinator,
//! COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS (a previous transaction is still
//! being completed) wait a little, lost connections reconnect. Anything else is returned for
//! the caller to classify.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, EndTxnRequest, GroupId,
    InitProducerIdRequest, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::{Request, StrBytes};

use super::TransactionManager;
use crate::cluster::CoordinatorType;
use crate::producer::shared::Shared;
use crate::types::GroupMetadata;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

/// Highest AddPartitionsToTxn version a client sends (v4+ is the brokers' batched form).
const ADD_PARTITIONS_MAX_VERSION: i16 = 3;
/// Highest EndTxn / TxnOffsetCommit version of transaction protocol V1.
const END_TXN_MAX_VERSION: i16 = 4;
const TXN_OFFSET_COMMIT_MAX_VERSION: i16 = 4;
/// Backoff after CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being
/// written; Java and librdkafka retry quickly too).
const CONCURRENT_TXN_BACKOFF: Duration = Duration::from_millis(20);

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The error of a response with per-partition codes: the first real error (a partition marked
/// OPERATION_NOT_ATTEMPTED failed only because another one did).
fn worst(codes: impl Iterator<Item = i16>) -> ErrorCode {
    let mut result = ErrorCode::NoError;
    for code in codes.map(ErrorCode::from_code) {
        match code {
            ErrorCode::NoError => {}
            ErrorCode::OperationNotAttempted if result == ErrorCode::NoError => result = code,
            ErrorCode::OperationNotAttempted => {}
            other => return other,
        }
    }
    result
}

/// How to react to one failed attempt.
#[derive(Debug)]
enum Next {
    /// Look the coordinator up again, then retry after the backoff.
    Rediscover,
    /// Retry after the backoff (`retry.backoff.ms` doubling per failure in a row).
    Retry,
    /// Retry after this long.
    RetryAfter(Duration),
    /// Give up with this error.
    Fail(Error),
}

fn classify(error: Error) -> Next {
    match error {
        Error::Kafka(ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable) => {
            Next::Rediscover
        }
        Error::Kafka(ErrorCode::ConcurrentTransactions) => Next::RetryAfter(CONCURRENT_TXN_BACKOFF),
        Error::Io(_) | Error::Connection { .. } | Error::Timeout(_) => Next::Rediscover,
        Error::Kafka(code) if code.is_retriable() => Next::Retry,
        other => Next::Fail(other),
    }
}

impl TransactionManager {
    /// Sends `request` to the coordinator of `(kind, key)` (at most `max_version`) until it
    /// succeeds, fails for good, the producer closes or `deadline` passes. `code_of` extracts
    /// the response's error code.
    async fn send_to_coordinator<R: Request<Response: crate::protocol::Throttled>>(
        &self,
        shared: &Shared,
        (kind, key): (CoordinatorType, &str),
        request: &R,
        max_version: i16,
        deadline: Instant,
        code_of: impl Fn(&R::Response) -> ErrorCode,
    ) -> Result<R::Response> {
        // Failed attempts in a row wait retry.backoff.ms doubling to its max (KIP-580).
        let mut retry = crate::cluster::backoff::Retry::default();
        let api = ApiKey::try_from(R::KEY).map_err(|_| Error::UnknownApiKey(R::KEY))?;
        let mut group_coordinator: Option<i32> = None;
        loop {
            let attempt = async {
                let cached = match kind {
                    CoordinatorType::Transaction => self.coordinator(),
                    CoordinatorType::Group => group_coordinator,
                };
                let node = match cached {
                    Some(n) => n,
                    None => {
                        let n = shared.cluster.find_coordinator(kind, key).await?;
                        match kind {
                            CoordinatorType::Transaction => self.set_coordinator(Some(n)),
                            CoordinatorType::Group => group_coordinator = Some(n),
                        }
                        n
                    }
                };
                let conn = shared.cluster.connection(node).await?;
                let version = conn.versions().version(api)?.min(max_version);
                let response = conn.send_versioned(request, version).await?;
                match code_of(&response) {
                    ErrorCode::NoError => Ok(response),
                    code => Err(Error::Kafka(code)),
                }
            };
            let error = match attempt.await {
                Ok(response) => return Ok(response),
                Err(e) => e,
            };
            let wait = match classify(error) {
                Next::Fail(e) => return Err(e),
                Next::Rediscover => {
                    match kind {
                        CoordinatorType::Transaction => self.set_coordinator(None),
                        CoordinatorType::Group => group_coordinator = None,
                    }
                    retry.failed(shared.cluster.config())
                }
                Next::Retry => retry.failed(shared.cluster.config()),
                Next::RetryAfter(d) => d,
            };
            if shared.closing.load(Ordering::Acquire) && shared.pending.load(Ordering::Acquire) == 0
            {
                return Err(Error::Closed);
            }
            if Instant::now() + wait >= deadline {
                return Err(Error::Timeout(format!(
                    "{} to the {kind:?} coordinator did not succeed in time",
                    crate::protocol::api_name(R::KEY)
                )));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The producer id and epoch the coordinator gives this `transactional.id`: a new epoch
    /// fences every older producer with the same id (and aborts its open transaction).
    /// With `current`, asks to bump that id's epoch instead (KIP-360, after lost sequences).
    pub(super) async fn init_producer_id(
        &self,
        shared: &Shared,
        current: Option<(i64, i16)>,
        deadline: Instant,
    ) -> Result<(i64, i16)> {
        let timeout_ms = self.timeout.as_millis().min(i32::MAX as u128) as i32;
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(sb(&self.transactional_id))))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id(ProducerId(current.map_or(-1, |c| c.0)))
            .with_producer_epoch(current.map_or(-1, |c| c.1));
        let response = self
            .send_to_coordinator(
                shared,
                (CoordinatorType::Transaction, &self.transactional_id),
                &request,
                i16::MAX,
                deadline,
                |r| ErrorCode::from_code(r.error_code),
            )
            .await?;
        Ok((response.producer_id.0, response.producer_epoch))
    }

    /// AddPartitionsToTxn for `tps` (the sender calls it before their first batch).
    pub(crate) async fn add_partitions(
        &self,
        shared: &Shared,
        tps: &[TopicPartition],
        deadline: Instant,
    ) -> Result<()> {
        let (pid, epoch) = producer_id(shared)?;
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in tps {
            by_topic.entry(&tp.topic).or_default().push(tp.partition);
        }
        let topics = by_topic
            .into_iter()
            .map(|(t, ps)| {
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(sb(t)))
                    .with_partitions(ps)
            })
            .collect();
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(sb(&self.transactional_id)))
            .with_v3_and_below_producer_id(ProducerId(pid))
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(topics);
        self.send_to_coordinator(
            shared,
            (CoordinatorType::Transaction, &self.transactional_id),
            &request,
            ADD_PARTITIONS_MAX_VERSION,
            deadline,
            |r| match ErrorCode::from_code(r.error_code) {
                ErrorCode::NoError => worst(
                    r.results_by_topic_v3_and_below
                        .iter()
                        .flat_map(|t| t.results_by_partition.iter())
                        .map(|p| p.partition_error_code),
                ),
                code => code,
            },
        )
        .await?;
        self.partitions_added(tps);
        Ok(())
    }

    /// AddOffsetsToTxn: puts the group's `__consumer_offsets` partition in the transaction.
    pub(super) async fn add_offsets(
        &self,
        shared: &Shared,
        group_id: &str,
        deadline: Instant,
    ) -> Result<()> {
        let (pid, epoch) = producer_id(shared)?;
        let request = AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(sb(&self.transactional_id)))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_group_id(GroupId(sb(group_id)));
        self.send_to_coordinator(
            shared,
            (CoordinatorType::Transaction, &self.transactional_id),
            &request,
            i16::MAX,
            deadline,
            |r| ErrorCode::from_code(r.error_code),
        )
        .await?;
        self.set_offsets_added();
        Ok(())
    }

    /// TxnOffsetCommit to the group coordinator: the offsets become visible when the
    /// transaction commits. With the consumer's member id, generation and instance id
    /// (KIP-447), a zombie that lost its partitions is refused.
    pub(super) async fn txn_offset_commit(
        &self,
        shared: &Shared,
        offsets: &[(TopicPartition, i64)],
        group: &GroupMetadata,
        deadline: Instant,
    ) -> Result<()> {
        let (pid, epoch) = producer_id(shared)?;
        let mut by_topic: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, offset) in offsets {
            by_topic.entry(&tp.topic).or_default().push(
                TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(tp.partition)
                    .with_committed_offset(*offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(StrBytes::default())),
            );
        }
        let request = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(sb(&self.transactional_id)))
            .with_group_id(GroupId(sb(&group.group_id)))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_generation_id(group.generation_id)
            .with_member_id(sb(&group.member_id))
            .with_group_instance_id(group.group_instance_id.as_deref().map(sb))
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(t, ps)| {
                        TxnOffsetCommitRequestTopic::default()
                            .with_name(TopicName(sb(t)))
                            .with_partitions(ps)
                    })
                    .collect(),
            );
        self.send_to_coordinator(
            shared,
            (CoordinatorType::Group, &group.group_id),
            &request,
            TXN_OFFSET_COMMIT_MAX_VERSION,
            deadline,
            |r| {
                worst(
                    r.topics
                        .iter()
                        .flat_map(|t| t.partitions.iter())
                        .map(|p| p.error_code),
                )
            },
        )
        .await
        .map(|_| ())
    }

    /// EndTxn: the coordinator writes commit or abort markers to every partition of the
    /// transaction (and to the group's offsets).
    pub(super) async fn end_txn(
        &self,
        shared: &Shared,
        commit: bool,
        deadline: Instant,
    ) -> Result<()> {
        let (pid, epoch) = producer_id(shared)?;
        let request = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(sb(&self.transactional_id)))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_committed(commit);
        self.send_to_coordinator(
            shared,
            (CoordinatorType::Transaction, &self.transactional_id),
            &request,
            END_TXN_MAX_VERSION,
            deadline,
            |r| ErrorCode::from_code(r.error_code),
        )
        .await
        .map(|_| ())
    }
}

/// The producer id and epoch from `init_transactions`.
fn producer_id(shared: &Shared) -> Result<(i64, i16)> {
    shared
        .producer_id
        .lock()
        .ok()
        .and_then(|p| *p)
        .ok_or_else(|| Error::State("init_transactions has not completed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_skips_operation_not_attempted() {
        assert_eq!(worst([0, 0].into_iter()), ErrorCode::NoError);
        assert_eq!(
            worst([55, 29, 0].into_iter()),
            ErrorCode::TopicAuthorizationFailed
        );
        assert_eq!(
            worst([55, 55].into_iter()),
            ErrorCode::OperationNotAttempted
        );
    }

    #[test]
    fn coordinator_errors_rediscover_and_concurrent_transactions_retry() {
        assert!(matches!(
            classify(Error::Kafka(ErrorCode::NotCoordinator)),
            Next::Rediscover
        ));
        assert!(matches!(
            classify(Error::Kafka(ErrorCode::ConcurrentTransactions)),
            Next::RetryAfter(d) if d == CONCURRENT_TXN_BACKOFF
        ));
        assert!(matches!(
            classify(Error::Kafka(ErrorCode::CoordinatorLoadInProgress)),
            Next::Retry
        ));
        assert!(matches!(
            classify(Error::Kafka(ErrorCode::ProducerFenced)),
            Next::Fail(Error::Kafka(ErrorCode::ProducerFenced))
        ));
    }
}
