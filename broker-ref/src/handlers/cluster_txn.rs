//! Transactions in cluster mode. A transactional id's coordinator is the leader of its
//! `__transaction_state` partition (`coordinator::txn` follows that leadership); this module
//! adds what a cluster needs around the state machine:
//!
//! - every state change is answered once `__transaction_state` has it in sync (a change the
//!   leader loses before is reported failed, never silently dropped);
//! - the **completer** writes the markers of each persisted Prepare state: one WriteTxnMarkers
//!   per partition leader (the coordinator's own partitions directly), retried on every
//!   retriable error against fresh metadata until all are written or this broker stops
//!   coordinating the id (its successor finds the Prepare state and takes over); then the
//!   Complete state is written and EndTxn answered;
//! - **verification** (KIP-890 part 1): a partition leader appends a transactional batch
//!   whose transaction is not open there only after the coordinator confirmed the partition
//!   is in it (AddPartitionsToTxn v4, `verify_only`), and only if no marker for the producer
//!   was written meanwhile; TxnOffsetCommit is verified the same way by the group
//!   coordinator.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use odradek::ErrorCode;
use tokio::sync::mpsc::UnboundedReceiver;

use super::reply::sb;
use crate::broker::Broker;
use crate::coordinator::txn::{PreparedTxn, TRANSACTION_TOPIC};

/// How long a state change waits for `__transaction_state`'s followers.
const STATE_REPLICATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long EndTxn waits for its markers before answering CONCURRENT_TRANSACTIONS (the
/// client retries, and is answered once they are written).
const END_TXN_WAIT: Duration = Duration::from_secs(10);
/// Pause between two rounds of marker writes that left partitions unwritten.
const MARKER_RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// The `__transaction_state` leader of `txn_id` from the image (-1: none).
fn coordinator_of(broker: &Broker, txn_id: &str) -> i32 {
    let Some(node) = broker.cluster_node() else {
        return broker.node_id;
    };
    let p = broker.txns.partition_for(txn_id);
    node.image.read(|i| {
        i.topics
            .get(TRANSACTION_TOPIC)
            .and_then(|t| t.partitions.get(&p))
            .map_or(-1, |x| x.leader)
    })
}

/// Waits until `__transaction_state` partition `index` is replicated up to its log end (every
/// state written so far is committed). NOT_COORDINATOR when this broker stopped leading it,
/// COORDINATOR_NOT_AVAILABLE when it cannot be replicated in time.
pub async fn state_replicated(broker: &Broker, index: i32) -> Result<(), ErrorCode> {
    let Some(partition) = broker
        .topics
        .get(TRANSACTION_TOPIC)
        .and_then(|t| t.partition(index))
    else {
        return Err(ErrorCode::CoordinatorNotAvailable);
    };
    let end = partition
        .follower_position()
        .map_err(|_| ErrorCode::CoordinatorNotAvailable)?
        .0;
    if end == 0 {
        return Ok(());
    }
    partition
        .wait_replicated(end - 1, STATE_REPLICATION_TIMEOUT)
        .await
        .map_err(|e| match e.code() {
            ErrorCode::NotLeaderOrFollower => ErrorCode::NotCoordinator,
            _ => ErrorCode::CoordinatorNotAvailable,
        })
}

/// Waits for `txn_id`'s state partition; `Err` carries the code to answer instead.
pub async fn state_of_id_replicated(broker: &Broker, txn_id: &str) -> Result<(), ErrorCode> {
    if broker.cluster_node().is_none() || txn_id.is_empty() {
        return Ok(());
    }
    state_replicated(broker, broker.txns.partition_for(txn_id)).await
}

/// EndTxn in cluster mode after the state machine accepted it: waits until the markers are
/// written and the Complete state is replicated.
pub async fn end_txn_completed(broker: &Broker, txn_id: &str) -> Result<(), ErrorCode> {
    broker.txns.wait_completed(txn_id, END_TXN_WAIT).await?;
    state_of_id_replicated(broker, txn_id).await
}

/// Runs the completer: every id received gets its markers written by one task at a time.
pub async fn run_completer(broker: Weak<Broker>, mut ids: UnboundedReceiver<String>) {
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    while let Some(id) = ids.recv().await {
        let Some(b) = broker.upgrade() else {
            return;
        };
        let fresh = in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone());
        if !fresh {
            continue;
        }
        let in_flight = in_flight.clone();
        tokio::spawn(async move {
            complete(&b, &id).await;
            in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            // A new Prepare state may have been handed over while this one finished.
            if b.txns.prepared(&id).is_some() {
                complete(&b, &id).await;
            }
        });
    }
}

/// Drives `txn_id`'s Prepare state to Complete while this broker coordinates it.
async fn complete(broker: &Broker, txn_id: &str) {
    loop {
        let Some(prepared) = broker.txns.prepared(txn_id) else {
            return;
        };
        if let Err(code) = state_replicated(broker, prepared.state_partition).await {
            tracing::debug!(transactional_id = txn_id, error = %code, "prepare state not replicated yet");
            tokio::time::sleep(MARKER_RETRY_BACKOFF).await;
            continue;
        }
        if write_markers(broker, txn_id, &prepared).await {
            broker.txns.markers_written(txn_id, &prepared);
            return;
        }
        tokio::time::sleep(MARKER_RETRY_BACKOFF).await;
    }
}

/// The WriteTxnMarkers request for `partitions` of `prepared`.
fn marker_request(prepared: &PreparedTxn, partitions: &[(String, i32)]) -> WriteTxnMarkersRequest {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t.as_str()).or_default().push(*p);
    }
    WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
        .with_producer_id(ProducerId(prepared.producer_id))
        .with_producer_epoch(prepared.epoch)
        .with_transaction_result(prepared.commit)
        .with_coordinator_epoch(prepared.coordinator_epoch)
        .with_topics(
            topics
                .into_iter()
                .map(|(t, ps)| {
                    WritableTxnMarkerTopic::default()
                        .with_name(TopicName(sb(t)))
                        .with_partition_indexes(ps)
                })
                .collect(),
        )])
}

/// One partition's answer: `Some(true)` written (or needs none), `Some(false)` retry,
/// `None` this coordinator is fenced.
fn marker_outcome(code: ErrorCode) -> Option<bool> {
    match code {
        ErrorCode::NoError => Some(true),
        // A newer producer epoch already ended the transaction there.
        ErrorCode::InvalidProducerEpoch | ErrorCode::ProducerFenced => Some(true),
        ErrorCode::TransactionCoordinatorFenced => None,
        _ => Some(false),
    }
}

/// Writes `prepared`'s markers until every partition has one; false when this broker no
/// longer coordinates the transaction in that state (or was fenced).
async fn write_markers(broker: &Broker, txn_id: &str, prepared: &PreparedTxn) -> bool {
    let Some(node) = broker.cluster_node() else {
        return false;
    };
    let mut remaining: Vec<(String, i32)> = prepared.partitions.clone();
    let mut round = 0u32;
    while !remaining.is_empty() {
        if broker.txns.prepared(txn_id).as_ref() != Some(prepared) {
            return false;
        }
        if round > 0 {
            tokio::time::sleep(MARKER_RETRY_BACKOFF).await;
        }
        round += 1;
        // Partitions of deleted topics need no marker.
        let (by_leader, deleted) = node.image.read(|i| {
            let mut by_leader: HashMap<i32, Vec<(String, i32)>> = HashMap::new();
            let mut deleted = Vec::new();
            for (t, p) in &remaining {
                match i
                    .topics
                    .get(t)
                    .map(|x| x.partitions.get(p).map(|x| x.leader))
                {
                    None | Some(None) => deleted.push((t.clone(), *p)),
                    Some(Some(leader)) if leader >= 0 => {
                        by_leader.entry(leader).or_default().push((t.clone(), *p))
                    }
                    Some(Some(_)) => {}
                }
            }
            (by_leader, deleted)
        });
        remaining.retain(|tp| !deleted.contains(tp));
        let sends = by_leader
            .into_iter()
            .map(|(leader, partitions)| async move {
                let request = marker_request(prepared, &partitions);
                let answer = if leader == broker.node_id {
                    Ok(super::write_txn_markers::apply(broker, &request).await)
                } else {
                    match node.links.as_ref() {
                        Some(links) => links.call(leader, &request, 1).await,
                        None => Err(crate::Error::kafka(
                            ErrorCode::BrokerNotAvailable,
                            "no links",
                        )),
                    }
                };
                (leader, partitions, answer)
            });
        for (leader, partitions, answer) in futures_util::future::join_all(sends).await {
            let codes = match answer {
                Ok(r) => codes_of(&r),
                Err(e) => {
                    tracing::debug!(transactional_id = txn_id, leader, error = %e, "WriteTxnMarkers failed");
                    continue;
                }
            };
            for tp in partitions {
                let code = codes
                    .get(&tp)
                    .copied()
                    .unwrap_or(ErrorCode::UnknownServerError);
                match marker_outcome(code) {
                    Some(true) => remaining.retain(|x| *x != tp),
                    Some(false) => {
                        tracing::debug!(transactional_id = txn_id, leader, topic = %tp.0, partition = tp.1, error = %code, "transaction marker to retry")
                    }
                    None => {
                        tracing::warn!(transactional_id = txn_id, leader, topic = %tp.0, partition = tp.1, "transaction coordinator fenced: a newer coordinator ended this transaction");
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// Per-partition codes of a WriteTxnMarkers answer (one marker).
fn codes_of(r: &WriteTxnMarkersResponse) -> HashMap<(String, i32), ErrorCode> {
    r.markers
        .iter()
        .flat_map(|m| m.topics.iter())
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    (t.name.to_string(), p.partition_index),
                    ErrorCode::from_code(p.error_code),
                )
            })
        })
        .collect()
}

/// Asks `txn_id`'s coordinator whether `partitions` are in the producer's open transaction
/// (AddPartitionsToTxn v4 `verify_only`, or the local state machine when it is here). A
/// coordinator that cannot be asked is NOT_ENOUGH_REPLICAS for each (the producer retries).
pub async fn verify(
    broker: &Broker,
    txn_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &[(String, i32)],
) -> HashMap<(String, i32), ErrorCode> {
    let coordinator = coordinator_of(broker, txn_id);
    if coordinator == broker.node_id && broker.txns.coordinates(txn_id) {
        return partitions
            .iter()
            .map(|tp| {
                let code = broker
                    .txns
                    .verify(txn_id, producer_id, epoch, tp)
                    .err()
                    .unwrap_or(ErrorCode::NoError);
                (tp.clone(), code)
            })
            .collect();
    }
    let unavailable = || {
        partitions
            .iter()
            .map(|tp| (tp.clone(), ErrorCode::NotEnoughReplicas))
            .collect()
    };
    let Some(links) = broker.cluster_node().and_then(|n| n.links.clone()) else {
        return unavailable();
    };
    if coordinator < 0 {
        return unavailable();
    }
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t.as_str()).or_default().push(*p);
    }
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(sb(txn_id)))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch)
            .with_verify_only(true)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        AddPartitionsToTxnTopic::default()
                            .with_name(TopicName(sb(t)))
                            .with_partitions(ps)
                    })
                    .collect(),
            ),
    ]);
    let answer = match links.call(coordinator, &request, 4).await {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(transactional_id = txn_id, coordinator, error = %e, "transaction verification failed");
            return unavailable();
        }
    };
    if answer.error_code != 0 {
        return unavailable();
    }
    let mut codes: HashMap<(String, i32), ErrorCode> = answer
        .results_by_transaction
        .iter()
        .flat_map(|t| t.topic_results.iter())
        .flat_map(|t| {
            t.results_by_partition.iter().map(|p| {
                (
                    (t.name.to_string(), p.partition_index),
                    ErrorCode::from_code(p.partition_error_code),
                )
            })
        })
        .collect();
    for tp in partitions {
        codes
            .entry(tp.clone())
            .or_insert(ErrorCode::NotEnoughReplicas);
    }
    codes
        .into_iter()
        .map(|(tp, code)| {
            // A coordinator that moved or cannot answer yet: retriable for the producer.
            let code = match code {
                ErrorCode::NotCoordinator
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::CoordinatorLoadInProgress => ErrorCode::NotEnoughReplicas,
                other => other,
            };
            (tp, code)
        })
        .collect()
}
