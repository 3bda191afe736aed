//! Dynamic broker configuration (Kafka's `DynamicBrokerConfig`, for a single node):
//! IncrementalAlterConfigs / AlterConfigs on a BROKER resource change the keys in
//! [`DYNAMIC_KEYS`] at runtime, either for this broker (resource name = its node id) or as the
//! cluster-wide default (empty resource name).
//!
//! Precedence, highest first, as in Kafka: per-broker dynamic value, cluster-wide dynamic
//! default, `server.properties` / `--override`, Kafka's default. The effective values replace
//! the broker-level topic defaults at once (every partition without a topic override follows),
//! and the log cleaner reads its settings before each pass.
//!
//! Kafka keeps these values in its metadata log; this single-node broker keeps them in
//! `<log.dir>/dynamic-broker-configs`, a properties file replaced atomically (temporary file,
//! fsync, rename, directory fsync), one `broker.<key>=<value>` or `cluster-default.<key>=<value>`
//! line per value (documented in `docs/storage.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use odradek::ErrorCode;

use crate::config::{key_def, BrokerConfig};
use crate::{Error, Result};

/// Keys Kafka lets change without a restart that this broker honours: the broker-level topic
/// defaults (`log.*` synonyms of topic configs, `message.max.bytes`, `compression.type`) and the
/// log cleaner's settings (`log.cleaner.threads` is stored but one cleaner thread runs), plus
/// `num.recovery.threads.per.data.dir` (used at shutdown and the next start).
pub const DYNAMIC_KEYS: &[&str] = &[
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.hours",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.cleanup.policy",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.message.timestamp.type",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "log.segment.delete.delay.ms",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.threads",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "message.max.bytes",
    "compression.type",
    "num.recovery.threads.per.data.dir",
];

const FILE: &str = "dynamic-broker-configs";
const BROKER_PREFIX: &str = "broker.";
const DEFAULT_PREFIX: &str = "cluster-default.";

/// Whether `key` may be changed at runtime.
pub fn is_dynamic(key: &str) -> bool {
    DYNAMIC_KEYS.contains(&key)
}

/// Which dynamic level a BROKER resource names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// This broker (resource name = node id).
    Broker,
    /// The cluster-wide default (empty resource name).
    ClusterDefault,
}

/// The dynamic values of both levels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicValues {
    /// Per-broker values.
    pub broker: BTreeMap<String, String>,
    /// Cluster-wide defaults.
    pub cluster_default: BTreeMap<String, String>,
}

impl DynamicValues {
    /// The values of one level.
    pub fn level(&self, level: Level) -> &BTreeMap<String, String> {
        match level {
            Level::Broker => &self.broker,
            Level::ClusterDefault => &self.cluster_default,
        }
    }

    fn level_mut(&mut self, level: Level) -> &mut BTreeMap<String, String> {
        match level {
            Level::Broker => &mut self.broker,
            Level::ClusterDefault => &mut self.cluster_default,
        }
    }

    fn render(&self) -> String {
        let mut s = String::from("# odradek-broker dynamic configs (written by AlterConfigs)\n");
        for (k, v) in &self.cluster_default {
            s.push_str(&format!("{DEFAULT_PREFIX}{k}={v}\n"));
        }
        for (k, v) in &self.broker {
            s.push_str(&format!("{BROKER_PREFIX}{k}={v}\n"));
        }
        s
    }

    /// Parses the file; entries that are no longer valid dynamic keys are skipped with a
    /// warning (a newer broker may have written them).
    fn parse(text: &str) -> Result<DynamicValues> {
        let mut out = DynamicValues::default();
        for (k, v) in crate::config::parse_properties(text)? {
            let (level, key) = if let Some(key) = k.strip_prefix(BROKER_PREFIX) {
                (Level::Broker, key)
            } else if let Some(key) = k.strip_prefix(DEFAULT_PREFIX) {
                (Level::ClusterDefault, key)
            } else {
                tracing::warn!("{FILE}: ignoring `{k}`");
                continue;
            };
            if !is_dynamic(key) {
                tracing::warn!("{FILE}: ignoring `{key}`, not a dynamic key");
                continue;
            }
            out.level_mut(level).insert(key.to_string(), v);
        }
        Ok(out)
    }
}

/// One change of IncrementalAlterConfigs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Set the value.
    Set,
    /// Remove the dynamic value (the next level applies).
    Delete,
    /// Add items to a list value.
    Append,
    /// Remove items from a list value.
    Subtract,
}

/// Checks that `key` is a known, dynamic key: unknown keys are `INVALID_CONFIG`, static ones
/// `INVALID_REQUEST`, each naming the key.
pub fn check_key(key: &str) -> Result<()> {
    if key_def(key).is_none() {
        return Err(Error::kafka(
            ErrorCode::InvalidConfig,
            format!("unknown broker configuration key `{key}`"),
        ));
    }
    if !is_dynamic(key) {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("broker configuration `{key}` cannot be updated dynamically; set it in server.properties"),
        ));
    }
    Ok(())
}

fn list_items(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The dynamic configuration store of a broker.
#[derive(Debug)]
pub struct DynamicConfig {
    path: PathBuf,
    static_config: BrokerConfig,
    state: RwLock<(DynamicValues, BrokerConfig)>,
}

impl DynamicConfig {
    /// Loads `<dir>/dynamic-broker-configs` (if any) over `static_config`. A stored value that
    /// no longer validates is an error naming the key.
    pub fn open(dir: &Path, static_config: BrokerConfig) -> Result<DynamicConfig> {
        let path = dir.join(FILE);
        let values = match std::fs::read_to_string(&path) {
            Ok(text) => DynamicValues::parse(&text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => DynamicValues::default(),
            Err(e) => return Err(e.into()),
        };
        let effective = static_config.with_dynamic(&values.cluster_default, &values.broker)?;
        Ok(DynamicConfig {
            path,
            static_config,
            state: RwLock::new((values, effective)),
        })
    }

    /// The configuration in effect (static values with the dynamic ones applied).
    pub fn effective(&self) -> BrokerConfig {
        self.state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// The configuration from `server.properties` / `--override` only.
    pub fn static_config(&self) -> &BrokerConfig {
        &self.static_config
    }

    /// The dynamic values of both levels.
    pub fn values(&self) -> DynamicValues {
        self.state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Applies `changes` to `level` (every key checked, values validated against the whole
    /// configuration). With `validate_only`, nothing changes. Otherwise the file is replaced
    /// first and the new effective configuration returned, for the caller to apply.
    pub fn alter(
        &self,
        level: Level,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
        validate_only: bool,
    ) -> Result<Option<BrokerConfig>> {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        let mut values = state.0.clone();
        let current = state.1.clone();
        let target = values.level_mut(level);
        if replace_all {
            target.clear();
        }
        for (key, op, value) in changes {
            check_key(key)?;
            match (op, value) {
                (Op::Set, Some(v)) => {
                    target.insert(key.clone(), v.trim().to_string());
                }
                (Op::Delete, _) => {
                    target.remove(key);
                }
                (Op::Append | Op::Subtract, Some(v)) => {
                    let base = target
                        .get(key)
                        .cloned()
                        .unwrap_or_else(|| current.get(key).to_string());
                    let mut items = list_items(&base);
                    for item in list_items(v) {
                        if *op == Op::Append && !items.contains(&item) {
                            items.push(item);
                        } else if *op == Op::Subtract {
                            items.retain(|i| *i != item);
                        }
                    }
                    target.insert(key.clone(), items.join(","));
                }
                _ => {
                    return Err(Error::kafka(
                        ErrorCode::InvalidRequest,
                        format!("missing value for `{key}`"),
                    ))
                }
            }
        }
        let effective = self
            .static_config
            .with_dynamic(&values.cluster_default, &values.broker)
            .map_err(|e| Error::kafka(ErrorCode::InvalidConfig, e.to_string()))?;
        if validate_only {
            return Ok(None);
        }
        if values != state.0 {
            crate::partition::write_meta(&self.path, values.render().as_bytes())?;
        }
        *state = (values, effective.clone());
        Ok(Some(effective))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> (String, Op, Option<String>) {
        (k.to_string(), Op::Set, Some(v.to_string()))
    }

    #[test]
    fn precedence_persistence_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let stat = BrokerConfig::from_entries([("log.retention.ms", "5000")]).unwrap();
        let d = DynamicConfig::open(dir.path(), stat.clone()).unwrap();
        assert_eq!(d.effective().get("log.retention.ms"), "5000");
        d.alter(
            Level::ClusterDefault,
            &[set("log.retention.ms", "6000")],
            false,
            false,
        )
        .unwrap();
        assert_eq!(d.effective().get("log.retention.ms"), "6000");
        d.alter(
            Level::Broker,
            &[set("log.retention.ms", "7000")],
            false,
            false,
        )
        .unwrap();
        assert_eq!(d.effective().get("log.retention.ms"), "7000");
        // validate_only changes nothing.
        d.alter(
            Level::Broker,
            &[set("log.retention.ms", "8000")],
            false,
            true,
        )
        .unwrap();
        assert_eq!(d.effective().get("log.retention.ms"), "7000");
        let again = DynamicConfig::open(dir.path(), stat.clone()).unwrap();
        assert_eq!(again.values(), d.values());
        assert_eq!(again.effective().get("log.retention.ms"), "7000");
        let delete = [("log.retention.ms".to_string(), Op::Delete, None)];
        d.alter(Level::Broker, &delete, false, false).unwrap();
        assert_eq!(d.effective().get("log.retention.ms"), "6000");

        let err = d
            .alter(Level::Broker, &[set("listeners", "x")], false, false)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRequest);
        assert!(err.to_string().contains("listeners"));
        let err = d
            .alter(Level::Broker, &[set("no.such.key", "1")], false, false)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
        let err = d
            .alter(
                Level::Broker,
                &[set("log.retention.ms", "soon")],
                false,
                false,
            )
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
        assert_eq!(d.effective().get("log.retention.ms"), "6000");
    }

    #[test]
    fn lists_and_replace_all() {
        let dir = tempfile::tempdir().unwrap();
        let d = DynamicConfig::open(
            dir.path(),
            BrokerConfig::from_entries(Vec::<(&str, &str)>::new()).unwrap(),
        )
        .unwrap();
        let append = [(
            "log.cleanup.policy".to_string(),
            Op::Append,
            Some("compact".to_string()),
        )];
        d.alter(Level::Broker, &append, false, false).unwrap();
        assert_eq!(d.effective().get("log.cleanup.policy"), "delete,compact");
        d.alter(
            Level::Broker,
            &[set("message.max.bytes", "2000")],
            true,
            false,
        )
        .unwrap();
        assert_eq!(d.effective().get("log.cleanup.policy"), "delete");
        assert_eq!(d.effective().get("message.max.bytes"), "2000");
    }
}
