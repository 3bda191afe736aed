//! The values the quorum speaks in: node ids, (offset, epoch) positions and log entries.

use bytes::Bytes;

/// A node's id (`node.id`).
pub type NodeId = i32;

/// A position in the replicated log: the offset and the epoch of the entry before it (for a log
/// end or a snapshot id) or of the entry at it, as the context says. Ordered epoch first, which
/// is Raft's "at least as up to date" order for log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffsetAndEpoch {
    /// Epoch.
    pub epoch: i32,
    /// Offset.
    pub offset: i64,
}

impl OffsetAndEpoch {
    /// A position.
    pub const fn new(offset: i64, epoch: i32) -> Self {
        Self { epoch, offset }
    }

    /// Kafka's "undefined" answer of an epoch lookup.
    pub const UNDEFINED: OffsetAndEpoch = OffsetAndEpoch {
        epoch: -1,
        offset: -1,
    };
}

/// What an entry of the replicated log holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Written by a new leader at the start of its epoch (KRaft's LeaderChangeMessage control
    /// record). Committing it commits everything before it, so a leader's high watermark only
    /// moves once a record of its own epoch is on a majority.
    LeaderChange {
        /// The leader of the epoch.
        leader: NodeId,
        /// The voters that elected it.
        voters: Vec<NodeId>,
    },
    /// A record of the state machine (a metadata record batch).
    Data(Bytes),
}

/// One entry of the replicated log; its offset is its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The epoch of the leader that appended it.
    pub epoch: i32,
    /// What it holds.
    pub payload: Payload,
}

impl Entry {
    /// A data entry.
    pub fn data(epoch: i32, bytes: Bytes) -> Self {
        Self {
            epoch,
            payload: Payload::Data(bytes),
        }
    }

    /// The size the entry is counted as when a fetch response is filled.
    pub fn size(&self) -> usize {
        match &self.payload {
            Payload::LeaderChange { voters, .. } => 16 + 4 * voters.len(),
            Payload::Data(b) => 8 + b.len(),
        }
    }
}

/// The durable election state (Kafka's `quorum-state` file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectionState {
    /// The latest epoch this node knows of.
    pub epoch: i32,
    /// The candidate this node voted for in `epoch`, if any.
    pub voted_for: Option<NodeId>,
    /// The leader of `epoch`, if known.
    pub leader: Option<NodeId>,
}

/// A snapshot of the state machine: every entry below `id.offset` folded into `data`, the
/// entry before `id.offset` having epoch `id.epoch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot's id: its end offset and the epoch of its last entry.
    pub id: OffsetAndEpoch,
    /// The state machine's encoding of its state at `id.offset`.
    pub data: Bytes,
}

/// Everything a node persisted, handed back when it starts again.
#[derive(Debug, Clone, Default)]
pub struct Persisted {
    /// The election state.
    pub election: ElectionState,
    /// The latest snapshot, if any: the log starts at its end offset.
    pub snapshot: Option<Snapshot>,
    /// The log entries from the snapshot's end offset (or 0) on.
    pub entries: Vec<Entry>,
}
