//! Seeded, deterministic simulation of the quorum (after Kafka's `RaftEventSimulationTest`).
//!
//! Each schedule runs a few voters and an observer on a simulated network that delays,
//! reorders and drops messages and cuts the cluster in two, while nodes crash (losing every
//! in-memory state, keeping what they persisted) and restart, leaders resign, snapshots are
//! taken and a client proposes records to whoever leads. After every action the checker
//! asserts the invariants:
//!
//! - one leader per epoch, ever;
//! - a node's persisted epoch never goes back, across restarts too;
//! - a leader's high watermark is reached by a majority of voters' durable logs;
//! - committed data is identical everywhere: every node that commits an offset commits the
//!   same entry, and no node ever truncates an entry that was committed;
//! - snapshots hold committed data only, and a leader never installs one.
//!
//! Then the faults stop, the network heals, every node runs again, and the quorum must elect a
//! leader and commit a final record on every node (liveness).
//!
//! `ODRADEK_QUORUM_SEEDS=N` sets the number of schedules per cluster shape (default 1000, run by
//! the test command); `ODRADEK_QUORUM_SEED=S` replays one schedule.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use bytes::Bytes;
use odradek_quorum::{
    Action, Config, Entry, NodeId, OffsetAndEpoch, Payload, Persisted, Quorum, Request, Response,
    Rng, Snapshot,
};

const TICK_MS: u64 = 10;

#[derive(Debug, Clone)]
enum Msg {
    Request {
        id: u64,
        request: Request,
        /// The sender's incarnation: a restarted node has new connections, so answers to its
        /// former self are lost.
        from_incarnation: u64,
    },
    Response {
        id: u64,
        response: Response,
        to_incarnation: u64,
    },
}

#[derive(Debug, Clone)]
enum Event {
    Tick(NodeId),
    Deliver { from: NodeId, to: NodeId, msg: Msg },
    Fault,
    Propose,
}

/// A node: its running state machine (None while crashed) and its disk.
struct SimNode {
    quorum: Option<Quorum>,
    disk: Persisted,
    incarnation: u64,
    /// The high watermark this incarnation reported last.
    hw: i64,
}

/// Everything the checker remembers across the run.
#[derive(Default)]
struct Checker {
    leaders: BTreeMap<i32, NodeId>,
    committed: BTreeMap<i64, Entry>,
    max_epoch: BTreeMap<NodeId, i32>,
    proposals_committed: usize,
    /// What the schedules went through, so a run that exercised nothing fails.
    seen: Seen,
}

/// Counts of what happened across schedules.
#[derive(Default, Debug, Clone, Copy)]
struct Seen {
    committed: usize,
    elections: usize,
    truncations: usize,
    snapshots_installed: usize,
    crashes: usize,
}

impl std::ops::AddAssign for Seen {
    fn add_assign(&mut self, o: Seen) {
        self.committed += o.committed;
        self.elections += o.elections;
        self.truncations += o.truncations;
        self.snapshots_installed += o.snapshots_installed;
        self.crashes += o.crashes;
    }
}

struct Sim {
    seed: u64,
    rng: Rng,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    events: BTreeMap<u64, Event>,
    nodes: BTreeMap<NodeId, SimNode>,
    voters: BTreeSet<NodeId>,
    /// Pairs that cannot talk (both directions).
    cut: BTreeSet<(NodeId, NodeId)>,
    drop_rate: f64,
    max_delay: u64,
    faults_on: bool,
    proposals_on: bool,
    proposed: u64,
    check: Checker,
    /// Requests delivered and not answered yet: the token the responder was given → (the
    /// requester's own id, the requester's incarnation). A transport's connection plays this
    /// part: an answer reaches only the incarnation that asked.
    pending: BTreeMap<u64, (u64, u64)>,
    next_token: u64,
}

fn config(id: NodeId, voters: &BTreeSet<NodeId>, seed: u64) -> Config {
    let mut c = Config::new(id, voters.iter().copied());
    c.seed = seed.wrapping_mul(31).wrapping_add(id as u64);
    // Small chunks and fetches, so snapshots and catch-up take several round trips.
    c.fetch_max_bytes = 64;
    c.snapshot_chunk_bytes = 48;
    c
}

impl Sim {
    fn new(seed: u64, voters: usize, observers: usize) -> Self {
        let voter_ids: BTreeSet<NodeId> = (1..=voters as NodeId).collect();
        let mut sim = Sim {
            seed,
            rng: Rng::new(seed),
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            events: BTreeMap::new(),
            nodes: BTreeMap::new(),
            voters: voter_ids.clone(),
            cut: BTreeSet::new(),
            drop_rate: 0.0,
            max_delay: 20,
            faults_on: true,
            proposals_on: true,
            proposed: 0,
            check: Checker::default(),
            pending: BTreeMap::new(),
            next_token: 0,
        };
        let all = voters + observers;
        for id in 1..=all as NodeId {
            sim.nodes.insert(
                id,
                SimNode {
                    quorum: None,
                    disk: Persisted::default(),
                    incarnation: 0,
                    hw: 0,
                },
            );
            sim.start_node(id);
            let first = sim.rng.below(TICK_MS);
            sim.schedule(first, Event::Tick(id));
        }
        sim.schedule(300, Event::Fault);
        sim.schedule(50, Event::Propose);
        sim
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "seed {} at {} ms: {what} (replay with ODRADEK_QUORUM_SEED={})",
            self.seed, self.now, self.seed
        );
    }

    fn schedule(&mut self, after: u64, event: Event) {
        self.seq += 1;
        self.events.insert(self.seq, event);
        self.queue.push(Reverse((self.now + after, self.seq)));
    }

    fn start_node(&mut self, id: NodeId) {
        let voters = self.voters.clone();
        let seed = self.seed;
        let now = self.now;
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        node.incarnation += 1;
        let cfg = config(id, &voters, seed ^ node.incarnation);
        node.quorum = Some(Quorum::new(cfg, node.disk.clone(), now));
        node.hw = node.disk.snapshot.as_ref().map_or(0, |s| s.id.offset);
        self.apply_actions(id);
    }

    fn crash(&mut self, id: NodeId) {
        if let Some(n) = self.nodes.get_mut(&id) {
            if n.quorum.is_some() {
                self.check.seen.crashes += 1;
            }
            n.quorum = None;
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, n)| n.quorum.as_ref().is_some_and(|q| q.is_leader()))
            .map(|(id, _)| *id)
    }

    fn linked(&self, a: NodeId, b: NodeId) -> bool {
        !self.cut.contains(&(a.min(b), a.max(b)))
    }

    fn transmit(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        if !self.linked(from, to) || self.rng.chance(self.drop_rate) {
            return;
        }
        let delay = 1 + self.rng.below(self.max_delay);
        self.schedule(delay, Event::Deliver { from, to, msg });
    }

    /// Carries out a node's actions in order, checking each against the invariants.
    fn apply_actions(&mut self, id: NodeId) {
        loop {
            let actions = match self.nodes.get_mut(&id).and_then(|n| n.quorum.as_mut()) {
                Some(q) => q.drain_actions(),
                None => return,
            };
            if actions.is_empty() {
                return;
            }
            for a in actions {
                self.apply(id, a);
            }
        }
    }

    fn apply(&mut self, id: NodeId, action: Action) {
        let incarnation = self.nodes[&id].incarnation;
        if std::env::var_os("ODRADEK_QUORUM_TRACE").is_some() {
            eprintln!("{:>6} n{id}: {action:?}", self.now);
        }
        match action {
            Action::SaveElection(state) => {
                let prev = self.check.max_epoch.get(&id).copied().unwrap_or(0);
                if state.epoch < prev {
                    self.fail(format!(
                        "node {id} persisted epoch {} after {prev}",
                        state.epoch
                    ));
                }
                self.check.max_epoch.insert(id, state.epoch);
                if let Some(n) = self.nodes.get_mut(&id) {
                    n.disk.election = state;
                }
            }
            Action::Append {
                base_offset,
                entries,
            } => {
                let disk = &mut self.nodes.get_mut(&id).expect("node").disk;
                let start = disk.snapshot.as_ref().map_or(0, |s| s.id.offset);
                let end = start + disk.entries.len() as i64;
                if base_offset != end {
                    self.fail(format!(
                        "node {id} appended at {base_offset}, its log ends at {end}"
                    ));
                }
                disk.entries.extend(entries);
            }
            Action::TruncateTo(offset) => {
                self.check.seen.truncations += 1;
                let disk = &self.nodes[&id].disk;
                let start = disk.snapshot.as_ref().map_or(0, |s| s.id.offset);
                for (i, e) in disk.entries.iter().enumerate() {
                    let o = start + i as i64;
                    if o >= offset && self.check.committed.get(&o) == Some(e) {
                        self.fail(format!("node {id} truncated committed offset {o}"));
                    }
                }
                let disk = &mut self.nodes.get_mut(&id).expect("node").disk;
                let keep = usize::try_from(offset - start).unwrap_or(0);
                disk.entries.truncate(keep);
            }
            Action::InstallSnapshot(s) => {
                if self.nodes[&id]
                    .quorum
                    .as_ref()
                    .is_some_and(|q| q.is_leader())
                {
                    self.fail(format!("leader {id} installed a snapshot"));
                }
                self.check_snapshot(id, &s);
                self.check.seen.snapshots_installed += 1;
                let n = self.nodes.get_mut(&id).expect("node");
                n.disk.snapshot = Some(s);
                n.disk.entries.clear();
            }
            Action::HighWatermark(hw) => self.on_high_watermark(id, hw),
            Action::LeaderChanged { epoch, leader } => {
                if leader == Some(id) {
                    self.check.seen.elections += 1;
                    if let Some(other) = self.check.leaders.insert(epoch, id) {
                        if other != id {
                            self.fail(format!("epoch {epoch} has leaders {other} and {id}"));
                        }
                    }
                }
            }
            Action::Request {
                to,
                id: rid,
                request,
            } => self.transmit(
                id,
                to,
                Msg::Request {
                    id: rid,
                    request,
                    from_incarnation: incarnation,
                },
            ),
            Action::Respond {
                to,
                id: token,
                response,
            } => {
                let Some((rid, to_incarnation)) = self.pending.remove(&token) else {
                    self.fail(format!("node {id} answered unknown request token {token}"));
                };
                self.transmit(
                    id,
                    to,
                    Msg::Response {
                        id: rid,
                        response,
                        to_incarnation,
                    },
                )
            }
        }
    }

    /// Checks a snapshot against the committed record: it holds exactly the committed entries
    /// below its end.
    fn check_snapshot(&self, id: NodeId, s: &Snapshot) {
        let expected = encode_state(&self.check.committed, s.id.offset);
        if expected != s.data {
            self.fail(format!(
                "node {id} got snapshot {:?} that is not the committed state",
                s.id
            ));
        }
    }

    fn on_high_watermark(&mut self, id: NodeId, hw: i64) {
        let Some(q) = self.nodes[&id].quorum.as_ref() else {
            return;
        };
        let prev = self.nodes[&id].hw;
        if hw < prev {
            self.fail(format!("node {id} high watermark went from {prev} to {hw}"));
        }
        let log = q.log();
        let is_leader = q.is_leader();
        // Every newly committed entry this node holds agrees with the record.
        for o in prev.max(log.start())..hw {
            let Some(e) = log.entry(o) else {
                self.fail(format!("node {id} committed {o} it does not hold"));
            };
            match self.check.committed.get(&o) {
                Some(c) if c != e => self.fail(format!(
                    "offset {o} committed as {c:?} elsewhere, {e:?} on node {id}"
                )),
                Some(_) => {}
                None => {
                    if matches!(e.payload, Payload::Data(_)) {
                        self.check.proposals_committed += 1;
                        self.check.seen.committed += 1;
                    }
                    let e = e.clone();
                    self.check.committed.insert(o, e);
                }
            }
        }
        if is_leader && hw > 0 {
            // A majority of voters hold the entry before the high watermark on disk.
            let last = self.check.committed.get(&(hw - 1)).cloned();
            let holders = self
                .voters
                .iter()
                .filter(|v| {
                    let disk = &self.nodes[v].disk;
                    let start = disk.snapshot.as_ref().map_or(0, |s| s.id.offset);
                    if hw <= start {
                        return true;
                    }
                    let i = usize::try_from(hw - 1 - start).unwrap_or(usize::MAX);
                    disk.entries.get(i).cloned() == last
                })
                .count();
            if holders * 2 <= self.voters.len() {
                self.fail(format!(
                    "leader {id} committed up to {hw} held by only {holders} voters"
                ));
            }
        }
        if let Some(n) = self.nodes.get_mut(&id) {
            n.hw = hw;
        }
    }

    fn deliver(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        let now = self.now;
        let incarnation = self.nodes[&to].incarnation;
        let Some(q) = self.nodes.get_mut(&to).and_then(|n| n.quorum.as_mut()) else {
            return;
        };
        match msg {
            Msg::Request {
                id,
                request,
                from_incarnation,
            } => {
                self.next_token += 1;
                let token = self.next_token;
                self.pending.insert(token, (id, from_incarnation));
                q.handle_request(from, token, request, now);
            }
            Msg::Response {
                id,
                response,
                to_incarnation,
            } => {
                if to_incarnation != incarnation {
                    return;
                }
                q.handle_response(from, id, response, now);
            }
        }
        self.apply_actions(to);
    }

    fn fault(&mut self) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        let pick = |rng: &mut Rng| ids[rng.below(ids.len() as u64) as usize];
        match self.rng.below(10) {
            0 | 1 => {
                let id = pick(&mut self.rng);
                if self.nodes[&id].quorum.is_some() {
                    self.crash(id);
                } else {
                    self.start_node(id);
                }
            }
            2 => {
                if let Some(l) = self.leader() {
                    self.crash(l);
                }
            }
            3 => {
                // Cut the cluster in two.
                self.cut.clear();
                let side: BTreeSet<NodeId> = ids
                    .iter()
                    .copied()
                    .filter(|_| self.rng.chance(0.5))
                    .collect();
                for a in &ids {
                    for b in &ids {
                        if a < b && side.contains(a) != side.contains(b) {
                            self.cut.insert((*a, *b));
                        }
                    }
                }
            }
            4 => {
                // Isolate the leader.
                if let Some(l) = self.leader() {
                    for b in &ids {
                        if *b != l {
                            self.cut.insert((l.min(*b), l.max(*b)));
                        }
                    }
                }
            }
            5 => self.cut.clear(),
            6 => self.drop_rate = [0.0, 0.05, 0.2][self.rng.below(3) as usize],
            7 => {
                if let Some(l) = self.leader() {
                    let now = self.now;
                    if let Some(q) = self.nodes.get_mut(&l).and_then(|n| n.quorum.as_mut()) {
                        q.resign(now);
                    }
                    self.apply_actions(l);
                }
            }
            8 => {
                let id = pick(&mut self.rng);
                self.take_snapshot(id);
            }
            _ => {
                // Restart everything that is down.
                for id in ids.clone() {
                    if self.nodes[&id].quorum.is_none() {
                        self.start_node(id);
                    }
                }
            }
        }
    }

    /// The state machine of `id` saves a snapshot at its high watermark.
    fn take_snapshot(&mut self, id: NodeId) {
        let Some(q) = self.nodes.get(&id).and_then(|n| n.quorum.as_ref()) else {
            return;
        };
        let hw = q.high_watermark();
        if hw <= q.log().start() {
            return;
        }
        let Some(epoch) = q.log().epoch_before(hw) else {
            return;
        };
        let snapshot = Snapshot {
            id: OffsetAndEpoch::new(hw, epoch),
            data: encode_state(&self.check.committed, hw),
        };
        let n = self.nodes.get_mut(&id).expect("node");
        let Some(q) = n.quorum.as_mut() else { return };
        if let Err(e) = q.snapshot_saved(snapshot.clone()) {
            let msg = format!("node {id} refused its own snapshot: {e}");
            self.fail(msg);
        }
        let n = self.nodes.get_mut(&id).expect("node");
        let start = n.disk.snapshot.as_ref().map_or(0, |s| s.id.offset);
        let drop = usize::try_from(hw - start)
            .unwrap_or(0)
            .min(n.disk.entries.len());
        n.disk.entries.drain(..drop);
        n.disk.snapshot = Some(snapshot);
    }

    fn propose(&mut self) {
        let Some(l) = self.leader() else { return };
        let now = self.now;
        self.proposed += 1;
        let record = Bytes::from(format!("r{}", self.proposed));
        if let Some(q) = self.nodes.get_mut(&l).and_then(|n| n.quorum.as_mut()) {
            let _ = q.propose(vec![record], now);
        }
        self.apply_actions(l);
    }

    fn run_until(&mut self, until: u64) {
        while let Some(Reverse((at, seq))) = self.queue.peek().copied() {
            if at > until {
                break;
            }
            self.queue.pop();
            self.now = at;
            let Some(event) = self.events.remove(&seq) else {
                continue;
            };
            match event {
                Event::Tick(id) => {
                    let now = self.now;
                    if let Some(q) = self.nodes.get_mut(&id).and_then(|n| n.quorum.as_mut()) {
                        q.tick(now);
                    }
                    self.apply_actions(id);
                    self.schedule(TICK_MS, Event::Tick(id));
                }
                Event::Deliver { from, to, msg } => self.deliver(from, to, msg),
                Event::Fault => {
                    if self.faults_on {
                        self.fault();
                        let next = 100 + self.rng.below(900);
                        self.schedule(next, Event::Fault);
                    }
                }
                Event::Propose => {
                    if !self.proposals_on {
                        continue;
                    }
                    self.propose();
                    let next = 10 + self.rng.below(60);
                    self.schedule(next, Event::Propose);
                }
            }
        }
        self.now = until;
    }

    /// Ends the faults: every node up, the network whole, then a leader must commit a final
    /// record everywhere.
    fn heal_and_check_liveness(&mut self) {
        self.faults_on = false;
        self.cut.clear();
        self.drop_rate = 0.0;
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in &ids {
            if self.nodes[id].quorum.is_none() {
                self.start_node(*id);
            }
        }
        self.proposals_on = false;
        let deadline = self.now + 30_000;
        let mut last: Option<(NodeId, i64)> = None;
        while self.now < deadline {
            let step = self.now + 250;
            self.run_until(step);
            let Some(l) = self.leader() else { continue };
            // One final record, proposed again if its leader lost the lead before committing.
            if last.is_none_or(|(by, _)| by != l) {
                let now = self.now;
                let q = self.nodes.get_mut(&l).and_then(|n| n.quorum.as_mut());
                if let Some(Ok(offset)) = q.map(|q| q.propose(vec![Bytes::from("final")], now)) {
                    last = Some((l, offset));
                }
                self.apply_actions(l);
                continue;
            }
            let Some((_, offset)) = last else { continue };
            let everywhere = self.nodes.values().all(|n| {
                n.quorum
                    .as_ref()
                    .is_some_and(|q| q.high_watermark() > offset)
            });
            if everywhere {
                return;
            }
        }
        let states: Vec<String> = self
            .nodes
            .iter()
            .map(|(id, n)| match &n.quorum {
                Some(q) => format!(
                    "{id}: epoch {} leader {:?} hw {} end {}",
                    q.epoch(),
                    q.leader(),
                    q.high_watermark(),
                    q.log().end_offset()
                ),
                None => format!("{id}: down"),
            })
            .collect();
        self.fail(format!("no progress after healing: {states:?}"));
    }
}

/// The state machine's state at `end`: the committed entries below it, one line each.
fn encode_state(committed: &BTreeMap<i64, Entry>, end: i64) -> Bytes {
    let mut out = Vec::new();
    for (o, e) in committed.range(..end) {
        let body = match &e.payload {
            Payload::Data(b) => String::from_utf8_lossy(b).into_owned(),
            Payload::LeaderChange { leader, .. } => format!("leader {leader}"),
        };
        out.extend_from_slice(format!("{o}:{}:{body}\n", e.epoch).as_bytes());
    }
    Bytes::from(out)
}

fn run_schedule(seed: u64, voters: usize, observers: usize) -> Seen {
    let mut sim = Sim::new(seed, voters, observers);
    sim.run_until(20_000);
    sim.heal_and_check_liveness();
    sim.check.seen
}

fn seeds() -> Vec<u64> {
    if let Some(s) = std::env::var("ODRADEK_QUORUM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![s];
    }
    let n: u64 = std::env::var("ODRADEK_QUORUM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    (1..=n).collect()
}

/// Runs every seed on one cluster shape and checks that the schedules went through every kind
/// of event the invariants are about.
fn run_shape(voters: usize, seed_factor: u64) {
    let seeds = seeds();
    let mut seen = Seen::default();
    for seed in &seeds {
        seen += run_schedule(seed.wrapping_mul(seed_factor), voters, 1);
    }
    eprintln!("{voters} voters, {} schedules: {seen:?}", seeds.len());
    if seeds.len() >= 50 {
        assert!(seen.committed > 0, "nothing committed: {seen:?}");
        assert!(seen.elections > seeds.len(), "few elections: {seen:?}");
        assert!(seen.truncations > 0, "no follower ever truncated: {seen:?}");
        assert!(
            seen.snapshots_installed > 0,
            "no snapshot was ever installed: {seen:?}"
        );
        assert!(seen.crashes > 0, "nothing crashed: {seen:?}");
    }
}

#[test]
fn three_voters_and_an_observer_keep_every_invariant() {
    run_shape(3, 1);
}

#[test]
fn five_voters_and_an_observer_keep_every_invariant() {
    run_shape(5, 7919);
}

#[test]
fn a_single_voter_commits_alone() {
    let mut sim = Sim::new(1, 1, 1);
    sim.faults_on = false;
    sim.run_until(3_000);
    assert!(sim.check.proposals_committed > 10);
    sim.heal_and_check_liveness();
}

/// Without faults, a committed record reaches every replica's high watermark within a few
/// network round trips (messages take up to 20 ms here), never by waiting out a follower's
/// held fetch (500 ms): a replica that has not seen the new high watermark is answered at once.
#[test]
fn every_replica_learns_a_commit_without_waiting_out_its_fetch() {
    for seed in 1..=40u64 {
        let mut sim = Sim::new(seed, 3, 1);
        sim.faults_on = false;
        sim.proposals_on = false;
        sim.run_until(5_000);
        for round in 0..5 {
            let Some(l) = sim.leader() else {
                sim.fail("no leader without faults".into());
            };
            let now = sim.now;
            let offset = sim
                .nodes
                .get_mut(&l)
                .and_then(|n| n.quorum.as_mut())
                .and_then(|q| q.propose(vec![Bytes::from(format!("r{round}"))], now).ok());
            let Some(offset) = offset else {
                sim.fail("the leader refused a proposal".into());
            };
            sim.apply_actions(l);
            let start = sim.now;
            loop {
                let everywhere = sim.nodes.values().all(|n| {
                    n.quorum
                        .as_ref()
                        .is_some_and(|q| q.high_watermark() > offset)
                });
                if everywhere {
                    break;
                }
                if sim.now - start > 300 {
                    sim.fail(format!(
                        "record {offset} not known committed everywhere after 300 ms"
                    ));
                }
                let step = sim.now + 5;
                sim.run_until(step);
            }
            let step = sim.now + 137;
            sim.run_until(step);
        }
    }
}
