//! One quorum member (voter or observer): its role, its election state, its log, its timers,
//! and the actions it asks its driver to carry out.
//!
//! The driver's contract: feed every event in (`handle_request`, `handle_response`,
//! `request_failed`, `tick`, `propose`, ...), then carry out [`Quorum::drain_actions`] *in
//! order*, making each persistence action durable before any later message goes out. A
//! follower's next fetch offset acknowledges what it appended, and a vote is only granted once
//! saved, so this order is what makes a committed entry survive any minority of crashes.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::leader::LeaderState;
use crate::log::RaftLog;
use crate::message::{QuorumError, Request, Response};
use crate::rng::Rng;
use crate::types::{ElectionState, Entry, NodeId, OffsetAndEpoch, Payload, Persisted, Snapshot};

/// Timing and sizing of one quorum member (Kafka's `controller.quorum.*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// This node's id.
    pub node_id: NodeId,
    /// The voters (`controller.quorum.voters`); a node not among them is an observer.
    pub voters: BTreeSet<NodeId>,
    /// `controller.quorum.election.timeout.ms`: the base of the randomized wait before a voter
    /// without a leader stands for election (1000).
    pub election_timeout_ms: u64,
    /// `controller.quorum.election.backoff.max.ms`: the longest random pause between two
    /// elections a candidate lost (1000).
    pub election_backoff_max_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`: how long a follower goes without a successful
    /// fetch before it stands for election (2000); 1.5 times it without a majority fetching
    /// makes a leader resign.
    pub fetch_timeout_ms: u64,
    /// How long the leader holds a fetch it has nothing for (500).
    pub fetch_max_wait_ms: u64,
    /// `controller.quorum.request.timeout.ms` (2000).
    pub request_timeout_ms: u64,
    /// `controller.quorum.retry.backoff.ms`: the pause after a failed request (20).
    pub retry_backoff_ms: u64,
    /// The most entry bytes one fetch response carries.
    pub fetch_max_bytes: usize,
    /// The most snapshot bytes one FetchSnapshot response carries.
    pub snapshot_chunk_bytes: usize,
    /// Seed of the node's random election timeouts.
    pub seed: u64,
}

impl Config {
    /// Kafka's defaults for `node_id` among `voters`.
    pub fn new(node_id: NodeId, voters: impl IntoIterator<Item = NodeId>) -> Self {
        Config {
            node_id,
            voters: voters.into_iter().collect(),
            election_timeout_ms: 1000,
            election_backoff_max_ms: 1000,
            fetch_timeout_ms: 2000,
            fetch_max_wait_ms: 500,
            request_timeout_ms: 2000,
            retry_backoff_ms: 20,
            fetch_max_bytes: 1 << 20,
            snapshot_chunk_bytes: 1 << 20,
            seed: node_id as u64,
        }
    }
}

/// Something the driver must do, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Make the election state durable.
    SaveElection(ElectionState),
    /// Append these entries durably, the first at `base_offset` (the log's end).
    Append {
        /// Offset of the first entry.
        base_offset: i64,
        /// The entries.
        entries: Vec<Entry>,
    },
    /// Remove every entry at this offset and after, durably.
    TruncateTo(i64),
    /// Replace the whole log and the state machine with this snapshot (a follower too far
    /// behind the leader's log start).
    InstallSnapshot(Snapshot),
    /// Everything below this offset is committed: the state machine may apply it.
    HighWatermark(i64),
    /// The known leader changed (`Some(self)`: this node leads `epoch`).
    LeaderChanged {
        /// The epoch.
        epoch: i32,
        /// The leader, if known.
        leader: Option<NodeId>,
    },
    /// Send a request; answer with [`Quorum::handle_response`] or
    /// [`Quorum::request_failed`] under the same id.
    Request {
        /// The receiver.
        to: NodeId,
        /// Request id.
        id: u64,
        /// The request.
        request: Request,
    },
    /// Send the response to request `id` from `to`.
    Respond {
        /// The requester.
        to: NodeId,
        /// The request's id.
        id: u64,
        /// The response.
        response: Response,
    },
}

/// Why a proposal was not appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotLeader {
    /// The epoch the node knows.
    pub epoch: i32,
    /// The leader it knows, if any.
    pub leader: Option<NodeId>,
}

/// A node's role in its current epoch.
#[derive(Debug, Clone)]
pub(crate) enum Role {
    /// No known leader: waiting for one, or (a voter) for its election timer.
    Unattached {
        /// When a voter stands for election (never for an observer).
        election_at: Option<u64>,
    },
    /// Standing for election in the current epoch.
    Candidate {
        /// Voters that granted their vote (itself included).
        granted: BTreeSet<NodeId>,
        /// When this election is given up.
        ends_at: u64,
        /// Set once given up: when the next election starts.
        next_at: Option<u64>,
    },
    /// Leading the current epoch.
    Leader(Box<LeaderState>),
    /// Following a known leader.
    Follower {
        /// The leader.
        leader: NodeId,
        /// When the leader counts as gone without a successful fetch.
        fetch_deadline: u64,
    },
}

/// A request this node sent and still waits for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlight {
    pub to: NodeId,
    pub deadline: u64,
    /// For a fetch: the log end it was sent from. Its answer only applies to that log.
    pub fetch_from: Option<i64>,
}

/// A snapshot being downloaded from the leader.
#[derive(Debug, Clone)]
pub(crate) struct Download {
    pub id: OffsetAndEpoch,
    pub bytes: Vec<u8>,
}

/// One member of the quorum.
#[derive(Debug)]
pub struct Quorum {
    pub(crate) config: Config,
    pub(crate) epoch: i32,
    pub(crate) voted_for: Option<NodeId>,
    pub(crate) leader: Option<NodeId>,
    pub(crate) role: Role,
    pub(crate) log: RaftLog,
    pub(crate) high_watermark: i64,
    pub(crate) rng: Rng,
    pub(crate) now: u64,
    next_id: u64,
    pub(crate) in_flight: BTreeMap<u64, InFlight>,
    /// The one fetch or snapshot fetch a follower or observer has outstanding.
    pub(crate) fetch_in_flight: Option<u64>,
    /// When a follower or observer may fetch again after a failure.
    pub(crate) fetch_retry_at: u64,
    /// The voter an observer without a leader asks next.
    pub(crate) discover_turn: usize,
    pub(crate) download: Option<Download>,
    actions: Vec<Action>,
}

/// What DescribeQuorum reports about one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// The replica.
    pub id: NodeId,
    /// Its log end offset as the leader last saw it (-1 if unknown).
    pub log_end_offset: i64,
    /// When it last fetched (ms), if known.
    pub last_fetch_ms: Option<u64>,
    /// When it last caught up with the leader's log end (ms), if known.
    pub last_caught_up_ms: Option<u64>,
}

/// The quorum as one node sees it (DescribeQuorum; complete on the leader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumInfo {
    /// The epoch.
    pub epoch: i32,
    /// The leader, if known.
    pub leader: Option<NodeId>,
    /// The high watermark.
    pub high_watermark: i64,
    /// Every voter.
    pub voters: Vec<ReplicaInfo>,
    /// Observers that fetched from this leader.
    pub observers: Vec<ReplicaInfo>,
}

impl Quorum {
    /// A node starting from what it persisted, at time `now` (ms). It starts as follower of
    /// the leader it knew, else unattached; a node that led before it stopped does not lead
    /// again in that epoch.
    pub fn new(config: Config, persisted: Persisted, now: u64) -> Self {
        let log = RaftLog::restore(persisted.snapshot, persisted.entries);
        let high_watermark = log.start();
        let election = persisted.election;
        let mut q = Quorum {
            rng: Rng::new(config.seed),
            config,
            epoch: election.epoch,
            voted_for: election.voted_for,
            leader: None,
            role: Role::Unattached { election_at: None },
            log,
            high_watermark,
            now,
            next_id: 1,
            in_flight: BTreeMap::new(),
            fetch_in_flight: None,
            fetch_retry_at: now,
            discover_turn: 0,
            download: None,
            actions: Vec::new(),
        };
        match election.leader {
            Some(l) if l != q.config.node_id => q.become_follower(election.epoch, l),
            _ => {
                let at = q.voter_election_at();
                q.role = Role::Unattached { election_at: at };
                // A single voter elects itself at once.
                if q.is_voter() && q.config.voters.len() == 1 {
                    q.become_candidate();
                }
            }
        }
        q
    }

    // ---- what the driver reads --------------------------------------------------------------

    /// This node's id.
    pub fn node_id(&self) -> NodeId {
        self.config.node_id
    }

    /// The epoch this node knows.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The leader this node knows.
    pub fn leader(&self) -> Option<NodeId> {
        self.leader
    }

    /// Whether this node leads the current epoch.
    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// The offset of the first entry of this leader's epoch (its LeaderChange record); the
    /// leader has caught up with every earlier leader's commits once its high watermark passes
    /// it. `None` unless this node leads.
    pub fn leader_epoch_start(&self) -> Option<i64> {
        match &self.role {
            Role::Leader(l) => Some(l.epoch_start),
            _ => None,
        }
    }

    /// Whether this node is a voter.
    pub fn is_voter(&self) -> bool {
        self.config.voters.contains(&self.config.node_id)
    }

    /// Entries below this offset are committed.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The log.
    pub fn log(&self) -> &RaftLog {
        &self.log
    }

    /// The durable election state.
    pub fn election_state(&self) -> ElectionState {
        ElectionState {
            epoch: self.epoch,
            voted_for: self.voted_for,
            leader: self.leader,
        }
    }

    /// The quorum as this node sees it.
    pub fn describe(&self) -> QuorumInfo {
        let info = |id: NodeId, p: Option<&crate::leader::Progress>| ReplicaInfo {
            id,
            log_end_offset: p.and_then(|p| p.end_offset).unwrap_or(-1),
            last_fetch_ms: p.and_then(|p| p.last_fetch_ms),
            last_caught_up_ms: p.and_then(|p| p.last_caught_up_ms),
        };
        let me = self.config.node_id;
        let (voters, observers) = match &self.role {
            Role::Leader(l) => (
                self.config
                    .voters
                    .iter()
                    .map(|v| match *v == me {
                        true => ReplicaInfo {
                            id: me,
                            log_end_offset: self.log.end_offset(),
                            last_fetch_ms: Some(self.now),
                            last_caught_up_ms: Some(self.now),
                        },
                        false => info(*v, l.voters.get(v)),
                    })
                    .collect(),
                l.observers
                    .iter()
                    .map(|(id, p)| info(*id, Some(p)))
                    .collect(),
            ),
            _ => (
                self.config.voters.iter().map(|v| info(*v, None)).collect(),
                Vec::new(),
            ),
        };
        QuorumInfo {
            epoch: self.epoch,
            leader: self.leader,
            high_watermark: self.high_watermark,
            voters,
            observers,
        }
    }

    /// The actions to carry out, in order, since the last call.
    pub fn drain_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    // ---- what the driver feeds in -----------------------------------------------------------

    /// Appends `records` as entries of the current epoch, if this node leads. Returns the
    /// offset of the last one (committed once the high watermark passes it).
    pub fn propose(&mut self, records: Vec<Bytes>, now: u64) -> Result<i64, NotLeader> {
        self.now = self.now.max(now);
        if !self.is_leader() {
            return Err(NotLeader {
                epoch: self.epoch,
                leader: self.leader,
            });
        }
        let entries: Vec<Entry> = records
            .into_iter()
            .map(|r| Entry::data(self.epoch, r))
            .collect();
        self.append(entries);
        Ok(self.log.end_offset() - 1)
    }

    /// The state machine saved `snapshot` durably (its id at or below the high watermark):
    /// the log may now start there, and followers too far behind get it.
    pub fn snapshot_saved(&mut self, snapshot: Snapshot) -> Result<(), String> {
        let id = snapshot.id;
        if id.offset > self.high_watermark {
            return Err(format!(
                "snapshot end {} is above the high watermark {}",
                id.offset, self.high_watermark
            ));
        }
        if id.offset <= self.log.start() {
            return Ok(());
        }
        if self.log.epoch_before(id.offset) != Some(id.epoch) {
            return Err(format!(
                "snapshot {}@{} does not match the log's epoch there",
                id.offset, id.epoch
            ));
        }
        self.log.compact(snapshot);
        Ok(())
    }

    /// A graceful shutdown: a leader resigns and asks the best-placed voters to stand first.
    pub fn resign(&mut self, now: u64) {
        self.now = self.now.max(now);
        if self.is_leader() {
            self.resign_leadership();
        }
    }

    /// Runs every timer due at `now` (ms). Call it often (every few ms to tens of ms).
    pub fn tick(&mut self, now: u64) {
        self.now = self.now.max(now);
        let now = self.now;
        let expired: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(f) = self.in_flight.get(&id).copied() {
                self.request_failed(f.to, id, now);
            }
        }
        /// What the role's timers call for.
        enum Due {
            Nothing,
            Election,
            Discover,
            Backoff,
            FetchTimeout,
            Fetch,
            Lead,
        }
        let due = match &self.role {
            Role::Unattached { election_at } => match election_at {
                Some(at) if *at <= now => Due::Election,
                _ if !self.is_voter() => Due::Discover,
                _ => Due::Nothing,
            },
            Role::Candidate {
                ends_at, next_at, ..
            } => match next_at {
                Some(at) if *at <= now => Due::Election,
                Some(_) => Due::Nothing,
                None if *ends_at <= now => Due::Backoff,
                None => Due::Nothing,
            },
            Role::Follower { fetch_deadline, .. } if *fetch_deadline <= now => Due::FetchTimeout,
            Role::Follower { .. } => Due::Fetch,
            Role::Leader(_) => Due::Lead,
        };
        match due {
            Due::Nothing => {}
            Due::Election => self.become_candidate(),
            Due::Discover => self.discover_leader(),
            Due::Backoff => {
                let pause = self.rng.below(self.config.election_backoff_max_ms + 1);
                if let Role::Candidate { next_at, .. } = &mut self.role {
                    *next_at = Some(now + pause);
                }
            }
            Due::FetchTimeout if self.is_voter() => self.become_candidate(),
            Due::FetchTimeout => {
                let epoch = self.epoch;
                self.become_unattached(epoch);
            }
            Due::Fetch => self.maybe_fetch(),
            Due::Lead => self.leader_tick(),
        }
    }

    // ---- transitions ------------------------------------------------------------------------

    pub(crate) fn majority(&self) -> usize {
        self.config.voters.len() / 2 + 1
    }

    fn randomized_election_timeout(&mut self) -> u64 {
        let base = self.config.election_timeout_ms;
        base + self.rng.below(base + 1)
    }

    fn voter_election_at(&mut self) -> Option<u64> {
        if self.is_voter() {
            Some(self.now + self.randomized_election_timeout())
        } else {
            None
        }
    }

    pub(crate) fn next_request_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(crate) fn send(&mut self, to: NodeId, request: Request, timeout_ms: u64) -> u64 {
        let id = self.next_request_id();
        self.in_flight.insert(
            id,
            InFlight {
                to,
                deadline: self.now + timeout_ms,
                fetch_from: None,
            },
        );
        self.actions.push(Action::Request { to, id, request });
        id
    }

    pub(crate) fn respond(&mut self, to: NodeId, id: u64, response: Response) {
        self.actions.push(Action::Respond { to, id, response });
    }

    pub(crate) fn push(&mut self, action: Action) {
        self.actions.push(action);
    }

    fn save_election(&mut self) {
        let state = self.election_state();
        self.actions.push(Action::SaveElection(state));
    }

    /// Leaves whatever role for a new one: in-flight fetches and parked fetches are dropped
    /// (answered, for parked ones, so followers learn at once).
    fn leave_role(&mut self) {
        if let Role::Leader(l) = &mut self.role {
            let parked = std::mem::take(&mut l.parked);
            for p in parked {
                let response = self.error_fetch_response(QuorumError::NotLeader);
                self.respond(p.from, p.id, response);
            }
        }
        self.fetch_in_flight = None;
        self.download = None;
    }

    /// No leader known in `epoch` (newer than or equal to the current one).
    pub(crate) fn become_unattached(&mut self, epoch: i32) {
        self.leave_role();
        if epoch > self.epoch {
            self.voted_for = None;
        }
        self.epoch = epoch;
        self.leader = None;
        let at = self.voter_election_at();
        self.role = Role::Unattached { election_at: at };
        self.save_election();
        self.push(Action::LeaderChanged {
            epoch,
            leader: None,
        });
    }

    /// `leader` leads `epoch` (newer than or equal to the current one).
    pub(crate) fn become_follower(&mut self, epoch: i32, leader: NodeId) {
        self.leave_role();
        if epoch > self.epoch {
            self.voted_for = None;
        }
        self.epoch = epoch;
        self.leader = Some(leader);
        self.role = Role::Follower {
            leader,
            fetch_deadline: self.now + self.config.fetch_timeout_ms,
        };
        self.fetch_retry_at = self.now;
        self.save_election();
        self.push(Action::LeaderChanged {
            epoch,
            leader: Some(leader),
        });
        self.maybe_fetch();
    }

    /// Stands for election in the next epoch.
    pub(crate) fn become_candidate(&mut self) {
        if !self.is_voter() {
            return;
        }
        self.leave_role();
        self.epoch += 1;
        self.voted_for = Some(self.config.node_id);
        self.leader = None;
        let ends_at = self.now + self.randomized_election_timeout();
        self.role = Role::Candidate {
            granted: BTreeSet::from([self.config.node_id]),
            ends_at,
            next_at: None,
        };
        self.save_election();
        self.push(Action::LeaderChanged {
            epoch: self.epoch,
            leader: None,
        });
        if self.majority() == 1 {
            self.become_leader();
            return;
        }
        let request = Request::Vote {
            epoch: self.epoch,
            candidate: self.config.node_id,
            last: self.log.end(),
        };
        let others: Vec<NodeId> = self.other_voters().collect();
        let timeout = self.config.request_timeout_ms;
        for v in others {
            self.send(v, request.clone(), timeout);
        }
    }

    /// Won the election of the current epoch.
    pub(crate) fn become_leader(&mut self) {
        self.leave_role();
        let me = self.config.node_id;
        self.leader = Some(me);
        let epoch_start = self.log.end_offset();
        let others: Vec<NodeId> = self.other_voters().collect();
        self.role = Role::Leader(Box::new(LeaderState::new(
            others.into_iter(),
            epoch_start,
            self.now,
        )));
        self.save_election();
        self.push(Action::LeaderChanged {
            epoch: self.epoch,
            leader: Some(me),
        });
        let change = Entry {
            epoch: self.epoch,
            payload: Payload::LeaderChange {
                leader: me,
                voters: self.config.voters.iter().copied().collect(),
            },
        };
        self.append(vec![change]);
        self.leader_tick();
    }

    /// Gives up leadership of the current epoch (lost its majority, or shutting down).
    pub(crate) fn resign_leadership(&mut self) {
        let Role::Leader(l) = &self.role else { return };
        // Successors by how far they got, best first.
        let mut successors: Vec<(i64, NodeId)> = l
            .voters
            .iter()
            .map(|(v, p)| (p.end_offset.unwrap_or(-1), *v))
            .collect();
        successors.sort_unstable_by(|a, b| b.cmp(a));
        let preferred: Vec<NodeId> = successors.into_iter().map(|(_, v)| v).collect();
        let epoch = self.epoch;
        let me = self.config.node_id;
        self.become_unattached(epoch);
        let timeout = self.config.request_timeout_ms;
        for v in preferred.clone() {
            self.send(
                v,
                Request::EndQuorumEpoch {
                    epoch,
                    leader: me,
                    preferred_successors: preferred.clone(),
                },
                timeout,
            );
        }
    }

    /// Moves to a newer epoch (and its leader, if given) learnt from any message. Returns
    /// whether anything changed.
    pub(crate) fn observe(&mut self, epoch: i32, leader: Option<NodeId>) -> bool {
        let me = self.config.node_id;
        let leader = leader.filter(|l| *l != me);
        if epoch > self.epoch {
            match leader {
                Some(l) => self.become_follower(epoch, l),
                None => self.become_unattached(epoch),
            }
            return true;
        }
        if epoch == self.epoch && self.leader.is_none() {
            if let Some(l) = leader {
                self.become_follower(epoch, l);
                return true;
            }
        }
        false
    }

    pub(crate) fn other_voters(&self) -> impl Iterator<Item = NodeId> + '_ {
        let me = self.config.node_id;
        self.config.voters.iter().copied().filter(move |v| *v != me)
    }

    // ---- the log ----------------------------------------------------------------------------

    /// Appends entries at the log end (leader) and tells the driver.
    pub(crate) fn append(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() {
            return;
        }
        let base_offset = self.log.end_offset();
        for e in &entries {
            self.log.append(e.clone());
        }
        self.push(Action::Append {
            base_offset,
            entries,
        });
        if self.is_leader() {
            self.maybe_advance_high_watermark();
            self.complete_parked(false);
        }
    }

    /// Raises the high watermark to `hw` if that is higher, and tells the driver.
    pub(crate) fn raise_high_watermark(&mut self, hw: i64) -> bool {
        if hw > self.high_watermark {
            self.high_watermark = hw;
            self.push(Action::HighWatermark(hw));
            true
        } else {
            false
        }
    }
}
