//! Runs one node's [`Quorum`] on tokio: requests from the controller listener and answers from
//! peers go in, the quorum's actions come out and are carried out in order (the metadata log
//! and election state made durable first, then messages sent, then committed entries handed to
//! the state machine). One task owns the quorum; everything else talks to it through a
//! [`QuorumHandle`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek_quorum::{
    Action, Entry, NodeId, NotLeader, Persisted, Quorum, QuorumInfo, Request, Response, Snapshot,
};
use tokio::sync::{mpsc, oneshot, watch};

use super::metadata_log::MetadataLogStore;
use super::peers::Peers;
use crate::Result;

/// What the rest of the node sees of the quorum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumStatus {
    /// The epoch this node knows.
    pub epoch: i32,
    /// The leader (active controller) this node knows.
    pub leader: Option<NodeId>,
    /// Entries below this offset are committed and applied to the state machine.
    pub applied: i64,
    /// Whether this node leads.
    pub is_leader: bool,
    /// Whether this node leads and has applied every entry before its epoch (what it decides
    /// from then on sees everything its predecessors committed): the active controller.
    pub active: bool,
    /// Set when the driver stopped on an error it cannot recover from (the metadata log
    /// cannot be written).
    pub failed: Option<String>,
}

/// The state the metadata log builds, applied entry by entry in offset order.
pub trait StateMachine: Send + 'static {
    /// Applies the committed entry at `offset` (data entries only; a leader change is told
    /// through [`QuorumStatus`]).
    fn apply(&mut self, offset: i64, epoch: i32, data: &Bytes);
    /// Replaces the whole state with a snapshot's.
    fn load(&mut self, snapshot: &Snapshot) -> Result<()>;
    /// The state as snapshot bytes.
    fn snapshot(&self) -> Bytes;
}

enum Command {
    Inbound {
        from: NodeId,
        request: Request,
        reply: oneshot::Sender<Response>,
    },
    Answer {
        from: NodeId,
        id: u64,
        result: std::result::Result<Response, String>,
    },
    Propose {
        records: Vec<Bytes>,
        reply: oneshot::Sender<std::result::Result<(i64, i32), NotLeader>>,
    },
    Describe {
        reply: oneshot::Sender<(QuorumInfo, i64)>,
    },
    Resign {
        reply: oneshot::Sender<()>,
    },
}

/// The way into a running quorum.
#[derive(Debug, Clone)]
pub struct QuorumHandle {
    commands: mpsc::UnboundedSender<Command>,
    status: watch::Receiver<QuorumStatus>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Command")
    }
}

impl QuorumHandle {
    /// Hands a request from node `from` to the quorum and waits for its answer (a fetch with
    /// nothing to read waits up to its max wait).
    pub async fn request(&self, from: NodeId, request: Request) -> Option<Response> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Inbound {
                from,
                request,
                reply,
            })
            .ok()?;
        rx.await.ok()
    }

    /// Appends records if this node leads: the offset of the last one and the epoch they were
    /// appended in (an entry of that epoch at that offset, once applied, is this one).
    pub async fn propose(&self, records: Vec<Bytes>) -> std::result::Result<(i64, i32), NotLeader> {
        let not_leader = |s: &QuorumStatus| NotLeader {
            epoch: s.epoch,
            leader: s.leader,
        };
        let (reply, rx) = oneshot::channel();
        if self
            .commands
            .send(Command::Propose { records, reply })
            .is_err()
        {
            return Err(not_leader(&self.status.borrow()));
        }
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(not_leader(&self.status.borrow())),
        }
    }

    /// Waits until every entry up to `offset` is applied (or `timeout` passes); whether it is.
    pub async fn wait_applied(&self, offset: i64, timeout: Duration) -> bool {
        let mut rx = self.status.clone();
        tokio::time::timeout(timeout, rx.wait_for(|s| s.applied > offset))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The quorum as this node sees it (complete on the leader), with the log start offset.
    pub async fn describe(&self) -> Option<(QuorumInfo, i64)> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Describe { reply }).ok()?;
        rx.await.ok()
    }

    /// A leader resigns (controlled shutdown); the others elect a successor.
    pub async fn resign(&self) {
        let (reply, rx) = oneshot::channel();
        if self.commands.send(Command::Resign { reply }).is_ok() {
            let _ = rx.await;
        }
    }

    /// The current status.
    pub fn status(&self) -> QuorumStatus {
        self.status.borrow().clone()
    }

    /// A receiver of every status change.
    pub fn watch(&self) -> watch::Receiver<QuorumStatus> {
        self.status.clone()
    }
}

/// How often the quorum's timers run.
const TICK: Duration = Duration::from_millis(10);

/// Starts the quorum of this node: recovers its metadata log from `store` / `persisted`,
/// loads the snapshot and committed entries into `machine` as they commit, and talks to the
/// other voters through `peers`. `snapshot_every` bytes of applied records trigger a snapshot.
pub fn start<M: StateMachine>(
    config: odradek_quorum::Config,
    store: MetadataLogStore,
    persisted: Persisted,
    mut machine: M,
    peers: Arc<Peers>,
    snapshot_every: u64,
    shutdown: watch::Receiver<bool>,
) -> Result<(QuorumHandle, tokio::task::JoinHandle<()>)> {
    let started = Instant::now();
    let mut applied = 0;
    if let Some(s) = &persisted.snapshot {
        machine.load(s)?;
        applied = s.id.offset;
    }
    let quorum = Quorum::new(config, persisted, 0);
    let (tx, rx) = mpsc::unbounded_channel();
    let (status_tx, status_rx) = watch::channel(QuorumStatus {
        applied,
        ..QuorumStatus::default()
    });
    let driver = Driver {
        quorum,
        store,
        machine,
        peers,
        started,
        applied,
        since_snapshot: 0,
        snapshot_every,
        inbound: BTreeMap::new(),
        next_token: 0,
        commands: tx.clone(),
        status: status_tx,
    };
    let handle = QuorumHandle {
        commands: tx,
        status: status_rx,
    };
    let task = tokio::spawn(driver.run(rx, shutdown));
    Ok((handle, task))
}

struct Driver<M> {
    quorum: Quorum,
    store: MetadataLogStore,
    machine: M,
    peers: Arc<Peers>,
    started: Instant,
    applied: i64,
    since_snapshot: u64,
    snapshot_every: u64,
    /// Requests received and not answered yet, by the token the quorum was given.
    inbound: BTreeMap<u64, oneshot::Sender<Response>>,
    next_token: u64,
    commands: mpsc::UnboundedSender<Command>,
    status: watch::Sender<QuorumStatus>,
}

impl<M: StateMachine> Driver<M> {
    fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Command>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = tick.tick() => {
                    let now = self.now();
                    self.quorum.tick(now);
                }
                command = rx.recv() => match command {
                    Some(c) => self.command(c),
                    None => break,
                },
            }
            if let Err(e) = self.carry_out() {
                tracing::error!(error = %e, "metadata quorum stopped: its log cannot be written");
                self.status.send_modify(|s| {
                    s.failed = Some(e.to_string());
                    s.is_leader = false;
                    s.active = false;
                });
                return;
            }
        }
        // A leader that stops resigns, so the others need not wait for its fetch timeout.
        if self.quorum.is_leader() {
            let now = self.now();
            self.quorum.resign(now);
            let _ = self.carry_out();
        }
    }

    fn command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Inbound {
                from,
                request,
                reply,
            } => {
                self.next_token += 1;
                let token = self.next_token;
                self.inbound.insert(token, reply);
                self.quorum.handle_request(from, token, request, now);
            }
            Command::Answer { from, id, result } => match result {
                Ok(response) => self.quorum.handle_response(from, id, response, now),
                Err(e) => {
                    tracing::debug!(peer = from, error = %e, "metadata quorum request failed");
                    self.quorum.request_failed(from, id, now)
                }
            },
            Command::Propose { records, reply } => {
                let epoch = self.quorum.epoch();
                let _ = reply.send(self.quorum.propose(records, now).map(|o| (o, epoch)));
            }
            Command::Describe { reply } => {
                let _ = reply.send((self.quorum.describe(), self.quorum.log().start()));
            }
            Command::Resign { reply } => {
                self.quorum.resign(now);
                let _ = reply.send(());
            }
        }
    }

    /// Carries out the quorum's actions in order.
    fn carry_out(&mut self) -> Result<()> {
        loop {
            let actions = self.quorum.drain_actions();
            if actions.is_empty() {
                return Ok(());
            }
            for action in actions {
                self.act(action)?;
            }
        }
    }

    fn act(&mut self, action: Action) -> Result<()> {
        match action {
            Action::SaveElection(state) => self.store.save_election(&state)?,
            Action::Append {
                base_offset,
                entries,
            } => self.store.append(base_offset, &entries)?,
            Action::TruncateTo(offset) => self.store.truncate_to(offset)?,
            Action::InstallSnapshot(snapshot) => {
                self.store.install_snapshot(&snapshot)?;
                self.machine.load(&snapshot)?;
                self.applied = snapshot.id.offset;
                self.since_snapshot = 0;
                self.publish();
            }
            Action::HighWatermark(hw) => self.apply_up_to(hw)?,
            Action::LeaderChanged { epoch, leader } => {
                tracing::info!(epoch, ?leader, "metadata quorum leader");
                self.publish();
            }
            Action::Request { to, id, request } => {
                let peers = self.peers.clone();
                let commands = self.commands.clone();
                tokio::spawn(async move {
                    let result = peers.send(to, &request).await.map_err(|e| e.to_string());
                    let _ = commands.send(Command::Answer {
                        from: to,
                        id,
                        result,
                    });
                });
            }
            Action::Respond { id, response, .. } => {
                if let Some(reply) = self.inbound.remove(&id) {
                    let _ = reply.send(response);
                }
            }
        }
        Ok(())
    }

    /// Hands every entry from the last applied one up to `hw` to the state machine.
    fn apply_up_to(&mut self, hw: i64) -> Result<()> {
        let log = self.quorum.log();
        let from = self.applied.max(log.start());
        let mut bytes = 0u64;
        for offset in from..hw {
            let Some(Entry { epoch, payload }) = log.entry(offset) else {
                break;
            };
            if let odradek_quorum::Payload::Data(data) = payload {
                bytes += data.len() as u64;
                self.machine.apply(offset, *epoch, data);
            }
            self.applied = offset + 1;
        }
        self.since_snapshot += bytes;
        if self.since_snapshot >= self.snapshot_every {
            self.take_snapshot()?;
        }
        self.publish();
        Ok(())
    }

    fn take_snapshot(&mut self) -> Result<()> {
        let end = self.applied;
        let Some(epoch) = self.quorum.log().epoch_before(end) else {
            return Ok(());
        };
        let snapshot = Snapshot {
            id: odradek_quorum::OffsetAndEpoch::new(end, epoch),
            data: self.machine.snapshot(),
        };
        self.store.save_snapshot(&snapshot)?;
        if let Err(e) = self.quorum.snapshot_saved(snapshot) {
            tracing::warn!(error = %e, "metadata snapshot not used");
        }
        self.since_snapshot = 0;
        tracing::info!(offset = end, "metadata snapshot taken");
        Ok(())
    }

    fn publish(&self) {
        let q = &self.quorum;
        let status = QuorumStatus {
            epoch: q.epoch(),
            leader: q.leader(),
            applied: self.applied,
            is_leader: q.is_leader(),
            active: q
                .leader_epoch_start()
                .is_some_and(|start| self.applied > start),
            failed: None,
        };
        self.status.send_if_modified(|s| {
            let changed = *s != status;
            *s = status;
            changed
        });
    }
}
