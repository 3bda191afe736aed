//! DeleteRecords and OffsetForLeaderEpoch.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    DeleteRecordsRequest, DeleteRecordsResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, ResponseKind,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::HandlerResult;
use crate::broker::Broker;

/// Handles DeleteRecords: moves each partition's log start offset forward.
pub fn delete_records(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: DeleteRecordsRequest,
) -> HandlerResult {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let topic = broker.topics.get(&t.name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let r = DeleteRecordsPartitionResult::default()
                        .with_partition_index(p.partition_index)
                        .with_low_watermark(-1);
                    match topic.as_ref().and_then(|t| t.partition(p.partition_index)) {
                        None => r.with_error_code(ErrorCode::UnknownTopicOrPartition.code()),
                        Some(partition) => match partition.delete_records_before(p.offset) {
                            Ok(low) => r.with_low_watermark(low),
                            Err(e) => r.with_error_code(e.code().code()),
                        },
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    Ok(ResponseKind::DeleteRecords(
        DeleteRecordsResponse::default().with_topics(topics),
    ))
}

/// Handles OffsetForLeaderEpoch (KIP-320 validation by clients).
pub fn offset_for_leader_epoch(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: OffsetForLeaderEpochRequest,
) -> HandlerResult {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let topic = broker.topics.get(&t.topic);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let r = EpochEndOffset::default().with_partition(p.partition);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(p.partition))
                    else {
                        return r.with_error_code(ErrorCode::UnknownTopicOrPartition.code());
                    };
                    if let Err(e) = partition.check_leader(p.current_leader_epoch) {
                        return r.with_error_code(e.code().code());
                    }
                    let found = partition
                        .log()
                        .map(|log| log.end_offset_for_epoch(p.leader_epoch));
                    match found {
                        Ok(Some((epoch, end))) => r.with_leader_epoch(epoch).with_end_offset(end),
                        Ok(None) => r.with_leader_epoch(-1).with_end_offset(-1),
                        Err(e) => r.with_error_code(e.code().code()),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic)
                .with_partitions(partitions)
        })
        .collect();
    Ok(ResponseKind::OffsetForLeaderEpoch(
        OffsetForLeaderEpochResponse::default().with_topics(topics),
    ))
}
