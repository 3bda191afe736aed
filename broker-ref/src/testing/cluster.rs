//! [`Cluster`]: the in-process test cluster, its builder, and the control surface tests use.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockWriteGuard};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use odradek::ErrorCode;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::handoff::{handoff, Sender};
use super::node::{Connections, Node, Serving};
use super::topology::{CoordinatorKind, NodeInfo, PartitionRole, Topology};
use super::view::{read, NodeView};
use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::server::connection_limits::ConnectionLimits;
use crate::server::{spawn_maintenance, Action, Interceptor, LoggedRequest, Rule, RuleId};
use crate::{Error, Result};

/// Where a test cluster keeps its log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Storage {
    /// A fresh directory on a RAM-backed file system (`/dev/shm` where it exists, else the
    /// system temporary directory), removed when the cluster stops. The broker's usual
    /// segmented log, in memory; never fsynced.
    #[default]
    Memory,
    /// A fresh directory under the system temporary directory, removed when the cluster stops.
    TempDir,
    /// This directory (created if missing), kept when the cluster stops: the log is closed
    /// cleanly, and a later cluster on the same directory finds the topics and records again.
    Dir(PathBuf),
}

/// Builds a [`Cluster`]; see [`Cluster::builder`].
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    brokers: usize,
    partitions: i32,
    topics: Vec<(String, i32, BTreeMap<String, String>)>,
    configs: Vec<(String, String)>,
    storage: Storage,
    record_requests: bool,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            brokers: 1,
            partitions: 1,
            topics: Vec::new(),
            configs: Vec::new(),
            storage: Storage::Memory,
            record_requests: false,
        }
    }
}

/// The settings every test cluster starts with (each can be overridden with
/// [`ClusterBuilder::config`]): no rebalance delay, single-partition internal topics, small
/// index preallocation, and Kafka's defaults otherwise (no fsync per message).
const TEST_DEFAULTS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("offsets.topic.num.partitions", "1"),
    ("transaction.state.log.num.partitions", "1"),
    ("log.index.size.max.bytes", "1048576"),
    ("num.recovery.threads.per.data.dir", "1"),
];

impl ClusterBuilder {
    /// Number of brokers (node ids 1..=n; default 1).
    pub fn brokers(mut self, n: usize) -> Self {
        self.brokers = n;
        self
    }

    /// Partitions of auto-created topics (`num.partitions`; default 1).
    pub fn partitions(mut self, n: i32) -> Self {
        self.partitions = n;
        self
    }

    /// A topic created before the cluster accepts connections.
    pub fn topic(mut self, name: impl Into<String>, partitions: i32) -> Self {
        self.topics.push((name.into(), partitions, BTreeMap::new()));
        self
    }

    /// A topic with topic-level configs (`cleanup.policy`, `retention.ms`, ...).
    pub fn topic_with_configs<K: Into<String>, V: Into<String>>(
        mut self,
        name: impl Into<String>,
        partitions: i32,
        configs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let configs = configs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.topics.push((name.into(), partitions, configs));
        self
    }

    /// A broker setting with Apache Kafka's name (`server.properties` keys).
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((key.into(), value.into()));
        self
    }

    /// Where the log lives (default [`Storage::Memory`]).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// Turns the request log on from the first request.
    pub fn record_requests(mut self, on: bool) -> Self {
        self.record_requests = on;
        self
    }

    /// Starts the cluster: binds one loopback port per broker, opens the log, creates the
    /// topics, and returns once every broker accepts connections.
    pub fn start(self) -> Result<Cluster> {
        if self.brokers == 0 || self.brokers > 64 {
            return Err(Error::Testing(format!(
                "brokers must be 1..=64, got {}",
                self.brokers
            )));
        }
        let dir = DataDir::new(&self.storage)?;
        let (ready_tx, ready_rx) = handoff();
        let (stop_tx, stop_rx) = oneshot::channel();
        let path = dir.path().to_path_buf();
        let keep = matches!(self.storage, Storage::Dir(_));
        let thread = std::thread::Builder::new()
            .name("odradek-test-cluster".into())
            .spawn(move || run(self, path, keep, ready_tx, stop_rx))
            .map_err(Error::Io)?;
        let started = match ready_rx.recv() {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            None => {
                let _ = thread.join();
                return Err(Error::Testing(
                    "the cluster thread died while starting".into(),
                ));
            }
        };
        Ok(Cluster {
            started,
            stop: Some(stop_tx),
            thread: Some(thread),
            dir: Some(dir),
        })
    }
}

/// The data directory, removed on drop unless it was given.
#[derive(Debug)]
enum DataDir {
    Temp(PathBuf),
    Kept(PathBuf),
}

/// Distinguishes the directories of clusters started by one process.
static NEXT_DIR: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl DataDir {
    fn new(storage: &Storage) -> Result<DataDir> {
        let base = match storage {
            Storage::Dir(p) => {
                std::fs::create_dir_all(p)?;
                return Ok(DataDir::Kept(p.clone()));
            }
            Storage::Memory => {
                let shm = Path::new("/dev/shm");
                let writable = std::fs::metadata(shm)
                    .map(|m| m.is_dir() && !m.permissions().readonly())
                    .unwrap_or(false);
                if writable {
                    shm.to_path_buf()
                } else {
                    std::env::temp_dir()
                }
            }
            Storage::TempDir => std::env::temp_dir(),
        };
        // A name no other cluster uses: pid, a per-process counter and the clock (no RNG, so
        // the caller's thread allocates nothing that outlives the call).
        loop {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let n = NEXT_DIR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = base.join(format!(
                "odradek-cluster-{}-{n}-{nanos:08x}",
                std::process::id()
            ));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(DataDir::Temp(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn path(&self) -> &Path {
        match self {
            DataDir::Temp(p) | DataDir::Kept(p) => p,
        }
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        if let DataDir::Temp(p) = self {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// What the cluster thread hands back once serving.
#[derive(Debug, Clone)]
struct Started {
    broker: Arc<Broker>,
    interceptor: Arc<Interceptor>,
    topology: Arc<RwLock<Topology>>,
    nodes: Vec<Arc<Node>>,
    bootstrap: String,
    runtime: tokio::runtime::Handle,
}

/// The cluster thread: a single-threaded runtime serving every broker until told to stop.
fn run(
    builder: ClusterBuilder,
    dir: PathBuf,
    keep: bool,
    ready: Sender<Result<Started>>,
    stop: oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            ready.send(Err(Error::Io(e)));
            return;
        }
    };
    runtime.block_on(async move {
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (started, maintenance) = match boot(builder, &dir, shutdown_rx).await {
            Ok(s) => s,
            Err(e) => {
                ready.send(Err(e));
                return;
            }
        };
        ready.send(Ok(started.clone()));
        let _ = stop.await;
        for node in &started.nodes {
            node.down().await;
        }
        let _ = shutdown_tx.send(true);
        let _ = maintenance.await;
        if keep {
            if let Err(e) = started.broker.shutdown() {
                tracing::warn!(error = %e, "test cluster: closing the log failed");
            }
        }
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
}

async fn boot(
    builder: ClusterBuilder,
    dir: &Path,
    shutdown: watch::Receiver<bool>,
) -> Result<(Started, JoinHandle<()>)> {
    let mut listeners = Vec::with_capacity(builder.brokers);
    for _ in 0..builder.brokers {
        let l = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| Error::Testing(format!("cannot bind a loopback port: {e}")))?;
        listeners.push(l);
    }
    let first = listeners[0].local_addr()?;
    let mut entries: Vec<(String, String)> = TEST_DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    entries.push(("num.partitions".into(), builder.partitions.to_string()));
    entries.extend(builder.configs.iter().cloned());
    entries.push(("listeners".into(), format!("PLAINTEXT://{first}")));
    entries.push(("log.dirs".into(), dir.display().to_string()));
    entries.push(("node.id".into(), "1".into()));
    let config = BrokerConfig::from_entries(entries)?;
    let offsets = config.int("offsets.topic.num.partitions");
    let txns = config.int("transaction.state.log.num.partitions");
    let broker = Broker::open(config, first.ip().to_string(), first.port())?;
    for (name, partitions, configs) in &builder.topics {
        broker
            .topics
            .create(name, *partitions, configs.clone(), false)?;
    }
    let rack = broker.config.get("broker.rack").to_string();
    let mut infos = Vec::with_capacity(listeners.len());
    for (i, l) in listeners.iter().enumerate() {
        let addr = l.local_addr()?;
        infos.push(NodeInfo {
            id: i as i32 + 1,
            host: addr.ip().to_string(),
            port: addr.port(),
            up: true,
            rack: (!rack.is_empty()).then(|| rack.clone()),
        });
    }
    let topology = Arc::new(RwLock::new(Topology::new(infos, offsets, txns)));
    let interceptor = Arc::new(Interceptor::new());
    interceptor.record_requests(builder.record_requests);
    let mut nodes = Vec::with_capacity(listeners.len());
    for (i, l) in listeners.into_iter().enumerate() {
        let id = i as i32 + 1;
        let connections = Arc::new(Connections::default());
        let view = Arc::new(NodeView {
            node_id: id,
            broker: broker.clone(),
            topology: topology.clone(),
            connections: connections.clone(),
        });
        let serving = Serving {
            broker: broker.clone(),
            interceptor: interceptor.clone(),
            view,
            connections,
            // Each node keeps max.connections and max.connections.per.ip on its own, as a broker.
            limits: Arc::new(ConnectionLimits::from_config(&broker.config)?),
            shutdown: shutdown.clone(),
        };
        nodes.push(Arc::new(Node::start(id, l, serving)?));
    }
    let maintenance = spawn_maintenance(broker.clone(), shutdown);
    let bootstrap = nodes
        .iter()
        .map(|n| n.addr.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let started = Started {
        broker,
        interceptor,
        topology,
        nodes,
        bootstrap,
        runtime: tokio::runtime::Handle::current(),
    };
    Ok((started, maintenance))
}

/// A Kafka cluster inside the test's process: 1..N brokers on ephemeral loopback ports, served
/// by the reference broker, usable by any Kafka client, with fault injection.
///
/// Every broker shares one log store and one set of coordinators (it is one process); each
/// broker answers only for the partitions it leads (NOT_LEADER_OR_FOLLOWER otherwise) and the
/// groups and transactional ids it coordinates (NOT_COORDINATOR otherwise), and Metadata lists
/// every broker that is up. There is no replication and no ISR: a partition has exactly one
/// replica, its leader (plus an optional read replica, [`Cluster::set_partition_follower`]).
///
/// Dropping the cluster stops it (listeners closed, connections cut) and removes its data
/// directory (unless it was [`Storage::Dir`]). Every method is synchronous and quick (the
/// brokers run on a thread of their own), so it can be called from sync or async tests alike.
///
/// ```no_run
/// use std::time::Duration;
/// use kafka_protocol::messages::ApiKey;
/// use odradek::ErrorCode;
/// use odradek_broker::testing::Cluster;
///
/// # fn main() -> odradek_broker::Result<()> {
/// let cluster = Cluster::builder().brokers(3).topic("orders", 3).start()?;
/// let bootstrap = cluster.bootstrap(); // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
/// cluster.push_request_errors(ApiKey::OffsetCommit, [ErrorCode::CoordinatorNotAvailable; 2])?;
/// cluster.set_partition_leader("orders", 0, 2)?; // epoch bumped; broker 1 now refuses it
/// cluster.set_broker_down(3)?; // port 3 refuses connections until set_broker_up(3)
/// cluster.record_requests(true);
/// // ... run the code under test against `bootstrap` ...
/// let commits = cluster
///     .requests()
///     .iter()
///     .filter(|r| r.api_key == ApiKey::OffsetCommit)
///     .count();
/// # let _ = (bootstrap, commits);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Cluster {
    started: Started,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    dir: Option<DataDir>,
}

impl Cluster {
    /// A builder: 1 broker, 1 partition per auto-created topic, in-memory storage.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// A single-broker cluster with the defaults.
    pub fn start() -> Result<Cluster> {
        ClusterBuilder::default().start()
    }

    /// `bootstrap.servers` for clients: every broker's `host:port`, comma-separated.
    pub fn bootstrap(&self) -> &str {
        &self.started.bootstrap
    }

    /// The brokers' node ids (1..=N).
    pub fn broker_ids(&self) -> Vec<i32> {
        self.started.nodes.iter().map(|n| n.id).collect()
    }

    /// A broker's address (also while it is down: it comes back on the same port).
    pub fn broker_addr(&self, id: i32) -> Option<SocketAddr> {
        self.node(id).ok().map(|n| n.addr)
    }

    /// Whether a broker is up.
    pub fn is_broker_up(&self, id: i32) -> bool {
        read(&self.started.topology).is_up(id)
    }

    /// The shared broker state (topics, logs, coordinators) for assertions that look inside.
    pub fn broker_state(&self) -> &Arc<Broker> {
        &self.started.broker
    }

    /// The interception point every broker consults (rules, request log): the full power
    /// behind the convenience methods below.
    pub fn interceptor(&self) -> &Arc<Interceptor> {
        &self.started.interceptor
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), DataDir::path)
    }

    fn node(&self, id: i32) -> Result<&Arc<Node>> {
        self.started
            .nodes
            .iter()
            .find(|n| n.id == id)
            .ok_or_else(|| {
                Error::Testing(format!(
                    "no broker {id} (brokers are 1..={})",
                    self.started.nodes.len()
                ))
            })
    }

    fn topology(&self) -> RwLockWriteGuard<'_, Topology> {
        self.started
            .topology
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the cluster's runtime and waits for it.
    fn block_on<F>(&self, f: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = handoff();
        self.started.runtime.spawn(async move {
            tx.send(f.await);
        });
        rx.recv()
            .ok_or_else(|| Error::Testing("the cluster has stopped".into()))
    }

    /// Creates a topic (partition leaders: brokers in turn, partition `p` on broker
    /// `p mod N + 1`).
    pub fn create_topic(&self, name: &str, partitions: i32) -> Result<()> {
        self.started
            .broker
            .topics
            .create(name, partitions, BTreeMap::new(), false)
            .map(|_| ())
    }

    fn check_partition(&self, topic: &str, partition: i32) -> Result<()> {
        let t = self
            .started
            .broker
            .topics
            .get(topic)
            .ok_or_else(|| Error::Testing(format!("no topic `{topic}`")))?;
        if partition < 0 || partition >= t.partition_count() {
            return Err(Error::Testing(format!(
                "topic `{topic}` has no partition {partition}"
            )));
        }
        Ok(())
    }

    // ---- interception ------------------------------------------------------------------

    /// Adds a rule (see [`Rule`]: one API key; an error, delay, dropped response or closed
    /// connection; for some client id, broker, topic or partition; a number of times).
    pub fn add_rule(&self, rule: Rule) -> Result<RuleId> {
        self.started.interceptor.add(rule)
    }

    /// Removes a rule; false if it was already used up.
    pub fn remove_rule(&self, id: RuleId) -> bool {
        self.started.interceptor.remove(id)
    }

    /// Removes every rule.
    pub fn clear_rules(&self) {
        self.started.interceptor.clear_rules()
    }

    /// Rules (pushed errors included) not used up yet.
    pub fn pending_rules(&self) -> usize {
        self.started.interceptor.pending_rules()
    }

    /// The next requests of `api_key`, on any broker, fail with these codes, one per request
    /// (librdkafka's `rd_kafka_mock_push_request_errors`).
    pub fn push_request_errors(
        &self,
        api_key: ApiKey,
        codes: impl IntoIterator<Item = ErrorCode>,
    ) -> Result<()> {
        self.started.interceptor.push_errors(api_key, codes)
    }

    /// The next requests of `api_key` that reach broker `broker` fail with these codes, each
    /// answered after its delay (`rd_kafka_mock_broker_push_request_error_rtts`).
    pub fn push_broker_request_errors(
        &self,
        broker: i32,
        api_key: ApiKey,
        errors: impl IntoIterator<Item = (ErrorCode, Duration)>,
    ) -> Result<()> {
        self.node(broker)?;
        for (code, delay) in errors {
            let mut rule = Rule::new(api_key, Action::Error(code)).broker(broker);
            if !delay.is_zero() {
                rule = rule.delayed(delay);
            }
            self.started.interceptor.add(rule)?;
        }
        Ok(())
    }

    /// The next requests of `api_key` naming `topic`/`partition` fail with these codes for
    /// that partition only (`rd_kafka_mock_partition_push_request_errors`); the request's
    /// other partitions are answered normally.
    pub fn push_partition_request_errors(
        &self,
        topic: &str,
        partition: i32,
        api_key: ApiKey,
        codes: impl IntoIterator<Item = ErrorCode>,
    ) -> Result<()> {
        for code in codes {
            self.started
                .interceptor
                .add(Rule::new(api_key, Action::Error(code)).partition(topic, partition))?;
        }
        Ok(())
    }

    /// Turns the request log on or off (kept when turned off).
    pub fn record_requests(&self, on: bool) {
        self.started.interceptor.record_requests(on)
    }

    /// The requests logged so far, oldest first (API, version, client id, broker, partitions,
    /// what was injected).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.started.interceptor.requests()
    }

    /// The requests logged so far, emptying the log.
    pub fn take_requests(&self) -> Vec<LoggedRequest> {
        self.started.interceptor.take_requests()
    }

    // ---- brokers and connections ---------------------------------------------------------

    /// Closes open connections: of one broker or all, of one client id or all; returns how
    /// many were closed (clients see the connection reset and reconnect).
    pub fn close_connections(&self, broker: Option<i32>, client_id: Option<&str>) -> Result<usize> {
        let nodes: Vec<Arc<Node>> = match broker {
            Some(id) => vec![self.node(id)?.clone()],
            None => self.started.nodes.clone(),
        };
        let client = client_id.map(str::to_string);
        self.block_on(async move {
            let mut n = 0;
            for node in nodes {
                n += node.close_connections(client.as_deref()).await;
            }
            n
        })
    }

    /// How many connections a broker has open.
    pub fn connection_count(&self, broker: i32) -> Result<usize> {
        Ok(self.node(broker)?.connection_count())
    }

    fn all_partitions(&self) -> Vec<(String, i32)> {
        self.started
            .broker
            .topics
            .list()
            .iter()
            .flat_map(|t| (0..t.partition_count()).map(|p| (t.name.clone(), p)))
            .collect()
    }

    /// Takes a broker down: it leaves Metadata, its listener closes (connections are refused)
    /// and its open connections are cut. Its partitions have no leader until it comes back
    /// (Metadata: LEADER_NOT_AVAILABLE, leader -1): there is no replica to fail over to. The
    /// groups it coordinates answer COORDINATOR_NOT_AVAILABLE from FindCoordinator.
    pub fn set_broker_down(&self, id: i32) -> Result<()> {
        let node = self.node(id)?.clone();
        let partitions = self.all_partitions();
        {
            let mut t = self.topology();
            if !t.is_up(id) {
                return Ok(());
            }
            t.set_up(id, false);
            t.bump_led_by(id, partitions);
        }
        self.block_on(async move { node.down().await })?;
        Ok(())
    }

    /// Brings a broker back on the same port; its partitions get a new leader epoch.
    pub fn set_broker_up(&self, id: i32) -> Result<()> {
        let node = self.node(id)?.clone();
        if self.is_broker_up(id) {
            return Ok(());
        }
        self.block_on(async move { node.up().await })??;
        let partitions = self.all_partitions();
        let mut t = self.topology();
        t.set_up(id, true);
        t.bump_led_by(id, partitions);
        Ok(())
    }

    /// Adds `rtt` before every response of a broker (zero removes it;
    /// `rd_kafka_mock_broker_set_rtt`).
    pub fn set_broker_rtt(&self, id: i32, rtt: Duration) -> Result<()> {
        self.node(id)?;
        self.topology().set_rtt(id, rtt);
        Ok(())
    }

    // ---- partitions, coordinators, versions ------------------------------------------------

    /// Who serves a partition now.
    pub fn partition_leader(&self, topic: &str, partition: i32) -> Result<PartitionRole> {
        self.check_partition(topic, partition)?;
        Ok(read(&self.started.topology).role(topic, partition))
    }

    /// Moves a partition's leadership to broker `leader` (-1: no leader), bumping its leader
    /// epoch; returns the new epoch. The old leader answers NOT_LEADER_OR_FOLLOWER for it from
    /// now on and clients that still send the old epoch get FENCED_LEADER_EPOCH. The data stays
    /// where it is (every broker shares the log).
    pub fn set_partition_leader(&self, topic: &str, partition: i32, leader: i32) -> Result<i32> {
        self.check_partition(topic, partition)?;
        if leader != -1 {
            self.node(leader)?;
        }
        let old = self.topology().set_leader(topic, partition, leader);
        self.wake_fetches(topic, partition);
        Ok(old)
    }

    /// Fetches long-polling a partition whose leadership changed answer now (the old leader's
    /// with NOT_LEADER_OR_FOLLOWER), as Kafka completes delayed fetches on a leader change.
    fn wake_fetches(&self, topic: &str, partition: i32) {
        if let Some(p) = self
            .started
            .broker
            .topics
            .get(topic)
            .and_then(|t| t.partition(partition))
        {
            p.wake_for_change();
        }
    }

    /// Makes `follower` a read replica of a partition (`None` clears it): it also serves
    /// Fetch for the partition, and the leader names it as the preferred read replica in
    /// Fetch v11+ responses (KIP-392), sending no records itself.
    pub fn set_partition_follower(
        &self,
        topic: &str,
        partition: i32,
        follower: Option<i32>,
    ) -> Result<()> {
        self.check_partition(topic, partition)?;
        if let Some(f) = follower {
            self.node(f)?;
        }
        self.topology().set_follower(topic, partition, follower);
        self.wake_fetches(topic, partition);
        Ok(())
    }

    /// Pins the coordinator of a group or transactional id to a broker (`None` removes the
    /// pin: Kafka's placement again). The previous coordinator answers NOT_COORDINATOR.
    pub fn set_coordinator(
        &self,
        kind: CoordinatorKind,
        key: &str,
        broker: Option<i32>,
    ) -> Result<()> {
        if let Some(b) = broker {
            self.node(b)?;
        }
        self.topology().set_coordinator(kind, key, broker);
        Ok(())
    }

    /// The broker that coordinates a group or transactional id now.
    pub fn coordinator(&self, kind: CoordinatorKind, key: &str) -> i32 {
        read(&self.started.topology).coordinator(kind, key)
    }

    /// Serves only versions `min..=max` of an API: ApiVersions advertises the narrower range
    /// (leaving the API out if nothing is left) and a request outside it closes the
    /// connection, as Kafka does (`rd_kafka_mock_set_apiversion`). ApiVersions itself cannot
    /// be clamped.
    pub fn set_api_version(&self, api_key: ApiKey, min: i16, max: i16) -> Result<()> {
        if api_key == ApiKey::ApiVersions {
            return Err(Error::Testing("ApiVersions cannot be clamped".into()));
        }
        self.topology()
            .set_versions(api_key as i16, Some((min, max)));
        Ok(())
    }

    /// Removes an API's version clamp.
    pub fn clear_api_version(&self, api_key: ApiKey) {
        self.topology().set_versions(api_key as i16, None);
    }

    /// Stops the cluster now (what dropping it does).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Removes a temporary directory.
        self.dir.take();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}
