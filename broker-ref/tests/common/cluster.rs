//! A local cluster of `odradek-broker` processes in cluster mode, each node broker and
//! controller (`process.roles=broker,controller`), on loopback with ephemeral client ports and
//! a temporary data directory per node; node ID is in rack `rack-ID`.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

use super::{free_ports, temp_dir, topic_name, BrokerProcess, Client};

/// A partition's state as Metadata reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// Error code.
    pub error: i16,
    /// Leader (-1: none).
    pub leader: i32,
    /// Leader epoch.
    pub epoch: i32,
    /// Replicas.
    pub replicas: Vec<i32>,
    /// ISR.
    pub isr: Vec<i32>,
}

/// The cluster.
pub struct LocalCluster {
    nodes: Vec<Option<BrokerProcess>>,
    controller_ports: Vec<u16>,
    dirs: Vec<PathBuf>,
    extra: Vec<(String, String)>,
    /// Nodes also listen on `INTERNAL` (an ephemeral port), the inter-broker listener.
    internal: bool,
}

impl LocalCluster {
    /// Starts `n` nodes with `extra` overrides on each.
    pub fn start(n: usize, extra: &[(&str, &str)]) -> LocalCluster {
        Self::start_nodes(n, extra, false)
    }

    /// [`LocalCluster::start`] with a third listener, `INTERNAL`, that brokers replicate and
    /// call each other on (`inter.broker.listener.name`); PLAINTEXT unless `extra` maps it.
    pub fn start_with_internal_listener(n: usize, extra: &[(&str, &str)]) -> LocalCluster {
        Self::start_nodes(n, extra, true)
    }

    fn start_nodes(n: usize, extra: &[(&str, &str)], internal: bool) -> LocalCluster {
        let mut c = LocalCluster {
            nodes: (0..n).map(|_| None).collect(),
            controller_ports: free_ports(n),
            dirs: (0..n)
                .map(|i| temp_dir(&format!("cluster-node-{}", i + 1)))
                .collect(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            internal,
        };
        for id in 1..=n {
            c.start_node(id);
        }
        c
    }

    /// Starts node `id` (again) on its data directory.
    pub fn start_node(&mut self, id: usize) {
        self.start_node_with(id, &[]);
    }

    /// Starts node `id` (again) with `more` overrides after the cluster's, for this start only.
    pub fn start_node_with(&mut self, id: usize, more: &[(&str, &str)]) {
        let voters = self
            .controller_ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let listeners = format!(
            "PLAINTEXT://127.0.0.1:0,{}CONTROLLER://127.0.0.1:{}",
            if self.internal {
                "INTERNAL://127.0.0.1:0,"
            } else {
                ""
            },
            self.controller_ports[id - 1]
        );
        let node = id.to_string();
        let rack = format!("rack-{id}");
        let mut overrides: Vec<(&str, &str)> = vec![
            ("listeners", &listeners),
            ("process.roles", "broker,controller"),
            ("node.id", &node),
            ("broker.rack", &rack),
            ("controller.quorum.voters", &voters),
            ("controller.listener.names", "CONTROLLER"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
            ("cluster.id", "local-cluster-test"),
            ("controller.quorum.election.timeout.ms", "300"),
            ("controller.quorum.fetch.timeout.ms", "600"),
            ("controller.quorum.election.backoff.max.ms", "300"),
            ("broker.heartbeat.interval.ms", "100"),
            ("broker.session.timeout.ms", "1500"),
            ("replica.lag.time.max.ms", "2000"),
            ("default.replication.factor", "3"),
            ("min.insync.replicas", "2"),
            ("num.partitions", "3"),
        ];
        if self.internal {
            overrides.push(("inter.broker.listener.name", "INTERNAL"));
        }
        for (k, v) in &self.extra {
            overrides.push((k, v));
        }
        overrides.extend_from_slice(more);
        self.nodes[id - 1] = Some(BrokerProcess::start(&self.dirs[id - 1], &overrides));
    }

    /// SIGKILLs node `id`.
    pub fn kill(&mut self, id: usize) {
        if let Some(n) = self.nodes[id - 1].take() {
            n.kill9();
        }
    }

    /// Stops node `id` cleanly (controlled shutdown).
    pub fn stop(&mut self, id: usize) {
        if let Some(n) = self.nodes[id - 1].take() {
            n.stop();
        }
    }

    /// Everything node `id` logged, over all its starts.
    pub fn log(&self, id: usize) -> String {
        std::fs::read_to_string(super::BrokerProcess::log_path(&self.dirs[id - 1]))
            .unwrap_or_default()
    }

    /// The controller listener's port of node `id`.
    pub fn controller_port(&self, id: usize) -> u16 {
        self.controller_ports[id - 1]
    }

    /// The client address of node `id`, if running.
    pub fn addr(&self, id: usize) -> Option<String> {
        self.nodes[id - 1].as_ref().map(|n| n.addr.clone())
    }

    /// A client to node `id`.
    pub fn client(&self, id: usize) -> Client {
        Client::connect(&self.addr(id).unwrap())
    }

    /// The running nodes' ids.
    pub fn live(&self) -> Vec<usize> {
        (1..=self.nodes.len())
            .filter(|id| self.nodes[id - 1].is_some())
            .collect()
    }

    /// Metadata for `topics` from a running node.
    pub fn metadata(&self, via: usize, topics: &[&str]) -> MetadataResponse {
        let request = MetadataRequest::default()
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                    .collect(),
            ))
            .with_allow_auto_topic_creation(false);
        self.client(via).call(&request, 12)
    }

    /// Waits until node `via` lists `n` brokers.
    pub fn wait_brokers(&self, via: usize, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let m = self.metadata(via, &[]);
            if m.brokers.len() == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} brokers listed, {n} expected",
                m.brokers.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The state of `topic`'s partition `index` as node `via` reports it.
    pub fn partition(&self, via: usize, topic: &str, index: i32) -> Option<PartitionState> {
        let m = self.metadata(via, &[topic]);
        let t = m.topics.first()?;
        let p = t.partitions.iter().find(|p| p.partition_index == index)?;
        Some(PartitionState {
            error: p.error_code,
            leader: p.leader_id.0,
            epoch: p.leader_epoch,
            replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
            isr: p.isr_nodes.iter().map(|b| b.0).collect(),
        })
    }

    /// Waits until node `via` reports `topic`'s partition `index` in a state `ok` accepts.
    pub fn wait_partition(
        &self,
        via: usize,
        topic: &str,
        index: i32,
        within: Duration,
        ok: impl Fn(&PartitionState) -> bool,
    ) -> PartitionState {
        let deadline = Instant::now() + within;
        loop {
            let s = self.partition(via, topic, index);
            if let Some(s) = s.as_ref().filter(|s| ok(s)) {
                return s.clone();
            }
            assert!(Instant::now() < deadline, "partition never settled: {s:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
