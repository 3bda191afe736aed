//! The background task that turns ready batches into Produce requests, one per broker, and
//! completes, retries or fails their records from the responses.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::accumulator::{DrainParams, TxnFilter};
use super::batch::ProducerBatch;
use super::settle::{
    fail_held, fail_unsent, fail_with_record_errors, retry_or_fail, settle_failed, settle_ok,
};
use super::shared::Shared;
use super::txn::{DrainPolicy, PRODUCE_MAX_VERSION_V1};
use crate::cluster::BrokerInfo;
use crate::config::Acks;
use crate::{Error, ErrorCode};

/// Runs until the producer closes and every queued record is resolved.
pub(crate) async fn run(shared: Arc<Shared>) {
    // A transactional producer gets its id from `init_transactions`. InitProducerId runs on a
    // task of its own, so held records and queued batches still expire while it retries.
    if shared.cluster.config().producer.enable_idempotence && shared.txn.is_none() {
        tokio::spawn(init_producer_id(shared.clone()));
    }
    let mut bump: Option<tokio::task::JoinHandle<()>> = None;
    let mut age_refresh_at = Instant::now();
    let mut lanes = Lanes::default();
    loop {
        let notified = shared.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        // A new leader sends the retries waiting out their backoff at once (see `drain`).
        let metadata_changed = shared.cluster.metadata_changed();
        tokio::pin!(metadata_changed);
        metadata_changed.as_mut().enable();
        add_partitions_to_txn(&shared).await;
        if bump.as_ref().is_some_and(|b| b.is_finished()) {
            bump = None;
        }
        let bumping = shared.needs_epoch_bump.load(Ordering::Acquire);
        if bumping && bump.is_none() && in_flight(&shared) == 0 {
            // Every in-flight batch has settled: bump the epoch, restart sequences at 0.
            let shared = shared.clone();
            bump = Some(tokio::spawn(async move {
                init_producer_id(shared.clone()).await;
                if let Ok(mut acc) = shared.accumulator.lock() {
                    acc.reset_sequences();
                }
                shared.needs_epoch_bump.store(false, Ordering::Release);
                shared.wake.notify_one();
            }));
        }
        let (mut next_wake, on_metadata) =
            drain_and_send(&shared, !bumping, &mut age_refresh_at, &mut lanes).await;
        if bumping {
            let soon = Instant::now() + std::time::Duration::from_millis(10);
            next_wake = Some(next_wake.map_or(soon, |w| w.min(soon)));
        }
        let closing = shared.closing.load(Ordering::Acquire);
        if closing && shared.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let woken = async {
            tokio::select! {
                _ = notified => {}
                _ = metadata_changed, if on_metadata => {}
            }
        };
        match next_wake {
            Some(at) => {
                let _ = tokio::time::timeout_at(at.into(), woken).await;
            }
            None => woken.await,
        }
    }
}

/// AddPartitionsToTxn for partitions the open transaction writes to for the first time; their
/// batches wait in the accumulator until it succeeds. A failure makes the transaction
/// abortable (or the producer fatal), which fails those batches.
async fn add_partitions_to_txn(shared: &Shared) {
    let Some(txn) = &shared.txn else { return };
    let partitions = txn.partitions_to_add();
    if partitions.is_empty() {
        return;
    }
    let deadline = Instant::now() + shared.cluster.config().producer.delivery_timeout;
    if let Err(e) = txn.add_partitions(shared, &partitions, deadline).await {
        tracing::debug!(error = %e, "AddPartitionsToTxn failed");
        txn.batch_failed(&e, false);
    }
}

/// Batches sent and not yet settled.
fn in_flight(shared: &Shared) -> usize {
    shared
        .accumulator
        .lock()
        .map(|acc| acc.in_flight())
        .unwrap_or(0)
}

/// Obtains a producer id and epoch (retrying, `retry.backoff.ms` doubling to
/// `retry.backoff.max.ms`, until it succeeds or the producer closes with nothing left to send).
async fn init_producer_id(shared: Arc<Shared>) {
    use kafka_protocol::messages::{InitProducerIdRequest, ProducerId};
    let current = shared.producer_id.lock().ok().and_then(|p| *p);
    let mut retry = crate::cluster::backoff::Retry::default();
    loop {
        let attempt = async {
            let meta = shared.cluster.refresh().await?;
            let node = *meta
                .brokers
                .keys()
                .next()
                .ok_or(Error::Kafka(ErrorCode::BrokerNotAvailable))?;
            let conn = shared.cluster.connection(node).await?;
            let request = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(current.map_or(-1, |c| c.0)))
                .with_producer_epoch(current.map_or(-1, |c| c.1));
            let response = conn.send(&request).await?;
            ErrorCode::from_code(response.error_code).into_result()?;
            Ok::<_, Error>((response.producer_id.0, response.producer_epoch))
        };
        match attempt.await {
            Ok(id) => {
                shared.adopt_producer_id(id);
                tracing::debug!(
                    producer_id = id.0,
                    epoch = id.1,
                    "idempotent producer initialised"
                );
                shared.wake.notify_one();
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "InitProducerId failed; retrying");
                if shared.closing.load(Ordering::Acquire)
                    && shared.pending.load(Ordering::Acquire) == 0
                {
                    return;
                }
                retry.wait(shared.cluster.config()).await;
            }
        }
    }
}

/// Moves held records into batches, expires what waited too long, then (when `send`) sends
/// every ready batch; returns when the sender should look again if nothing wakes it, and
/// whether a metadata update should wake it (a retry that a new leader would release). Metadata
/// older than `metadata.max.age.ms` is refreshed in the background (at most once per
/// `retry.backoff.max.ms`, tracked in `age_refresh_at`).
async fn drain_and_send(
    shared: &Arc<Shared>,
    send: bool,
    age_refresh_at: &mut Instant,
    lanes: &mut Lanes,
) -> (Option<Instant>, bool) {
    let config = &shared.cluster.config().producer;
    let now = Instant::now();
    let policy = shared.txn.as_ref().map(|t| t.drain_policy());
    if let Some(DrainPolicy::FailUnsent(error)) = &policy {
        // The transaction is being aborted or has failed: nothing queued may be sent.
        let held = shared.held.lock().take_all();
        for record in held {
            shared.held.popped();
            fail_held(shared, record, error.duplicate());
        }
        let unsent = shared
            .accumulator
            .lock()
            .map(|mut acc| acc.take_unsent())
            .unwrap_or_default();
        for batch in unsent {
            fail_unsent(shared, batch, error);
        }
        return (None, false);
    }
    let held_wake = super::admission::pump(shared, now);
    let flushing =
        shared.flushing.load(Ordering::Acquire) > 0 || shared.closing.load(Ordering::Acquire);
    let metadata = shared.cluster.metadata();
    let idempotence = config
        .enable_idempotence
        .then(|| shared.producer_id.lock().ok().and_then(|p| *p));
    let txn = match &policy {
        None => TxnFilter::Any,
        Some(DrainPolicy::Added(added)) => TxnFilter::Added(added),
        Some(_) => TxnFilter::Nothing,
    };
    let leader = |topic: &str, partition: i32| metadata.leader(topic, partition);
    let params = DrainParams {
        now,
        flushing,
        linger: config.linger,
        max_request_size: config.max_request_size,
        max_in_flight: shared.cluster.config().max_in_flight,
        idempotence,
        txn,
        leader: &leader,
    };
    let drained = {
        let Ok(mut acc) = shared.accumulator.lock() else {
            return (None, false);
        };
        let expired = Error::Timeout(format!(
            "record expired after delivery.timeout.ms ({:?}) before it could be sent",
            config.delivery_timeout
        ));
        let expired_batches = acc.expire(now, config.delivery_timeout);
        let drained = if send {
            acc.drain(&params)
        } else {
            Default::default()
        };
        drop(acc);
        for batch in expired_batches {
            fail_unsent(shared, batch, &expired);
        }
        drained
    };
    if metadata.age() >= shared.cluster.config().metadata_max_age && now >= *age_refresh_at {
        *age_refresh_at = now + shared.cluster.config().retry_backoff_max;
        refresh_metadata(shared);
    }
    let mut next_wake = drained.next_wake;
    if let Some(at) = held_wake {
        next_wake = Some(next_wake.map_or(at, |w| w.min(at)));
    }
    if drained.unknown_leader {
        shared.cluster.invalidate();
        refresh_metadata(shared);
        let retry = now + shared.cluster.config().retry_backoff;
        next_wake = Some(next_wake.map_or(retry, |w| w.min(retry)));
    }
    // Each broker's lane writes its requests in drain order, so a broker receives a partition's
    // batches in sequence order (idempotence needs that); responses are awaited concurrently.
    for (leader, batches) in drained.by_leader {
        lanes.send(shared, leader, batches);
    }
    // Woken by a metadata update only for a retry in backoff, never while a leader is
    // unknown (the refresh that finds none would wake the sender to ask again at once).
    (next_wake, drained.retry_waiting && !drained.unknown_leader)
}

/// One task per broker that writes that broker's Produce requests in the order they were
/// drained. A broker that is slow to connect, throttles the producer (KIP-219) or has every
/// in-flight slot taken then holds up only the partitions it leads, never the sender loop and
/// the other brokers' partitions. The lanes end with the sender task (their channels close).
#[derive(Default)]
struct Lanes {
    lanes: HashMap<i32, tokio::sync::mpsc::UnboundedSender<Vec<ProducerBatch>>>,
}

impl Lanes {
    fn send(&mut self, shared: &Arc<Shared>, leader: i32, batches: Vec<ProducerBatch>) {
        let lane = self
            .lanes
            .entry(leader)
            .or_insert_with(|| spawn_lane(shared.clone(), leader));
        if let Err(returned) = lane.send(batches) {
            // The lane's task is gone (it never stops on its own): start a new one.
            let lane = spawn_lane(shared.clone(), leader);
            if let Err(tokio::sync::mpsc::error::SendError(batches)) = lane.send(returned.0) {
                let e = Error::Closed;
                for b in batches {
                    retry_or_fail(shared, b, true, &e);
                }
            }
            self.lanes.insert(leader, lane);
        }
    }
}

fn spawn_lane(
    shared: Arc<Shared>,
    leader: i32,
) -> tokio::sync::mpsc::UnboundedSender<Vec<ProducerBatch>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<ProducerBatch>>();
    tokio::spawn(async move {
        while let Some(batches) = rx.recv().await {
            send_to(shared.clone(), leader, batches).await;
        }
    });
    tx
}

/// Writes one Produce request to `leader`, then settles its batches from a spawned task when
/// the response arrives.
async fn send_to(shared: Arc<Shared>, leader: i32, mut batches: Vec<ProducerBatch>) {
    let producer_config = &shared.cluster.config().producer;
    let mut topics: Vec<TopicProduceData> = Vec::new();
    let mut failed_encoding = Vec::new();
    for (i, batch) in batches.iter_mut().enumerate() {
        let records = match batch.encoded() {
            Ok(r) => r,
            Err(e) => {
                failed_encoding.push((i, e));
                continue;
            }
        };
        let data = PartitionProduceData::default()
            .with_index(batch.tp.partition)
            .with_records(Some(records));
        match topics
            .iter_mut()
            .find(|t| t.name.as_str() == batch.tp.topic.as_ref())
        {
            Some(t) => t.partition_data.push(data),
            None => topics.push(
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(batch.tp.topic.to_string())))
                    .with_partition_data(vec![data]),
            ),
        }
    }
    for (i, e) in failed_encoding.into_iter().rev() {
        let batch = batches.remove(i);
        settle_failed(&shared, batch, &e);
    }
    if batches.is_empty() {
        return;
    }
    let transactional_id = shared
        .txn
        .as_ref()
        .map(|t| TransactionalId(StrBytes::from_string(t.transactional_id.clone())));
    // Transaction protocol V1 keeps Produce at v11 (v12 would add partitions implicitly).
    let max_version = match transactional_id {
        Some(_) => PRODUCE_MAX_VERSION_V1,
        None => i16::MAX,
    };
    let request = ProduceRequest::default()
        .with_transactional_id(transactional_id)
        .with_acks(producer_config.acks.wire())
        .with_timeout_ms(
            shared
                .cluster
                .config()
                .request_timeout
                .as_millis()
                .min(i32::MAX as u128) as i32,
        )
        .with_topic_data(topics);
    let connection = match shared.cluster.connection(leader).await {
        Ok(c) => c,
        Err(e) => {
            on_error(&shared, &e);
            for b in batches {
                retry_or_fail(&shared, b, e.is_retriable(), &e);
            }
            shared.wake.notify_one();
            return;
        }
    };
    if producer_config.acks == Acks::None {
        let result = connection.send_no_response(&request).await;
        for b in batches {
            match &result {
                Ok(()) => settle_ok(&shared, b, -1, -1),
                Err(e) => retry_or_fail(&shared, b, e.is_retriable(), e),
            }
        }
        shared.wake.notify_one();
        return;
    }
    let pending = match connection
        .submit_request_capped(&request, max_version)
        .await
    {
        Ok(p) => p,
        Err(e) => {
            on_error(&shared, &e);
            for b in batches {
                retry_or_fail(&shared, b, e.is_retriable(), &e);
            }
            shared.wake.notify_one();
            return;
        }
    };
    tokio::spawn(async move {
        let response = pending.await;
        settle_response(&shared, batches, response);
        shared.wake.notify_one();
    });
}

/// Completes, retries or fails each batch of a Produce request from its response.
fn settle_response(
    shared: &Arc<Shared>,
    batches: Vec<ProducerBatch>,
    response: crate::Result<kafka_protocol::messages::ProduceResponse>,
) {
    let producer_config = &shared.cluster.config().producer;
    match response {
        Err(e) => {
            on_error(shared, &e);
            for b in batches {
                retry_or_fail(shared, b, e.is_retriable(), &e);
            }
        }
        Ok(resp) => {
            let mut results: HashMap<(String, i32), PartitionResult> = HashMap::new();
            let mut hinted: HashSet<(String, i32)> = HashSet::new();
            let endpoints = hint_endpoints(&resp);
            for t in &resp.responses {
                for p in &t.partition_responses {
                    let key = (t.name.to_string(), p.index);
                    let code = ErrorCode::from_code(p.error_code);
                    if matches!(
                        code,
                        ErrorCode::NotLeaderOrFollower | ErrorCode::FencedLeaderEpoch
                    ) && shared.cluster.apply_leader_hint(
                        &key.0,
                        key.1,
                        p.current_leader.leader_id.0,
                        p.current_leader.leader_epoch,
                        &endpoints,
                    ) {
                        hinted.insert(key.clone());
                    }
                    results.insert(
                        key,
                        PartitionResult {
                            code: p.error_code,
                            base_offset: p.base_offset,
                            log_append_time: p.log_append_time_ms,
                            message: p.error_message.as_ref().map(|m| m.to_string()),
                            record_errors: p
                                .record_errors
                                .iter()
                                .map(|r| {
                                    (
                                        r.batch_index,
                                        r.batch_index_error_message.as_ref().map(|m| m.to_string()),
                                    )
                                })
                                .collect(),
                        },
                    );
                }
            }
            for b in batches {
                let key = (b.tp.topic.to_string(), b.tp.partition);
                match results.get(&key) {
                    None => {
                        let e = Error::malformed(
                            "produce response",
                            format!("no result for {}-{}", key.0, key.1),
                        );
                        settle_failed(shared, b, &e);
                    }
                    Some(r) if r.code == 0 => {
                        settle_ok(shared, b, r.base_offset, r.log_append_time)
                    }
                    Some(r)
                        if !r.record_errors.is_empty()
                            && !ErrorCode::from_code(r.code).is_retriable() =>
                    {
                        let code = ErrorCode::from_code(r.code);
                        on_error(shared, &Error::Kafka(code));
                        fail_with_record_errors(
                            shared,
                            b,
                            code,
                            r.message.as_deref(),
                            &r.record_errors,
                        );
                    }
                    Some(r) => {
                        let code = ErrorCode::from_code(r.code);
                        let e = Error::Kafka(code);
                        // A leader hint already moved the partition: retry there directly.
                        if !hinted.contains(&key) {
                            on_error(shared, &e);
                        }
                        // With idempotence, a later batch overtaking a failed earlier one is
                        // refused as out of order; it is retried after the earlier one.
                        let out_of_order = producer_config.enable_idempotence
                            && code == ErrorCode::OutOfOrderSequenceNumber;
                        let unknown_producer = lost_producer_state(shared, &b, code);
                        let retriable = code.is_retriable() || out_of_order || unknown_producer;
                        retry_or_fail(shared, b, retriable, &e);
                    }
                }
            }
        }
    }
}

/// UNKNOWN_PRODUCER_ID for a sequenced batch of an idempotent, non-transactional producer:
/// the broker lost the producer's state (its batches left the log, or an unclean leader
/// election), so, as the Java client does (KIP-360), the producer bumps its epoch, restarts
/// every partition's sequence at 0 once nothing is in flight, and the batch is retried within
/// `delivery.timeout.ms` instead of failing. A transactional producer's batch fails and makes
/// the transaction abortable; the abort bumps the epoch.
fn lost_producer_state(shared: &Shared, batch: &ProducerBatch, code: ErrorCode) -> bool {
    let lost = code == ErrorCode::UnknownProducerId
        && shared.cluster.config().producer.enable_idempotence
        && shared.txn.is_none()
        && batch.sequence.is_some();
    if lost {
        shared.needs_epoch_bump.store(true, Ordering::Release);
    }
    lost
}

/// What a Produce response said about one partition.
struct PartitionResult {
    code: i16,
    base_offset: i64,
    log_append_time: i64,
    /// The partition's error message (Kafka sets one for record validation errors).
    message: Option<String>,
    /// The records the broker refused, by batch index, with its message for each (KIP-467).
    record_errors: Vec<(i32, Option<String>)>,
}

/// Marks the metadata stale when `error` says it is, and refreshes it in the background: `send`
/// keeps using the cached topics meanwhile, so nothing else would refresh it before the retry.
fn on_error(shared: &Arc<Shared>, error: &Error) {
    let invalidates = match error {
        Error::Kafka(code) => code.invalidates_metadata(),
        Error::Connection { .. } | Error::Io(_) | Error::Timeout(_) => true,
        _ => false,
    };
    shared.cluster.on_error(error);
    if invalidates {
        refresh_metadata(shared);
    }
}

/// Refreshes the metadata from a task of its own (concurrent refreshes share one request).
fn refresh_metadata(shared: &Arc<Shared>) {
    let cluster = shared.cluster.clone();
    tokio::spawn(async move {
        let _ = cluster.refresh().await;
    });
}

/// The broker endpoints a Produce response carries for its leader hints (KIP-951, v10+).
fn hint_endpoints(resp: &kafka_protocol::messages::ProduceResponse) -> Vec<BrokerInfo> {
    BrokerInfo::hinted(
        resp.node_endpoints
            .iter()
            .map(|n| (n.node_id.0, n.host.as_str(), n.port, n.rack.as_deref())),
    )
}
