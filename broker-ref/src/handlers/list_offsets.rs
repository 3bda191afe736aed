//! ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), by timestamp.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, ResponseKind};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::HandlerResult;
use crate::broker::Broker;
use crate::partition::{Partition, ReplicaRole};
use crate::Result;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

/// Handles ListOffsets. The leader epoch exists from v4 on; earlier versions cannot encode it.
pub fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: ListOffsetsRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let read_committed = request.isolation_level == 1;
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let topic = broker.topics.get(&t.name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let resp = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index);
                    let partition = topic.as_ref().and_then(|t| t.partition(p.partition_index));
                    let Some(partition) = partition else {
                        return resp.with_error_code(ErrorCode::UnknownTopicOrPartition.code());
                    };
                    if let Err(e) = partition.check_leader(p.current_leader_epoch) {
                        return resp.with_error_code(e.code().code());
                    }
                    let leader_epoch = if version >= 4 {
                        partition.leader_epoch()
                    } else {
                        -1
                    };
                    if p.timestamp == LATEST && !latest_available(&partition) {
                        return resp.with_error_code(ErrorCode::OffsetNotAvailable.code());
                    }
                    match lookup(&partition, p.timestamp, read_committed) {
                        Ok((offset, timestamp)) => resp
                            .with_offset(offset)
                            .with_timestamp(timestamp)
                            .with_leader_epoch(leader_epoch),
                        Err(e) => resp.with_error_code(e.code().code()),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    Ok(ResponseKind::ListOffsets(
        ListOffsetsResponse::default().with_topics(topics),
    ))
}

/// `(offset, timestamp)` for a ListOffsets query; `(-1, -1)` when no record matches.
fn lookup(partition: &Partition, query: i64, read_committed: bool) -> Result<(i64, i64)> {
    let visible_end = if read_committed {
        partition.last_stable_offset()
    } else {
        partition.high_watermark()
    };
    Ok(match query {
        LATEST => (visible_end, -1),
        EARLIEST | EARLIEST_LOCAL => (partition.log_start_offset(), -1),
        LATEST_TIERED => (-1, -1),
        MAX_TIMESTAMP => partition
            .log()?
            .max_timestamp_offset()
            .filter(|(offset, _)| *offset < visible_end)
            .unwrap_or((-1, -1)),
        ts if ts >= 0 => partition
            .log()?
            .fetch_offset_by_timestamp(ts)
            .filter(|(offset, _)| *offset < visible_end)
            .unwrap_or((-1, -1)),
        _ => return Err(ErrorCode::InvalidRequest.into()),
    })
}

/// KIP-207: a new leader answers "latest" only once its high watermark reached the start of
/// its epoch, so the latest offset a client sees never goes back across a leader change.
fn latest_available(partition: &Partition) -> bool {
    let view = partition.replication_view();
    view.role != ReplicaRole::Leader || partition.high_watermark() >= view.epoch_start
}
