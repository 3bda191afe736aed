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
//! Kafka keeps these values in its metadata log, and so does cluster mode (the image's `Config`
//! records reach [`DynamicConfig::follow`]); a single-node broker keeps them in
//! `<log.dir>/dynamic-broker-configs`, a properties file replaced atomically (temporary file,
//! fsync, rename, directory fsync), one `broker.<key>=<value>` or `cluster-default.<key>=<value>`
//! line per value (documented in `docs/storage.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use odradek::ErrorCode;

use crate::config::table::UpdateMode;
use crate::config::{kafka_check, key_def, refusal, BrokerConfig, Status};
use crate::{Error, Result};

/// Honoured keys this broker applies at runtime: the broker-level topic defaults (`log.*`
/// synonyms of topic configs, `message.max.bytes`, `compression.type`) and the log cleaner's
/// settings, plus `num.recovery.threads.per.data.dir` (used at shutdown and the next start)
/// and the replication throttle rates.
/// Every one is dynamic in Kafka too (a unit test checks it). The other keys Kafka lets change
/// at runtime are stored and described when they are not acted on anyway
/// ([`Status::NotApplicable`]); honoured keys outside this list are refused at runtime.
pub const DYNAMIC_KEYS: &[&str] = &[
    "log.segment.bytes",
    "log.roll.ms",
    "log.retention.ms",
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
    "log.cleaner.backoff.ms",
    "message.max.bytes",
    "compression.type",
    "num.recovery.threads.per.data.dir",
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
];

const FILE: &str = "dynamic-broker-configs";
const BROKER_PREFIX: &str = "broker.";
const DEFAULT_PREFIX: &str = "cluster-default.";

/// Whether `key` may be changed at runtime on this broker (at some level): a key Kafka lets
/// change that is either applied here ([`DYNAMIC_KEYS`]) or not acted on at all.
pub fn is_dynamic(key: &str) -> bool {
    key_def(key).is_some_and(|d| {
        d.update != UpdateMode::ReadOnly
            && (DYNAMIC_KEYS.contains(&d.name) || !matches!(d.status, Status::Honoured))
    })
}

/// Whether DescribeConfigs reports `key` read-only: Kafka's flag (a key Kafka lets change but
/// this broker applies only at startup is refused by [`check_change`], naming it).
pub fn is_read_only(key: &str) -> bool {
    key_def(key).is_none_or(|d| d.update == UpdateMode::ReadOnly)
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
            if let Err(e) = check_change(key, Some(&v), level) {
                tracing::warn!("{FILE}: ignoring `{key}`: {e}");
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

/// Checks that `key` may be changed at `level` to `value` (`None`: deleted), in Kafka's order:
/// read-only keys (INVALID_REQUEST), then the value's type and validator (INVALID_REQUEST with
/// Kafka's message), then per-broker keys at the cluster-wide level (INVALID_REQUEST). Then
/// this broker's own refusals: an unknown key is INVALID_CONFIG (Kafka stores any name; nothing
/// here would read it), an honoured key this broker applies only at startup INVALID_REQUEST, a
/// non-default value of a refused key INVALID_CONFIG.
pub fn check_change(key: &str, value: Option<&str>, level: Level) -> Result<()> {
    let def = key_def(key).ok_or_else(|| {
        Error::kafka(
            ErrorCode::InvalidConfig,
            format!("unknown broker configuration key `{key}`"),
        )
    })?;
    if def.update == UpdateMode::ReadOnly {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("Cannot update these configs dynamically: [{key}]"),
        ));
    }
    if let Some(v) = value {
        kafka_check(def, v).map_err(|m| Error::kafka(ErrorCode::InvalidRequest, m))?;
    }
    if level == Level::ClusterDefault && def.update == UpdateMode::PerBroker {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!(
                "Cannot update these configs at default cluster level, broker id must be \
                 specified: [{key}]"
            ),
        ));
    }
    if !is_dynamic(key) {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!(
                "odradek-broker applies `{key}` only at startup: set it in server.properties or \
                 with --override"
            ),
        ));
    }
    match value.and_then(|v| refusal(def, v)) {
        Some(m) => Err(Error::kafka(ErrorCode::InvalidConfig, m)),
        None => Ok(()),
    }
}

/// Kafka's checks of a dynamic change against the configuration in effect (`current`), beyond
/// the per-key validators: thread pools may at most halve or double at once
/// (`DynamicThreadPool`), and the cleaner needs 1 MiB of dedupe buffer per thread
/// (`LogCleaner.validateReconfiguration`). Kafka's other reconfiguration checks (listeners,
/// keystores, connection quotas) concern keys this broker does not change at runtime.
fn check_reconfiguration(current: &BrokerConfig, next: &BrokerConfig) -> Result<()> {
    const POOLS: &[&str] = &[
        "num.io.threads",
        "num.network.threads",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "background.threads",
    ];
    for key in POOLS {
        let (old, new) = (current.long(key), next.long(key));
        if old == new {
            continue;
        }
        let bound = if new < old {
            (new < old / 2).then(|| format!("at least half the current value {old}"))
        } else {
            (new > old * 2).then(|| format!("at most double the current value {old}"))
        };
        if let Some(bound) = bound {
            return Err(Error::kafka(
                ErrorCode::InvalidRequest,
                format!(
                    "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread \
                     count update validation failed for {key}={new}, value should be {bound} for \
                     configuration Invalid dynamic configuration"
                ),
            ));
        }
    }
    let threads = next.long("log.cleaner.threads").max(1);
    if next.long("log.cleaner.dedupe.buffer.size") / threads < 1024 * 1024 {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner \
             thread.",
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
        let (values, effective) = self.plan(&state, level, changes, replace_all)?;
        if validate_only {
            return Ok(None);
        }
        if values != state.0 {
            crate::partition::write_meta(&self.path, values.render().as_bytes())?;
        }
        *state = (values, effective.clone());
        Ok(Some(effective))
    }

    /// The values `level` would hold after `changes` (validated as [`DynamicConfig::alter`]
    /// does); nothing changes. Cluster mode sends these to the controller.
    pub fn values_after(
        &self,
        level: Level,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
    ) -> Result<BTreeMap<String, String>> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let (values, _) = self.plan(&state, level, changes, replace_all)?;
        Ok(values.level(level).clone())
    }

    /// Takes both levels' values from the cluster's metadata (cluster mode, where the metadata
    /// log and not the local file holds them): nothing is written here. The new effective
    /// configuration, for the caller to apply, if anything changed; an error (the values kept)
    /// when they do not validate against this broker's static configuration.
    pub fn follow(&self, values: DynamicValues) -> Result<Option<BrokerConfig>> {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if values == state.0 {
            return Ok(None);
        }
        let effective = self
            .static_config
            .with_dynamic(&values.cluster_default, &values.broker)?;
        *state = (values, effective.clone());
        Ok(Some(effective))
    }

    /// The values and effective configuration after `changes` to `level`, every key checked
    /// and the result validated against the configuration in `state`.
    fn plan(
        &self,
        state: &(DynamicValues, BrokerConfig),
        level: Level,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
    ) -> Result<(DynamicValues, BrokerConfig)> {
        let mut values = state.0.clone();
        let current = &state.1;
        let target = values.level_mut(level);
        if replace_all {
            target.clear();
        }
        for (key, op, value) in changes {
            let new = match op {
                Op::Set => value.as_deref(),
                _ => None,
            };
            check_change(key, new, level)?;
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
        for (key, value) in values.level(level) {
            if changes.iter().any(|(k, op, _)| k == key && *op != Op::Set) {
                check_change(key, Some(value), level)?;
            }
        }
        let effective = self
            .static_config
            .with_dynamic(&values.cluster_default, &values.broker)
            .map_err(|e| match e {
                Error::Config { message, .. } => Error::kafka(ErrorCode::InvalidRequest, message),
                other => other,
            })?;
        check_reconfiguration(current, &effective)?;
        Ok((values, effective))
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
        // Kafka answers INVALID_REQUEST for a bad value on the BROKER resource (measured).
        assert_eq!(err.code(), ErrorCode::InvalidRequest);
        assert!(err
            .to_string()
            .contains("Invalid value soon for configuration log.retention.ms"));
        assert_eq!(d.effective().get("log.retention.ms"), "6000");
    }

    #[test]
    fn kafka_levels_modes_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let stat = BrokerConfig::from_entries(Vec::<(&str, &str)>::new()).unwrap();
        let d = DynamicConfig::open(dir.path(), stat.clone()).unwrap();
        let code = |level, k: &str, v: &str| {
            d.alter(level, &[set(k, v)], false, true)
                .map(|_| ())
                .map_err(|e| e.code())
        };
        // Accepted, not acted on: stored per broker, refused as a cluster-wide default.
        let relogin = "sasl.kerberos.min.time.before.relogin";
        assert_eq!(code(Level::Broker, relogin, "1000"), Ok(()));
        assert_eq!(
            code(Level::ClusterDefault, relogin, "1000"),
            Err(ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(Level::Broker, "num.partitions", "3"),
            Err(ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(Level::Broker, "background.threads", "0"),
            Err(ErrorCode::InvalidRequest)
        );
        // Thread pools may at most halve or double at once (Kafka's DynamicThreadPool).
        assert_eq!(
            code(Level::Broker, "num.io.threads", "3"),
            Err(ErrorCode::InvalidRequest)
        );
        assert_eq!(code(Level::Broker, "num.io.threads", "4"), Ok(()));
        assert_eq!(
            code(Level::Broker, "log.cleaner.threads", "1000"),
            Err(ErrorCode::InvalidRequest)
        );
        // Refused unless Kafka's default.
        assert_eq!(
            code(Level::Broker, "max.connection.creation.rate", "10"),
            Err(ErrorCode::InvalidConfig)
        );
        assert_eq!(
            code(Level::Broker, "max.connection.creation.rate", "2147483647"),
            Ok(())
        );
        // Honoured at startup only: refused at runtime, naming where to set it.
        assert_eq!(
            code(Level::Broker, "max.connections.per.ip", "10"),
            Err(ErrorCode::InvalidRequest)
        );
        d.alter(Level::Broker, &[set(relogin, "1234")], false, false)
            .unwrap();
        let again = DynamicConfig::open(dir.path(), stat).unwrap();
        assert_eq!(again.effective().get(relogin), "1234");
    }

    #[test]
    fn runtime_keys_are_dynamic_in_kafka_and_honoured() {
        for key in DYNAMIC_KEYS {
            let def = key_def(key).unwrap();
            assert_ne!(def.update, UpdateMode::ReadOnly, "{key}");
            assert_eq!(def.status, Status::Honoured, "{key}");
        }
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
