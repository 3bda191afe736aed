//! Produce: validates and appends record sets, acks 0 / 1 / all.
//!
//! A request is handled in three steps: every partition is resolved (unknown, internal, bad
//! acks), then every record set is validated against one [`DecodeBudget`] for the whole request
//! (`produce_validation.rs`: on a blocking-pool thread when the request is large or compressed,
//! so decompression never runs on the async workers serving other connections, and never under
//! a partition lock or the transaction coordinator's lock), then the valid sets are appended.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::produce_validation::{validate_all, Pending};
use super::reply::sb;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::log::DecodeBudget;
use crate::partition::{Partition, ProduceOutcome, ValidRecordSet};
use crate::Result;

/// One partition entry of the request, resolved.
struct Entry {
    index: i32,
    /// The partition and its record set, or why the entry is refused before validation.
    target: Result<(Arc<Partition>, Bytes)>,
}

/// Handles Produce; `Ok(None)` means no response (acks=0).
pub async fn handle(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: ProduceRequest,
) -> Result<Option<ResponseKind>> {
    let acks = request.acks;
    let request_timeout = request.timeout_ms;
    let txn_id = request
        .transactional_id
        .as_ref()
        .filter(|t| !t.is_empty())
        .map(|t| t.to_string());
    let now = now_ms();
    let mut topics = Vec::with_capacity(request.topic_data.len());
    for topic_data in request.topic_data {
        let entries: Vec<Entry> = topic_data
            .partition_data
            .into_iter()
            .map(|p| Entry {
                index: p.index,
                target: resolve(broker, acks, &topic_data.name, topic_data.topic_id, p),
            })
            .collect();
        topics.push((topic_data.name, topic_data.topic_id, entries));
    }
    let pending: Vec<Pending> = topics
        .iter()
        .flat_map(|(_, _, entries)| entries.iter())
        .filter_map(|e| e.target.as_ref().ok().map(|(p, r)| (p.clone(), r.clone())))
        .collect();
    let budget = DecodeBudget::for_request(broker.config.long("socket.request.max.bytes"));
    let order: Vec<Arc<Partition>> = pending.iter().map(|(p, _)| p.clone()).collect();
    let validated = validate_all(pending, now, budget).await;
    let checks = txn_checks(broker, txn_id.as_deref(), &order, &validated).await;
    let mut validated = validated.into_iter().zip(checks);
    let mut responses = Vec::with_capacity(topics.len());
    // acks=all on a replicated partition: (topic, partition position, partition, last offset).
    let mut waits: Vec<(usize, usize, Arc<Partition>, i64)> = Vec::new();
    for (name, topic_id, entries) in topics {
        let mut partitions = Vec::with_capacity(entries.len());
        for entry in entries {
            let resp = PartitionProduceResponse::default().with_index(entry.index);
            // Kafka reports the log start offset with a record validation error too.
            let log_start = entry
                .target
                .as_ref()
                .ok()
                .map(|(p, _)| p.log_start_offset());
            // acks=all on a replicated partition waits for the high watermark after the append.
            let replicated = match &entry.target {
                Ok((p, _)) if acks == -1 && p.is_replicated() => Some(p.clone()),
                _ => None,
            };
            let result = match entry.target {
                Err(e) => {
                    tracing::debug!(topic = %name.as_str(), partition = entry.index, error = %e, "produce refused");
                    Err(e)
                }
                Ok((partition, _)) => match validated.next() {
                    Some((Ok(set), check)) => {
                        append(broker, txn_id.as_deref(), &partition, set, now, check)
                    }
                    Some((Err(e), _)) => Err(rejected(&partition, e)),
                    None => Err(crate::Error::kafka(
                        ErrorCode::UnknownServerError,
                        "record set was not validated",
                    )),
                },
            };
            if let (Ok(outcome), Some(partition)) = (&result, &replicated) {
                waits.push((
                    responses.len(),
                    partitions.len(),
                    partition.clone(),
                    outcome.last_offset,
                ));
            }
            partitions.push(match result {
                Ok(outcome) => resp
                    .with_base_offset(outcome.base_offset)
                    .with_log_append_time_ms(outcome.log_append_time)
                    .with_log_start_offset(outcome.log_start_offset),
                Err(e) => {
                    let (code, message, record_errors) = partition_error(&e);
                    let resp = if matches!(e, crate::Error::InvalidRecords { .. }) {
                        resp.with_log_start_offset(log_start.unwrap_or(-1))
                    } else {
                        resp
                    };
                    resp.with_error_code(code)
                        .with_error_message(message)
                        .with_record_errors(record_errors)
                        .with_base_offset(-1)
                }
            });
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(name)
                .with_topic_id(topic_id)
                .with_partition_responses(partitions),
        );
    }
    if acks == 0 {
        return Ok(None);
    }
    let timeout = Duration::from_millis(request_timeout.max(0) as u64);
    let outcomes = futures_util::future::join_all(
        waits
            .iter()
            .map(|(_, _, p, last)| p.wait_replicated(*last, timeout)),
    )
    .await;
    for ((t, i, _, _), outcome) in waits.iter().zip(outcomes) {
        if let Err(e) = outcome {
            if let Some(p) = responses
                .get_mut(*t)
                .and_then(|r: &mut TopicProduceResponse| r.partition_responses.get_mut(*i))
            {
                p.error_code = e.code().code();
                p.base_offset = -1;
            }
        }
    }
    Ok(Some(ResponseKind::Produce(
        ProduceResponse::default().with_responses(responses),
    )))
}

/// The partition an entry writes to and its records, or the error the entry gets without
/// validation: bad acks, unknown topic or partition, an internal topic, no records.
fn resolve(
    broker: &Broker,
    acks: i16,
    name: &str,
    topic_id: uuid::Uuid,
    data: kafka_protocol::messages::produce_request::PartitionProduceData,
) -> Result<(Arc<Partition>, Bytes)> {
    if !(-1..=1).contains(&acks) {
        return Err(ErrorCode::InvalidRequiredAcks.into());
    }
    let topic = if name.is_empty() {
        broker.topics.get_by_id(topic_id)
    } else {
        broker.topics.get(name)
    };
    let unknown = if name.is_empty() {
        ErrorCode::UnknownTopicId
    } else {
        ErrorCode::UnknownTopicOrPartition
    };
    let Some(topic) = topic else {
        return Err(unknown.into());
    };
    let Some(partition) = topic.partition(data.index) else {
        return Err(unknown.into());
    };
    partition.check_produce(acks)?;
    if topic.is_internal() {
        // Clients never write the coordinators' topics (Kafka's `internalTopicsAllowed =
        // false` for client produce), secured or not.
        return Err(crate::Error::kafka(
            ErrorCode::InvalidTopic,
            format!("Cannot append to internal topic {}", partition.topic()),
        ));
    }
    let records = data.records.ok_or(ErrorCode::CorruptMessage)?;
    Ok((partition, records))
}

/// A refused partition's `(error_code, error_message, record_errors)` as Kafka answers them:
/// a message only where Kafka sets one (record validation, with every failed record by its
/// batch index, and a partition not in the transaction); other errors carry the code alone,
/// and their explanation goes to the broker's debug log.
fn partition_error(e: &crate::Error) -> (i16, Option<StrBytes>, Vec<BatchIndexAndErrorMessage>) {
    let code = e.code();
    match e {
        crate::Error::InvalidRecords {
            message, records, ..
        } => {
            let records = records
                .iter()
                .map(|r| {
                    BatchIndexAndErrorMessage::default()
                        .with_batch_index(r.batch_index)
                        .with_batch_index_error_message(Some(sb(r.message.clone())))
                })
                .collect();
            (code.code(), Some(sb(message.clone())), records)
        }
        _ if code == ErrorCode::InvalidTxnState => (
            code.code(),
            Some(sb("Partition was not added to the transaction")),
            Vec::new(),
        ),
        _ => (code.code(), None, Vec::new()),
    }
}

/// Logs why a partition's record set was refused (the answer carries the code alone).
fn rejected(partition: &Partition, e: crate::Error) -> crate::Error {
    tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %e, "produce rejected");
    e
}

/// How a record set is checked against its transaction before it is appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxnCheck {
    /// Not transactional, or on a single node: checked under the coordinator's lock at the
    /// append.
    Local,
    /// Cluster mode: its transaction is open here (`None`), or the coordinator confirmed the
    /// partition is in it, with the (producer id, ticket) the append checks.
    Verified(Option<(i64, u64)>),
    /// Cluster mode: the coordinator refused it, or could not be asked.
    Refused(ErrorCode),
}

/// A set to verify: its position in the request, its partition and its ticket.
type Ask = (usize, (String, i32), u64);

/// Cluster mode: verifies the transactional sets whose transaction is not open on their
/// partition yet with the transaction's coordinator (KIP-890 part 1), one request per
/// producer; one check per validated set, in order.
async fn txn_checks(
    broker: &Broker,
    txn_id: Option<&str>,
    partitions: &[Arc<Partition>],
    sets: &[Result<ValidRecordSet>],
) -> Vec<TxnCheck> {
    let mut checks = vec![TxnCheck::Local; sets.len()];
    let Some(txn_id) = txn_id.filter(|_| broker.cluster_node().is_some()) else {
        return checks;
    };
    // (producer id, epoch) → (position, partition, ticket) of the sets to verify.
    let mut asks: std::collections::BTreeMap<(i64, i16), Vec<Ask>> = Default::default();
    for (i, (partition, set)) in partitions.iter().zip(sets).enumerate() {
        let Some((producer_id, epoch)) = set.as_ref().ok().and_then(|s| s.transactional_producer())
        else {
            continue;
        };
        checks[i] = match partition.verification_ticket(producer_id, epoch) {
            Ok(None) => TxnCheck::Verified(None),
            Ok(Some(ticket)) => {
                let tp = (partition.topic().to_string(), partition.index());
                asks.entry((producer_id, epoch))
                    .or_default()
                    .push((i, tp, ticket));
                continue;
            }
            Err(e) => TxnCheck::Refused(e.code()),
        };
    }
    for ((producer_id, epoch), wanted) in asks {
        let tps: Vec<(String, i32)> = wanted.iter().map(|(_, tp, _)| tp.clone()).collect();
        let codes = super::cluster_txn::verify(broker, txn_id, producer_id, epoch, &tps).await;
        for (i, tp, ticket) in wanted {
            checks[i] = match codes
                .get(&tp)
                .copied()
                .unwrap_or(ErrorCode::NotEnoughReplicas)
            {
                ErrorCode::NoError => TxnCheck::Verified(Some((producer_id, ticket))),
                code => TxnCheck::Refused(code),
            };
        }
    }
    checks
}

/// Appends a validated set; a transactional one only if its partition is in the producer's
/// open transaction (KIP-890 part 1 verification). On a single node that is checked and
/// appended under the coordinator's lock so the transaction cannot end in between; in cluster
/// mode `check` carries the coordinator's answer and the append makes sure no marker came in
/// between. Nothing is decompressed there.
fn append(
    broker: &Broker,
    txn_id: Option<&str>,
    partition: &Partition,
    set: ValidRecordSet,
    now: i64,
    check: TxnCheck,
) -> Result<ProduceOutcome> {
    match check {
        TxnCheck::Local => {}
        TxnCheck::Verified(guard) => {
            return partition
                .append_valid_guarded(set, now, guard)
                .map_err(|e| rejected(partition, e))
        }
        TxnCheck::Refused(code) => {
            let code = if code == ErrorCode::ProducerFenced {
                ErrorCode::InvalidProducerEpoch
            } else {
                code
            };
            tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %code, "transactional produce refused by its coordinator");
            return Err(rejected(partition, code.into()));
        }
    }
    let producer = txn_id.zip(set.transactional_producer());
    let Some((txn_id, (producer_id, epoch))) = producer else {
        return partition
            .append_valid(set, now)
            .map_err(|e| rejected(partition, e));
    };
    let tp = (partition.topic().to_string(), partition.index());
    broker
        .txns
        .with_verified(txn_id, producer_id, epoch, &tp, || {
            partition.append_valid(set, now)
        })
        .unwrap_or_else(|code| {
            let code = if code == ErrorCode::ProducerFenced {
                ErrorCode::InvalidProducerEpoch
            } else {
                code
            };
            tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %code, "transactional produce refused");
            Err(code.into())
        })
        .map_err(|e| rejected(partition, e))
}

impl From<ErrorCode> for crate::Error {
    fn from(code: ErrorCode) -> Self {
        crate::Error::kafka(code, code.name())
    }
}
