//! The test cluster's shape: its brokers (address, up or down, round-trip time), who leads
//! each partition at which leader epoch (and which broker is its preferred read replica), who
//! coordinates each group and transactional id, and the API versions it serves.
//!
//! Nothing here is replicated: every broker answers from the same log store, so moving a
//! leader only changes which broker accepts the partition's requests (and bumps its epoch).

use std::collections::HashMap;
use std::time::Duration;

/// One broker of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node id (1..=N).
    pub id: i32,
    /// Host clients connect to.
    pub host: String,
    /// Port clients connect to (kept across down / up).
    pub port: u16,
    /// Accepting connections.
    pub up: bool,
    /// `broker.rack` reported in Metadata.
    pub rack: Option<String>,
}

/// Who serves a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRole {
    /// The leader's node id; -1 for a leaderless partition.
    pub leader: i32,
    /// The leader epoch (bumped at every change of leader, down and up included).
    pub epoch: i32,
    /// A broker that also serves Fetch for the partition and that the leader names as the
    /// preferred read replica (KIP-392).
    pub follower: Option<i32>,
}

/// What a coordinator key names (FindCoordinator's key type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoordinatorKind {
    /// A consumer group (key type 0).
    Group,
    /// A transactional id (key type 1).
    Transaction,
}

impl CoordinatorKind {
    /// From FindCoordinator's key type.
    pub fn from_key_type(key_type: i8) -> Option<CoordinatorKind> {
        match key_type {
            0 => Some(CoordinatorKind::Group),
            1 => Some(CoordinatorKind::Transaction),
            _ => None,
        }
    }

    /// The internal topic whose partition leaders coordinate these keys.
    fn topic(self) -> &'static str {
        match self {
            CoordinatorKind::Group => "__consumer_offsets",
            CoordinatorKind::Transaction => "__transaction_state",
        }
    }
}

/// Java's `String.hashCode` (over UTF-16 code units), which Kafka uses to place a group or a
/// transactional id on a partition of its internal topic.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The cluster's shape, shared by every broker's view.
#[derive(Debug, Clone)]
pub struct Topology {
    nodes: Vec<NodeInfo>,
    roles: HashMap<(String, i32), PartitionRole>,
    coordinators: HashMap<(CoordinatorKind, String), i32>,
    versions: HashMap<i16, (i16, i16)>,
    rtt: HashMap<i32, Duration>,
    offsets_partitions: i32,
    txn_partitions: i32,
}

impl Topology {
    /// Brokers `nodes` (non-empty, ids 1..=N in order); the internal topics' partition counts
    /// decide which broker coordinates a key by default (as in Kafka: the leader of the key's
    /// partition of `__consumer_offsets` / `__transaction_state`).
    pub fn new(nodes: Vec<NodeInfo>, offsets_partitions: i32, txn_partitions: i32) -> Topology {
        assert!(!nodes.is_empty(), "a cluster has at least one broker");
        Topology {
            nodes,
            roles: HashMap::new(),
            coordinators: HashMap::new(),
            versions: HashMap::new(),
            rtt: HashMap::new(),
            offsets_partitions: offsets_partitions.max(1),
            txn_partitions: txn_partitions.max(1),
        }
    }

    /// Every broker, up or down.
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// One broker.
    pub fn node(&self, id: i32) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Whether broker `id` exists and is up.
    pub fn is_up(&self, id: i32) -> bool {
        self.node(id).is_some_and(|n| n.up)
    }

    /// Marks a broker up or down; false if there is no such broker.
    pub fn set_up(&mut self, id: i32, up: bool) -> bool {
        match self.nodes.iter_mut().find(|n| n.id == id) {
            Some(n) => {
                n.up = up;
                true
            }
            None => false,
        }
    }

    /// Partition `p`'s leader when no test moved it: brokers in turn (`p mod N`).
    fn default_role(&self, partition: i32) -> PartitionRole {
        let n = self.nodes.len();
        let i = usize::try_from(partition.max(0)).unwrap_or(0) % n;
        PartitionRole {
            leader: self.nodes[i].id,
            epoch: 0,
            follower: None,
        }
    }

    /// Who serves `topic`/`partition`.
    pub fn role(&self, topic: &str, partition: i32) -> PartitionRole {
        self.roles
            .get(&(topic.to_string(), partition))
            .copied()
            .unwrap_or_else(|| self.default_role(partition))
    }

    /// Moves a partition's leadership to `leader` (-1: leaderless), bumping its epoch even if
    /// the leader stays the same (as a new election does); returns the new epoch. A follower
    /// equal to the new leader is cleared.
    pub fn set_leader(&mut self, topic: &str, partition: i32, leader: i32) -> i32 {
        let mut role = self.role(topic, partition);
        role.leader = leader;
        role.epoch += 1;
        if role.follower == Some(leader) {
            role.follower = None;
        }
        self.roles.insert((topic.to_string(), partition), role);
        role.epoch
    }

    /// Sets (or clears) a partition's preferred read replica.
    pub fn set_follower(&mut self, topic: &str, partition: i32, follower: Option<i32>) {
        let mut role = self.role(topic, partition);
        role.follower = follower.filter(|f| *f != role.leader);
        self.roles.insert((topic.to_string(), partition), role);
    }

    /// Bumps the epoch of every partition in `partitions` that `node` leads (a broker going
    /// down or coming back is a leadership change in Kafka).
    pub fn bump_led_by(&mut self, node: i32, partitions: impl IntoIterator<Item = (String, i32)>) {
        for (topic, p) in partitions {
            let mut role = self.role(&topic, p);
            if role.leader == node {
                role.epoch += 1;
                self.roles.insert((topic, p), role);
            }
        }
    }

    /// The broker that coordinates `key`: the one a test pinned, else the leader of the key's
    /// partition of the internal topic (Kafka's rule), -1 if that partition has no leader.
    pub fn coordinator(&self, kind: CoordinatorKind, key: &str) -> i32 {
        if let Some(node) = self.coordinators.get(&(kind, key.to_string())) {
            return *node;
        }
        let count = match kind {
            CoordinatorKind::Group => self.offsets_partitions,
            CoordinatorKind::Transaction => self.txn_partitions,
        };
        let partition = (java_hash(key) & 0x7fff_ffff) % count;
        self.role(kind.topic(), partition).leader
    }

    /// Pins `key`'s coordinator to `node` (`None` removes the pin).
    pub fn set_coordinator(&mut self, kind: CoordinatorKind, key: &str, node: Option<i32>) {
        match node {
            Some(n) => self.coordinators.insert((kind, key.to_string()), n),
            None => self.coordinators.remove(&(kind, key.to_string())),
        };
    }

    /// Clamps an API's versions to `min..=max` (`None` removes the clamp).
    pub fn set_versions(&mut self, api_key: i16, range: Option<(i16, i16)>) {
        match range {
            Some(r) => self.versions.insert(api_key, r),
            None => self.versions.remove(&api_key),
        };
    }

    /// The clamp of an API's versions, if any.
    pub fn versions(&self, api_key: i16) -> Option<(i16, i16)> {
        self.versions.get(&api_key).copied()
    }

    /// Sets a broker's added response time (zero removes it).
    pub fn set_rtt(&mut self, node: i32, rtt: Duration) {
        if rtt.is_zero() {
            self.rtt.remove(&node);
        } else {
            self.rtt.insert(node, rtt);
        }
    }

    /// A broker's added response time.
    pub fn rtt(&self, node: i32) -> Option<Duration> {
        self.rtt.get(&node).copied()
    }

    /// The first broker that is up (reported as the controller).
    pub fn controller(&self) -> i32 {
        self.nodes.iter().find(|n| n.up).map_or(-1, |n| n.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> Topology {
        let nodes = (1..=3)
            .map(|id| NodeInfo {
                id,
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
                up: true,
                rack: None,
            })
            .collect();
        Topology::new(nodes, 1, 1)
    }

    #[test]
    fn java_hash_matches_javas() {
        // "hello".hashCode() == 99162322.
        assert_eq!(java_hash("hello"), 99_162_322);
        assert_eq!(java_hash(""), 0);
        // Overflow wraps as in Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn leaders_rotate_move_with_bumped_epochs_and_coordinators_follow_internal_leaders() {
        let mut t = three();
        assert_eq!(t.role("t", 0).leader, 1);
        assert_eq!(t.role("t", 1).leader, 2);
        assert_eq!(t.role("t", 5).leader, 3);
        assert_eq!(t.set_leader("t", 0, 3), 1);
        assert_eq!(
            t.role("t", 0),
            PartitionRole {
                leader: 3,
                epoch: 1,
                follower: None
            }
        );
        t.set_follower("t", 0, Some(2));
        assert_eq!(t.set_leader("t", 0, 2), 2);
        assert_eq!(
            t.role("t", 0).follower,
            None,
            "the follower became the leader"
        );
        t.bump_led_by(
            2,
            [
                ("t".to_string(), 0),
                ("t".to_string(), 1),
                ("t".to_string(), 2),
            ],
        );
        assert_eq!(t.role("t", 0).epoch, 3);
        assert_eq!(t.role("t", 1).epoch, 1);
        assert_eq!(t.role("t", 2).epoch, 0);
        // One offsets partition: every group lives with its leader, node 1, until moved.
        assert_eq!(t.coordinator(CoordinatorKind::Group, "g"), 1);
        t.set_leader("__consumer_offsets", 0, 3);
        assert_eq!(t.coordinator(CoordinatorKind::Group, "g"), 3);
        t.set_coordinator(CoordinatorKind::Group, "g", Some(2));
        assert_eq!(t.coordinator(CoordinatorKind::Group, "g"), 2);
        assert_eq!(t.coordinator(CoordinatorKind::Transaction, "g"), 1);
        t.set_up(1, false);
        assert_eq!(t.controller(), 2);
    }
}
