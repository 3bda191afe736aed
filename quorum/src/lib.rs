//! Odradek's metadata quorum: KRaft's pull-based Raft (KIP-595) as a sans-IO state machine.
//!
//! A [`Quorum`] is one member, a voter or an observer. It performs no I/O and reads no clock:
//! the driver hands it requests, responses, failures and the time, and carries out the
//! [`Action`]s it returns (persist, send, apply). The same code runs under the broker's tokio
//! driver and under the seeded, in-memory simulation in `tests/simulation.rs`, which checks
//! Kafka's `RaftEventSimulationTest` invariants over thousands of schedules.
//!
//! The protocol is Kafka's: elections by Vote with the candidate's last (epoch, offset), a new
//! leader announced by BeginQuorumEpoch and a LeaderChange entry at the start of its epoch,
//! replication pulled by followers with Fetch (fetch offset, last fetched epoch; the leader
//! answers a divergence or a snapshot id), a high watermark that a majority of voters reached
//! and that includes a record of the leader's own epoch, snapshots served by FetchSnapshot,
//! EndQuorumEpoch for a graceful resignation, and a leader that resigns when a majority stops
//! fetching from it (check quorum).

mod leader;
mod log;
mod message;
mod node;
mod requests;
mod responses;
mod rng;
mod types;

pub use log::{FetchValidation, RaftLog};
pub use message::{QuorumError, Request, Response};
pub use node::{Action, Config, NotLeader, Quorum, QuorumInfo, ReplicaInfo};
pub use rng::Rng;
pub use types::{ElectionState, Entry, NodeId, OffsetAndEpoch, Payload, Persisted, Snapshot};
