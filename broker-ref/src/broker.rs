//! State shared by every connection: configuration, identity, topics, and the signal that wakes
//! waiting fetches when data arrives.

use std::path::Path;
use std::sync::Arc;

use crate::config::BrokerConfig;
use crate::coordinator::producer_ids::ProducerIdManager;
use crate::coordinator::txn::TransactionCoordinator;
use crate::coordinator::{CoordinatorLog, GroupCoordinator};
use crate::log::LogConfig;
use crate::partition::TopicRegistry;
use crate::security::{CredentialStore, SecurityState};
use crate::session::FetchSessionCache;
use crate::{Error, Result};

/// The broker's shared state.
#[derive(Debug)]
pub struct Broker {
    /// Validated configuration from `server.properties` / `--override` (static keys; for keys
    /// that can change at runtime read [`Broker::dynamic`]'s effective configuration).
    pub config: BrokerConfig,
    /// Dynamic broker configs (AlterConfigs on the BROKER resource) over `config`.
    pub dynamic: crate::dynamic_config::DynamicConfig,
    /// Per-group configs (the GROUP config resource); read them with [`Broker::group_config`].
    pub group_configs: crate::group_config::GroupConfigs,
    /// This node's id.
    pub node_id: i32,
    /// Cluster id, persisted in `meta.properties`.
    pub cluster_id: String,
    /// Host clients should connect to.
    pub advertised_host: String,
    /// Port clients should connect to.
    pub advertised_port: u16,
    /// Hosted topics (shared with the coordinators, which keep their state in internal topics).
    pub topics: Arc<TopicRegistry>,
    /// Consumer groups and committed offsets.
    pub groups: Arc<GroupCoordinator>,
    /// Producer id allocation (InitProducerId; shared with the transaction coordinator).
    pub producer_ids: Arc<ProducerIdManager>,
    /// Transactions (transactional ids, markers), persisted in `__transaction_state`.
    pub txns: TransactionCoordinator,
    /// Incremental fetch sessions (KIP-227).
    pub fetch_sessions: FetchSessionCache,
    /// `queued.max.requests`: requests served at once, broker-wide.
    pub request_slots: crate::request_slots::RequestSlots,
    /// The authorizer and the SCRAM credentials.
    pub security: SecurityState,
    /// Client quotas: the configured values (durable) and the sensors enforcing them.
    pub quotas: crate::quota::Quotas,
    /// Replication throttles (cluster mode; rates follow the dynamic broker configs).
    pub replication_quotas: Arc<crate::quota::replication::ReplicationQuotas>,
    /// Where clients connect, per listener (Metadata, DescribeCluster and FindCoordinator answer
    /// the endpoint of the listener the request came in on).
    pub endpoints: Vec<Endpoint>,
    /// In cluster mode (`controller.quorum.voters`), this node's quorum member and metadata
    /// image; set once when the server starts it.
    pub cluster: std::sync::OnceLock<Arc<crate::cluster::ClusterNode>>,
}

/// One listener's advertised address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The listener name.
    pub listener: String,
    /// Host clients connect to.
    pub host: String,
    /// Port clients connect to.
    pub port: u16,
}

/// Reads or creates `meta.properties` (cluster id and node id), refusing a data directory that
/// belongs to another node.
fn load_identity(dir: &Path, node_id: i32, configured_cluster: &str) -> Result<String> {
    let path = dir.join("meta.properties");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let entries = crate::config::parse_properties(&text)?;
        let get = |k: &str| {
            entries
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let stored_node = get("node.id").and_then(|v| v.parse::<i32>().ok());
        if stored_node.is_some_and(|n| n != node_id) {
            return Err(Error::config(
                "node.id",
                format!(
                    "{} belongs to node {stored_node:?}, not {node_id}",
                    path.display()
                ),
            ));
        }
        if let Some(id) = get("cluster.id") {
            if !configured_cluster.is_empty() && configured_cluster != id {
                return Err(Error::config(
                    "cluster.id",
                    format!(
                        "{} holds cluster {id}, not {configured_cluster}",
                        path.display()
                    ),
                ));
            }
            return Ok(id);
        }
    }
    let cluster_id = if configured_cluster.is_empty() {
        random_cluster_id()
    } else {
        configured_cluster.to_string()
    };
    let text = format!("version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n");
    crate::partition::write_meta(&path, text.as_bytes())?;
    Ok(cluster_id)
}

/// A Kafka-style cluster id: 16 random bytes, URL-safe base64 without padding.
fn random_cluster_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut bits: u32 = 0;
    let mut n = 0;
    let mut out = String::new();
    for b in bytes {
        bits = (bits << 8) | u32::from(b);
        n += 8;
        while n >= 6 {
            n -= 6;
            out.push(ALPHABET[((bits >> n) & 63) as usize] as char);
        }
    }
    if n > 0 {
        out.push(ALPHABET[((bits << (6 - n)) & 63) as usize] as char);
    }
    out
}

impl Broker {
    /// Opens the data directory (recovering every log) and builds the shared state, with one
    /// endpoint for every listener.
    pub fn open(
        config: BrokerConfig,
        advertised_host: String,
        advertised_port: u16,
    ) -> Result<Arc<Broker>> {
        let dir = config.log_dir();
        std::fs::create_dir_all(&dir)?;
        let credentials = Arc::new(CredentialStore::open(&dir)?);
        Self::open_with(
            config,
            Vec::new(),
            (advertised_host, advertised_port),
            credentials,
        )
    }

    /// Opens the data directory with per-listener endpoints (the first is the default) and the
    /// SCRAM credential store the listeners already use.
    pub fn open_with(
        config: BrokerConfig,
        endpoints: Vec<Endpoint>,
        default: (String, u16),
        credentials: Arc<CredentialStore>,
    ) -> Result<Arc<Broker>> {
        let (advertised_host, advertised_port) = default;
        let dir = config.log_dir();
        std::fs::create_dir_all(&dir)?;
        let security = SecurityState {
            authorizer: crate::security::Authorizer::from_config(&config, Some(&dir))?,
            credentials,
        };
        let node_id = config.node_id();
        let cluster_id = load_identity(&dir, node_id, config.get("cluster.id"))?;
        let dynamic = crate::dynamic_config::DynamicConfig::open(&dir, config.clone())?;
        let group_configs = crate::group_config::GroupConfigs::open(&dir)?;
        let effective = dynamic.effective();
        let defaults = topic_defaults(&effective)?;
        let topics = Arc::new(TopicRegistry::open(
            &dir,
            defaults,
            recovery_threads(&effective),
        )?);
        let log = CoordinatorLog {
            topics: topics.clone(),
        };
        let groups = Arc::new(GroupCoordinator::open(&config, log.clone())?);
        let producer_ids = Arc::new(ProducerIdManager::open(&dir)?);
        let txns =
            TransactionCoordinator::open(&config, log, groups.clone(), producer_ids.clone())?;
        let request_slots = crate::request_slots::RequestSlots::new(
            config.int("queued.max.requests").max(1) as usize,
        );
        let replication_quotas = Arc::new(crate::quota::replication::ReplicationQuotas::new(
            &dynamic.effective(),
        ));
        let quotas = crate::quota::Quotas::new(
            crate::quota::QuotaStore::open(Some(&dir))?,
            crate::quota::WindowConfig::new(
                i64::from(config.int("quota.window.num")),
                i64::from(config.int("quota.window.size.seconds")),
            ),
            crate::quota::WindowConfig::new(
                i64::from(config.int("controller.quota.window.num")),
                i64::from(config.int("controller.quota.window.size.seconds")),
            ),
        );
        let broker = Arc::new(Broker {
            config,
            dynamic,
            group_configs,
            node_id,
            cluster_id,
            advertised_host,
            advertised_port,
            topics,
            groups,
            producer_ids,
            txns,
            fetch_sessions: FetchSessionCache::new(),
            request_slots,
            security,
            quotas,
            replication_quotas,
            endpoints,
            cluster: std::sync::OnceLock::new(),
        });
        // Transactions a crash left between their Prepare state and their markers (a cluster
        // node's coordinator completes them when it takes over their partition instead: its
        // local copies of the other partitions may be followers).
        if broker
            .config
            .get("controller.quorum.voters")
            .trim()
            .is_empty()
        {
            broker.txns.recover();
        }
        Ok(broker)
    }

    /// The cluster node, in cluster mode.
    pub fn cluster_node(&self) -> Option<&Arc<crate::cluster::ClusterNode>> {
        self.cluster.get()
    }

    /// Whether `listener` is a controller listener of this cluster node.
    pub fn is_controller_listener(&self, listener: &str) -> bool {
        self.cluster
            .get()
            .is_some_and(|n| n.settings.is_controller_listener(listener))
    }

    /// The advertised host and port for requests that came in on `listener`.
    pub fn endpoint(&self, listener: &str) -> (&str, u16) {
        self.endpoints
            .iter()
            .find(|e| e.listener == listener)
            .map_or((self.advertised_host.as_str(), self.advertised_port), |e| {
                (e.host.as_str(), e.port)
            })
    }

    /// Closes every partition (clean shutdown: logs flushed, checkpoints, producer-state
    /// snapshots and clean-shutdown markers written), on `num.recovery.threads.per.data.dir`
    /// threads as Kafka does.
    pub fn shutdown(&self) -> Result<()> {
        let partitions: Vec<_> = self
            .topics
            .list()
            .iter()
            .flat_map(|t| t.partitions())
            .collect();
        let threads = recovery_threads(&self.dynamic.effective());
        crate::partition::close_all(partitions, threads)
    }

    /// The settings of consumer group `group_id` that a group's own configs may override
    /// (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`): the group's value,
    /// else the broker's `group.consumer.*` default, within the broker's current bounds.
    pub fn group_config(&self, group_id: &str) -> crate::group_config::GroupSettings {
        self.group_configs
            .settings(group_id, &self.dynamic.effective())
    }

    /// Applies a new effective configuration (after a dynamic change): the broker-level topic
    /// defaults of every partition and the replication throttle rates. The cleaner reads its
    /// settings before each pass.
    pub fn apply_dynamic(&self, effective: &BrokerConfig) -> Result<()> {
        self.replication_quotas.apply(effective);
        self.topics.set_defaults(topic_defaults(effective)?)
    }
}

/// The broker-level topic defaults of a configuration.
fn topic_defaults(config: &BrokerConfig) -> Result<LogConfig> {
    LogConfig::from_overrides(
        &LogConfig::default(),
        config
            .topic_defaults()
            .iter()
            .map(|(k, v)| (*k, v.as_str())),
    )
}

/// `num.recovery.threads.per.data.dir`, at least 1.
fn recovery_threads(config: &BrokerConfig) -> usize {
    usize::try_from(config.int("num.recovery.threads.per.data.dir"))
        .unwrap_or(1)
        .max(1)
}
