//! Produce: validates and appends record sets, acks 0 / 1 / all.

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::sb;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::partition::Partition;
use crate::Result;

/// Handles Produce; `Ok(None)` means no response (acks=0).
pub async fn handle(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: ProduceRequest,
) -> Result<Option<ResponseKind>> {
    let acks = request.acks;
    let txn_id = request
        .transactional_id
        .as_ref()
        .filter(|t| !t.is_empty())
        .map(|t| t.to_string());
    let acks_valid = (-1..=1).contains(&acks);
    let now = now_ms();
    let mut responses = Vec::with_capacity(request.topic_data.len());
    let mut appended = false;
    for topic_data in request.topic_data {
        let topic = if topic_data.name.is_empty() {
            broker.topics.get_by_id(topic_data.topic_id)
        } else {
            broker.topics.get(&topic_data.name)
        };
        let unknown = if topic_data.name.is_empty() {
            ErrorCode::UnknownTopicId
        } else {
            ErrorCode::UnknownTopicOrPartition
        };
        let mut partitions = Vec::with_capacity(topic_data.partition_data.len());
        for p in topic_data.partition_data {
            let mut resp = PartitionProduceResponse::default().with_index(p.index);
            let partition = topic.as_ref().and_then(|t| t.partition(p.index));
            let internal = topic.as_ref().is_some_and(|t| t.is_internal());
            // Kafka reports the log start offset with a record validation error too.
            let log_start = partition.as_ref().map(|p| p.log_start_offset());
            let result = match (acks_valid, partition, p.records) {
                (false, _, _) => Err(ErrorCode::InvalidRequiredAcks.into()),
                (_, None, _) => Err(unknown.into()),
                // Clients never write the coordinators' topics (Kafka's
                // `internalTopicsAllowed = false` for client produce), secured or not.
                (_, Some(p), _) if internal => Err(crate::Error::kafka(
                    ErrorCode::InvalidTopic,
                    format!("Cannot append to internal topic {}", p.topic()),
                )),
                (_, Some(_), None) => Err(ErrorCode::CorruptMessage.into()),
                (_, Some(partition), Some(records)) => match &txn_id {
                    Some(txn_id) => append_transactional(broker, txn_id, &partition, records, now),
                    None => append(&partition, records, now),
                },
            };
            match result {
                Ok(outcome) => {
                    appended = true;
                    resp = resp
                        .with_base_offset(outcome.base_offset)
                        .with_log_append_time_ms(outcome.log_append_time)
                        .with_log_start_offset(outcome.log_start_offset);
                }
                Err(e) => {
                    // Kafka answers most refusals with the code alone: the explanation is here.
                    tracing::debug!(topic = %topic_data.name.as_str(), partition = p.index, error = %e, "produce refused");
                    let (code, message, record_errors) = partition_error(&e);
                    if matches!(e, crate::Error::InvalidRecords { .. }) {
                        resp = resp.with_log_start_offset(log_start.unwrap_or(-1));
                    }
                    resp = resp
                        .with_error_code(code)
                        .with_error_message(message)
                        .with_record_errors(record_errors)
                        .with_base_offset(-1);
                }
            }
            partitions.push(resp);
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(topic_data.name)
                .with_topic_id(topic_data.topic_id)
                .with_partition_responses(partitions),
        );
    }
    if appended {
        broker.data_arrived.notify_waiters();
    }
    if acks == 0 {
        return Ok(None);
    }
    Ok(Some(ResponseKind::Produce(
        ProduceResponse::default().with_responses(responses),
    )))
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

fn append(
    partition: &Partition,
    records: bytes::Bytes,
    now: i64,
) -> Result<crate::partition::ProduceOutcome> {
    partition.append_record_set(records, now)
}

/// A produce request with a transactional id: a transactional batch is appended only if its
/// partition is in the producer's open transaction (KIP-890 part 1 verification), checked and
/// appended under the coordinator's lock so the transaction cannot end in between.
fn append_transactional(
    broker: &Broker,
    txn_id: &str,
    partition: &Partition,
    records: bytes::Bytes,
    now: i64,
) -> Result<crate::partition::ProduceOutcome> {
    let first = odradek::records::RecordBatches::new(records.clone()).next();
    let Some(Ok(batch)) = first.filter(|b| b.as_ref().is_ok_and(|b| b.is_transactional())) else {
        return append(partition, records, now);
    };
    let tp = (partition.topic().to_string(), partition.index());
    broker
        .txns
        .with_verified(
            txn_id,
            batch.producer_id(),
            batch.producer_epoch(),
            &tp,
            || append(partition, records, now),
        )
        .unwrap_or_else(|code| {
            let code = if code == ErrorCode::ProducerFenced {
                ErrorCode::InvalidProducerEpoch
            } else {
                code
            };
            tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %code, "transactional produce refused");
            Err(code.into())
        })
}

impl From<ErrorCode> for crate::Error {
    fn from(code: ErrorCode) -> Self {
        crate::Error::kafka(code, code.name())
    }
}
