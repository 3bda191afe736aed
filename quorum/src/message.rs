//! The quorum's requests and responses: KRaft's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
//! (on the metadata log) and FetchSnapshot, as plain values. The broker maps them to and from
//! the Kafka wire messages of the same names; the simulation delivers them as they are.

use bytes::Bytes;

use crate::types::{Entry, NodeId, OffsetAndEpoch};

/// Why a node refused a request (the Kafka error code of the same name on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumError {
    /// The request's epoch is older than the receiver's (FENCED_LEADER_EPOCH).
    FencedLeaderEpoch,
    /// The receiver is not the leader of the request's epoch (NOT_LEADER_OR_FOLLOWER).
    NotLeader,
    /// The request's epoch is newer than the receiver knows (UNKNOWN_LEADER_EPOCH).
    UnknownLeaderEpoch,
    /// The sender is not a voter (INCONSISTENT_VOTER_SET).
    NotVoter,
    /// The snapshot asked for is not the leader's (SNAPSHOT_NOT_FOUND).
    SnapshotNotFound,
    /// The snapshot position asked for is past its end (POSITION_OUT_OF_RANGE).
    PositionOutOfRange,
}

/// A request from one quorum member to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A candidate asks for a vote in `epoch`.
    Vote {
        /// The candidate's epoch.
        epoch: i32,
        /// The candidate.
        candidate: NodeId,
        /// The candidate's log end and last epoch.
        last: OffsetAndEpoch,
    },
    /// A new leader tells a voter about its epoch (replication is pulled, so voters would not
    /// hear of it otherwise).
    BeginQuorumEpoch {
        /// The leader's epoch.
        epoch: i32,
        /// The leader.
        leader: NodeId,
    },
    /// A leader that resigns tells the voters, best successors first.
    EndQuorumEpoch {
        /// The ending epoch.
        epoch: i32,
        /// The resigning leader.
        leader: NodeId,
        /// Voters in the order they should stand for election.
        preferred_successors: Vec<NodeId>,
    },
    /// A follower or observer asks the leader for entries after its log end.
    Fetch {
        /// The epoch the fetcher believes current.
        epoch: i32,
        /// The fetcher.
        replica: NodeId,
        /// The fetcher's log end offset.
        fetch_offset: i64,
        /// The epoch of the fetcher's last entry.
        last_fetched_epoch: i32,
    },
    /// A follower asks for a chunk of the leader's snapshot.
    FetchSnapshot {
        /// The epoch the fetcher believes current.
        epoch: i32,
        /// The fetcher.
        replica: NodeId,
        /// The snapshot asked for.
        snapshot: OffsetAndEpoch,
        /// The byte position to read from.
        position: u64,
    },
}

/// An answer to a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// Answer to [`Request::Vote`].
    Vote {
        /// The responder's epoch.
        epoch: i32,
        /// Whether the vote was granted.
        granted: bool,
        /// The leader the responder knows, if any.
        leader: Option<NodeId>,
        /// Why the request was refused, if it was.
        error: Option<QuorumError>,
    },
    /// Answer to [`Request::BeginQuorumEpoch`].
    BeginQuorumEpoch {
        /// The responder's epoch.
        epoch: i32,
        /// The leader the responder knows.
        leader: Option<NodeId>,
        /// Why the request was refused, if it was.
        error: Option<QuorumError>,
    },
    /// Answer to [`Request::EndQuorumEpoch`].
    EndQuorumEpoch {
        /// The responder's epoch.
        epoch: i32,
        /// The leader the responder knows.
        leader: Option<NodeId>,
        /// Why the request was refused, if it was.
        error: Option<QuorumError>,
    },
    /// Answer to [`Request::Fetch`].
    Fetch {
        /// The responder's epoch.
        epoch: i32,
        /// The leader the responder knows.
        leader: Option<NodeId>,
        /// Why the request was refused, if it was.
        error: Option<QuorumError>,
        /// The leader's high watermark.
        high_watermark: i64,
        /// Set when the fetcher's log diverges: truncate, then fetch again.
        diverging: Option<OffsetAndEpoch>,
        /// Set when the fetcher needs this snapshot first.
        snapshot: Option<OffsetAndEpoch>,
        /// The offset of the first entry in `entries`.
        base_offset: i64,
        /// Entries from `base_offset` on.
        entries: Vec<Entry>,
    },
    /// Answer to [`Request::FetchSnapshot`].
    FetchSnapshot {
        /// The responder's epoch.
        epoch: i32,
        /// The leader the responder knows.
        leader: Option<NodeId>,
        /// Why the request was refused, if it was.
        error: Option<QuorumError>,
        /// The snapshot the chunk is of.
        snapshot: OffsetAndEpoch,
        /// The snapshot's whole size in bytes.
        size: u64,
        /// Where `bytes` starts.
        position: u64,
        /// The chunk.
        bytes: Bytes,
    },
}

impl Response {
    /// The responder's epoch.
    pub fn epoch(&self) -> i32 {
        match self {
            Response::Vote { epoch, .. }
            | Response::BeginQuorumEpoch { epoch, .. }
            | Response::EndQuorumEpoch { epoch, .. }
            | Response::Fetch { epoch, .. }
            | Response::FetchSnapshot { epoch, .. } => *epoch,
        }
    }

    /// The leader the responder knows.
    pub fn leader(&self) -> Option<NodeId> {
        match self {
            Response::Vote { leader, .. }
            | Response::BeginQuorumEpoch { leader, .. }
            | Response::EndQuorumEpoch { leader, .. }
            | Response::Fetch { leader, .. }
            | Response::FetchSnapshot { leader, .. } => *leader,
        }
    }
}

impl Request {
    /// The sender's epoch.
    pub fn epoch(&self) -> i32 {
        match self {
            Request::Vote { epoch, .. }
            | Request::BeginQuorumEpoch { epoch, .. }
            | Request::EndQuorumEpoch { epoch, .. }
            | Request::Fetch { epoch, .. }
            | Request::FetchSnapshot { epoch, .. } => *epoch,
        }
    }
}
