//! The values admin calls take and return.

use uuid::Uuid;

use crate::ErrorCode;

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Partition count; `None` uses the broker's `num.partitions`.
    pub partitions: Option<i32>,
    /// Replication factor; `None` uses the broker's `default.replication.factor`.
    pub replication_factor: Option<i16>,
    /// Topic-level config overrides (`retention.ms`, `cleanup.policy`, …).
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    /// A topic with the broker's default partition count and replication factor.
    pub fn new(name: impl Into<String>) -> Self {
        NewTopic {
            name: name.into(),
            partitions: None,
            replication_factor: None,
            configs: Vec::new(),
        }
    }

    /// Sets the partition count.
    pub fn partitions(mut self, partitions: i32) -> Self {
        self.partitions = Some(partitions);
        self
    }

    /// Sets the replication factor.
    pub fn replication_factor(mut self, factor: i16) -> Self {
        self.replication_factor = Some(factor);
        self
    }

    /// Adds a config override.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((key.into(), value.into()));
        self
    }
}

/// What the broker reports for a created (or, with `validate_only`, validated) topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    /// Topic id (nil with `validate_only`, or from brokers older than CreateTopics v7).
    pub topic_id: Uuid,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// The topic's configs as the broker will apply them (CreateTopics v5+; empty before).
    pub configs: Vec<ConfigEntry>,
}

/// A resource whose configuration can be described or altered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConfigResource {
    /// A topic, by name.
    Topic(String),
    /// A broker, by node id.
    Broker(i32),
}

impl ConfigResource {
    /// The wire resource type (`TOPIC` = 2, `BROKER` = 4).
    pub(crate) fn wire_type(&self) -> i8 {
        match self {
            ConfigResource::Topic(_) => 2,
            ConfigResource::Broker(_) => 4,
        }
    }

    /// The wire resource name (a broker's id in decimal).
    pub(crate) fn wire_name(&self) -> String {
        match self {
            ConfigResource::Topic(name) => name.clone(),
            ConfigResource::Broker(id) => id.to_string(),
        }
    }
}

impl std::fmt::Display for ConfigResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigResource::Topic(name) => write!(f, "topic {name}"),
            ConfigResource::Broker(id) => write!(f, "broker {id}"),
        }
    }
}

/// Where a config value comes from (Kafka's `ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigSource {
    /// Set on the topic (`DYNAMIC_TOPIC_CONFIG`).
    DynamicTopic,
    /// Set dynamically for one broker (`DYNAMIC_BROKER_CONFIG`).
    DynamicBroker,
    /// Set dynamically as the cluster-wide broker default (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
    DynamicDefaultBroker,
    /// Set in the broker's `server.properties` (`STATIC_BROKER_CONFIG`).
    StaticBroker,
    /// Kafka's built-in default (`DEFAULT_CONFIG`).
    Default,
    /// A broker logger level (`DYNAMIC_BROKER_LOGGER_CONFIG`).
    DynamicBrokerLogger,
    /// A client-metrics subscription (`CLIENT_METRICS_CONFIG`).
    ClientMetrics,
    /// A group config (`GROUP_CONFIG`).
    Group,
    /// Unknown, or a value this library does not know.
    Unknown(i8),
}

impl ConfigSource {
    /// Maps the wire value.
    pub fn from_wire(v: i8) -> ConfigSource {
        match v {
            1 => ConfigSource::DynamicTopic,
            2 => ConfigSource::DynamicBroker,
            3 => ConfigSource::DynamicDefaultBroker,
            4 => ConfigSource::StaticBroker,
            5 => ConfigSource::Default,
            6 => ConfigSource::DynamicBrokerLogger,
            7 => ConfigSource::ClientMetrics,
            8 => ConfigSource::Group,
            other => ConfigSource::Unknown(other),
        }
    }

    /// The wire value (the inverse of [`ConfigSource::from_wire`]).
    pub fn wire(self) -> i8 {
        match self {
            ConfigSource::DynamicTopic => 1,
            ConfigSource::DynamicBroker => 2,
            ConfigSource::DynamicDefaultBroker => 3,
            ConfigSource::StaticBroker => 4,
            ConfigSource::Default => 5,
            ConfigSource::DynamicBrokerLogger => 6,
            ConfigSource::ClientMetrics => 7,
            ConfigSource::Group => 8,
            ConfigSource::Unknown(v) => v,
        }
    }

    /// Kafka's name for the source (`DYNAMIC_TOPIC_CONFIG`, `DEFAULT_CONFIG`, …).
    pub fn name(self) -> &'static str {
        match self {
            ConfigSource::DynamicTopic => "DYNAMIC_TOPIC_CONFIG",
            ConfigSource::DynamicBroker => "DYNAMIC_BROKER_CONFIG",
            ConfigSource::DynamicDefaultBroker => "DYNAMIC_DEFAULT_BROKER_CONFIG",
            ConfigSource::StaticBroker => "STATIC_BROKER_CONFIG",
            ConfigSource::Default => "DEFAULT_CONFIG",
            ConfigSource::DynamicBrokerLogger => "DYNAMIC_BROKER_LOGGER_CONFIG",
            ConfigSource::ClientMetrics => "CLIENT_METRICS_CONFIG",
            ConfigSource::Group => "GROUP_CONFIG",
            ConfigSource::Unknown(_) => "UNKNOWN",
        }
    }
}

/// One described config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Config name.
    pub name: String,
    /// Current value; `None` for sensitive values and unset keys.
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// Whether the value cannot be altered.
    pub read_only: bool,
    /// Whether the value is sensitive (and so not returned).
    pub sensitive: bool,
}

/// One change of an incremental config update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    /// Sets the value.
    Set(String),
    /// Removes the override, reverting to the default.
    Delete,
    /// Adds items to a list value.
    Append(String),
    /// Removes items from a list value.
    Subtract(String),
}

/// A config key and the change to make to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigOp {
    /// Config name.
    pub name: String,
    /// The change.
    pub op: ConfigOp,
}

impl AlterConfigOp {
    /// `SET name=value`.
    pub fn set(name: impl Into<String>, value: impl Into<String>) -> Self {
        AlterConfigOp {
            name: name.into(),
            op: ConfigOp::Set(value.into()),
        }
    }

    /// `DELETE name`.
    pub fn delete(name: impl Into<String>) -> Self {
        AlterConfigOp {
            name: name.into(),
            op: ConfigOp::Delete,
        }
    }

    /// `APPEND name+=items`.
    pub fn append(name: impl Into<String>, items: impl Into<String>) -> Self {
        AlterConfigOp {
            name: name.into(),
            op: ConfigOp::Append(items.into()),
        }
    }

    /// `SUBTRACT name-=items`.
    pub fn subtract(name: impl Into<String>, items: impl Into<String>) -> Self {
        AlterConfigOp {
            name: name.into(),
            op: ConfigOp::Subtract(items.into()),
        }
    }

    /// The wire operation code and value.
    pub(crate) fn wire(&self) -> (i8, Option<&str>) {
        match &self.op {
            ConfigOp::Set(v) => (0, Some(v)),
            ConfigOp::Delete => (1, None),
            ConfigOp::Append(v) => (2, Some(v)),
            ConfigOp::Subtract(v) => (3, Some(v)),
        }
    }
}

/// Which offset of a partition to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset (low watermark).
    Earliest,
    /// The high watermark (the offset the next record will get).
    Latest,
    /// The record with the largest timestamp (ListOffsets v7+).
    MaxTimestamp,
    /// The first record whose timestamp is at or after this one (ms).
    Timestamp(i64),
}

impl OffsetSpec {
    /// The ListOffsets timestamp that asks for this spec.
    pub(crate) fn wire(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::MaxTimestamp => -3,
            OffsetSpec::Timestamp(ms) => ms,
        }
    }
}

/// An offset found by `list_offsets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// The offset.
    pub offset: i64,
    /// The record's timestamp for timestamp lookups; `None` for `Earliest` / `Latest`.
    pub timestamp: Option<i64>,
    /// The leader epoch of that offset, when the broker knows it.
    pub leader_epoch: Option<i32>,
}

/// A broker of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerDescription {
    /// Node id.
    pub id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// Rack, if configured.
    pub rack: Option<String>,
    /// Whether the broker is fenced (only reported by DescribeCluster v2+).
    pub fenced: bool,
}

/// What `describe_cluster` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    /// Cluster id.
    pub cluster_id: String,
    /// The controller's node id as the cluster reports it (in KRaft, a broker that forwards to
    /// the active controller); `None` when unknown.
    pub controller: Option<i32>,
    /// Brokers, by ascending id.
    pub brokers: Vec<BrokerDescription>,
}

/// A topic as `list_topics` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicListing {
    /// Name.
    pub name: String,
    /// Topic id.
    pub topic_id: Uuid,
    /// Whether the topic is internal (`__consumer_offsets`, …).
    pub internal: bool,
    /// Partition count.
    pub partitions: usize,
}

/// One partition of a described topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDescription {
    /// Partition index.
    pub partition: i32,
    /// Leader node id; `None` when the partition has no leader.
    pub leader: Option<i32>,
    /// Leader epoch, when reported.
    pub leader_epoch: Option<i32>,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
    /// Offline replica node ids.
    pub offline: Vec<i32>,
    /// The broker's error for this partition (e.g. `LEADER_NOT_AVAILABLE`), if any.
    pub error: Option<ErrorCode>,
}

/// A described topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    /// Name.
    pub name: String,
    /// Topic id.
    pub topic_id: Uuid,
    /// Whether the topic is internal.
    pub internal: bool,
    /// Partitions in index order.
    pub partitions: Vec<PartitionDescription>,
}

/// One partition replica stored in a log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// Topic.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Bytes on disk.
    pub size: i64,
    /// How far the replica is behind its leader (0 for leaders).
    pub offset_lag: i64,
    /// Whether this is a future replica (being moved between directories).
    pub future: bool,
}

/// One log directory of a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirDescription {
    /// The directory's path on the broker.
    pub path: String,
    /// The broker's error for this directory (e.g. `KAFKA_STORAGE_ERROR`), if any.
    pub error: Option<ErrorCode>,
    /// Size of the file system, when reported (DescribeLogDirs v4+).
    pub total_bytes: Option<i64>,
    /// Free space usable by the broker, when reported (DescribeLogDirs v4+).
    pub usable_bytes: Option<i64>,
    /// The replicas stored there.
    pub replicas: Vec<ReplicaInfo>,
}
