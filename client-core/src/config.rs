//! Typed client configuration, parsed from Apache Kafka / librdkafka property names.
//!
//! Bindings pass a string map; [`ClientConfig::from_map`] validates every key and value and fails
//! with an error naming the key. Defaults are Apache Kafka 4.x's Java-client defaults, except
//! where documented on the field.

use std::sync::Arc;
use std::time::Duration;

use crate::records::Compression;
use crate::security::{SecurityConfig, TokenProvider};
use crate::{Error, Result};

/// Producer acknowledgement level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// No response (`acks=0`).
    None,
    /// The leader appended (`acks=1`).
    Leader,
    /// Every in-sync replica appended (`acks=all` / `-1`).
    All,
}

impl Acks {
    /// The wire value.
    pub fn wire(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

/// How records without an explicit partition are assigned one. The names are librdkafka's
/// `partitioner` values, with the same hashes, so keyed records land where a librdkafka client
/// configured the same way puts them. "Sticky" is uniform sticky partitioning (KIP-794, what
/// librdkafka's `sticky.partitioning.linger.ms` does for records it would spread at random).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionerKind {
    /// Kafka's default (`murmur2_random`): murmur2 of the key; unkeyed records sticky. Same
    /// choice as the Java client.
    Default,
    /// `murmur2`: murmur2 of the key; a null key hashes as an empty one (one partition).
    Murmur2,
    /// `consistent`: CRC-32 of the key; null and empty keys hash as empty (one partition).
    Consistent,
    /// `consistent_random` (librdkafka's default): CRC-32 of the key; null and empty keys
    /// sticky.
    ConsistentRandom,
    /// `fnv1a`: FNV-1a of the key; a null key hashes as an empty one (one partition).
    Fnv1a,
    /// `fnv1a_random`: FNV-1a of the key; null keys sticky.
    Fnv1aRandom,
    /// `random`: keyed records at random; unkeyed records sticky.
    Random,
    /// Round robin over all partitions, keyed or not.
    RoundRobin,
}

/// A partition assignment strategy (`partition.assignment.strategy`); the assignment itself is
/// computed in `consumer::group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Java's `RangeAssignor`.
    Range,
    /// Java's `RoundRobinAssignor`.
    RoundRobin,
    /// Sticky, eager.
    Sticky,
    /// Sticky, incremental cooperative (KIP-429).
    CooperativeSticky,
    /// KafkaJS's round-robin assigner (protocol name `RoundRobinAssigner`, KafkaJS's default):
    /// the same round robin as [`Assignor::RoundRobin`] under KafkaJS's protocol name, so our
    /// members and stock KafkaJS members can share a group (the group's leader assigns).
    KafkaJsRoundRobin,
}

impl Assignor {
    /// The protocol name members advertise.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
            Assignor::KafkaJsRoundRobin => "RoundRobinAssigner",
        }
    }

    /// Parses a protocol name or a Java class name.
    pub fn from_name(name: &str) -> Option<Assignor> {
        let short = name.rsplit('.').next().unwrap_or(name);
        match short {
            "range" | "RangeAssignor" => Some(Assignor::Range),
            "roundrobin" | "RoundRobinAssignor" => Some(Assignor::RoundRobin),
            "sticky" | "StickyAssignor" => Some(Assignor::Sticky),
            "cooperative-sticky" | "CooperativeStickyAssignor" => Some(Assignor::CooperativeSticky),
            "RoundRobinAssigner" => Some(Assignor::KafkaJsRoundRobin),
            _ => None,
        }
    }
}

/// `metadata.recovery.strategy`: what a client does when none of the brokers it knows from
/// metadata can be reached, or a broker answers REBOOTSTRAP_REQUIRED (KIP-899, KIP-1102).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataRecovery {
    /// Go back to `bootstrap.servers` (re-resolving their names), as before the first metadata.
    Rebootstrap,
    /// Keep trying the known brokers only.
    None,
}

/// `client.dns.lookup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsLookup {
    /// Try every address a name resolves to (bootstrap servers and brokers alike).
    UseAllDnsIps,
    /// Replace each bootstrap server by the canonical names of its addresses, then as above.
    ResolveCanonicalBootstrapServersOnly,
}

impl DnsLookup {
    /// Parses the property value; Kafka's removed `default` is refused by name.
    pub fn parse(value: &str) -> Result<DnsLookup> {
        match value.trim().to_ascii_lowercase().as_str() {
            "use_all_dns_ips" => Ok(DnsLookup::UseAllDnsIps),
            "resolve_canonical_bootstrap_servers_only" => {
                Ok(DnsLookup::ResolveCanonicalBootstrapServersOnly)
            }
            other => Err(Error::config(
                "client.dns.lookup",
                format!(
                    "`{other}` is not a value: use `use_all_dns_ips` or `resolve_canonical_bootstrap_servers_only`"
                ),
            )),
        }
    }
}

/// Connection and metadata settings shared by every client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `bootstrap.servers` (`metadata.broker.list` is accepted as an alias).
    pub bootstrap_servers: Vec<String>,
    /// `client.id` (default `odradek`).
    pub client_id: String,
    /// `request.timeout.ms` (30000).
    pub request_timeout: Duration,
    /// `default.api.timeout.ms` (60000): the overall bound of an admin call, retries included.
    pub default_api_timeout: Duration,
    /// `metadata.max.age.ms` (300000).
    pub metadata_max_age: Duration,
    /// `reconnect.backoff.ms` (50).
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms` (1000).
    pub reconnect_backoff_max: Duration,
    /// `retry.backoff.ms` (100).
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms` (1000).
    pub retry_backoff_max: Duration,
    /// `socket.connection.setup.timeout.ms` (10000).
    pub connection_setup_timeout: Duration,
    /// `metadata.recovery.strategy` (`rebootstrap`, KIP-899): what happens when no known broker
    /// can be reached.
    pub metadata_recovery: MetadataRecovery,
    /// `metadata.recovery.rebootstrap.trigger.ms` (300000, KIP-1102): rebootstrap after this
    /// long without a metadata answer, even while some connection is up.
    pub metadata_rebootstrap_trigger: Duration,
    /// `client.dns.lookup` (`use_all_dns_ips`): how bootstrap names become addresses.
    pub dns_lookup: DnsLookup,
    /// `max.in.flight.requests.per.connection` (5).
    pub max_in_flight: usize,
    /// `allow.auto.create.topics` (true).
    pub allow_auto_create_topics: bool,
    /// `receive.message.max.bytes` (librdkafka's name; `None` until set): the largest response
    /// frame a connection accepts. A larger declared size closes the connection before anything
    /// is allocated for the frame. See [`ClientConfig::receive_message_max_bytes`].
    pub receive_message_max_bytes: Option<usize>,
    /// Producer settings.
    pub producer: ProducerConfig,
    /// Consumer settings.
    pub consumer: ConsumerConfig,
    /// `security.protocol`, `ssl.*`, `sasl.*`.
    pub security: SecurityConfig,
    /// Socket options (`socket.keepalive.enable`, `socket.nagle.disable`, buffer sizes,
    /// `broker.address.family`).
    pub socket: SocketOptions,
    /// librdkafka's `debug` contexts (empty: none), see [`ClientConfig::debug_filter`].
    pub debug: Vec<String>,
    /// librdkafka properties that were set and have no effect here
    /// ([`crate::rdkafka_config::Status::NotApplicable`]); named in one log line when the
    /// configuration is validated.
    pub not_applicable: Vec<String>,
}

/// Which addresses of a broker's name a connection may use (`broker.address.family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddressFamily {
    /// IPv4 and IPv6 (`any`).
    #[default]
    Any,
    /// IPv4 only (`v4`).
    V4,
    /// IPv6 only (`v6`).
    V6,
}

/// TCP options, librdkafka's `socket.*` and `broker.address.family`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// `socket.nagle.disable` (true): TCP_NODELAY.
    pub nodelay: bool,
    /// `socket.keepalive.enable` (false): SO_KEEPALIVE.
    pub keepalive: bool,
    /// `socket.send.buffer.bytes` (0: the system's default): SO_SNDBUF.
    pub send_buffer: u32,
    /// `socket.receive.buffer.bytes` (0: the system's default): SO_RCVBUF.
    pub receive_buffer: u32,
    /// `broker.address.family`.
    pub family: AddressFamily,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions {
            nodelay: true,
            keepalive: false,
            send_buffer: 0,
            receive_buffer: 0,
            family: AddressFamily::Any,
        }
    }
}

/// librdkafka's `debug` contexts.
pub const DEBUG_CONTEXTS: &[&str] = &[
    "generic",
    "broker",
    "topic",
    "metadata",
    "feature",
    "queue",
    "msg",
    "protocol",
    "cgrp",
    "security",
    "fetch",
    "interceptor",
    "plugin",
    "consumer",
    "admin",
    "eos",
    "mock",
    "assignor",
    "conf",
    "telemetry",
    "all",
];

/// The features `builtin.features` may ask for that this build has (librdkafka's names).
pub const BUILTIN_FEATURES: &[&str] = &[
    "gzip",
    "snappy",
    "ssl",
    "sasl",
    "regex",
    "lz4",
    "sasl_plain",
    "sasl_scram",
    "zstd",
    "sasl_oauthbearer",
    "http",
    "oidc",
];

/// What a consumer does when it has no valid position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// Start at the log start offset.
    Earliest,
    /// Start at the high watermark.
    Latest,
    /// Raise an error.
    None,
}

/// Consumer settings.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// `group.id` (none).
    pub group_id: Option<String>,
    /// `auto.offset.reset` (latest).
    pub auto_offset_reset: OffsetReset,
    /// `fetch.min.bytes` (1).
    pub fetch_min_bytes: i32,
    /// `fetch.max.wait.ms` (500).
    pub fetch_max_wait: Duration,
    /// `client.rack` (empty): the rack sent with every fetch, so a leader with a rack-aware
    /// replica selector can name a replica in it to read from (KIP-392).
    pub client_rack: String,
    /// `fetch.max.bytes` (52428800).
    pub fetch_max_bytes: i32,
    /// `max.partition.fetch.bytes` (1048576).
    pub max_partition_fetch_bytes: i32,
    /// `max.poll.records` (500).
    pub max_poll_records: usize,
    /// `check.crcs` (true).
    pub check_crcs: bool,
    /// `isolation.level` (read_uncommitted); `true` for read_committed.
    pub read_committed: bool,
    /// `enable.auto.commit` (true; used with groups). Every `auto.commit.interval.ms`, and when
    /// partitions are revoked, commits the records the application has finished with: those a
    /// `poll`/`recv` returned before its latest call for more (Java's rule, at-least-once even
    /// if the process dies mid-batch); `close` commits everything handed out.
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms` (5000).
    pub auto_commit_interval: Duration,
    /// Bytes of fetched, not yet consumed data the consumer may buffer before it stops
    /// prefetching (`queued.max.messages.kbytes` in librdkafka; default 64 MiB).
    pub max_buffered_bytes: usize,
    /// `group.instance.id` (static membership; none).
    pub group_instance_id: Option<String>,
    /// `session.timeout.ms` (45000).
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms` (3000).
    pub heartbeat_interval: Duration,
    /// `max.poll.interval.ms` (300000).
    pub max_poll_interval: Duration,
    /// `partition.assignment.strategy` (Kafka's default: range, cooperative-sticky).
    pub assignors: Vec<String>,
    /// `group.protocol` (classic): `consumer` is KIP-848's protocol, where the broker assigns.
    pub group_protocol: GroupProtocol,
    /// `group.remote.assignor` (none: the broker's default): the server-side assignor a
    /// consumer-protocol member asks for.
    pub remote_assignor: Option<String>,
    /// Classic-protocol settings given explicitly (refused with `group.protocol=consumer`).
    pub(crate) classic_settings: Vec<&'static str>,
}

/// The consumer group protocol (`group.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat, the client assigns (Kafka's default).
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat: the broker assigns, members reconcile incrementally.
    Consumer,
}

/// Producer settings.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `acks` (all).
    pub acks: Acks,
    /// `linger.ms` (5, Kafka 4's default).
    pub linger: Duration,
    /// `batch.size` (16384).
    pub batch_size: usize,
    /// librdkafka's `batch.num.messages`: the most records in one batch (no limit unless set;
    /// librdkafka's default is 10000, which `batch.size` reaches first at Odradek's defaults
    /// for records above 1 byte).
    pub batch_num_messages: usize,
    /// `buffer.memory` (33554432); librdkafka's `queue.buffering.max.kbytes` sets it in KiB.
    /// Every record takes its size from admission until its batch settles; held records too.
    pub buffer_memory: usize,
    /// `max.block.ms` (60000).
    pub max_block: Duration,
    /// `max.request.size` (1048576).
    pub max_request_size: usize,
    /// `compression.type` (none).
    pub compression: Compression,
    /// `compression.level` (codec default); also `compression.gzip.level`,
    /// `compression.zstd.level`, `compression.lz4.level`.
    pub compression_level: Option<i32>,
    /// `delivery.timeout.ms` (120000); also librdkafka's `message.timeout.ms`, where 0 means
    /// no limit ([`NO_DELIVERY_LIMIT`]).
    pub delivery_timeout: Duration,
    /// Which name set the delivery timeout (`None`: the default), which picks the consistency
    /// rule: Java's for `delivery.timeout.ms` (at least `linger.ms` + `request.timeout.ms`),
    /// librdkafka's for `message.timeout.ms` (more than `linger.ms`).
    pub delivery_timeout_key: Option<&'static str>,
    /// Whether `linger.ms` (or `queue.buffering.max.ms`) was set explicitly.
    pub linger_explicit: bool,
    /// `retries` (2147483647).
    pub retries: u32,
    /// `enable.idempotence` (true, as in the Java client). Left at its default, it switches
    /// itself off when the configuration conflicts (acks other than all, more than 5 requests
    /// in flight, no retries); set explicitly, such a conflict is an error naming the key.
    pub enable_idempotence: bool,
    /// Whether `enable.idempotence` was set explicitly.
    pub idempotence_explicit: bool,
    /// `partitioner` / `partitioner.class`.
    pub partitioner: PartitionerKind,
    /// `partitioner.ignore.keys` (false).
    pub partitioner_ignore_keys: bool,
    /// `transactional.id` (none): makes the producer transactional (implies idempotence).
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms` (60000): how long the coordinator lets a transaction stay open
    /// before aborting it.
    pub transaction_timeout: Duration,
}

/// The delivery timeout of librdkafka's `message.timeout.ms=0` ("no limit"): its largest
/// value, 2147483647 ms (24.8 days), so deadlines computed from it never overflow.
pub const NO_DELIVERY_LIMIT: Duration = Duration::from_millis(i32::MAX as u64);

/// librdkafka's default `receive.message.max.bytes`.
pub const DEFAULT_RECEIVE_MESSAGE_MAX_BYTES: usize = 100_000_000;

/// The response size a Fetch of `fetch.max.bytes` needs: the records plus 512 bytes of protocol
/// overhead (librdkafka's rule).
fn fetch_response_room(fetch_max_bytes: i32) -> usize {
    usize::try_from(fetch_max_bytes)
        .unwrap_or(0)
        .saturating_add(512)
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            bootstrap_servers: Vec::new(),
            client_id: "odradek".into(),
            request_timeout: Duration::from_millis(30_000),
            default_api_timeout: Duration::from_millis(60_000),
            metadata_max_age: Duration::from_millis(300_000),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(1000),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_millis(1000),
            connection_setup_timeout: Duration::from_millis(10_000),
            metadata_recovery: MetadataRecovery::Rebootstrap,
            dns_lookup: DnsLookup::UseAllDnsIps,
            metadata_rebootstrap_trigger: Duration::from_millis(300_000),
            max_in_flight: 5,
            allow_auto_create_topics: true,
            receive_message_max_bytes: None,
            producer: ProducerConfig {
                acks: Acks::All,
                linger: Duration::from_millis(5),
                batch_size: 16_384,
                batch_num_messages: usize::MAX,
                buffer_memory: 33_554_432,
                max_block: Duration::from_millis(60_000),
                max_request_size: 1_048_576,
                compression: Compression::None,
                compression_level: None,
                delivery_timeout: Duration::from_millis(120_000),
                delivery_timeout_key: None,
                linger_explicit: false,
                retries: i32::MAX as u32,
                enable_idempotence: true,
                idempotence_explicit: false,
                partitioner: PartitionerKind::Default,
                partitioner_ignore_keys: false,
                transactional_id: None,
                transaction_timeout: Duration::from_millis(60_000),
            },
            consumer: ConsumerConfig {
                group_id: None,
                auto_offset_reset: OffsetReset::Latest,
                fetch_min_bytes: 1,
                fetch_max_wait: Duration::from_millis(500),
                client_rack: String::new(),
                fetch_max_bytes: 52_428_800,
                max_partition_fetch_bytes: 1_048_576,
                max_poll_records: 500,
                check_crcs: true,
                read_committed: false,
                enable_auto_commit: true,
                auto_commit_interval: Duration::from_millis(5000),
                max_buffered_bytes: 64 << 20,
                group_instance_id: None,
                session_timeout: Duration::from_millis(45_000),
                heartbeat_interval: Duration::from_millis(3000),
                max_poll_interval: Duration::from_millis(300_000),
                assignors: vec!["range".into(), "cooperative-sticky".into()],
                group_protocol: GroupProtocol::Classic,
                remote_assignor: None,
                classic_settings: Vec::new(),
            },
            security: SecurityConfig::default(),
            socket: SocketOptions::default(),
            debug: Vec::new(),
            not_applicable: Vec::new(),
        }
    }
}

fn parse_ms(key: &str, v: &str) -> Result<Duration> {
    let ms: i64 = v
        .trim()
        .parse()
        .map_err(|_| Error::config(key, format!("`{v}` is not a number of milliseconds")))?;
    if ms < 0 {
        return Err(Error::config(key, "must not be negative"));
    }
    Ok(Duration::from_millis(ms as u64))
}

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.trim()
        .parse()
        .map_err(|_| Error::config(key, format!("`{v}` is not a valid number")))
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::config(key, format!("`{v}` is not true or false"))),
    }
}

impl ClientConfig {
    /// A configuration with `bootstrap.servers` set and everything else default.
    pub fn new(bootstrap_servers: &str) -> Self {
        ClientConfig {
            bootstrap_servers: split_list(bootstrap_servers),
            ..ClientConfig::default()
        }
    }

    /// Builds a configuration from `key = value` pairs; unknown keys and bad values are errors
    /// naming the key. `bootstrap.servers` is required.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<ClientConfig> {
        let mut c = ClientConfig::default();
        for (k, v) in entries {
            c.set(k.as_ref().trim(), v.as_ref())?;
        }
        c.validate()?;
        Ok(c)
    }

    /// Sets one property. librdkafka's integer properties are range-checked as librdkafka
    /// checks them; a librdkafka property Odradek does not act on is accepted or refused as
    /// [`crate::rdkafka_config`] says.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        if let Some(property) = crate::rdkafka_config::property(key) {
            crate::rdkafka_config::check_range(&property, value)?;
        }
        let p = &mut self.producer;
        match key {
            "builtin.features" => {
                let missing: Vec<String> = split_list(value)
                    .into_iter()
                    .filter(|f| !BUILTIN_FEATURES.contains(&f.to_ascii_lowercase().as_str()))
                    .collect();
                if !missing.is_empty() {
                    return Err(Error::config(
                        key,
                        format!("not built in: {}", missing.join(", ")),
                    ));
                }
            }
            "debug" => {
                let contexts = split_list(&value.to_ascii_lowercase());
                if let Some(bad) = contexts.iter().find(|c| !DEBUG_CONTEXTS.contains(&c.as_str())) {
                    return Err(Error::config(
                        key,
                        format!("Invalid value \"{bad}\" for configuration property \"debug\""),
                    ));
                }
                self.debug = contexts;
            }
            "socket.timeout.ms" => self.request_timeout = parse_ms(key, value)?,
            "topic.metadata.refresh.interval.ms" => {
                let ms: i64 = parse_num(key, value)?;
                // -1 (and 0) turn the periodic refresh off, as in librdkafka.
                self.metadata_max_age = match u64::try_from(ms) {
                    Ok(ms) if ms > 0 => Duration::from_millis(ms),
                    _ => Duration::from_secs(100 * 365 * 24 * 3600),
                };
            }
            "socket.keepalive.enable" => self.socket.keepalive = parse_bool(key, value)?,
            "socket.nagle.disable" => self.socket.nodelay = parse_bool(key, value)?,
            "socket.send.buffer.bytes" => self.socket.send_buffer = parse_num(key, value)?,
            "socket.receive.buffer.bytes" => self.socket.receive_buffer = parse_num(key, value)?,
            "broker.address.family" => {
                self.socket.family = match value.trim().to_ascii_lowercase().as_str() {
                    "any" => AddressFamily::Any,
                    "v4" => AddressFamily::V4,
                    "v6" => AddressFamily::V6,
                    _ => return Err(Error::config(key, format!("`{value}` is not any, v4 or v6"))),
                }
            }
            // A topic-level `inherit` keeps the global codec.
            "compression.codec" if value.trim().eq_ignore_ascii_case("inherit") => {}
            "sasl.oauthbearer.client.credentials.client.id" => {
                self.security.set("sasl.oauthbearer.client.id", value)?
            }
            "sasl.oauthbearer.client.credentials.client.secret" => {
                self.security.set("sasl.oauthbearer.client.secret", value)?
            }
            "bootstrap.servers" | "metadata.broker.list" => {
                self.bootstrap_servers = split_list(value)
            }
            "client.id" => self.client_id = value.to_string(),
            "request.timeout.ms" => self.request_timeout = parse_ms(key, value)?,
            "default.api.timeout.ms" => self.default_api_timeout = parse_ms(key, value)?,
            "metadata.max.age.ms" => self.metadata_max_age = parse_ms(key, value)?,
            "reconnect.backoff.ms" => self.reconnect_backoff = parse_ms(key, value)?,
            "reconnect.backoff.max.ms" => self.reconnect_backoff_max = parse_ms(key, value)?,
            "retry.backoff.ms" => self.retry_backoff = parse_ms(key, value)?,
            "retry.backoff.max.ms" => self.retry_backoff_max = parse_ms(key, value)?,
            "socket.connection.setup.timeout.ms" => {
                self.connection_setup_timeout = parse_ms(key, value)?
            }
            "metadata.recovery.strategy" => {
                self.metadata_recovery = match value.trim().to_ascii_lowercase().as_str() {
                    "rebootstrap" => MetadataRecovery::Rebootstrap,
                    "none" => MetadataRecovery::None,
                    _ => return Err(Error::config(key, "must be `rebootstrap` or `none`")),
                }
            }
            "client.dns.lookup" => self.dns_lookup = DnsLookup::parse(value)?,
            "metadata.recovery.rebootstrap.trigger.ms" => {
                self.metadata_rebootstrap_trigger = parse_ms(key, value)?
            }
            "max.in.flight.requests.per.connection" | "max.in.flight" => {
                let n: usize = parse_num(key, value)?;
                if n == 0 {
                    return Err(Error::config(key, "must be at least 1"));
                }
                self.max_in_flight = n;
            }
            "allow.auto.create.topics" => self.allow_auto_create_topics = parse_bool(key, value)?,
            "receive.message.max.bytes" => {
                let n: usize = parse_num(key, value)?;
                if !(1000..=i32::MAX as usize).contains(&n) {
                    return Err(Error::config(key, "must be between 1000 and 2147483647"));
                }
                self.receive_message_max_bytes = Some(n);
            }
            "acks" | "request.required.acks" => {
                p.acks = match value.trim().to_ascii_lowercase().as_str() {
                    "0" => Acks::None,
                    "1" => Acks::Leader,
                    "all" | "-1" => Acks::All,
                    _ => return Err(Error::config(key, format!("`{value}` is not 0, 1, all or -1"))),
                }
            }
            "linger.ms" | "queue.buffering.max.ms" => {
                p.linger = parse_ms(key, value)?;
                p.linger_explicit = true;
            }
            "batch.size" => {
                p.batch_size = parse_num(key, value)?;
                if p.batch_size == 0 {
                    p.batch_size = 1;
                }
            }
            "buffer.memory" => p.buffer_memory = parse_num(key, value)?,
            "batch.num.messages" => p.batch_num_messages = parse_num::<usize>(key, value)?.max(1),
            "queue.buffering.max.kbytes" => {
                let kb: usize = parse_num(key, value)?;
                if kb == 0 {
                    return Err(Error::config(key, "must be at least 1"));
                }
                p.buffer_memory = kb.saturating_mul(1024);
            }
            "max.block.ms" => p.max_block = parse_ms(key, value)?,
            "max.request.size" | "message.max.bytes" => p.max_request_size = parse_num(key, value)?,
            "compression.type" | "compression.codec" => {
                p.compression = Compression::from_name(value.trim()).ok_or_else(|| {
                    Error::config(key, format!("`{value}` is not none, gzip, snappy, lz4 or zstd"))
                })?
            }
            "compression.level"
            | "compression.gzip.level"
            | "compression.zstd.level"
            | "compression.lz4.level" => p.compression_level = Some(parse_num(key, value)?),
            "delivery.timeout.ms" => {
                p.delivery_timeout = parse_ms(key, value)?;
                p.delivery_timeout_key = Some("delivery.timeout.ms");
            }
            "message.timeout.ms" => {
                p.delivery_timeout = match parse_ms(key, value)? {
                    Duration::ZERO => NO_DELIVERY_LIMIT,
                    d => d,
                };
                p.delivery_timeout_key = Some("message.timeout.ms");
            }
            "retries" | "message.send.max.retries" => {
                let n: i64 = parse_num(key, value)?;
                p.retries = n.clamp(0, i64::from(i32::MAX)) as u32;
            }
            "enable.idempotence" => {
                p.enable_idempotence = parse_bool(key, value)?;
                p.idempotence_explicit = true;
            }
            "partitioner" | "partitioner.class" => {
                p.partitioner = match value.trim() {
                    "murmur2_random"
                    | "default"
                    | "org.apache.kafka.clients.producer.internals.DefaultPartitioner" => {
                        PartitionerKind::Default
                    }
                    "murmur2" => PartitionerKind::Murmur2,
                    "consistent" => PartitionerKind::Consistent,
                    "consistent_random" => PartitionerKind::ConsistentRandom,
                    "fnv1a" => PartitionerKind::Fnv1a,
                    "fnv1a_random" => PartitionerKind::Fnv1aRandom,
                    "random" => PartitionerKind::Random,
                    "round_robin" | "org.apache.kafka.clients.producer.RoundRobinPartitioner" => {
                        PartitionerKind::RoundRobin
                    }
                    other => {
                        return Err(Error::config(
                            key,
                            format!("`{other}` is not one of murmur2_random, murmur2, consistent_random, consistent, fnv1a_random, fnv1a, random, round_robin (a custom partitioner is set in code)"),
                        ))
                    }
                }
            }
            "partitioner.ignore.keys" => p.partitioner_ignore_keys = parse_bool(key, value)?,
            "transactional.id" => {
                p.transactional_id = Some(value.to_string()).filter(|t| !t.is_empty())
            }
            "transaction.timeout.ms" => p.transaction_timeout = parse_ms(key, value)?,
            k if SecurityConfig::handles(k) => match crate::rdkafka_config::accept_unhandled(k, value) {
                Some(answer) => {
                    if answer? {
                        self.not_applicable.push(k.to_string());
                    }
                }
                None => self.security.set(k, value)?,
            },
            _ => return self.set_consumer(key, value),
        }
        Ok(())
    }

    fn set_consumer(&mut self, key: &str, value: &str) -> Result<()> {
        let c = &mut self.consumer;
        match key {
            "group.id" => c.group_id = Some(value.to_string()).filter(|g| !g.is_empty()),
            "auto.offset.reset" => {
                c.auto_offset_reset = match value.trim().to_ascii_lowercase().as_str() {
                    "earliest" | "smallest" | "beginning" => OffsetReset::Earliest,
                    "latest" | "largest" | "end" => OffsetReset::Latest,
                    "none" | "error" => OffsetReset::None,
                    _ => {
                        return Err(Error::config(
                            key,
                            format!("`{value}` is not earliest, latest or none"),
                        ))
                    }
                }
            }
            "fetch.min.bytes" => c.fetch_min_bytes = parse_num(key, value)?,
            "fetch.max.wait.ms" | "fetch.wait.max.ms" => c.fetch_max_wait = parse_ms(key, value)?,
            "client.rack" => c.client_rack = value.trim().to_string(),
            "fetch.max.bytes" => c.fetch_max_bytes = parse_num(key, value)?,
            "max.partition.fetch.bytes" | "fetch.message.max.bytes" => {
                c.max_partition_fetch_bytes = parse_num(key, value)?
            }
            "max.poll.records" => {
                c.max_poll_records = parse_num(key, value)?;
                if c.max_poll_records == 0 {
                    return Err(Error::config(key, "must be at least 1"));
                }
            }
            "check.crcs" => c.check_crcs = parse_bool(key, value)?,
            "isolation.level" => {
                c.read_committed = match value.trim() {
                    "read_committed" => true,
                    "read_uncommitted" => false,
                    _ => {
                        return Err(Error::config(
                            key,
                            format!("`{value}` is not read_committed or read_uncommitted"),
                        ))
                    }
                }
            }
            "enable.auto.commit" | "auto.commit.enable" => {
                c.enable_auto_commit = parse_bool(key, value)?
            }
            "auto.commit.interval.ms" => c.auto_commit_interval = parse_ms(key, value)?,
            "group.instance.id" => {
                c.group_instance_id = Some(value.to_string()).filter(|g| !g.is_empty())
            }
            "session.timeout.ms" => {
                c.session_timeout = parse_ms(key, value)?;
                c.classic_settings.push("session.timeout.ms");
            }
            "heartbeat.interval.ms" => {
                c.heartbeat_interval = parse_ms(key, value)?;
                c.classic_settings.push("heartbeat.interval.ms");
            }
            "group.protocol" => {
                c.group_protocol = match value.trim().to_ascii_lowercase().as_str() {
                    "classic" => GroupProtocol::Classic,
                    "consumer" => GroupProtocol::Consumer,
                    _ => {
                        return Err(Error::config(
                            key,
                            format!("`{value}` is not classic or consumer"),
                        ))
                    }
                }
            }
            "group.remote.assignor" => {
                c.remote_assignor = Some(value.trim().to_string()).filter(|a| !a.is_empty())
            }
            "group.protocol.type" => {
                if value.trim() != "consumer" {
                    return Err(Error::config(key, "only consumer groups are supported"));
                }
                c.classic_settings.push("group.protocol.type");
            }
            "max.poll.interval.ms" => c.max_poll_interval = parse_ms(key, value)?,
            "partition.assignment.strategy" => {
                let names: Vec<String> = split_list(value);
                if names.is_empty() {
                    return Err(Error::config(key, "at least one assignor is required"));
                }
                for n in &names {
                    if Assignor::from_name(n).is_none() {
                        return Err(Error::config(
                            key,
                            format!("unknown assignor `{n}` (range, roundrobin, sticky, cooperative-sticky, or KafkaJS's RoundRobinAssigner)"),
                        ));
                    }
                }
                c.assignors = names;
                c.classic_settings.push("partition.assignment.strategy");
            }
            "queued.max.messages.kbytes" => {
                let kb: usize = parse_num(key, value)?;
                c.max_buffered_bytes = kb.saturating_mul(1024);
            }
            _ => match crate::rdkafka_config::accept_unhandled(key, value) {
                Some(answer) => {
                    if answer? {
                        self.not_applicable.push(key.to_string());
                    }
                }
                None => return Err(Error::config(key, "unknown configuration key")),
            },
        }
        Ok(())
    }

    /// A `tracing` filter for the `debug` contexts (`None` when none is set): each context
    /// names the client modules that log what librdkafka logs under it. The bindings install
    /// it on stderr (librdkafka's default log sink); a Rust application passes it to its own
    /// subscriber.
    pub fn debug_filter(&self) -> Option<String> {
        let mut targets: Vec<&str> = Vec::new();
        for c in &self.debug {
            let add: &[&str] = match c.as_str() {
                "all" | "generic" => &["odradek"],
                "broker" | "feature" | "protocol" => &["odradek::net", "odradek::protocol"],
                "topic" | "metadata" => &["odradek::cluster"],
                "msg" | "queue" | "eos" => &["odradek::producer"],
                "cgrp" | "consumer" | "fetch" | "assignor" => &["odradek::consumer"],
                "security" => &["odradek::security"],
                "admin" => &["odradek::admin"],
                "conf" => &["odradek::config"],
                // interceptor, plugin, mock, telemetry: nothing here logs under them.
                _ => &[],
            };
            for t in add {
                if !targets.contains(t) {
                    targets.push(t);
                }
            }
        }
        (!targets.is_empty()).then(|| {
            targets
                .iter()
                .map(|t| format!("{t}=debug"))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// Sets the application's OAUTHBEARER token callback (confluent-kafka's `oauth_cb`,
    /// KafkaJS's `oauthBearerProvider`), which takes precedence over the configured token
    /// methods, and prepares the security settings again.
    pub fn set_token_provider(&mut self, provider: Arc<dyn TokenProvider>) -> Result<()> {
        self.security.sasl.token_provider = Some(provider);
        self.security.prepare()
    }

    /// The largest response frame a connection accepts: `receive.message.max.bytes` when set,
    /// else librdkafka's default of 100000000 raised to `fetch.max.bytes` + 512 when that is
    /// larger (librdkafka adjusts an unset value the same way), so a full Fetch response fits.
    pub fn receive_message_max_bytes(&self) -> usize {
        self.receive_message_max_bytes.unwrap_or_else(|| {
            DEFAULT_RECEIVE_MESSAGE_MAX_BYTES
                .max(fetch_response_room(self.consumer.fetch_max_bytes))
        })
    }

    fn validate(&mut self) -> Result<()> {
        if self.consumer.group_protocol == GroupProtocol::Consumer {
            // As librdkafka: these belong to the classic protocol; the broker decides them.
            if let Some(key) = self.consumer.classic_settings.first() {
                let why = match *key {
                    "partition.assignment.strategy" => {
                        "is not supported for `group.protocol=consumer`. Use `group.remote.assignor` instead"
                    }
                    "group.protocol.type" => "is not supported for `group.protocol=consumer`",
                    _ => "is not supported for `group.protocol=consumer`. It is defined broker side",
                };
                return Err(Error::config(*key, why));
            }
        } else if self.consumer.remote_assignor.is_some() {
            // Accepted as librdkafka accepts it; only the consumer protocol uses it.
            self.not_applicable
                .push("group.remote.assignor".to_string());
        }
        if !self.not_applicable.is_empty() {
            tracing::info!(
                properties = %self.not_applicable.join(", "),
                "librdkafka properties accepted without effect (see docs/configuration.md)"
            );
        }
        if let Some(max) = self.receive_message_max_bytes {
            if max < fetch_response_room(self.consumer.fetch_max_bytes) {
                return Err(Error::config(
                    "receive.message.max.bytes",
                    format!(
                        "must be at least fetch.max.bytes ({}) + 512",
                        self.consumer.fetch_max_bytes
                    ),
                ));
            }
        }
        let conflict = if self.producer.acks != Acks::All {
            Some(("acks", "must be all"))
        } else if self.max_in_flight > 5 {
            Some(("max.in.flight.requests.per.connection", "must be at most 5"))
        } else if self.producer.retries == 0 {
            Some(("retries", "must be above 0"))
        } else {
            None
        };
        if self.producer.transactional_id.is_some() {
            // A transactional producer is idempotent (Java and librdkafka insist on it too).
            if self.producer.idempotence_explicit && !self.producer.enable_idempotence {
                return Err(Error::config(
                    "enable.idempotence",
                    "must be true with transactional.id",
                ));
            }
            if let Some((key, why)) = conflict {
                return Err(Error::config(key, format!("{why} with transactional.id")));
            }
            self.producer.enable_idempotence = true;
        }
        if let (true, Some((key, why))) = (self.producer.enable_idempotence, conflict) {
            if self.producer.idempotence_explicit {
                return Err(Error::config(
                    key,
                    format!("{why} with enable.idempotence=true"),
                ));
            }
            self.producer.enable_idempotence = false;
        }
        if self.bootstrap_servers.is_empty() {
            return Err(Error::config("bootstrap.servers", "is required"));
        }
        for s in &self.bootstrap_servers {
            if s.rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
                .is_none()
            {
                return Err(Error::config(
                    "bootstrap.servers",
                    format!("`{s}` is not host:port"),
                ));
            }
        }
        // An OAUTHBEARER client whose token comes from a callback set in code prepares again
        // once it is set (see `set_token_provider`).
        let callback_later = self.security.sasl.mechanism
            == Some(crate::security::SaslMechanism::OAuthBearer)
            && self.security.sasl.token_provider.is_none()
            && self.security.sasl.oauth_method == crate::security::OAuthMethod::Default
            && !self.security.sasl.unsecure_jwt;
        match self.security.prepare() {
            Err(Error::Config { key, .. })
                if callback_later && key == "sasl.oauthbearer.method" => {}
            other => other?,
        }
        self.reconcile_delivery_timeout()
    }

    /// The delivery timeout against `linger.ms` and `request.timeout.ms`, by the rule of the
    /// client whose name set it. Java's `delivery.timeout.ms` must be at least `linger.ms` +
    /// `request.timeout.ms`, and its default is raised to that sum when it is smaller.
    /// librdkafka's `message.timeout.ms` must be more than `linger.ms` when both are set (an
    /// unset `linger.ms` is lowered below it instead); a record in flight when it passes is
    /// reported once its request has been answered or has timed out, as librdkafka does.
    fn reconcile_delivery_timeout(&mut self) -> Result<()> {
        let request_timeout = self.request_timeout;
        let p = &mut self.producer;
        match p.delivery_timeout_key {
            Some("message.timeout.ms") => {
                if p.delivery_timeout <= p.linger {
                    if p.linger_explicit {
                        return Err(Error::config(
                            "message.timeout.ms",
                            "must be greater than linger.ms",
                        ));
                    }
                    p.linger = p
                        .delivery_timeout
                        .saturating_sub(Duration::from_micros(100));
                }
            }
            Some(key) => {
                if p.delivery_timeout < p.linger + request_timeout {
                    return Err(Error::config(
                        key,
                        "must be at least linger.ms + request.timeout.ms",
                    ));
                }
            }
            None => p.delivery_timeout = p.delivery_timeout.max(p.linger + request_timeout),
        }
        Ok(())
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = ClientConfig::from_map([("bootstrap.servers", "a:9092, b:9093")]).unwrap();
        assert_eq!(c.bootstrap_servers, ["a:9092", "b:9093"]);
        assert_eq!(c.producer.acks, Acks::All);
        assert_eq!(c.producer.batch_size, 16_384);
        assert_eq!(c.producer.linger, Duration::from_millis(5));
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert_eq!(c.default_api_timeout, Duration::from_secs(60));
        assert_eq!(c.producer.delivery_timeout, Duration::from_secs(120));
    }

    fn config(pairs: &[(&str, &str)]) -> Result<ClientConfig> {
        ClientConfig::from_map([("bootstrap.servers", "a:1")].iter().chain(pairs).copied())
    }

    #[test]
    fn the_delivery_timeout_follows_the_rule_of_the_name_that_set_it() {
        // librdkafka accepts a message timeout below request.timeout.ms; Java refuses it.
        let c = config(&[("message.timeout.ms", "3000")]).unwrap();
        assert_eq!(c.producer.delivery_timeout, Duration::from_secs(3));
        assert_eq!(c.producer.linger, Duration::from_millis(5));
        let e = config(&[("delivery.timeout.ms", "3000")]).unwrap_err();
        assert!(e.to_string().contains("delivery.timeout.ms"), "{e}");
        assert!(
            e.to_string().contains("linger.ms + request.timeout.ms"),
            "{e}"
        );
        // librdkafka: more than linger.ms when both are set; an unset linger.ms gives way.
        let e = config(&[("message.timeout.ms", "10"), ("linger.ms", "10")]).unwrap_err();
        assert!(e.to_string().contains("message.timeout.ms"), "{e}");
        assert!(e.to_string().contains("greater than linger.ms"), "{e}");
        let c = config(&[("message.timeout.ms", "4")]).unwrap();
        assert!(
            c.producer.linger < Duration::from_millis(4),
            "{:?}",
            c.producer.linger
        );
        // librdkafka's 0: no limit.
        let c = config(&[("message.timeout.ms", "0")]).unwrap();
        assert_eq!(c.producer.delivery_timeout, NO_DELIVERY_LIMIT);
        // Java's default is raised to linger.ms + request.timeout.ms when that is larger.
        let c = config(&[("request.timeout.ms", "200000")]).unwrap();
        assert_eq!(c.producer.delivery_timeout, Duration::from_millis(200_005));
        let c = config(&[("delivery.timeout.ms", "30005")]).unwrap();
        assert_eq!(c.producer.delivery_timeout, Duration::from_millis(30_005));
    }

    #[test]
    fn receive_message_max_bytes_defaults_to_librdkafkas_and_covers_fetch_max_bytes() {
        let c = ClientConfig::from_map([("bootstrap.servers", "a:1")]).unwrap();
        assert_eq!(c.receive_message_max_bytes(), 100_000_000);
        let c = ClientConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("fetch.max.bytes", "200000000"),
        ])
        .unwrap();
        assert_eq!(c.receive_message_max_bytes(), 200_000_512);
        let c = ClientConfig::from_map([
            ("bootstrap.servers", "a:1"),
            ("fetch.max.bytes", "1000"),
            ("receive.message.max.bytes", "2000"),
        ])
        .unwrap();
        assert_eq!(c.receive_message_max_bytes(), 2000);
        for bad in [
            vec![("receive.message.max.bytes", "999")],
            vec![("receive.message.max.bytes", "3000000000")],
            // Below fetch.max.bytes + 512: a full Fetch response could never be read.
            vec![("receive.message.max.bytes", "1000000")],
        ] {
            let mut props = vec![("bootstrap.servers", "a:1")];
            props.extend(bad.iter().copied());
            let err = ClientConfig::from_map(props).unwrap_err();
            assert!(
                err.to_string().contains("receive.message.max.bytes"),
                "{err}"
            );
        }
    }

    #[test]
    fn parses_kafka_and_librdkafka_names() {
        let c = ClientConfig::from_map([
            ("metadata.broker.list", "h:1"),
            ("acks", "1"),
            ("compression.type", "zstd"),
            ("compression.level", "7"),
            ("queue.buffering.max.ms", "20"),
            ("partitioner", "murmur2_random"),
        ])
        .unwrap();
        assert_eq!(c.producer.acks, Acks::Leader);
        assert_eq!(c.producer.compression, Compression::Zstd);
        assert_eq!(c.producer.compression_level, Some(7));
        assert_eq!(c.producer.linger, Duration::from_millis(20));
    }

    #[test]
    fn idempotence_defaults_on_and_yields_to_explicit_conflicts() {
        let c = ClientConfig::from_map([("bootstrap.servers", "h:1")]).unwrap();
        assert!(c.producer.enable_idempotence);
        let c = ClientConfig::from_map([("bootstrap.servers", "h:1"), ("acks", "1")]).unwrap();
        assert!(
            !c.producer.enable_idempotence,
            "implicit idempotence gives way to acks=1"
        );
        let err = ClientConfig::from_map([
            ("bootstrap.servers", "h:1"),
            ("acks", "1"),
            ("enable.idempotence", "true"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("acks"), "{err}");
    }

    #[test]
    fn transactional_id_implies_idempotence() {
        let c = ClientConfig::from_map([
            ("bootstrap.servers", "h:1"),
            ("transactional.id", "tx-1"),
            ("transaction.timeout.ms", "15000"),
        ])
        .unwrap();
        assert_eq!(c.producer.transactional_id.as_deref(), Some("tx-1"));
        assert_eq!(c.producer.transaction_timeout, Duration::from_secs(15));
        assert!(c.producer.enable_idempotence);
        for (k, v) in [("enable.idempotence", "false"), ("acks", "1")] {
            let err = ClientConfig::from_map([
                ("bootstrap.servers", "h:1"),
                ("transactional.id", "t"),
                (k, v),
            ])
            .unwrap_err();
            assert!(err.to_string().contains(k), "{k}: {err}");
        }
    }

    #[test]
    fn errors_name_the_key() {
        for (k, v) in [
            ("no.such.key", "1"),
            ("acks", "2"),
            ("linger.ms", "soon"),
            ("compression.type", "brotli"),
            ("bootstrap.servers", "nohostport"),
        ] {
            let mut entries = vec![("bootstrap.servers", "h:1")];
            entries.push((k, v));
            let err = ClientConfig::from_map(entries).unwrap_err();
            assert!(err.to_string().contains(k), "{k}: {err}");
        }
        let err = ClientConfig::from_map([("acks", "1")]).unwrap_err();
        assert!(err.to_string().contains("bootstrap.servers"));
    }
}
