//! Answering requests: votes, a new leader's or a resigning leader's announcement, and (on the
//! leader) fetches and snapshot fetches.

use bytes::Bytes;

use crate::leader::ParkedFetch;
use crate::log::FetchValidation;
use crate::message::{QuorumError, Request, Response};
use crate::node::{Quorum, Role};
use crate::types::{NodeId, OffsetAndEpoch};

impl Quorum {
    /// Handles request `id` from `from` at `now` (ms); the answer comes as an
    /// [`crate::Action::Respond`], at once or (a fetch with nothing to read) later.
    pub fn handle_request(&mut self, from: NodeId, id: u64, request: Request, now: u64) {
        self.now = self.now.max(now);
        match request {
            Request::Vote {
                epoch,
                candidate,
                last,
            } => self.on_vote(from, id, epoch, candidate, last),
            Request::BeginQuorumEpoch { epoch, leader } => {
                self.on_begin_epoch(from, id, epoch, leader)
            }
            Request::EndQuorumEpoch {
                epoch,
                leader,
                preferred_successors,
            } => self.on_end_epoch(from, id, epoch, leader, &preferred_successors),
            Request::Fetch {
                epoch,
                replica,
                fetch_offset,
                last_fetched_epoch,
            } => self.on_fetch(from, id, epoch, replica, fetch_offset, last_fetched_epoch),
            Request::FetchSnapshot {
                epoch,
                snapshot,
                position,
                ..
            } => self.on_fetch_snapshot(from, id, epoch, snapshot, position),
        }
    }

    fn on_vote(
        &mut self,
        from: NodeId,
        id: u64,
        epoch: i32,
        candidate: NodeId,
        last: OffsetAndEpoch,
    ) {
        let refuse = |q: &Quorum, error: Option<QuorumError>| Response::Vote {
            epoch: q.epoch,
            granted: false,
            leader: q.leader,
            error,
        };
        if !self.is_voter() || !self.config.voters.contains(&candidate) {
            let r = refuse(self, Some(QuorumError::NotVoter));
            return self.respond(from, id, r);
        }
        if epoch < self.epoch {
            let r = refuse(self, Some(QuorumError::FencedLeaderEpoch));
            return self.respond(from, id, r);
        }
        if epoch > self.epoch {
            self.become_unattached(epoch);
        }
        let granted = match (&self.role, self.voted_for) {
            (Role::Unattached { .. }, Some(v)) => v == candidate,
            (Role::Unattached { .. }, None) => last >= self.log.end(),
            _ => false,
        };
        if granted && self.voted_for.is_none() {
            self.voted_for = Some(candidate);
            let state = self.election_state();
            self.push(crate::Action::SaveElection(state));
            // Granting a vote restarts the wait before standing oneself.
            let at = self.now + self.config.election_timeout_ms;
            self.role = Role::Unattached {
                election_at: Some(at + self.rng.below(self.config.election_timeout_ms + 1)),
            };
        }
        let r = Response::Vote {
            epoch: self.epoch,
            granted,
            leader: self.leader,
            error: None,
        };
        self.respond(from, id, r);
    }

    fn on_begin_epoch(&mut self, from: NodeId, id: u64, epoch: i32, leader: NodeId) {
        let error = if epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else if epoch > self.epoch || self.leader.is_none() {
            self.become_follower(epoch, leader);
            None
        } else if self.leader != Some(leader) {
            // Two leaders in one epoch cannot happen; refuse rather than follow either.
            Some(QuorumError::NotLeader)
        } else {
            None
        };
        let r = Response::BeginQuorumEpoch {
            epoch: self.epoch,
            leader: self.leader,
            error,
        };
        self.respond(from, id, r);
    }

    fn on_end_epoch(
        &mut self,
        from: NodeId,
        id: u64,
        epoch: i32,
        leader: NodeId,
        successors: &[NodeId],
    ) {
        let error = if epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else {
            if epoch > self.epoch
                || (self.leader == Some(leader) && matches!(self.role, Role::Follower { .. }))
            {
                self.become_unattached(epoch);
                // The best-placed successor stands at once, the others after it had a chance.
                let me = self.config.node_id;
                if let Some(pos) = successors.iter().position(|v| *v == me) {
                    let delay = match pos {
                        0 => 0,
                        p => {
                            (p as u64 * self.config.election_backoff_max_ms)
                                / successors.len().max(1) as u64
                        }
                    };
                    let jitter = self.rng.below(self.config.retry_backoff_ms + 1);
                    self.role = Role::Unattached {
                        election_at: Some(self.now + delay + jitter),
                    };
                }
            }
            None
        };
        let r = Response::EndQuorumEpoch {
            epoch: self.epoch,
            leader: self.leader,
            error,
        };
        self.respond(from, id, r);
    }

    /// A fetch response that carries only an error and what this node knows.
    pub(crate) fn error_fetch_response(&self, error: QuorumError) -> Response {
        Response::Fetch {
            epoch: self.epoch,
            leader: self.leader,
            error: Some(error),
            high_watermark: self.high_watermark,
            diverging: None,
            snapshot: None,
            base_offset: 0,
            entries: Vec::new(),
        }
    }

    fn on_fetch(
        &mut self,
        from: NodeId,
        id: u64,
        epoch: i32,
        replica: NodeId,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) {
        if epoch > self.epoch {
            self.observe(epoch, None);
        }
        let error = if epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else if !self.is_leader() {
            Some(QuorumError::NotLeader)
        } else {
            None
        };
        if let Some(e) = error {
            let r = self.error_fetch_response(e);
            return self.respond(from, id, r);
        }
        let answer = |q: &Quorum, diverging, snapshot| Response::Fetch {
            epoch: q.epoch,
            leader: q.leader,
            error: None,
            high_watermark: q.high_watermark,
            diverging,
            snapshot,
            base_offset: fetch_offset,
            entries: Vec::new(),
        };
        match self.log.validate_fetch(fetch_offset, last_fetched_epoch) {
            FetchValidation::Snapshot(s) => {
                let r = answer(self, None, Some(s));
                self.respond(from, id, r)
            }
            FetchValidation::Diverging(d) => {
                let r = answer(self, Some(d), None);
                self.respond(from, id, r)
            }
            FetchValidation::Valid => {
                let end = self.log.end_offset();
                let now = self.now;
                if let Role::Leader(l) = &mut self.role {
                    l.record_fetch(replica, fetch_offset, end, now);
                }
                self.maybe_advance_high_watermark();
                let hw = self.high_watermark;
                let behind = match &self.role {
                    Role::Leader(l) => l.sent_high_watermark(replica) < hw,
                    _ => false,
                };
                if fetch_offset < end || behind {
                    let r = self.fetch_response_from(fetch_offset);
                    if let Role::Leader(l) = &mut self.role {
                        l.note_sent_high_watermark(replica, hw);
                    }
                    self.respond(from, id, r);
                } else {
                    let deadline = self.now + self.config.fetch_max_wait_ms;
                    if let Role::Leader(l) = &mut self.role {
                        l.parked.push(ParkedFetch {
                            from,
                            id,
                            fetch_offset,
                            deadline,
                            replica,
                        });
                    }
                }
            }
        }
    }

    /// A successful fetch response with the entries from `fetch_offset` on.
    pub(crate) fn fetch_response_from(&self, fetch_offset: i64) -> Response {
        Response::Fetch {
            epoch: self.epoch,
            leader: self.leader,
            error: None,
            high_watermark: self.high_watermark,
            diverging: None,
            snapshot: None,
            base_offset: fetch_offset,
            entries: self.log.read(fetch_offset, self.config.fetch_max_bytes),
        }
    }

    fn on_fetch_snapshot(
        &mut self,
        from: NodeId,
        id: u64,
        epoch: i32,
        snapshot: OffsetAndEpoch,
        position: u64,
    ) {
        if epoch > self.epoch {
            self.observe(epoch, None);
        }
        let refuse = |q: &Quorum, e: QuorumError| Response::FetchSnapshot {
            epoch: q.epoch,
            leader: q.leader,
            error: Some(e),
            snapshot,
            size: 0,
            position,
            bytes: Bytes::new(),
        };
        let error = if epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else if !self.is_leader() {
            Some(QuorumError::NotLeader)
        } else {
            None
        };
        if let Some(e) = error {
            let r = refuse(self, e);
            return self.respond(from, id, r);
        }
        let Some(s) = self.log.snapshot().filter(|s| s.id == snapshot) else {
            let r = refuse(self, QuorumError::SnapshotNotFound);
            return self.respond(from, id, r);
        };
        let size = s.data.len() as u64;
        if position > size {
            let r = refuse(self, QuorumError::PositionOutOfRange);
            return self.respond(from, id, r);
        }
        let start = position as usize;
        let end = (start + self.config.snapshot_chunk_bytes).min(s.data.len());
        let r = Response::FetchSnapshot {
            epoch: self.epoch,
            leader: self.leader,
            error: None,
            snapshot,
            size,
            position,
            bytes: s.data.slice(start..end),
        };
        self.respond(from, id, r);
    }

    // ---- the leader's timers and high watermark ---------------------------------------------

    /// Raises the high watermark to what a majority reached, and answers parked fetches.
    pub(crate) fn maybe_advance_high_watermark(&mut self) {
        let end = self.log.end_offset();
        let reached = match &self.role {
            Role::Leader(l) => l.majority_end(end),
            _ => None,
        };
        if let Some(hw) = reached {
            if self.raise_high_watermark(hw) {
                self.complete_parked(true);
            }
        }
    }

    /// Answers parked fetches that now have something to read (or all of them, when the high
    /// watermark moved, so followers learn it), or whose wait is over.
    pub(crate) fn complete_parked(&mut self, all: bool) {
        let end = self.log.end_offset();
        let now = self.now;
        let Role::Leader(l) = &mut self.role else {
            return;
        };
        let (due, waiting): (Vec<ParkedFetch>, Vec<ParkedFetch>) = std::mem::take(&mut l.parked)
            .into_iter()
            .partition(|p| all || p.fetch_offset < end || p.deadline <= now);
        l.parked = waiting;
        let hw = self.high_watermark;
        for p in due {
            let r = self.fetch_response_from(p.fetch_offset);
            if let Role::Leader(l) = &mut self.role {
                l.note_sent_high_watermark(p.replica, hw);
            }
            self.respond(p.from, p.id, r);
        }
    }

    /// The leader's periodic work: announce the epoch to voters that have not acknowledged
    /// it, answer fetches whose wait is over, and resign without a following majority.
    pub(crate) fn leader_tick(&mut self) {
        let now = self.now;
        let retry = self.config.request_timeout_ms;
        let check_window = self.config.fetch_timeout_ms * 3 / 2;
        let (due, lost_majority) = match &mut self.role {
            Role::Leader(l) => {
                let due: Vec<NodeId> = l
                    .begin_due
                    .iter()
                    .filter(|(_, at)| **at <= now)
                    .map(|(v, _)| *v)
                    .collect();
                for v in &due {
                    l.begin_due.insert(*v, now + retry);
                }
                let lost = now.saturating_sub(l.since_ms) > check_window
                    && !l.majority_fetched_within(now, check_window);
                (due, lost)
            }
            _ => return,
        };
        let epoch = self.epoch;
        let me = self.config.node_id;
        for v in due {
            self.send(
                v,
                crate::Request::BeginQuorumEpoch { epoch, leader: me },
                retry,
            );
        }
        self.complete_parked(false);
        if lost_majority {
            self.resign_leadership();
        }
    }
}
