//! Every broker key odradek-broker knows: Kafka's table (`super::table`) with, per key, what the
//! reference broker does with it ([`Status`]), plus a few keys Kafka's `ConfigDef` does not hold
//! (the StandardAuthorizer's `super.users` / `allow.everyone.if.no.acl.found`, our `cluster.id`).
//!
//! The classification is the project rule "a setting accepted and then ignored is a defect":
//! a key is [`Status::Honoured`], or [`Status::NotApplicable`] (an internal a single node does
//! not have: thread pools, the controller quorum, replication, JMX, features whose switch is
//! refused), or [`Status::Refused`] (it would change delivery, durability or security and the
//! broker does not do it: any value but Kafka's default is refused, naming the key).
//! `docs/broker-configuration.md` is the same table for readers (`print_markdown_table`).

use std::sync::LazyLock;

use super::table::{broker_keys, ConfigType, KafkaKey, UpdateMode};
use super::validators::Validator;

/// What odradek-broker does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Acted on.
    Honoured,
    /// Accepted (type and validator checked) and not acted on, for the reason given.
    NotApplicable(&'static str),
    /// Any value other than Kafka's default is refused, for the reason given.
    Refused(&'static str),
}

/// A broker key: Kafka's definition, odradek's default where it differs, and its [`Status`].
#[derive(Debug, Clone)]
pub struct KeyDef {
    /// Property name.
    pub name: &'static str,
    /// Kafka's type.
    pub ty: ConfigType,
    /// The default this broker uses (`None`: null, or no default).
    pub default: Option<String>,
    /// Kafka's default (`None`: null, or no default).
    pub kafka_default: Option<String>,
    /// Kafka's validator.
    pub validator: Validator,
    /// Kafka's dynamic update mode.
    pub update: UpdateMode,
    /// Listed by DescribeConfigs whether set or not (Kafka's non-internal `ConfigDef` keys).
    pub described: bool,
    /// Defined by Apache Kafka's broker config (false: an extension, see the module docs).
    pub kafka: bool,
    /// What odradek-broker does with it.
    pub status: Status,
}

impl KeyDef {
    /// Whether DescribeConfigs reports the key as sensitive (no value).
    pub fn sensitive(&self) -> bool {
        self.ty == ConfigType::Password
    }
}

/// Keys this broker acts on (Kafka names). Their defaults are Kafka's unless [`OUR_DEFAULTS`]
/// says otherwise.
const HONOURED: &[&str] = &[
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "security.inter.broker.protocol",
    "node.id",
    "broker.id",
    "broker.rack",
    "replica.selector.class",
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replication.quota.window.num",
    "replication.quota.window.size.seconds",
    "log.dirs",
    "log.dir",
    "num.partitions",
    "default.replication.factor",
    "min.insync.replicas",
    "queued.max.requests",
    "max.request.partition.size.limit",
    "quota.window.num",
    "quota.window.size.seconds",
    "controller.quota.window.num",
    "controller.quota.window.size.seconds",
    // Cluster mode (`crate::cluster`): the metadata quorum.
    "process.roles",
    "controller.quorum.voters",
    "controller.listener.names",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.election.backoff.max.ms",
    "controller.quorum.fetch.timeout.ms",
    "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms",
    // Cluster mode: brokers, replication, leadership.
    "broker.heartbeat.interval.ms",
    "broker.session.timeout.ms",
    "controlled.shutdown.enable",
    "replica.lag.time.max.ms",
    "replica.fetch.wait.max.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.backoff.ms",
    "unclean.leader.election.enable",
    "offsets.topic.replication.factor",
    "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds",
    "auto.create.topics.enable",
    "delete.topic.enable",
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.hours",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.cleanup.policy",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.segment.delete.delay.ms",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.message.timestamp.type",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "log.cleaner.enable",
    "log.cleaner.backoff.ms",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "compression.type",
    "message.max.bytes",
    "fetch.max.bytes",
    "socket.request.max.bytes",
    "connections.max.idle.ms",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "num.recovery.threads.per.data.dir",
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    // The defaults and bounds of the GROUP config resource (`crate::group_config`).
    "group.consumer.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    // KIP-848 consumer groups (`crate::coordinator::consumer`).
    "group.consumer.max.size",
    "group.consumer.assignors",
    "group.consumer.migration.policy",
    "group.coordinator.rebalance.protocols",
    "offsets.topic.num.partitions",
    "offsets.topic.segment.bytes",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "offset.metadata.max.bytes",
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "transaction.state.log.segment.bytes",
    "transaction.max.timeout.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transactional.id.expiration.ms",
    "producer.id.expiration.ms",
    "producer.id.expiration.check.interval.ms",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.server.callback.handler.class",
    "sasl.server.max.receive.size",
    "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
    "authorizer.class.name",
    "principal.builder.class",
    // The connections between nodes (cluster mode, `security::inter_node`).
    "sasl.mechanism.inter.broker.protocol",
    "sasl.mechanism.controller.protocol",
    "ssl.endpoint.identification.algorithm",
];

/// Where this broker's default differs from Kafka's, and why: a broker that starts with no
/// configuration at all (Kafka requires `node.id`, `process.roles` and
/// `controller.listener.names`), on loopback, with its data beside the working directory.
const OUR_DEFAULTS: &[(&str, &str)] = &[
    ("listeners", "PLAINTEXT://127.0.0.1:9092"),
    ("node.id", "1"),
    ("process.roles", "broker,controller"),
    ("controller.listener.names", ""),
    ("log.dir", "./odradek-data"),
];

/// Validators this broker relaxes on purpose: `log.segment.bytes` goes down to one batch header
/// (61 bytes, `log::config::MIN_SEGMENT_BYTES`, as the topic-level `segment.bytes` does) where
/// Kafka 4.x stops at 1 MiB (KIP-1030 moved small segments to an internal key), so tests and
/// small deployments can use small segments through the ordinary key.
const RELAXED: &[(&str, i64)] = &[("log.segment.bytes", 61)];

/// Kafka keys refused unless set to Kafka's default, with the reason.
const REFUSED: &[(&str, &str)] = &[
    (
        "alter.config.policy.class.name",
        "no policy plugins run; ignoring the policy would allow what it forbids",
    ),
    (
        "create.topic.policy.class.name",
        "no policy plugins run; ignoring the policy would allow what it forbids",
    ),
    (
        "client.quota.callback.class",
        "no quota plugins: the default callback (Kafka's precedence of user / client-id entities) enforces the quotas",
    ),
    (
        "config.providers",
        "no config providers: `${provider:...}` values would be taken literally",
    ),
    ("delegation.token.secret.key", "no delegation tokens"),
    (
        "remote.log.storage.system.enable",
        "no tiered storage: segments stay on the local disk only",
    ),
    (
        "max.connection.creation.rate",
        "the connection creation rate is not limited",
    ),
    (
        "max.decompressed.message.bytes",
        "decompression is bounded by the broker's own 128 MiB limit per batch",
    ),
    (
        "max.incremental.fetch.session.cache.slots",
        "the fetch session cache holds Kafka's default of 1000 sessions",
    ),
    (
        "transaction.partition.verification.enable",
        "transactional produce is always verified (KIP-890)",
    ),
    (
        "transaction.two.phase.commit.enable",
        "no two-phase commit transactions (KIP-939)",
    ),
    (
        "sasl.oauthbearer.allow.unverified.audience",
        "OAUTHBEARER tokens are always checked against sasl.oauthbearer.expected.audience",
    ),
    (
        "sasl.oauthbearer.allow.unverified.issuer",
        "OAUTHBEARER tokens are always checked against sasl.oauthbearer.expected.issuer",
    ),
    (
        "sasl.oauthbearer.jwt.validator.class",
        "the JWT validator is built in (unsecured JWT or JWKS)",
    ),
    (
        "sasl.oauthbearer.jwt.retriever.class",
        "the JWT retriever is built in",
    ),
    (
        "ssl.engine.factory.class",
        "TLS is rustls; no SSLEngine factories",
    ),
    ("ssl.provider", "TLS is rustls; no JCA providers"),
    ("security.providers", "TLS is rustls; no JCA providers"),
    ("cordoned.log.dirs", "one log directory, never cordoned"),
    (
        "controller.quorum.bootstrap.servers",
        "dynamic quorums (KIP-853) are not supported: list the voters in controller.quorum.voters",
    ),
];

/// Why the other Kafka keys are accepted and not acted on, by exact name or name prefix
/// (ending in `.`); the first match wins. A unit test checks that every key has a rule.
const NOT_APPLICABLE: &[(&str, &str)] = &[
    ("sasl.kerberos.", "GSSAPI (Kerberos) is not offered"),
    (
        "sasl.login.",
        "Java's SASL login tuning: connections between nodes log in with the JAAS username and password whenever they connect",
    ),
    (
        "sasl.client.callback.handler.class",
        "no callback plugins: connections between nodes log in with the JAAS username and password",
    ),
    (
        "sasl.oauthbearer.",
        "client-side OAUTHBEARER login settings: the broker logs in to nothing",
    ),
    (
        "ssl.keymanager.algorithm",
        "JSSE key manager: TLS is rustls",
    ),
    (
        "ssl.trustmanager.algorithm",
        "JSSE trust manager: TLS is rustls",
    ),
    (
        "ssl.secure.random.implementation",
        "JCA SecureRandom: rustls uses the ring provider's generator",
    ),
    (
        "ssl.allow.",
        "keystores are not reloaded at runtime, so DN / SAN changes cannot happen",
    ),
    (
        "delegation.token.",
        "no delegation tokens (delegation.token.secret.key is refused)",
    ),
    (
        "remote.",
        "tiered storage is off (remote.log.storage.system.enable is refused)",
    ),
    (
        "log.remote.",
        "tiered storage is off (remote.log.storage.system.enable is refused)",
    ),
    (
        "log.local.",
        "tiered storage is off (remote.log.storage.system.enable is refused)",
    ),
    (
        "follower.fetch.last.tiered.offset.enable",
        "no followers and no tiered storage",
    ),
    (
        "controller.",
        "KRaft controller internals (the quorum's voters, listener and timings are honoured)",
    ),
    (
        "metadata.",
        "KRaft metadata log internals: metadata lives in the data directory",
    ),
    (
        "initial.broker.registration.timeout.ms",
        "a cluster broker retries its registration until a controller answers",
    ),
    ("internal.", "Kafka-internal settings"),
    ("server.max.startup.time.ms", "Kafka-internal setting"),
    (
        "unstable.",
        "the broker advertises only the API versions it implements",
    ),
    (
        "early.start.listeners",
        "every listener starts once the security state is built",
    ),
    (
        "replica.",
        "replica socket and checkpoint internals (the replication settings are honoured)",
    ),
    (
        "num.replica.",
        "one fetcher task per leader broker pulls every partition it leads for this broker",
    ),
    ("alter.log.dirs.", "one log directory"),
    (
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "one log directory",
    ),
    ("log.dir.failure.timeout.ms", "one log directory"),
    (
        "unclean.leader.election.",
        "unclean elections are decided with every leadership change",
    ),
    (
        "background.threads",
        "thread pools: the broker runs on one tokio runtime",
    ),
    (
        "num.io.threads",
        "thread pools: the broker runs on one tokio runtime",
    ),
    (
        "num.network.threads",
        "thread pools: the broker runs on one tokio runtime",
    ),
    (
        "log.cleaner.threads",
        "one cleaner task runs (on the blocking pool)",
    ),
    (
        "log.cleaner.dedupe.buffer.size",
        "the cleaner sizes its key map itself",
    ),
    (
        "log.cleaner.io.",
        "the cleaner's I/O buffers and throttle are internal",
    ),
    (
        "log.preallocate",
        "segments are not preallocated (no effect on what clients see)",
    ),
    (
        "log.roll.jitter.",
        "no roll jitter: it spreads segment rolls across the partitions of a large cluster",
    ),
    (
        "log.flush.start.offset.checkpoint.interval.ms",
        "the log start offset is checkpointed when it moves",
    ),
    ("log.initial.task.delay.ms", "Kafka-internal setting"),
    (
        "compression.gzip.level",
        "re-compression (topic compression.type) uses the codec's default level",
    ),
    (
        "compression.lz4.level",
        "re-compression (topic compression.type) uses the codec's default level",
    ),
    (
        "compression.zstd.level",
        "re-compression (topic compression.type) uses the codec's default level",
    ),
    (
        "queued.max.request.bytes",
        "queued request bytes are not bounded (each request is bounded by socket.request.max.bytes)",
    ),
    (
        "request.timeout.ms",
        "applies to the broker's own client requests; it makes none",
    ),
    (
        "socket.",
        "socket tuning (kernel defaults are used); socket.request.max.bytes is honoured",
    ),
    (
        "metrics.",
        "metrics are not exported (no JMX or metric reporters)",
    ),
    (
        "metric.reporters",
        "metrics are not exported (no JMX or metric reporters)",
    ),
    (
        "kafka.metrics.",
        "metrics are not exported (no JMX or metric reporters)",
    ),
    (
        "telemetry.max.bytes",
        "no client telemetry (KIP-714): its requests are not served",
    ),
    ("group.share.", "no share groups (KIP-932)"),
    ("share.", "no share groups (KIP-932)"),
    ("errors.deadletterqueue.", "no share groups (KIP-932)"),
    ("group.streams.", "no streams groups (KIP-1071)"),
    (
        "group.consumer.regex.refresh.interval.ms",
        "subscription regexes are re-evaluated on every heartbeat, so new topics join at once",
    ),
    (
        "group.consumer.assignor.offload.enable",
        "the assignors run inline on the heartbeat",
    ),
    (
        "group.consumer.",
        "the target assignment is computed on the heartbeat that needs it, without batching (as with an interval of 0)",
    ),
    (
        "group.coordinator.",
        "group coordinator threading and batching internals",
    ),
    (
        "offsets.",
        "offsets topic internals (replication, loading, write timeout, compression)",
    ),
    (
        "transaction.state.log.",
        "transaction log loading internals",
    ),
    (
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "expired transactional ids are removed by the coordinator's own timer",
    ),
    (
        "add.partitions.to.txn.",
        "a partition leader does not retry a transaction verification: a coordinator that cannot answer is reported to the producer as NOT_ENOUGH_REPLICAS, which it retries",
    ),
    (
        "delete.records.purgatory.",
        "purgatory purge intervals: internal",
    ),
    ("fetch.purgatory.", "purgatory purge intervals: internal"),
    ("producer.purgatory.", "purgatory purge intervals: internal"),
];

/// Keys outside Kafka's broker `ConfigDef` that this broker honours.
const EXTENSIONS: &[(&str, ConfigType, &str)] = &[
    // Kafka takes the cluster id from `kafka-storage format`; ours may be pinned here.
    ("cluster.id", ConfigType::String, ""),
    // The StandardAuthorizer's own settings (Kafka passes them through to the plugin).
    ("super.users", ConfigType::String, ""),
    (
        "allow.everyone.if.no.acl.found",
        ConfigType::Boolean,
        "false",
    ),
];

fn rule_for(name: &str, rules: &[(&'static str, &'static str)]) -> Option<&'static str> {
    rules
        .iter()
        .find(|(pattern, _)| {
            if pattern.ends_with('.') {
                name.starts_with(pattern)
            } else {
                name == *pattern
            }
        })
        .map(|(_, reason)| *reason)
}

/// What odradek-broker does with a Kafka key (`None` when no rule covers it).
fn classify(name: &str) -> Option<Status> {
    if HONOURED.contains(&name) {
        return Some(Status::Honoured);
    }
    if let Some(reason) = REFUSED.iter().find(|(k, _)| *k == name).map(|(_, r)| *r) {
        return Some(Status::Refused(reason));
    }
    rule_for(name, NOT_APPLICABLE).map(Status::NotApplicable)
}

fn from_kafka(k: &'static KafkaKey) -> KeyDef {
    let ours = OUR_DEFAULTS.iter().find(|(n, _)| *n == k.name);
    KeyDef {
        name: k.name,
        ty: k.ty,
        default: ours
            .map(|(_, v)| v.to_string())
            .or_else(|| k.default.clone()),
        kafka_default: k.default.clone(),
        validator: match RELAXED.iter().find(|(n, _)| *n == k.name) {
            Some((_, min)) => Validator::Range {
                min: Some(super::validators::Bound::Int(*min)),
                max: None,
            },
            None => k.validator.clone(),
        },
        update: k.update,
        described: k.in_config_def && !k.internal,
        kafka: true,
        // Unclassified keys are refused: `every_kafka_key_is_classified` keeps this unreachable.
        status: classify(k.name).unwrap_or(Status::Refused("not classified by odradek-broker")),
    }
}

static KEYS: LazyLock<Vec<KeyDef>> = LazyLock::new(|| {
    let mut keys: Vec<KeyDef> = broker_keys().iter().map(from_kafka).collect();
    keys.extend(EXTENSIONS.iter().map(|(name, ty, default)| KeyDef {
        name,
        ty: *ty,
        default: Some(default.to_string()),
        kafka_default: None,
        validator: Validator::None,
        update: UpdateMode::ReadOnly,
        described: false,
        kafka: false,
        status: Status::Honoured,
    }));
    keys.sort_by(|a, b| a.name.cmp(b.name));
    keys
});

/// Every key, sorted by name.
pub fn all_keys() -> &'static [KeyDef] {
    &KEYS
}

/// A key's definition.
pub fn key_def(name: &str) -> Option<&'static KeyDef> {
    let keys = all_keys();
    keys.binary_search_by(|k| k.name.cmp(name))
        .ok()
        .map(|i| &keys[i])
}

/// The `documentation` DescribeConfigs gives for a key: what odradek-broker does with it (never
/// Kafka's prose).
pub fn documentation(def: &KeyDef) -> String {
    match def.status {
        Status::Honoured if def.kafka => "odradek-broker: honoured.".to_string(),
        Status::Honoured => "odradek-broker: honoured (not an Apache Kafka broker key).".into(),
        Status::NotApplicable(why) => format!("odradek-broker: accepted, not acted on: {why}."),
        Status::Refused(why) => {
            format!("odradek-broker: only Kafka's default is accepted: {why}.")
        }
    }
}

/// `docs/broker-configuration.md`'s table: key, type, status, reason (a test compares them).
pub fn markdown_table() -> String {
    let mut out = String::from("| Key | Type | Status | Reason |\n|---|---|---|---|\n");
    for k in all_keys() {
        let ty = format!("{:?}", k.ty).to_ascii_uppercase();
        let (status, why) = match k.status {
            Status::Honoured if k.kafka => ("honoured", String::new()),
            Status::Honoured => ("honoured", "extension: not a Kafka broker key".to_string()),
            Status::NotApplicable(why) => ("accepted, not applicable", why.to_string()),
            Status::Refused(why) => ("refused unless Kafka's default", why.to_string()),
        };
        out.push_str(&format!("| `{}` | {ty} | {status} | {why} |\n", k.name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kafka_key_is_classified() {
        let missing: Vec<&str> = broker_keys()
            .iter()
            .filter(|k| classify(k.name).is_none())
            .map(|k| k.name)
            .collect();
        assert!(missing.is_empty(), "unclassified Kafka keys: {missing:?}");
        for name in HONOURED {
            assert!(
                super::super::table::kafka_key(name).is_some(),
                "{name} is not a Kafka key"
            );
        }
        for (name, _) in REFUSED.iter().chain(OUR_DEFAULTS) {
            assert!(super::super::table::kafka_key(name).is_some(), "{name}");
        }
    }

    #[test]
    fn relaxed_segment_bytes_matches_the_topic_floor() {
        assert_eq!(
            RELAXED[0],
            (
                "log.segment.bytes",
                i64::from(crate::log::config::MIN_SEGMENT_BYTES)
            )
        );
        let def = key_def("log.segment.bytes").unwrap();
        assert!(super::super::kafka_check(def, "65536").is_ok());
        assert!(super::super::kafka_check(def, "60").is_err());
    }

    #[test]
    fn lookups_and_defaults() {
        let k = key_def("sasl.kerberos.min.time.before.relogin").unwrap();
        assert!(matches!(k.status, Status::NotApplicable(_)));
        assert_eq!(key_def("node.id").unwrap().default.as_deref(), Some("1"));
        assert!(key_def("super.users").is_some_and(|k| !k.kafka && !k.described));
        assert!(matches!(
            key_def("create.topic.policy.class.name").unwrap().status,
            Status::Refused(_)
        ));
        assert!(key_def("ssl.key.password").unwrap().sensitive());
        assert!(!key_def("unstable.api.versions.enable").unwrap().described);
    }

    #[test]
    fn the_docs_table_is_current() {
        let doc = include_str!("../../../docs/broker-configuration.md");
        assert!(
            doc.contains(&markdown_table()),
            "docs/broker-configuration.md is out of date: regenerate its table with \
             `cargo test -p odradek-broker --lib print_broker_config_table -- --ignored --nocapture`"
        );
    }

    #[test]
    #[ignore = "prints docs/broker-configuration.md's table"]
    fn print_broker_config_table() {
        print!("{}", markdown_table());
    }
}
