//! Handling answers: votes counted, announcements acknowledged, and the follower's side of
//! replication (append, truncate on divergence, download a snapshot, follow the high
//! watermark), plus finding the leader as an observer.

use crate::message::{QuorumError, Request, Response};
use crate::node::{Download, Quorum, Role};
use crate::types::{NodeId, Snapshot};
use crate::Action;

/// The largest snapshot a follower downloads (1 GiB): a bigger claimed size is refused rather
/// than buffered.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

impl Quorum {
    /// Handles the answer `response` from `from` to this node's request `id`.
    pub fn handle_response(&mut self, from: NodeId, id: u64, response: Response, now: u64) {
        self.now = self.now.max(now);
        let Some(sent) = self.in_flight.remove(&id) else {
            return; // timed out or failed already
        };
        let mut ours = self.fetch_in_flight == Some(id);
        if ours {
            self.fetch_in_flight = None;
        }
        // A fetch answer applies only to the log it was asked from.
        if sent
            .fetch_from
            .is_some_and(|from| from != self.log.end_offset())
        {
            ours = false;
        }
        // A newer epoch (or the leader of ours) learnt from any answer; a node that changed
        // role has sent its next fetch already, and this answer is moot.
        let moved = self.observe(response.epoch(), response.leader());
        match response {
            Response::Vote {
                epoch,
                granted,
                error,
                ..
            } => {
                if !moved && granted && error.is_none() && epoch == self.epoch {
                    self.count_vote(from);
                }
            }
            Response::BeginQuorumEpoch { epoch, error, .. } => {
                if error.is_none() && epoch == self.epoch {
                    if let Role::Leader(l) = &mut self.role {
                        l.acknowledged.insert(from);
                        l.begin_due.remove(&from);
                    }
                }
            }
            Response::EndQuorumEpoch { .. } => {}
            Response::Fetch { .. } if ours && !moved => self.on_fetch_response(from, response),
            Response::FetchSnapshot { .. } if ours && !moved => {
                self.on_snapshot_chunk(from, response)
            }
            Response::Fetch { .. } | Response::FetchSnapshot { .. } => {}
        }
        self.maybe_fetch();
    }

    /// Request `id` to `to` failed (timed out, connection lost) at `now`.
    pub fn request_failed(&mut self, _to: NodeId, id: u64, now: u64) {
        self.now = self.now.max(now);
        if self.in_flight.remove(&id).is_none() {
            return;
        }
        if self.fetch_in_flight == Some(id) {
            self.fetch_in_flight = None;
            self.fetch_retry_at = self.now + self.config.retry_backoff_ms;
            self.discover_turn += 1;
        }
    }

    fn count_vote(&mut self, from: NodeId) {
        let majority = self.majority();
        let won = match &mut self.role {
            Role::Candidate { granted, .. } => {
                if self.config.voters.contains(&from) {
                    granted.insert(from);
                }
                granted.len() >= majority
            }
            _ => false,
        };
        if won {
            self.become_leader();
        }
    }

    /// The node a follower or observer fetches from: its leader, else (an observer looking for
    /// one) the next voter in turn.
    fn fetch_target(&self) -> Option<NodeId> {
        match &self.role {
            Role::Follower { leader, .. } => Some(*leader),
            _ => None,
        }
    }

    /// Sends the next fetch (or snapshot fetch) if a follower or observer has none out.
    pub(crate) fn maybe_fetch(&mut self) {
        if self.fetch_in_flight.is_some() || self.now < self.fetch_retry_at {
            return;
        }
        let Some(leader) = self.fetch_target() else {
            return;
        };
        let epoch = self.epoch;
        let me = self.config.node_id;
        let timeout = self.config.request_timeout_ms + self.config.fetch_max_wait_ms;
        let request = match &self.download {
            Some(d) => Request::FetchSnapshot {
                epoch,
                replica: me,
                snapshot: d.id,
                position: d.bytes.len() as u64,
            },
            None => Request::Fetch {
                epoch,
                replica: me,
                fetch_offset: self.log.end_offset(),
                last_fetched_epoch: self.log.last_epoch(),
            },
        };
        let from = self.log.end_offset();
        let id = self.send(leader, request, timeout);
        if let Some(f) = self.in_flight.get_mut(&id) {
            f.fetch_from = Some(from);
        }
        self.fetch_in_flight = Some(id);
    }

    /// An observer without a leader asks the voters in turn who leads.
    pub(crate) fn discover_leader(&mut self) {
        if self.fetch_in_flight.is_some() || self.now < self.fetch_retry_at {
            return;
        }
        let voters: Vec<NodeId> = self.config.voters.iter().copied().collect();
        if voters.is_empty() {
            return;
        }
        let to = voters[self.discover_turn % voters.len()];
        let request = Request::Fetch {
            epoch: self.epoch,
            replica: self.config.node_id,
            fetch_offset: self.log.end_offset(),
            last_fetched_epoch: self.log.last_epoch(),
        };
        let timeout = self.config.request_timeout_ms + self.config.fetch_max_wait_ms;
        let id = self.send(to, request, timeout);
        self.fetch_in_flight = Some(id);
        // Asked again only after a pause, whatever the answer.
        self.fetch_retry_at = self.now + self.config.retry_backoff_ms;
    }

    fn on_fetch_response(&mut self, from: NodeId, response: Response) {
        let Response::Fetch {
            error,
            high_watermark,
            diverging,
            snapshot,
            base_offset,
            entries,
            ..
        } = response
        else {
            return;
        };
        let following = matches!(self.role, Role::Follower { leader, .. } if leader == from);
        if error.is_some() || !following {
            if error.is_some() {
                self.fetch_retry_at = self.now + self.config.retry_backoff_ms;
                self.discover_turn += 1;
            }
            return;
        }
        if let Role::Follower { fetch_deadline, .. } = &mut self.role {
            *fetch_deadline = self.now + self.config.fetch_timeout_ms;
        }
        if let Some(d) = diverging {
            let to = self.log.truncation_offset(d);
            if to < self.log.end_offset() {
                self.log.truncate_to(to);
                self.push(Action::TruncateTo(to));
            }
            return;
        }
        if let Some(id) = snapshot {
            self.download = Some(Download {
                id,
                bytes: Vec::new(),
            });
            return;
        }
        if base_offset == self.log.end_offset() && !entries.is_empty() {
            self.append_replicated(entries);
        }
        let hw = high_watermark.min(self.log.end_offset());
        self.raise_high_watermark(hw);
    }

    /// A follower appends what the leader sent.
    fn append_replicated(&mut self, entries: Vec<crate::Entry>) {
        let base_offset = self.log.end_offset();
        for e in &entries {
            self.log.append(e.clone());
        }
        self.push(Action::Append {
            base_offset,
            entries,
        });
    }

    fn on_snapshot_chunk(&mut self, from: NodeId, response: Response) {
        let Response::FetchSnapshot {
            error,
            snapshot,
            size,
            position,
            bytes,
            ..
        } = response
        else {
            return;
        };
        let following = matches!(self.role, Role::Follower { leader, .. } if leader == from);
        let Some(d) = self.download.as_mut().filter(|d| d.id == snapshot) else {
            return;
        };
        if !following {
            return;
        }
        match error {
            Some(QuorumError::SnapshotNotFound) | Some(QuorumError::PositionOutOfRange) => {
                // The leader moved on to a newer snapshot: fetch again to learn it.
                self.download = None;
                return;
            }
            Some(_) => {
                self.fetch_retry_at = self.now + self.config.retry_backoff_ms;
                return;
            }
            None => {}
        }
        if position != d.bytes.len() as u64 {
            return;
        }
        if size > MAX_SNAPSHOT_BYTES {
            // A leader claiming more than any metadata snapshot holds: refuse to buffer it.
            self.download = None;
            self.fetch_retry_at = self.now + self.config.fetch_timeout_ms;
            return;
        }
        d.bytes.extend_from_slice(&bytes);
        if let Role::Follower { fetch_deadline, .. } = &mut self.role {
            *fetch_deadline = self.now + self.config.fetch_timeout_ms;
        }
        if (d.bytes.len() as u64) < size {
            return;
        }
        let Some(done) = self.download.take() else {
            return;
        };
        let installed = Snapshot {
            id: done.id,
            data: bytes::Bytes::from(done.bytes),
        };
        self.log.install_snapshot(installed.clone());
        self.push(Action::InstallSnapshot(installed));
        // A snapshot holds only committed entries.
        self.raise_high_watermark(done.id.offset);
    }
}
