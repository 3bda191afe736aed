//! A validated broker configuration: `server.properties` and `--override` entries (and the
//! dynamic values of `crate::dynamic_config`) over the defaults of [`super::keys`].
//!
//! Every key is checked as Apache Kafka checks it (type and validator from Kafka's table);
//! unknown keys are an error naming the key, and so is a non-default value of a key the broker
//! refuses ([`Status::Refused`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::keys::{all_keys, key_def, KeyDef, Status};
use super::properties::parse_properties;
use super::validators::{check, parse_value};
use crate::{Error, Result};

/// Where a value came from (DescribeConfigs reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The default.
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

/// Checks `value` for `def` the way Kafka does; the error is Kafka's message
/// (`Invalid value <v> for configuration <k>: <why>`).
pub fn kafka_check(def: &KeyDef, value: &str) -> std::result::Result<(), String> {
    check(def.name, def.ty, &def.validator, value).map(|_| ())
}

/// Whether `value` is Kafka's default for `def` (compared as parsed values).
fn is_kafka_default(def: &KeyDef, value: &str) -> bool {
    match &def.kafka_default {
        None => false,
        Some(d) => match (parse_value(def.ty, d), parse_value(def.ty, value)) {
            (Ok(a), Ok(b)) => a == b,
            _ => d.trim() == value.trim(),
        },
    }
}

/// The refusal of a non-default value of a [`Status::Refused`] key, if `value` is one.
pub fn refusal(def: &KeyDef, value: &str) -> Option<String> {
    match def.status {
        Status::Refused(why) if !is_kafka_default(def, value) => Some(format!(
            "`{}` is not supported by odradek-broker ({why}); only Kafka's default{} is accepted",
            def.name,
            def.kafka_default
                .as_deref()
                .map(|d| format!(" `{d}`"))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

fn check_value(def: &KeyDef, value: &str) -> Result<()> {
    kafka_check(def, value).map_err(|msg| Error::config(def.name, msg))?;
    match refusal(def, value) {
        Some(msg) => Err(Error::config(def.name, msg)),
        None => Ok(()),
    }
}

/// Whether `name` (a broker key or a `listener.name.` key) holds a secret.
pub fn is_sensitive(name: &str) -> bool {
    let base = name.rsplit('.').next().unwrap_or(name);
    key_def(name).is_some_and(KeyDef::sensitive)
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

impl BrokerConfig {
    /// Builds a configuration from `key=value` entries (later entries win). Unknown keys and
    /// ill-typed values are errors naming the key.
    pub fn from_entries<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<BrokerConfig> {
        let mut values: BTreeMap<&'static str, (String, Source)> = all_keys()
            .iter()
            .map(|k| {
                let default = k.default.clone().unwrap_or_default();
                (k.name, (default, Source::Default))
            })
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
        // Kafka copies node.id to broker.id when only node.id is set (`populateSynonyms`), so
        // DescribeConfigs shows broker.id with node.id's value and source.
        if !config.is_set("broker.id") {
            if let Some((node, source)) = config.values.get("node.id").cloned() {
                config.values.insert("broker.id", (node, source));
            }
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
        for key in ["message.max.bytes", "socket.request.max.bytes"] {
            if self.int(key) < 1 {
                return Err(Error::config(key, "must be positive"));
            }
        }
        self.listeners()?;
        super::replica_selector::ReplicaSelector::from_class(self.get("replica.selector.class"))?;
        let dirs = self.get("log.dirs");
        if dirs.split(',').filter(|d| !d.trim().is_empty()).count() > 1 {
            return Err(Error::config(
                "log.dirs",
                format!(
                    "`{dirs}` lists several directories; odradek-broker keeps every partition in \
                     one directory, so list one (JBOD is not supported)"
                ),
            ));
        }
        let overrides = self.max_connections_per_ip_overrides()?;
        if self.int("max.connections.per.ip") == 0 && overrides.is_empty() {
            return Err(Error::config(
                "max.connections.per.ip",
                "can be set to zero only if max.connections.per.ip.overrides is set",
            ));
        }
        Ok(())
    }

    /// `max.connections.per.ip.overrides`: `host:count` pairs separated by commas (the host is
    /// an address or a name; an IPv6 address is everything before the last colon).
    pub fn max_connections_per_ip_overrides(&self) -> Result<Vec<(String, i32)>> {
        const KEY: &str = "max.connections.per.ip.overrides";
        let mut pairs = Vec::new();
        for entry in self
            .get(KEY)
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let parsed = entry.rsplit_once(':').and_then(|(host, count)| {
                let count = count.trim().parse::<i32>().ok().filter(|c| *c >= 0)?;
                let host = host.trim().trim_start_matches('[').trim_end_matches(']');
                (!host.is_empty()).then(|| (host.to_string(), count))
            });
            pairs.push(parsed.ok_or_else(|| {
                Error::config(
                    KEY,
                    format!("`{entry}` is not host:count with a count of 0 or more"),
                )
            })?);
        }
        Ok(pairs)
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

    /// Whether the key has no value at all (Kafka's null default: DescribeConfigs shows no value).
    pub fn is_null(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some((_, Source::Default)))
            && key_def(name).is_some_and(|d| d.default.is_none())
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
        let text = "# comment\n! also\nnum.partitions = 4\nlog.dirs: /tmp/a\nlisteners=PLAINTEXT://\\\n  127.0.0.1:0\n";
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
    fn every_kafka_key_is_accepted_with_kafka_checks() {
        // Accepted, not acted on: type-checked, then stored.
        let c = BrokerConfig::from_entries([
            ("sasl.kerberos.min.time.before.relogin", "1000"),
            ("num.io.threads", "16"),
            ("controller.quorum.voters", "1@127.0.0.1:9093"),
        ])
        .unwrap();
        assert_eq!(c.long("sasl.kerberos.min.time.before.relogin"), 1000);
        let err = BrokerConfig::from_entries([("num.io.threads", "0")]).unwrap_err();
        assert!(
            err.to_string().contains(
                "Invalid value 0 for configuration num.io.threads: Value must be at least 1"
            ),
            "{err}"
        );
        // Refused unless Kafka's default, naming the key.
        let err = BrokerConfig::from_entries([("create.topic.policy.class.name", "com.example.P")])
            .unwrap_err();
        assert!(
            err.to_string().contains("create.topic.policy.class.name"),
            "{err}"
        );
        let dirs = BrokerConfig::from_entries([("log.dirs", "/a, /b")]).unwrap_err();
        assert!(dirs.to_string().contains("log.dirs"), "{dirs}");
        assert!(BrokerConfig::from_entries([("log.dirs", "/a,")]).is_ok());
        assert!(BrokerConfig::from_entries([("max.connections.per.ip", "10")]).is_ok());
        let zero = BrokerConfig::from_entries([("max.connections.per.ip", "0")]).unwrap_err();
        assert!(
            zero.to_string()
                .contains("max.connections.per.ip.overrides"),
            "{zero}"
        );
        assert!(BrokerConfig::from_entries([
            ("max.connections.per.ip", "0"),
            (
                "max.connections.per.ip.overrides",
                "10.0.0.1:5, [::1]:2 ,db-host:7"
            )
        ])
        .is_ok());
        for bad in ["10.0.0.1", "10.0.0.1:-1", ":5", "h:x"] {
            let err = BrokerConfig::from_entries([("max.connections.per.ip.overrides", bad)])
                .unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
        // Null defaults are null; broker.id follows node.id's value and source.
        let c = BrokerConfig::from_entries([("node.id", "3")]).unwrap();
        assert!(c.is_null("log.retention.ms"));
        assert!(!c.is_null("log.retention.hours"));
        assert_eq!(c.entry("broker.id"), Some(("3", Source::Static)));
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
