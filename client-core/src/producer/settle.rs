//! Ending a record's or a batch's journey: completed, retried, or failed. Every path that
//! reports an outcome goes through here, so each record leaves `pending` exactly once and a
//! transaction hears of every failure inside it.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::batch::ProducerBatch;
use super::held::HeldRecord;
use super::shared::Shared;
use crate::Error;

/// The broker acknowledged `batch` at `base_offset`.
pub(crate) fn settle_ok(
    shared: &Shared,
    batch: ProducerBatch,
    base_offset: i64,
    log_append_time: i64,
) {
    if let Ok(mut acc) = shared.accumulator.lock() {
        acc.sent_settled(&batch, true);
    }
    shared.settle(batch.record_count(), || {
        batch.complete(base_offset, log_append_time)
    });
}

/// A batch that was in flight failed for good.
pub(crate) fn settle_failed(shared: &Shared, batch: ProducerBatch, error: &Error) {
    if let Ok(mut acc) = shared.accumulator.lock() {
        acc.sent_settled(&batch, false);
    }
    fail_unsent(shared, batch, error);
}

/// Retries a batch (at the front of its partition queue, after `retry.backoff.ms`) while the
/// error is retriable, retries remain and the delivery timeout has not passed; fails it otherwise.
pub(crate) fn retry_or_fail(
    shared: &Shared,
    mut batch: ProducerBatch,
    retriable: bool,
    error: &Error,
) {
    let config = &shared.cluster.config().producer;
    batch.attempts += 1;
    // retry.backoff.ms doubling per attempt up to retry.backoff.max.ms, jittered (KIP-580).
    let cluster_config = shared.cluster.config();
    let retry_at = Instant::now()
        + crate::cluster::backoff::exponential(
            cluster_config.retry_backoff,
            cluster_config.retry_backoff_max,
            batch.attempts,
        );
    let expired = retry_at.duration_since(batch.created) >= config.delivery_timeout;
    if retriable && batch.attempts <= config.retries && !expired {
        tracing::debug!(topic = %batch.tp.topic, partition = batch.tp.partition, attempt = batch.attempts, error = %error, "retrying batch");
        if let Ok(mut acc) = shared.accumulator.lock() {
            acc.sent_settled(&batch, false);
            acc.requeue(batch, retry_at);
        }
        return;
    }
    let error = if expired && retriable {
        Error::Timeout(format!("delivery.timeout.ms passed; last error: {error}"))
    } else {
        error.duplicate()
    };
    sequence_lost(shared, &batch);
    settle_failed(shared, batch, &error);
}

/// A sequenced batch of an idempotent (non-transactional) producer failed for good: its
/// sequence numbers are lost, so the producer bumps its epoch before the next batch.
fn sequence_lost(shared: &Shared, batch: &ProducerBatch) {
    let config = &shared.cluster.config().producer;
    if config.enable_idempotence && batch.sequence.is_some() && shared.txn.is_none() {
        shared.needs_epoch_bump.store(true, Ordering::Release);
    }
}

/// The broker refused `batch` naming the invalid records (Produce `record_errors`, KIP-467).
/// As the Java client and librdkafka do: a listed record fails with the partition's `code`
/// when it is the only one listed, INVALID_RECORD when several are, each with the broker's
/// message for it; every other record fails with [`Error::InvalidDifferentRecord`].
pub(crate) fn fail_with_record_errors(
    shared: &Shared,
    batch: ProducerBatch,
    code: crate::ErrorCode,
    partition_message: Option<&str>,
    record_errors: &[(i32, Option<String>)],
) {
    sequence_lost(shared, &batch);
    if let Ok(mut acc) = shared.accumulator.lock() {
        acc.sent_settled(&batch, false);
    }
    let batch_error = Error::Kafka(code);
    if let Some(txn) = &shared.txn {
        txn.batch_failed(&batch_error, batch.sequence.is_some());
    }
    let listed_code = if record_errors.len() == 1 {
        code
    } else {
        crate::ErrorCode::InvalidRecord
    };
    let error_of = |index: usize| match record_errors
        .iter()
        .find(|(i, _)| usize::try_from(*i).ok() == Some(index))
    {
        Some((_, message)) => Error::KafkaMessage {
            code: listed_code,
            message: message
                .as_deref()
                .or(partition_message)
                .unwrap_or(code.name())
                .to_string(),
        },
        None => Error::InvalidDifferentRecord { code },
    };
    shared.settle(batch.record_count(), || batch.fail_each(error_of));
}

/// Fails a batch that is not in flight (never sent, expired, purged, or its transaction is
/// being aborted); a transaction learns of it (its sequence numbers, if any, are lost).
pub(crate) fn fail_unsent(shared: &Shared, batch: ProducerBatch, error: &Error) {
    if let Some(txn) = &shared.txn {
        txn.batch_failed(error, batch.sequence.is_some());
    }
    shared.settle(batch.record_count(), || batch.fail(error));
}

/// Fails a record that never joined a batch (held past its deadline, purged, or its
/// transaction is being aborted).
pub(crate) fn fail_held(shared: &Shared, record: HeldRecord, error: Error) {
    if let Some(txn) = &shared.txn {
        txn.batch_failed(&error, false);
    }
    let HeldRecord {
        completion, memory, ..
    } = record;
    shared.settle(1, || {
        drop(memory);
        completion.send(Err(error));
    });
}
