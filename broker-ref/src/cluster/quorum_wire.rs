//! The quorum's messages as Kafka's wire messages: Vote (52), BeginQuorumEpoch (53),
//! EndQuorumEpoch (54), Fetch (1) and FetchSnapshot (59) on partition 0 of
//! `__cluster_metadata`, in both directions. Only what KRaft's own messages carry travels:
//! epochs, ids, offsets, the leader each side knows, divergence and snapshot ids, and the
//! entries as record batches (`entry_codec`).

use bytes::Bytes;
use kafka_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, fetch_request, fetch_response, fetch_snapshot_request,
    fetch_snapshot_response, vote_request, vote_response, BeginQuorumEpochRequest,
    BeginQuorumEpochResponse, BrokerId, EndQuorumEpochRequest, EndQuorumEpochResponse,
    FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, TopicName,
    VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;
use odradek_quorum::{NodeId, OffsetAndEpoch, QuorumError, Request, Response};

use super::entry_codec;
use crate::{Error, Result};

/// The metadata log's topic.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// The most bytes a metadata fetch asks for.
const FETCH_MAX_BYTES: i32 = 8 << 20;

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str(METADATA_TOPIC))
}

fn leader_id(leader: Option<NodeId>) -> BrokerId {
    BrokerId(leader.unwrap_or(-1))
}

fn leader_of(id: BrokerId) -> Option<NodeId> {
    (id.0 >= 0).then_some(id.0)
}

/// The Kafka error code of a quorum refusal.
pub fn error_code(e: Option<QuorumError>) -> i16 {
    let code = match e {
        None => ErrorCode::NoError,
        Some(QuorumError::FencedLeaderEpoch) => ErrorCode::FencedLeaderEpoch,
        Some(QuorumError::NotLeader) => ErrorCode::NotLeaderOrFollower,
        Some(QuorumError::UnknownLeaderEpoch) => ErrorCode::UnknownLeaderEpoch,
        Some(QuorumError::NotVoter) => ErrorCode::InconsistentVoterSet,
        Some(QuorumError::SnapshotNotFound) => ErrorCode::SnapshotNotFound,
        Some(QuorumError::PositionOutOfRange) => ErrorCode::PositionOutOfRange,
    };
    code.code()
}

/// The quorum refusal of a Kafka error code; other codes are errors.
fn quorum_error(code: i16) -> Result<Option<QuorumError>> {
    Ok(match ErrorCode::from_code(code) {
        ErrorCode::NoError => None,
        ErrorCode::FencedLeaderEpoch => Some(QuorumError::FencedLeaderEpoch),
        ErrorCode::NotLeaderOrFollower => Some(QuorumError::NotLeader),
        ErrorCode::UnknownLeaderEpoch => Some(QuorumError::UnknownLeaderEpoch),
        ErrorCode::InconsistentVoterSet => Some(QuorumError::NotVoter),
        ErrorCode::SnapshotNotFound => Some(QuorumError::SnapshotNotFound),
        ErrorCode::PositionOutOfRange => Some(QuorumError::PositionOutOfRange),
        other => return Err(Error::kafka(other, "metadata quorum request refused")),
    })
}

/// A request on its way to another node.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// Vote.
    Vote(VoteRequest),
    /// BeginQuorumEpoch.
    Begin(BeginQuorumEpochRequest),
    /// EndQuorumEpoch.
    End(EndQuorumEpochRequest),
    /// Fetch on the metadata log.
    Fetch(FetchRequest),
    /// FetchSnapshot.
    FetchSnapshot(FetchSnapshotRequest),
}

/// Builds the Kafka request for `request` to node `to`.
pub fn outbound(cluster_id: &str, to: NodeId, request: &Request) -> Outbound {
    let cluster = Some(StrBytes::from_string(cluster_id.to_string()));
    match request {
        Request::Vote {
            epoch,
            candidate,
            last,
        } => Outbound::Vote(
            VoteRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(BrokerId(to))
                .with_topics(vec![vote_request::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![vote_request::PartitionData::default()
                        .with_partition_index(0)
                        .with_replica_epoch(*epoch)
                        .with_replica_id(BrokerId(*candidate))
                        .with_last_offset_epoch(last.epoch)
                        .with_last_offset(last.offset)])]),
        ),
        Request::BeginQuorumEpoch { epoch, leader } => Outbound::Begin(
            BeginQuorumEpochRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(BrokerId(to))
                .with_topics(vec![begin_quorum_epoch_request::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![
                        begin_quorum_epoch_request::PartitionData::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(*leader))
                            .with_leader_epoch(*epoch),
                    ])]),
        ),
        Request::EndQuorumEpoch {
            epoch,
            leader,
            preferred_successors,
        } => Outbound::End(
            EndQuorumEpochRequest::default()
                .with_cluster_id(cluster)
                .with_topics(vec![end_quorum_epoch_request::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![
                        end_quorum_epoch_request::PartitionData::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(*leader))
                            .with_leader_epoch(*epoch)
                            .with_preferred_successors(preferred_successors.clone())
                            .with_preferred_candidates(
                                preferred_successors
                                    .iter()
                                    .map(|c| {
                                        end_quorum_epoch_request::ReplicaInfo::default()
                                            .with_candidate_id(BrokerId(*c))
                                    })
                                    .collect(),
                            ),
                    ])]),
        ),
        Request::Fetch {
            epoch,
            replica,
            fetch_offset,
            last_fetched_epoch,
        } => Outbound::Fetch(
            FetchRequest::default()
                .with_cluster_id(cluster)
                .with_replica_id(BrokerId(*replica))
                .with_replica_state(
                    fetch_request::ReplicaState::default()
                        .with_replica_id(BrokerId(*replica))
                        .with_replica_epoch(-1),
                )
                .with_max_wait_ms(500)
                .with_min_bytes(0)
                .with_max_bytes(FETCH_MAX_BYTES)
                .with_topics(vec![fetch_request::FetchTopic::default()
                    .with_topic(topic())
                    .with_partitions(vec![fetch_request::FetchPartition::default()
                        .with_partition(0)
                        .with_current_leader_epoch(*epoch)
                        .with_fetch_offset(*fetch_offset)
                        .with_last_fetched_epoch(*last_fetched_epoch)
                        .with_log_start_offset(-1)
                        .with_partition_max_bytes(FETCH_MAX_BYTES)])]),
        ),
        Request::FetchSnapshot {
            epoch,
            replica,
            snapshot,
            position,
        } => Outbound::FetchSnapshot(
            FetchSnapshotRequest::default()
                .with_cluster_id(cluster)
                .with_replica_id(BrokerId(*replica))
                .with_max_bytes(FETCH_MAX_BYTES)
                .with_topics(vec![fetch_snapshot_request::TopicSnapshot::default()
                    .with_name(topic())
                    .with_partitions(vec![
                        fetch_snapshot_request::PartitionSnapshot::default()
                            .with_partition(0)
                            .with_current_leader_epoch(*epoch)
                            .with_snapshot_id(
                                fetch_snapshot_request::SnapshotId::default()
                                    .with_end_offset(snapshot.offset)
                                    .with_epoch(snapshot.epoch),
                            )
                            .with_position(i64::try_from(*position).unwrap_or(i64::MAX)),
                    ])]),
        ),
    }
}

/// Partition 0 of `__cluster_metadata` among a request's topics (field `$name` for the
/// topic's name, `$parts` for its partitions, `$index` for a partition's index).
macro_rules! metadata_partition {
    ($topics:expr, $name:ident, $parts:ident, $index:ident) => {
        $topics
            .iter()
            .find(|t| t.$name.0.as_str() == METADATA_TOPIC)
            .and_then(|t| t.$parts.iter().find(|p| p.$index == 0))
            .ok_or_else(|| bad("no __cluster_metadata-0"))
    };
}

/// Partition 0's answer among a response's topics (the first partition 0 of any topic).
macro_rules! metadata_answer {
    ($topics:expr, $index:ident) => {
        $topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .find(|p| p.$index == 0)
            .ok_or_else(|| bad("response without __cluster_metadata-0"))
    };
}

fn bad(what: &str) -> Error {
    Error::kafka(
        ErrorCode::InvalidRequest,
        format!("metadata quorum message: {what}"),
    )
}

/// Checks a request's cluster id against ours (KRaft answers INCONSISTENT_CLUSTER_ID).
pub fn check_cluster(ours: &str, theirs: Option<&StrBytes>) -> Result<()> {
    match theirs {
        Some(id) if id.as_str() != ours => Err(Error::kafka(
            ErrorCode::InconsistentClusterId,
            format!("cluster id {} is not this cluster's", id.as_str()),
        )),
        _ => Ok(()),
    }
}

// ---- requests received ----------------------------------------------------------------------

/// The quorum request a Vote carries, with its sender.
pub fn vote_in(r: &VoteRequest) -> Result<(NodeId, Request)> {
    let p = metadata_partition!(r.topics, topic_name, partitions, partition_index)?;
    Ok((
        p.replica_id.0,
        Request::Vote {
            epoch: p.replica_epoch,
            candidate: p.replica_id.0,
            last: OffsetAndEpoch::new(p.last_offset, p.last_offset_epoch),
        },
    ))
}

/// The quorum request a BeginQuorumEpoch carries, with its sender.
pub fn begin_in(r: &BeginQuorumEpochRequest) -> Result<(NodeId, Request)> {
    let p = metadata_partition!(r.topics, topic_name, partitions, partition_index)?;
    Ok((
        p.leader_id.0,
        Request::BeginQuorumEpoch {
            epoch: p.leader_epoch,
            leader: p.leader_id.0,
        },
    ))
}

/// The quorum request an EndQuorumEpoch carries, with its sender.
pub fn end_in(r: &EndQuorumEpochRequest) -> Result<(NodeId, Request)> {
    let p = metadata_partition!(r.topics, topic_name, partitions, partition_index)?;
    let successors = if p.preferred_candidates.is_empty() {
        p.preferred_successors.clone()
    } else {
        p.preferred_candidates
            .iter()
            .map(|c| c.candidate_id.0)
            .collect()
    };
    Ok((
        p.leader_id.0,
        Request::EndQuorumEpoch {
            epoch: p.leader_epoch,
            leader: p.leader_id.0,
            preferred_successors: successors,
        },
    ))
}

/// Whether a Fetch asks for the metadata log (then it goes to the quorum, not to the data
/// plane).
pub fn is_metadata_fetch(r: &FetchRequest) -> bool {
    r.topics.len() == 1 && r.topics[0].topic.0.as_str() == METADATA_TOPIC
}

/// The quorum request a metadata Fetch carries, with its sender.
pub fn fetch_in(r: &FetchRequest) -> Result<(NodeId, Request)> {
    let p = metadata_partition!(r.topics, topic, partitions, partition)?;
    let replica = if r.replica_state.replica_id.0 >= 0 {
        r.replica_state.replica_id.0
    } else {
        r.replica_id.0
    };
    if replica < 0 {
        return Err(bad("a metadata fetch must name its replica"));
    }
    Ok((
        replica,
        Request::Fetch {
            epoch: p.current_leader_epoch,
            replica,
            fetch_offset: p.fetch_offset,
            last_fetched_epoch: p.last_fetched_epoch,
        },
    ))
}

/// The quorum request a FetchSnapshot carries, with its sender.
pub fn fetch_snapshot_in(r: &FetchSnapshotRequest) -> Result<(NodeId, Request)> {
    let p = metadata_partition!(r.topics, name, partitions, partition)?;
    Ok((
        r.replica_id.0,
        Request::FetchSnapshot {
            epoch: p.current_leader_epoch,
            replica: r.replica_id.0,
            snapshot: OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            position: u64::try_from(p.position).map_err(|_| bad("negative position"))?,
        },
    ))
}

// ---- responses sent -------------------------------------------------------------------------

/// A Vote response from the quorum's answer.
pub fn vote_out(response: Response) -> VoteResponse {
    let Response::Vote {
        epoch,
        granted,
        leader,
        error,
    } = response
    else {
        return VoteResponse::default().with_error_code(ErrorCode::UnknownServerError.code());
    };
    VoteResponse::default().with_topics(vec![vote_response::TopicData::default()
        .with_topic_name(topic())
        .with_partitions(vec![vote_response::PartitionData::default()
            .with_partition_index(0)
            .with_error_code(error_code(error))
            .with_leader_id(leader_id(leader))
            .with_leader_epoch(epoch)
            .with_vote_granted(granted)])])
}

/// A BeginQuorumEpoch response from the quorum's answer.
pub fn begin_out(response: Response) -> BeginQuorumEpochResponse {
    let Response::BeginQuorumEpoch {
        epoch,
        leader,
        error,
    } = response
    else {
        return BeginQuorumEpochResponse::default()
            .with_error_code(ErrorCode::UnknownServerError.code());
    };
    BeginQuorumEpochResponse::default().with_topics(vec![
        begin_quorum_epoch_response::TopicData::default()
            .with_topic_name(topic())
            .with_partitions(vec![begin_quorum_epoch_response::PartitionData::default()
                .with_partition_index(0)
                .with_error_code(error_code(error))
                .with_leader_id(leader_id(leader))
                .with_leader_epoch(epoch)]),
    ])
}

/// An EndQuorumEpoch response from the quorum's answer.
pub fn end_out(response: Response) -> EndQuorumEpochResponse {
    let Response::EndQuorumEpoch {
        epoch,
        leader,
        error,
    } = response
    else {
        return EndQuorumEpochResponse::default()
            .with_error_code(ErrorCode::UnknownServerError.code());
    };
    EndQuorumEpochResponse::default().with_topics(vec![
        end_quorum_epoch_response::TopicData::default()
            .with_topic_name(topic())
            .with_partitions(vec![end_quorum_epoch_response::PartitionData::default()
                .with_partition_index(0)
                .with_error_code(error_code(error))
                .with_leader_id(leader_id(leader))
                .with_leader_epoch(epoch)]),
    ])
}

/// A metadata Fetch response from the quorum's answer.
pub fn fetch_out(response: Response, log_start: i64) -> Result<FetchResponse> {
    let Response::Fetch {
        epoch,
        leader,
        error,
        high_watermark,
        diverging,
        snapshot,
        base_offset,
        entries,
    } = response
    else {
        return Ok(FetchResponse::default().with_error_code(ErrorCode::UnknownServerError.code()));
    };
    let records = if entries.is_empty() {
        Bytes::new()
    } else {
        entry_codec::encode(base_offset, &entries)?
    };
    let mut p = fetch_response::PartitionData::default()
        .with_partition_index(0)
        .with_error_code(error_code(error))
        .with_high_watermark(high_watermark)
        .with_last_stable_offset(high_watermark)
        .with_log_start_offset(log_start)
        .with_current_leader(
            fetch_response::LeaderIdAndEpoch::default()
                .with_leader_id(leader_id(leader))
                .with_leader_epoch(epoch),
        )
        .with_records(Some(records));
    if let Some(d) = diverging {
        p = p.with_diverging_epoch(
            fetch_response::EpochEndOffset::default()
                .with_epoch(d.epoch)
                .with_end_offset(d.offset),
        );
    }
    if let Some(s) = snapshot {
        p = p.with_snapshot_id(
            fetch_response::SnapshotId::default()
                .with_end_offset(s.offset)
                .with_epoch(s.epoch),
        );
    }
    Ok(FetchResponse::default().with_responses(vec![
        fetch_response::FetchableTopicResponse::default()
            .with_topic(topic())
            .with_partitions(vec![p]),
    ]))
}

/// A FetchSnapshot response from the quorum's answer.
pub fn fetch_snapshot_out(response: Response) -> FetchSnapshotResponse {
    let Response::FetchSnapshot {
        epoch,
        leader,
        error,
        snapshot,
        size,
        position,
        bytes,
    } = response
    else {
        return FetchSnapshotResponse::default()
            .with_error_code(ErrorCode::UnknownServerError.code());
    };
    FetchSnapshotResponse::default().with_topics(vec![
        fetch_snapshot_response::TopicSnapshot::default()
            .with_name(topic())
            .with_partitions(vec![fetch_snapshot_response::PartitionSnapshot::default()
                .with_index(0)
                .with_error_code(error_code(error))
                .with_snapshot_id(
                    fetch_snapshot_response::SnapshotId::default()
                        .with_end_offset(snapshot.offset)
                        .with_epoch(snapshot.epoch),
                )
                .with_current_leader(
                    fetch_snapshot_response::LeaderIdAndEpoch::default()
                        .with_leader_id(leader_id(leader))
                        .with_leader_epoch(epoch),
                )
                .with_size(i64::try_from(size).unwrap_or(i64::MAX))
                .with_position(i64::try_from(position).unwrap_or(i64::MAX))
                .with_unaligned_records(bytes)]),
    ])
}

// ---- responses received ---------------------------------------------------------------------

fn top_level(code: i16) -> Result<()> {
    match ErrorCode::from_code(code) {
        ErrorCode::NoError => Ok(()),
        other => Err(Error::kafka(other, "metadata quorum request refused")),
    }
}

/// The quorum's view of a Vote response.
pub fn vote_back(r: VoteResponse) -> Result<Response> {
    top_level(r.error_code)?;
    let p = metadata_answer!(r.topics, partition_index)?;
    Ok(Response::Vote {
        epoch: p.leader_epoch,
        granted: p.vote_granted,
        leader: leader_of(p.leader_id),
        error: quorum_error(p.error_code)?,
    })
}

/// The quorum's view of a BeginQuorumEpoch response.
pub fn begin_back(r: BeginQuorumEpochResponse) -> Result<Response> {
    top_level(r.error_code)?;
    let p = metadata_answer!(r.topics, partition_index)?;
    Ok(Response::BeginQuorumEpoch {
        epoch: p.leader_epoch,
        leader: leader_of(p.leader_id),
        error: quorum_error(p.error_code)?,
    })
}

/// The quorum's view of an EndQuorumEpoch response.
pub fn end_back(r: EndQuorumEpochResponse) -> Result<Response> {
    top_level(r.error_code)?;
    let p = metadata_answer!(r.topics, partition_index)?;
    Ok(Response::EndQuorumEpoch {
        epoch: p.leader_epoch,
        leader: leader_of(p.leader_id),
        error: quorum_error(p.error_code)?,
    })
}

/// The quorum's view of a metadata Fetch response.
pub fn fetch_back(r: FetchResponse) -> Result<Response> {
    top_level(r.error_code)?;
    let p = r
        .responses
        .into_iter()
        .filter(|t| t.topic.0.as_str() == METADATA_TOPIC)
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == 0)
        .ok_or_else(|| bad("fetch response without __cluster_metadata-0"))?;
    let decoded = entry_codec::decode(p.records.unwrap_or_default())?;
    let (base_offset, entries) = decoded.unwrap_or((-1, Vec::new()));
    let diverging = (p.diverging_epoch.epoch >= 0)
        .then(|| OffsetAndEpoch::new(p.diverging_epoch.end_offset, p.diverging_epoch.epoch));
    let snapshot = (p.snapshot_id.epoch >= 0 && p.snapshot_id.end_offset >= 0)
        .then(|| OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch));
    Ok(Response::Fetch {
        epoch: p.current_leader.leader_epoch,
        leader: leader_of(p.current_leader.leader_id),
        error: quorum_error(p.error_code)?,
        high_watermark: p.high_watermark,
        diverging,
        snapshot,
        base_offset,
        entries,
    })
}

/// The quorum's view of a FetchSnapshot response.
pub fn fetch_snapshot_back(r: FetchSnapshotResponse) -> Result<Response> {
    top_level(r.error_code)?;
    let p = metadata_answer!(r.topics, index)?;
    Ok(Response::FetchSnapshot {
        epoch: p.current_leader.leader_epoch,
        leader: leader_of(p.current_leader.leader_id),
        error: quorum_error(p.error_code)?,
        snapshot: OffsetAndEpoch::new(p.snapshot_id.end_offset, p.snapshot_id.epoch),
        size: u64::try_from(p.size).map_err(|_| bad("negative snapshot size"))?,
        position: u64::try_from(p.position).map_err(|_| bad("negative position"))?,
        bytes: p.unaligned_records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use odradek_quorum::Entry;

    #[test]
    fn every_request_survives_the_wire_shape() {
        let requests = [
            Request::Vote {
                epoch: 4,
                candidate: 2,
                last: OffsetAndEpoch::new(10, 3),
            },
            Request::BeginQuorumEpoch {
                epoch: 4,
                leader: 2,
            },
            Request::EndQuorumEpoch {
                epoch: 4,
                leader: 2,
                preferred_successors: vec![3, 1],
            },
            Request::Fetch {
                epoch: 4,
                replica: 3,
                fetch_offset: 9,
                last_fetched_epoch: 3,
            },
            Request::FetchSnapshot {
                epoch: 4,
                replica: 3,
                snapshot: OffsetAndEpoch::new(8, 2),
                position: 100,
            },
        ];
        for r in requests {
            let back = match outbound("c", 1, &r) {
                Outbound::Vote(v) => vote_in(&v),
                Outbound::Begin(b) => begin_in(&b),
                Outbound::End(e) => end_in(&e),
                Outbound::Fetch(f) => {
                    assert!(is_metadata_fetch(&f));
                    fetch_in(&f)
                }
                Outbound::FetchSnapshot(f) => fetch_snapshot_in(&f),
            }
            .unwrap();
            assert_eq!(back.1, r);
        }
    }

    #[test]
    fn a_fetch_answer_keeps_entries_divergence_and_leader() {
        let answer = Response::Fetch {
            epoch: 5,
            leader: Some(2),
            error: None,
            high_watermark: 7,
            diverging: Some(OffsetAndEpoch::new(4, 3)),
            snapshot: None,
            base_offset: 6,
            entries: vec![Entry::data(5, Bytes::from_static(b"x"))],
        };
        let back = fetch_back(fetch_out(answer.clone(), 0).unwrap()).unwrap();
        assert_eq!(back, answer);
        let refused = Response::Vote {
            epoch: 9,
            granted: false,
            leader: None,
            error: Some(QuorumError::FencedLeaderEpoch),
        };
        assert_eq!(vote_back(vote_out(refused.clone())).unwrap(), refused);
    }
}
