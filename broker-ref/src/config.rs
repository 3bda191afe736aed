//! Broker configuration: Apache Kafka's `server.properties` names, defaults and override syntax.
//!
//! Every key the broker knows is declared once in [`KEYS`] with its type and Kafka default. Keys
//! marked [`Use::Accepted`] are Kafka settings that mean nothing for a single-node broker
//! (thread counts, controller quorum, replication of internal topics); they are accepted so an
//! existing `server.properties` works unchanged, validated for type, and otherwise ignored. Any
//! other key is an error naming the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The type of a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 32-bit integer.
    Int,
    /// 64-bit integer.
    Long,
    /// `true` / `false`.
    Bool,
    /// Floating point.
    Double,
    /// Free text.
    Str,
    /// Comma-separated list.
    List,
    /// Free text that is a secret (a password, a key, a JAAS configuration with passwords):
    /// DescribeConfigs reports it as sensitive with no value, and it never appears in logs.
    Password,
}

/// Whether a key changes the broker's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Honoured.
    Used,
    /// Accepted for compatibility and ignored (single node, no separate controller).
    Accepted,
}

/// One known configuration key.
#[derive(Debug, Clone, Copy)]
pub struct KeyDef {
    /// Kafka property name.
    pub name: &'static str,
    /// Value type.
    pub kind: Kind,
    /// Kafka's default, as text (`""` for none).
    pub default: &'static str,
    /// Honoured or merely accepted.
    pub used: Use,
}

const fn key(name: &'static str, kind: Kind, default: &'static str, used: Use) -> KeyDef {
    KeyDef {
        name,
        kind,
        default,
        used,
    }
}

use Kind::*;
use Use::*;

/// Every key the broker knows, with Kafka's defaults.
pub const KEYS: &[KeyDef] = &[
    key("listeners", List, "PLAINTEXT://127.0.0.1:9092", Used),
    key("advertised.listeners", List, "", Used),
    key(
        "listener.security.protocol.map",
        List,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        Used,
    ),
    key("inter.broker.listener.name", Str, "", Used),
    key("security.inter.broker.protocol", Str, "PLAINTEXT", Used),
    key("controller.listener.names", List, "", Accepted),
    key("controller.quorum.voters", List, "", Accepted),
    key("controller.quorum.bootstrap.servers", List, "", Accepted),
    key("process.roles", List, "broker,controller", Accepted),
    key("node.id", Int, "1", Used),
    key("broker.id", Int, "-1", Used),
    key("cluster.id", Str, "", Used),
    key("broker.rack", Str, "", Used),
    key("log.dirs", List, "", Used),
    key("log.dir", Str, "./odradek-data", Used),
    key("num.partitions", Int, "1", Used),
    key("default.replication.factor", Int, "1", Used),
    key("min.insync.replicas", Int, "1", Used),
    key("auto.create.topics.enable", Bool, "true", Used),
    key("delete.topic.enable", Bool, "true", Used),
    key("log.segment.bytes", Int, "1073741824", Used),
    key("log.roll.ms", Long, "", Used),
    key("log.roll.hours", Int, "168", Used),
    key("log.retention.ms", Long, "", Used),
    key("log.retention.minutes", Int, "", Used),
    key("log.retention.hours", Int, "168", Used),
    key("log.retention.bytes", Long, "-1", Used),
    key("log.retention.check.interval.ms", Long, "300000", Used),
    key("log.cleanup.policy", List, "delete", Used),
    key("log.index.interval.bytes", Int, "4096", Used),
    key("log.index.size.max.bytes", Int, "10485760", Used),
    key("log.segment.delete.delay.ms", Long, "60000", Used),
    key(
        "log.flush.interval.messages",
        Long,
        "9223372036854775807",
        Used,
    ),
    key("log.flush.interval.ms", Long, "", Used),
    key(
        "log.flush.scheduler.interval.ms",
        Long,
        "9223372036854775807",
        Accepted,
    ),
    key(
        "log.flush.offset.checkpoint.interval.ms",
        Int,
        "60000",
        Used,
    ),
    key("log.message.timestamp.type", Str, "CreateTime", Used),
    key(
        "log.message.timestamp.before.max.ms",
        Long,
        "9223372036854775807",
        Used,
    ),
    key("log.message.timestamp.after.max.ms", Long, "3600000", Used),
    key("log.cleaner.enable", Bool, "true", Used),
    key("log.cleaner.threads", Int, "1", Accepted),
    key("log.cleaner.backoff.ms", Long, "15000", Used),
    key("log.cleaner.delete.retention.ms", Long, "86400000", Used),
    key("log.cleaner.min.compaction.lag.ms", Long, "0", Used),
    key(
        "log.cleaner.max.compaction.lag.ms",
        Long,
        "9223372036854775807",
        Used,
    ),
    key("log.cleaner.min.cleanable.ratio", Double, "0.5", Used),
    key(
        "log.cleaner.dedupe.buffer.size",
        Long,
        "134217728",
        Accepted,
    ),
    key("compression.type", Str, "producer", Used),
    key("message.max.bytes", Int, "1048588", Used),
    key("replica.fetch.max.bytes", Int, "1048576", Accepted),
    key("fetch.max.bytes", Int, "57671680", Used),
    key("socket.request.max.bytes", Int, "104857600", Used),
    key("socket.send.buffer.bytes", Int, "102400", Accepted),
    key("socket.receive.buffer.bytes", Int, "102400", Accepted),
    key("connections.max.idle.ms", Long, "600000", Used),
    key("max.connections", Int, "2147483647", Used),
    key("queued.max.requests", Int, "500", Used),
    key("num.network.threads", Int, "3", Accepted),
    key("num.io.threads", Int, "8", Accepted),
    key("num.recovery.threads.per.data.dir", Int, "2", Used),
    key("num.replica.fetchers", Int, "1", Accepted),
    key("unclean.leader.election.enable", Bool, "false", Accepted),
    key("group.initial.rebalance.delay.ms", Int, "3000", Used),
    key("group.min.session.timeout.ms", Int, "6000", Used),
    key("group.max.session.timeout.ms", Int, "1800000", Used),
    key("group.max.size", Int, "2147483647", Used),
    key(
        "group.coordinator.rebalance.protocols",
        List,
        "classic,consumer,streams",
        Accepted,
    ),
    key("offsets.topic.num.partitions", Int, "50", Used),
    key("offsets.topic.replication.factor", Int, "3", Accepted),
    key("offsets.topic.segment.bytes", Int, "104857600", Used),
    key("offsets.retention.minutes", Int, "10080", Used),
    key("offsets.retention.check.interval.ms", Long, "600000", Used),
    key("offsets.commit.timeout.ms", Int, "5000", Accepted),
    key("offset.metadata.max.bytes", Int, "4096", Used),
    key("transaction.state.log.num.partitions", Int, "50", Used),
    key(
        "transaction.state.log.replication.factor",
        Int,
        "3",
        Accepted,
    ),
    key("transaction.state.log.min.isr", Int, "2", Accepted),
    key(
        "transaction.state.log.segment.bytes",
        Int,
        "104857600",
        Used,
    ),
    key("transaction.max.timeout.ms", Int, "900000", Used),
    key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        Int,
        "10000",
        Used,
    ),
    key("transactional.id.expiration.ms", Int, "604800000", Used),
    key("producer.id.expiration.ms", Int, "86400000", Used),
    key(
        "share.coordinator.state.topic.replication.factor",
        Int,
        "3",
        Accepted,
    ),
    key("share.coordinator.state.topic.min.isr", Int, "2", Accepted),
    key(
        "share.coordinator.state.topic.num.partitions",
        Int,
        "50",
        Accepted,
    ),
    // Security (docs/security.md). Each ssl.* / sasl.* key below can also be set per listener
    // as `listener.name.<listener>.<key>` (and the SASL ones per mechanism as
    // `listener.name.<listener>.<mechanism>.<key>`).
    key("ssl.keystore.type", Str, "JKS", Used),
    key("ssl.keystore.location", Str, "", Used),
    key("ssl.keystore.password", Password, "", Used),
    key("ssl.keystore.certificate.chain", Str, "", Used),
    key("ssl.keystore.key", Password, "", Used),
    key("ssl.key.password", Password, "", Used),
    key("ssl.truststore.type", Str, "JKS", Used),
    key("ssl.truststore.location", Str, "", Used),
    key("ssl.truststore.password", Password, "", Used),
    key("ssl.truststore.certificates", Str, "", Used),
    key("ssl.client.auth", Str, "none", Used),
    key("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", Used),
    key("ssl.protocol", Str, "TLSv1.3", Used),
    key("ssl.cipher.suites", List, "", Used),
    key("ssl.principal.mapping.rules", Str, "DEFAULT", Used),
    key(
        "ssl.endpoint.identification.algorithm",
        Str,
        "https",
        Accepted,
    ),
    key("ssl.keymanager.algorithm", Str, "SunX509", Accepted),
    key("ssl.trustmanager.algorithm", Str, "PKIX", Accepted),
    key("ssl.secure.random.implementation", Str, "", Accepted),
    key("sasl.enabled.mechanisms", List, "GSSAPI", Used),
    key(
        "sasl.mechanism.inter.broker.protocol",
        Str,
        "GSSAPI",
        Accepted,
    ),
    key("sasl.jaas.config", Password, "", Used),
    key("sasl.server.callback.handler.class", Str, "", Used),
    key("sasl.server.max.receive.size", Int, "524288", Used),
    key("connections.max.reauth.ms", Long, "0", Used),
    key(
        "connection.failed.authentication.delay.ms",
        Int,
        "100",
        Used,
    ),
    key("sasl.oauthbearer.jwks.endpoint.url", Str, "", Used),
    key(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        Long,
        "3600000",
        Used,
    ),
    key(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        Long,
        "100",
        Used,
    ),
    key(
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        Long,
        "10000",
        Used,
    ),
    key("sasl.oauthbearer.expected.issuer", Str, "", Used),
    key("sasl.oauthbearer.expected.audience", List, "", Used),
    key("sasl.oauthbearer.sub.claim.name", Str, "sub", Used),
    key("sasl.oauthbearer.scope.claim.name", Str, "scope", Used),
    key("sasl.oauthbearer.clock.skew.seconds", Int, "30", Used),
    key("authorizer.class.name", Str, "", Used),
    key("super.users", Str, "", Used),
    key("allow.everyone.if.no.acl.found", Bool, "false", Used),
    key(
        "principal.builder.class",
        Str,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        Used,
    ),
];

/// Where a value came from (DescribeConfigs reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Kafka's default.
    Default,
    /// From `server.properties` or `--override`.
    Static,
    /// A cluster-wide dynamic default (AlterConfigs on the BROKER resource with an empty name).
    DynamicDefault,
    /// A dynamic value for this broker (AlterConfigs on the BROKER resource named by its id).
    DynamicBroker,
}

/// A validated broker configuration.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    values: BTreeMap<&'static str, (String, Source)>,
    /// `listener.name.<listener>.[<mechanism>.]<key>` entries (names lower-cased).
    listener_values: BTreeMap<String, String>,
}

/// Finds a key's definition.
pub fn key_def(name: &str) -> Option<&'static KeyDef> {
    KEYS.iter().find(|k| k.name == name)
}

fn check_value(def: &KeyDef, value: &str) -> Result<()> {
    let bad = |what: &str| {
        Err(Error::config(
            def.name,
            format!("`{value}` is not a valid {what}"),
        ))
    };
    let v = value.trim();
    match def.kind {
        Int => {
            if v.parse::<i32>().is_err() {
                return bad("int");
            }
        }
        Long => {
            if v.parse::<i64>().is_err() {
                return bad("long");
            }
        }
        Bool => {
            if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
                return bad("boolean");
            }
        }
        Double => {
            if v.parse::<f64>().is_err() {
                return bad("number");
            }
        }
        Str | List | Password => {}
    }
    Ok(())
}

/// Whether `name` (a key of [`KEYS`] or a `listener.name.` key) holds a secret.
pub fn is_sensitive(name: &str) -> bool {
    let base = name.rsplit('.').next().unwrap_or(name);
    key_def(name).is_some_and(|k| k.kind == Password)
        || (name.starts_with("listener.name.")
            && (name.ends_with(".sasl.jaas.config")
                || name.ends_with(".password")
                || name.ends_with("ssl.keystore.key")
                || base == "password"))
}

/// The security keys that may be set per listener as `listener.name.<listener>.<key>`.
fn per_listener_key(rest: &str) -> Option<&'static KeyDef> {
    let def = key_def(rest)?;
    (def.name.starts_with("ssl.")
        || def.name.starts_with("sasl.")
        || def.name == "connections.max.reauth.ms")
        .then_some(def)
}

/// Checks a `listener.name.<listener>.<key>` entry: the key is a per-listener security key or
/// `<mechanism>.<sasl key>` (`plain.sasl.jaas.config`, `oauthbearer.sasl.server.callback.handler.class`,
/// `scram-sha-256.connections.max.reauth.ms`, ...). Returns the normalised key (listener name
/// and mechanism lower-cased, as Kafka's `ListenerName.configPrefix` does).
fn check_listener_key(key: &str, value: &str) -> Result<String> {
    let bad = || {
        Error::config(
            key,
            "not a per-listener security key (listener.name.<listener>.<ssl.*|sasl.*> or \
             listener.name.<listener>.<mechanism>.<sasl.*>)",
        )
    };
    let rest = key.strip_prefix("listener.name.").ok_or_else(bad)?;
    let (listener, rest) = rest.split_once('.').ok_or_else(bad)?;
    if listener.is_empty() {
        return Err(bad());
    }
    let def = match per_listener_key(rest) {
        Some(def) => def,
        None => {
            let (mech, inner) = rest.split_once('.').ok_or_else(bad)?;
            let def = per_listener_key(inner).ok_or_else(bad)?;
            if !(def.name.starts_with("sasl.") || def.name == "connections.max.reauth.ms")
                || mech.is_empty()
            {
                return Err(bad());
            }
            return check_value(def, value).map(|()| {
                format!(
                    "listener.name.{}.{}.{}",
                    listener.to_ascii_lowercase(),
                    mech.to_ascii_lowercase(),
                    def.name
                )
            });
        }
    };
    check_value(def, value)?;
    Ok(format!(
        "listener.name.{}.{}",
        listener.to_ascii_lowercase(),
        def.name
    ))
}

/// Parses `server.properties` text: `key=value` or `key: value` lines, `#`/`!` comments,
/// backslash line continuations.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let split = entry.find(['=', ':']).ok_or_else(|| {
            Error::config(
                entry.trim().to_string(),
                "line has no `=`: expected key=value",
            )
        })?;
        let (k, v) = entry.split_at(split);
        out.push((k.trim().to_string(), v[1..].trim().to_string()));
    }
    Ok(out)
}

impl BrokerConfig {
    /// Builds a configuration from `key=value` entries (later entries win). Unknown keys and
    /// ill-typed values are errors naming the key.
    pub fn from_entries<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<BrokerConfig> {
        let mut values: BTreeMap<&'static str, (String, Source)> = KEYS
            .iter()
            .map(|k| (k.name, (k.default.to_string(), Source::Default)))
            .collect();
        let mut listener_values = BTreeMap::new();
        for (k, v) in entries {
            let (k, v) = (k.as_ref().trim(), v.as_ref().trim());
            if k.starts_with("listener.name.") {
                listener_values.insert(check_listener_key(k, v)?, v.to_string());
                continue;
            }
            let def = key_def(k).ok_or_else(|| Error::config(k, "unknown configuration key"))?;
            check_value(def, v)?;
            values.insert(def.name, (v.to_string(), Source::Static));
        }
        let mut config = BrokerConfig {
            values,
            listener_values,
        };
        // Kafka reports broker.id as the node id when only node.id is set.
        if !config.is_set("broker.id") {
            let node = config.get("node.id").to_string();
            config.values.insert("broker.id", (node, Source::Default));
        }
        config.validate()?;
        Ok(config)
    }

    /// Loads an optional properties file, then applies `--override` entries.
    pub fn load(file: Option<&Path>, overrides: &[(String, String)]) -> Result<BrokerConfig> {
        let mut entries = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::config(path.display().to_string(), format!("cannot read: {e}"))
                })?;
                parse_properties(&text)?
            }
            None => Vec::new(),
        };
        entries.extend(overrides.iter().cloned());
        BrokerConfig::from_entries(entries)
    }

    fn validate(&self) -> Result<()> {
        if self.num_partitions() < 1 {
            return Err(Error::config("num.partitions", "must be at least 1"));
        }
        let ts = self.get("log.message.timestamp.type");
        if ts != "CreateTime" && ts != "LogAppendTime" {
            return Err(Error::config(
                "log.message.timestamp.type",
                "must be CreateTime or LogAppendTime",
            ));
        }
        for key in ["message.max.bytes", "socket.request.max.bytes"] {
            if self.int(key) < 1 {
                return Err(Error::config(key, "must be positive"));
            }
        }
        self.listeners()?;
        Ok(())
    }

    /// The raw value of a known key (empty when unset without default).
    pub fn get(&self, name: &str) -> &str {
        self.values.get(name).map_or("", |(v, _)| v.as_str())
    }

    /// A security key's value for `listener` (and SASL `mechanism`), with Kafka's precedence:
    /// `listener.name.<listener>.<mechanism>.<key>`, then `listener.name.<listener>.<key>`,
    /// then `<key>` (or its default).
    pub fn listener_get(&self, listener: &str, mechanism: Option<&str>, name: &str) -> &str {
        let l = listener.to_ascii_lowercase();
        if let Some(m) = mechanism {
            let k = format!("listener.name.{l}.{}.{name}", m.to_ascii_lowercase());
            if let Some(v) = self.listener_values.get(&k) {
                return v;
            }
        }
        match self
            .listener_values
            .get(&format!("listener.name.{l}.{name}"))
        {
            Some(v) => v,
            None => self.get(name),
        }
    }

    /// Whether [`BrokerConfig::listener_get`] finds an explicit value (not a default).
    pub fn listener_is_set(&self, listener: &str, mechanism: Option<&str>, name: &str) -> bool {
        let l = listener.to_ascii_lowercase();
        mechanism.is_some_and(|m| {
            self.listener_values.contains_key(&format!(
                "listener.name.{l}.{}.{name}",
                m.to_ascii_lowercase()
            ))
        }) || self
            .listener_values
            .contains_key(&format!("listener.name.{l}.{name}"))
            || self.is_set(name)
    }

    /// The `listener.name.` entries (normalised key, value); values may be secrets.
    pub fn listener_entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.listener_values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Value and source of a key.
    pub fn entry(&self, name: &str) -> Option<(&str, Source)> {
        self.values.get(name).map(|(v, s)| (v.as_str(), *s))
    }

    /// All keys with values and sources.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &str, Source)> {
        self.values.iter().map(|(k, (v, s))| (*k, v.as_str(), *s))
    }

    /// Whether the key was set explicitly (statically or dynamically).
    pub fn is_set(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some((_, s)) if *s != Source::Default)
    }

    /// This configuration with dynamic values applied over it: `cluster_default`, then
    /// `broker` (higher precedence). Values are checked like static ones; errors name the key.
    pub fn with_dynamic(
        &self,
        cluster_default: &BTreeMap<String, String>,
        broker: &BTreeMap<String, String>,
    ) -> Result<BrokerConfig> {
        let mut config = self.clone();
        for (level, source) in [
            (cluster_default, Source::DynamicDefault),
            (broker, Source::DynamicBroker),
        ] {
            for (k, v) in level {
                let def =
                    key_def(k).ok_or_else(|| Error::config(k, "unknown configuration key"))?;
                check_value(def, v)?;
                config
                    .values
                    .insert(def.name, (v.trim().to_string(), source));
            }
        }
        config.validate()?;
        Ok(config)
    }

    fn long_opt(&self, name: &str) -> Option<i64> {
        self.get(name).trim().parse().ok()
    }

    /// A 64-bit value (validated at load; 0 if unset).
    pub fn long(&self, name: &str) -> i64 {
        self.long_opt(name).unwrap_or(0)
    }

    /// A 32-bit value (validated at load; 0 if unset).
    pub fn int(&self, name: &str) -> i32 {
        self.get(name).trim().parse().unwrap_or(0)
    }

    /// A boolean value.
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).trim().eq_ignore_ascii_case("true")
    }

    /// This broker's node id (`node.id`, or `broker.id` when only that is set).
    pub fn node_id(&self) -> i32 {
        if !self.is_set("node.id") && self.is_set("broker.id") {
            self.int("broker.id")
        } else {
            self.int("node.id")
        }
    }

    /// The data directory (first of `log.dirs`, else `log.dir`).
    pub fn log_dir(&self) -> PathBuf {
        let dirs = self.get("log.dirs");
        let first = dirs.split(',').map(str::trim).find(|s| !s.is_empty());
        PathBuf::from(first.unwrap_or_else(|| self.get("log.dir")))
    }

    /// `num.partitions`.
    pub fn num_partitions(&self) -> i32 {
        self.int("num.partitions")
    }

    /// Segment roll time: `log.roll.ms`, else `log.roll.hours`.
    pub fn roll_ms(&self) -> i64 {
        self.long_opt("log.roll.ms")
            .unwrap_or_else(|| self.long("log.roll.hours") * 3_600_000)
    }

    /// Retention time: `log.retention.ms`, else minutes, else hours (-1 = forever).
    pub fn retention_ms(&self) -> i64 {
        if let Some(ms) = self.long_opt("log.retention.ms") {
            return ms;
        }
        if let Some(min) = self.long_opt("log.retention.minutes") {
            return if min < 0 { -1 } else { min * 60_000 };
        }
        let hours = self.long("log.retention.hours");
        if hours < 0 {
            -1
        } else {
            hours * 3_600_000
        }
    }

    /// `log.flush.interval.ms`, defaulting to `log.flush.scheduler.interval.ms` as Kafka does.
    pub fn flush_ms(&self) -> i64 {
        self.long_opt("log.flush.interval.ms")
            .unwrap_or_else(|| self.long("log.flush.scheduler.interval.ms"))
    }

    /// The broker-level defaults for topic configs, as topic-level `(key, value)` pairs.
    pub fn topic_defaults(&self) -> Vec<(&'static str, String)> {
        vec![
            ("segment.bytes", self.get("log.segment.bytes").to_string()),
            ("segment.ms", self.roll_ms().to_string()),
            (
                "segment.index.bytes",
                self.get("log.index.size.max.bytes").to_string(),
            ),
            (
                "index.interval.bytes",
                self.get("log.index.interval.bytes").to_string(),
            ),
            ("retention.ms", self.retention_ms().to_string()),
            (
                "retention.bytes",
                self.get("log.retention.bytes").to_string(),
            ),
            ("cleanup.policy", self.get("log.cleanup.policy").to_string()),
            (
                "flush.messages",
                self.get("log.flush.interval.messages").to_string(),
            ),
            ("flush.ms", self.flush_ms().to_string()),
            (
                "max.message.bytes",
                self.get("message.max.bytes").to_string(),
            ),
            (
                "message.timestamp.type",
                self.get("log.message.timestamp.type").to_string(),
            ),
            (
                "message.timestamp.before.max.ms",
                self.get("log.message.timestamp.before.max.ms").to_string(),
            ),
            (
                "message.timestamp.after.max.ms",
                self.get("log.message.timestamp.after.max.ms").to_string(),
            ),
            (
                "delete.retention.ms",
                self.get("log.cleaner.delete.retention.ms").to_string(),
            ),
            (
                "min.compaction.lag.ms",
                self.get("log.cleaner.min.compaction.lag.ms").to_string(),
            ),
            (
                "max.compaction.lag.ms",
                self.get("log.cleaner.max.compaction.lag.ms").to_string(),
            ),
            (
                "min.cleanable.dirty.ratio",
                self.get("log.cleaner.min.cleanable.ratio").to_string(),
            ),
            (
                "file.delete.delay.ms",
                self.get("log.segment.delete.delay.ms").to_string(),
            ),
            ("compression.type", self.get("compression.type").to_string()),
        ]
    }

    /// Parsed `listeners`: (name, host, port); each name's protocol comes from
    /// `listener.security.protocol.map` (`security::listeners`).
    pub fn listeners(&self) -> Result<Vec<Listener>> {
        parse_listeners("listeners", self.get("listeners"))
    }

    /// Parsed `advertised.listeners`, defaulting to `listeners`.
    pub fn advertised_listeners(&self) -> Result<Vec<Listener>> {
        let v = self.get("advertised.listeners");
        if v.trim().is_empty() {
            self.listeners()
        } else {
            parse_listeners("advertised.listeners", v)
        }
    }
}

/// One `NAME://host:port` listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Listener name (e.g. `PLAINTEXT`).
    pub name: String,
    /// Host to bind or advertise (empty = all interfaces).
    pub host: String,
    /// Port (0 = pick a free one).
    pub port: u16,
}

fn parse_listeners(key: &str, value: &str) -> Result<Vec<Listener>> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, rest) = item
            .split_once("://")
            .ok_or_else(|| Error::config(key, format!("`{item}` is not NAME://host:port")))?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| Error::config(key, format!("`{item}` has no port")))?;
        let port = port
            .parse::<u16>()
            .map_err(|_| Error::config(key, format!("`{item}` has an invalid port")))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        out.push(Listener {
            name: name.to_string(),
            host,
            port,
        });
    }
    if out.is_empty() {
        return Err(Error::config(key, "no listener given"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kafka() {
        let c = BrokerConfig::from_entries(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(c.int("message.max.bytes"), 1_048_588);
        assert_eq!(c.retention_ms(), 168 * 3_600_000);
        assert_eq!(c.node_id(), 1);
        assert!(c.bool("auto.create.topics.enable"));
        assert_eq!(c.listeners().unwrap()[0].port, 9092);
        assert_eq!(c.log_dir(), PathBuf::from("./odradek-data"));
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = BrokerConfig::from_entries([("no.such.key", "1")]).unwrap_err();
        assert!(err.to_string().contains("no.such.key"), "{err}");
        let err = BrokerConfig::from_entries([("num.partitions", "four")]).unwrap_err();
        assert!(err.to_string().contains("num.partitions"), "{err}");
        let err = BrokerConfig::from_entries([("listeners", "nonsense")]).unwrap_err();
        assert!(err.to_string().contains("listeners"), "{err}");
    }

    #[test]
    fn properties_syntax_and_precedence() {
        let text = "# comment\n! also\nnum.partitions = 4\nlog.dirs: /tmp/a,/tmp/b\nlisteners=PLAINTEXT://\\\n  127.0.0.1:0\n";
        let mut entries = parse_properties(text).unwrap();
        entries.push(("num.partitions".into(), "6".into()));
        let c = BrokerConfig::from_entries(entries).unwrap();
        assert_eq!(c.num_partitions(), 6);
        assert_eq!(c.log_dir(), PathBuf::from("/tmp/a"));
        assert_eq!(c.listeners().unwrap()[0].port, 0);
        assert_eq!(c.entry("num.partitions").unwrap().1, Source::Static);
        assert!(parse_properties("just-a-key").is_err());
    }

    #[test]
    fn retention_fallbacks() {
        let c = BrokerConfig::from_entries([("log.retention.minutes", "2")]).unwrap();
        assert_eq!(c.retention_ms(), 120_000);
        let c =
            BrokerConfig::from_entries([("log.retention.ms", "5"), ("log.retention.minutes", "2")])
                .unwrap();
        assert_eq!(c.retention_ms(), 5);
        let c = BrokerConfig::from_entries([("log.retention.hours", "-1")]).unwrap();
        assert_eq!(c.retention_ms(), -1);
    }
}
