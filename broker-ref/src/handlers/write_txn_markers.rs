//! WriteTxnMarkers (v1), the request a transaction coordinator sends the leaders of its
//! transactions' partitions: each marker is written into the partitions this broker leads
//! (a COMMIT into `__consumer_offsets` also publishes the transaction's pending offsets) and
//! answered once replicated, as Kafka answers it (appended with acks=all). A marker from an
//! older coordinator than the one that last ended the producer's transaction here is
//! TRANSACTION_COORDINATOR_FENCED; a stale producer epoch INVALID_PRODUCER_EPOCH.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{ResponseKind, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::HandlerResult;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::coordinator::OFFSETS_TOPIC;
use crate::partition::{Marker, Partition};

/// How long a marker waits for its followers before it is answered REQUEST_TIMED_OUT.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);

/// A written marker: (marker, topic, partition) positions in the answer, the partition, and
/// the marker's offset.
type Written = ((usize, usize, usize), Arc<Partition>, i64);

/// Handles WriteTxnMarkers.
pub async fn handle(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    r: WriteTxnMarkersRequest,
) -> HandlerResult {
    Ok(ResponseKind::WriteTxnMarkers(apply(broker, &r).await))
}

/// Writes `r`'s markers into the partitions this broker leads and waits until each is
/// replicated; one code per partition. The coordinator calls it directly for the partitions
/// it leads itself.
pub async fn apply(broker: &Broker, r: &WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let now = now_ms();
    let mut markers = Vec::with_capacity(r.markers.len());
    // (marker, topic, partition position) → the written marker's partition and offset.
    let mut waits: Vec<Written> = Vec::new();
    for (mi, m) in r.markers.iter().enumerate() {
        let marker = Marker {
            producer_id: m.producer_id.0,
            producer_epoch: m.producer_epoch,
            commit: m.transaction_result,
            coordinator_epoch: m.coordinator_epoch,
        };
        let mut topics = Vec::with_capacity(m.topics.len());
        for (ti, t) in m.topics.iter().enumerate() {
            let mut partitions = Vec::with_capacity(t.partition_indexes.len());
            for (pi, &index) in t.partition_indexes.iter().enumerate() {
                let code = match broker.topics.get(&t.name).and_then(|x| x.partition(index)) {
                    None => ErrorCode::UnknownTopicOrPartition,
                    Some(partition) => {
                        let written = partition
                            .check_leader(-1)
                            .and_then(|()| partition.write_marker(marker, now));
                        match written {
                            Ok(offset) => {
                                if t.name.as_str() == OFFSETS_TOPIC {
                                    broker.groups.complete_txn(
                                        index,
                                        marker.producer_id,
                                        marker.commit,
                                    );
                                }
                                waits.push(((mi, ti, pi), partition, offset));
                                ErrorCode::NoError
                            }
                            Err(e) => {
                                tracing::debug!(topic = %t.name.as_str(), partition = index, producer_id = marker.producer_id, error = %e, "transaction marker refused");
                                e.code()
                            }
                        }
                    }
                };
                partitions.push(
                    WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(index)
                        .with_error_code(code.code()),
                );
            }
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(t.name.clone())
                    .with_partitions(partitions),
            );
        }
        markers.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(m.producer_id)
                .with_topics(topics),
        );
    }
    let waited = futures_util::future::join_all(
        waits
            .iter()
            .map(|(_, p, offset)| p.wait_replicated(*offset, REPLICATION_TIMEOUT)),
    )
    .await;
    for (((mi, ti, pi), ..), outcome) in waits.iter().zip(waited) {
        if let Err(e) = outcome {
            markers[*mi].topics[*ti].partitions[*pi].error_code = e.code().code();
        }
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}
