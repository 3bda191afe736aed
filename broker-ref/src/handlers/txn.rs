//! Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
//! DescribeTransactions, ListTransactions and DescribeProducers. The state machine lives in
//! `coordinator::txn`; this module decodes, checks partitions and maps errors per version.
//!
//! AddPartitionsToTxn v0-3 is the client form (one transaction); v4+ is the batched form
//! brokers send each other (KIP-890), with `verify_only` asking whether partitions are already
//! in the transaction. Both are answered; clients of transaction protocol V1 (this broker does
//! not finalize `transaction.version` 2) use v0-3.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState as ProducerStateEntry, TopicResponse,
};
use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTxn,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedTxn;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;
use odradek::ErrorCode;

use super::cluster_txn;
use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::coordinator::txn::TxnView;
use crate::coordinator::TxnCommit;
use crate::coordinator::OFFSETS_TOPIC;

/// PRODUCER_FENCED (KIP-588) for versions that know it, INVALID_PRODUCER_EPOCH before.
pub(crate) fn fenced_for(code: ErrorCode, version: i16, first_version: i16) -> ErrorCode {
    if code == ErrorCode::ProducerFenced && version < first_version {
        ErrorCode::InvalidProducerEpoch
    } else {
        code
    }
}

/// The partitions of a request, and whether each exists.
fn known_partitions(
    broker: &Broker,
    topics: &[AddPartitionsToTxnTopic],
) -> Vec<((String, i32), bool)> {
    let mut out = Vec::new();
    for t in topics {
        let topic = broker.topics.get(&t.name);
        for &p in &t.partitions {
            let known = topic.as_ref().is_some_and(|t| t.partition(p).is_some());
            out.push(((t.name.to_string(), p), known));
        }
    }
    out
}

/// Per-topic results from per-partition codes.
fn topic_results(codes: Vec<((String, i32), ErrorCode)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, p), code) in codes {
        let r = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(p)
            .with_partition_error_code(code.code());
        match out.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(t) => t.results_by_partition.push(r),
            None => out.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(sb(topic)))
                    .with_results_by_partition(vec![r]),
            ),
        }
    }
    out
}

/// Adds (or, with `verify_only`, checks) one transaction's partitions; one code per partition.
fn add_one(
    broker: &Broker,
    txn_id: &str,
    producer_id: i64,
    epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
    verify_only: bool,
    version: i16,
) -> Vec<((String, i32), ErrorCode)> {
    let partitions = known_partitions(broker, topics);
    if partitions.iter().any(|(_, known)| !known) {
        // As Kafka: the unknown ones fail, the others are not attempted.
        return partitions
            .into_iter()
            .map(|(tp, known)| {
                let code = if known {
                    ErrorCode::OperationNotAttempted
                } else {
                    ErrorCode::UnknownTopicOrPartition
                };
                (tp, code)
            })
            .collect();
    }
    let tps: Vec<(String, i32)> = partitions.into_iter().map(|(tp, _)| tp).collect();
    if verify_only {
        return tps
            .into_iter()
            .map(|tp| {
                let code = broker
                    .txns
                    .verify(txn_id, producer_id, epoch, &tp)
                    .err()
                    .unwrap_or(ErrorCode::NoError);
                (tp, code)
            })
            .collect();
    }
    let code = match broker.txns.add_partitions(txn_id, producer_id, epoch, &tps) {
        Ok(()) => ErrorCode::NoError,
        Err(code) => fenced_for(code, version, 2),
    };
    tps.into_iter().map(|tp| (tp, code)).collect()
}

/// Handles AddPartitionsToTxn (v0-3 client form, v4+ batched form).
pub fn add_partitions_to_txn(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: AddPartitionsToTxnRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    if version <= 3 {
        let codes = add_one(
            broker,
            &r.v3_and_below_transactional_id,
            r.v3_and_below_producer_id.0,
            r.v3_and_below_producer_epoch,
            &r.v3_and_below_topics,
            false,
            version,
        );
        return Ok(ResponseKind::AddPartitionsToTxn(
            AddPartitionsToTxnResponse::default()
                .with_results_by_topic_v3_and_below(topic_results(codes)),
        ));
    }
    let results = r
        .transactions
        .iter()
        .map(|t| {
            let codes = add_one(
                broker,
                &t.transactional_id,
                t.producer_id.0,
                t.producer_epoch,
                &t.topics,
                t.verify_only,
                version,
            );
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(topic_results(codes))
        })
        .collect();
    Ok(ResponseKind::AddPartitionsToTxn(
        AddPartitionsToTxnResponse::default().with_results_by_transaction(results),
    ))
}

/// Handles AddOffsetsToTxn: adds the group's `__consumer_offsets` partition.
pub fn add_offsets_to_txn(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: AddOffsetsToTxnRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let code = if r.group_id.is_empty() {
        ErrorCode::InvalidGroupId
    } else if broker.cluster_node().is_none() && broker.groups.ensure_topic().is_err() {
        ErrorCode::CoordinatorNotAvailable
    } else {
        let tp = (
            OFFSETS_TOPIC.to_string(),
            broker.groups.offsets_partition(&r.group_id),
        );
        match broker.txns.add_partitions(
            &r.transactional_id,
            r.producer_id.0,
            r.producer_epoch,
            &[tp],
        ) {
            Ok(()) => ErrorCode::NoError,
            Err(code) => fenced_for(code, version, 2),
        }
    };
    Ok(ResponseKind::AddOffsetsToTxn(
        AddOffsetsToTxnResponse::default().with_error_code(code.code()),
    ))
}

/// Handles EndTxn.
pub fn end_txn(broker: &Broker, ctx: &RequestContext<'_>, r: EndTxnRequest) -> HandlerResult {
    let version = ctx.api_version;
    let resp = match broker.txns.end_txn(
        &r.transactional_id,
        r.producer_id.0,
        r.producer_epoch,
        r.committed,
    ) {
        Ok((pid, epoch)) => EndTxnResponse::default()
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch),
        Err(code) => EndTxnResponse::default()
            .with_error_code(fenced_for(code, version, 2).code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    };
    Ok(ResponseKind::EndTxn(resp))
}

/// In cluster mode, holds a transaction coordinator's successful answer to `txn_id`'s request
/// until its state change is replicated (EndTxn: until its markers are written too), and
/// turns a failure of that wait into the answer's error.
pub async fn replicated_state(
    broker: &Broker,
    txn_id: Option<&str>,
    answer: ResponseKind,
) -> ResponseKind {
    let Some(txn_id) = txn_id.filter(|t| !t.is_empty()) else {
        return answer;
    };
    if broker.cluster_node().is_none() {
        return answer;
    }
    match answer {
        ResponseKind::InitProducerId(r) if r.error_code == 0 => {
            match cluster_txn::state_of_id_replicated(broker, txn_id).await {
                Ok(()) => ResponseKind::InitProducerId(r),
                Err(code) => ResponseKind::InitProducerId(
                    InitProducerIdResponse::default()
                        .with_error_code(code.code())
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                ),
            }
        }
        ResponseKind::AddOffsetsToTxn(r) if r.error_code == 0 => {
            match cluster_txn::state_of_id_replicated(broker, txn_id).await {
                Ok(()) => ResponseKind::AddOffsetsToTxn(r),
                Err(code) => ResponseKind::AddOffsetsToTxn(r.with_error_code(code.code())),
            }
        }
        ResponseKind::EndTxn(r) if r.error_code == 0 => {
            match cluster_txn::end_txn_completed(broker, txn_id).await {
                Ok(()) => ResponseKind::EndTxn(r),
                Err(code) => ResponseKind::EndTxn(
                    EndTxnResponse::default()
                        .with_error_code(code.code())
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                ),
            }
        }
        ResponseKind::AddPartitionsToTxn(mut r) => {
            let accepted = r
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| &t.results_by_partition)
                .any(|p| p.partition_error_code == 0);
            if accepted {
                if let Err(code) = cluster_txn::state_of_id_replicated(broker, txn_id).await {
                    for p in r
                        .results_by_topic_v3_and_below
                        .iter_mut()
                        .flat_map(|t| t.results_by_partition.iter_mut())
                    {
                        p.partition_error_code = code.code();
                    }
                }
            }
            ResponseKind::AddPartitionsToTxn(r)
        }
        other => other,
    }
}

/// Handles TxnOffsetCommit: verified against the transaction (the group's offsets partition
/// must have been added), then written as pending offsets. In cluster mode the transaction's
/// coordinator is asked (it may be another broker), and the answer waits until the group's
/// offsets partition has the pending offsets in sync.
pub async fn txn_offset_commit(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: TxnOffsetCommitRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let mut offsets = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            offsets.push((
                (t.name.to_string(), p.partition_index),
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata.as_ref().map(|m| m.to_string()),
            ));
        }
    }
    let commit = TxnCommit {
        group_id: r.group_id.to_string(),
        producer_id: r.producer_id.0,
        producer_epoch: r.producer_epoch,
        member_id: r.member_id.to_string(),
        generation: r.generation_id,
        instance_id: r.group_instance_id.as_ref().map(|s| s.to_string()),
        offsets,
    };
    let offsets_tp = (
        OFFSETS_TOPIC.to_string(),
        broker.groups.offsets_partition(&r.group_id),
    );
    let tps: Vec<(String, i32)> = commit.offsets.iter().map(|o| o.0.clone()).collect();
    let results = if broker.cluster_node().is_some() {
        let verified = cluster_txn::verify(
            broker,
            &r.transactional_id,
            r.producer_id.0,
            r.producer_epoch,
            std::slice::from_ref(&offsets_tp),
        )
        .await;
        match verified
            .get(&offsets_tp)
            .copied()
            .unwrap_or(ErrorCode::NoError)
        {
            ErrorCode::NoError => {
                let mut results = broker.groups.txn_commit(commit);
                if let Err(code) = offsets_replicated(broker, offsets_tp.1).await {
                    for (_, c) in results.iter_mut().filter(|(_, c)| *c == ErrorCode::NoError) {
                        *c = code;
                    }
                }
                results
            }
            // A coordinator that cannot be asked now: retriable for the client.
            ErrorCode::NotEnoughReplicas => tps
                .into_iter()
                .map(|tp| (tp, ErrorCode::CoordinatorLoadInProgress))
                .collect(),
            code => tps.into_iter().map(|tp| (tp, code)).collect(),
        }
    } else {
        match broker.txns.with_verified(
            &r.transactional_id,
            r.producer_id.0,
            r.producer_epoch,
            &offsets_tp,
            || broker.groups.txn_commit(commit),
        ) {
            Ok(results) => results,
            Err(code) => tps.into_iter().map(|tp| (tp, code)).collect(),
        }
    };
    let mut topics: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
    for ((topic, partition), code) in results {
        let p = TxnOffsetCommitResponsePartition::default()
            .with_partition_index(partition)
            .with_error_code(fenced_for(code, version, 3).code());
        match topics.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                TxnOffsetCommitResponseTopic::default()
                    .with_name(TopicName(sb(topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    Ok(ResponseKind::TxnOffsetCommit(
        TxnOffsetCommitResponse::default().with_topics(topics),
    ))
}

/// Waits until `__consumer_offsets` partition `index` is replicated up to its log end.
async fn offsets_replicated(broker: &Broker, index: i32) -> Result<(), ErrorCode> {
    let Some(partition) = broker
        .topics
        .get(OFFSETS_TOPIC)
        .and_then(|t| t.partition(index))
    else {
        return Err(ErrorCode::CoordinatorNotAvailable);
    };
    let end = partition.follower_position().map_or(0, |(end, _)| end);
    if end == 0 {
        return Ok(());
    }
    partition
        .wait_replicated(end - 1, std::time::Duration::from_secs(5))
        .await
        .map_err(|e| match e.code() {
            ErrorCode::RequestTimedOut => ErrorCode::RequestTimedOut,
            ErrorCode::NotLeaderOrFollower => ErrorCode::NotCoordinator,
            _ => ErrorCode::CoordinatorNotAvailable,
        })
}

/// Handles DescribeTransactions.
pub fn describe_transactions(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: DescribeTransactionsRequest,
) -> HandlerResult {
    let states = r
        .transactional_ids
        .iter()
        .map(|id| match broker.txns.describe(id) {
            None => DescribedTxn::default()
                .with_transactional_id(id.clone())
                .with_error_code(if broker.txns.coordinates(id) {
                    ErrorCode::TransactionalIdNotFound.code()
                } else {
                    ErrorCode::NotCoordinator.code()
                })
                .with_transaction_state(sb(""))
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
                .with_transaction_start_time_ms(-1),
            Some(v) => describe_one(id.clone(), v),
        })
        .collect();
    Ok(ResponseKind::DescribeTransactions(
        DescribeTransactionsResponse::default().with_transaction_states(states),
    ))
}

fn describe_one(id: TransactionalId, v: TxnView) -> DescribedTxn {
    let mut topics: Vec<TopicData> = Vec::new();
    for (topic, p) in v.partitions {
        match topics.iter_mut().find(|t| t.topic.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                TopicData::default()
                    .with_topic(TopicName(sb(topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    DescribedTxn::default()
        .with_transactional_id(id)
        .with_transaction_state(sb(v.state.name()))
        .with_transaction_timeout_ms(v.timeout_ms)
        .with_transaction_start_time_ms(v.start_ms)
        .with_producer_id(ProducerId(v.producer_id))
        .with_producer_epoch(v.epoch)
        .with_topics(topics)
}

/// Handles ListTransactions (state, producer id, duration and id-pattern filters).
pub fn list_transactions(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: ListTransactionsRequest,
) -> HandlerResult {
    const STATES: [&str; 8] = [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ];
    let unknown: Vec<_> = r
        .state_filters
        .iter()
        .filter(|s| !STATES.contains(&s.as_str()))
        .cloned()
        .collect();
    let pattern = match r.transactional_id_pattern.as_deref() {
        None | Some("") => None,
        Some(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
            Ok(re) => Some(re),
            Err(_) => {
                return Ok(ResponseKind::ListTransactions(
                    ListTransactionsResponse::default()
                        .with_error_code(ErrorCode::InvalidRegularExpression.code()),
                ))
            }
        },
    };
    let now = now_ms();
    let states = broker
        .txns
        .list()
        .into_iter()
        .filter(|v| {
            r.state_filters.is_empty()
                || r.state_filters.iter().any(|s| s.as_str() == v.state.name())
        })
        .filter(|v| {
            r.producer_id_filters.is_empty()
                || r.producer_id_filters.iter().any(|p| p.0 == v.producer_id)
        })
        .filter(|v| {
            r.duration_filter < 0
                || (v.start_ms >= 0 && now.saturating_sub(v.start_ms) >= r.duration_filter)
        })
        .filter(|v| {
            pattern
                .as_ref()
                .is_none_or(|re| re.is_match(&v.transactional_id))
        })
        .map(|v| {
            ListedTxn::default()
                .with_transactional_id(TransactionalId(sb(v.transactional_id)))
                .with_producer_id(ProducerId(v.producer_id))
                .with_transaction_state(sb(v.state.name()))
        })
        .collect();
    Ok(ResponseKind::ListTransactions(
        ListTransactionsResponse::default()
            .with_unknown_state_filters(unknown)
            .with_transaction_states(states),
    ))
}

/// Handles DescribeProducers: each partition's producer state.
pub fn describe_producers(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: DescribeProducersRequest,
) -> HandlerResult {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let topic = broker.topics.get(&t.name);
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&p| {
                    let resp = PartitionResponse::default().with_partition_index(p);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(p)) else {
                        return resp.with_error_code(ErrorCode::UnknownTopicOrPartition.code());
                    };
                    match partition.producer_summaries() {
                        Ok(list) => resp.with_active_producers(
                            list.into_iter()
                                .map(|s| {
                                    ProducerStateEntry::default()
                                        .with_producer_id(ProducerId(s.producer_id))
                                        .with_producer_epoch(i32::from(s.epoch))
                                        .with_last_sequence(s.last_sequence)
                                        .with_last_timestamp(s.last_timestamp)
                                        .with_coordinator_epoch(s.coordinator_epoch)
                                        .with_current_txn_start_offset(s.current_txn_start_offset)
                                })
                                .collect(),
                        ),
                        Err(e) => resp
                            .with_error_code(e.code().code())
                            .with_error_message(Some(sb(e.to_string()))),
                    }
                })
                .collect();
            TopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    Ok(ResponseKind::DescribeProducers(
        DescribeProducersResponse::default().with_topics(topics),
    ))
}
