//! GROUP config resources (resource type 32, Kafka 4.x): per-group overrides of the group
//! coordinator's settings, set with IncrementalAlterConfigs / AlterConfigs and read with
//! DescribeConfigs, validated as Kafka's `GroupConfig.validate` does, and kept in
//! `<log.dir>/group-configs.json` (replaced atomically; `docs/storage.md`).
//!
//! What is stored: `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`, which the
//! KIP-848 consumer groups read through [`GroupConfigs::settings`] (`Broker::group_config`).
//! Keys for features this broker does not have (share groups, streams groups, server-side
//! assignment batching) pass Kafka's checks first, so a value Kafka refuses gets Kafka's
//! answer, and are then refused by name with INVALID_CONFIG. As in Kafka 4.4, a group's configs
//! outlive the group (DeleteGroups leaves them; measured).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use odradek::ErrorCode;

use crate::config::table::{group_key, group_keys, ConfigType, GroupKey};
use crate::config::validators::{check, parse_value, Value};
use crate::config::BrokerConfig;
use crate::dynamic_config::Op;
use crate::{Error, Result};

const FILE: &str = "group-configs.json";

/// Group keys this broker stores (the others are refused, see [`refusal`]).
pub const SUPPORTED_KEYS: &[&str] = &[
    "consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms",
];

/// Why a group key is refused (after Kafka's own checks pass), if it is.
pub fn refusal(key: &str) -> Option<&'static str> {
    if SUPPORTED_KEYS.contains(&key) {
        None
    } else if key.starts_with("share.") || key.starts_with("errors.deadletterqueue.") {
        Some("odradek-broker has no share groups (KIP-932)")
    } else if key.starts_with("streams.") {
        Some("odradek-broker has no streams groups (KIP-1071)")
    } else {
        Some("odradek-broker's consumer groups have no server-side assignment batching or offload")
    }
}

/// The settings of one group that the group coordinator reads: the group's overrides, else the
/// broker's defaults, clamped to the broker's current bounds as Kafka's `GroupConfig.evaluate`
/// does (bounds may have changed since the value was set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSettings {
    /// `consumer.session.timeout.ms` (broker default `group.consumer.session.timeout.ms`).
    pub consumer_session_timeout_ms: i32,
    /// `consumer.heartbeat.interval.ms` (broker default `group.consumer.heartbeat.interval.ms`).
    pub consumer_heartbeat_interval_ms: i32,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::kafka(ErrorCode::InvalidConfig, message)
}

/// The value a group key has when the group does not set it: its broker synonym's value (the
/// first item of a list synonym, as `streams.assignor.name` takes the first of
/// `group.streams.assignors`), else Kafka's default (`None`: null).
pub fn default_value(key: &GroupKey, broker: &BrokerConfig) -> Option<String> {
    match key.broker_synonym {
        Some(synonym) if !broker.is_null(synonym) => {
            let v = broker.get(synonym);
            let list = crate::config::key_def(synonym).is_some_and(|d| d.ty == ConfigType::List);
            Some(if list && key.ty != ConfigType::List {
                v.split(',').map(str::trim).next().unwrap_or("").to_string()
            } else {
                v.to_string()
            })
        }
        _ => key.default.clone(),
    }
}

fn int(values: &BTreeMap<&str, Value>, key: &str) -> Option<i64> {
    match values.get(key) {
        Some(Value::Int(i)) => Some(*i),
        _ => None,
    }
}

/// Kafka's `GroupConfig.validate` of a group's whole set of overrides against the broker's
/// configuration (INVALID_CONFIG with Kafka's messages), then this broker's refusals.
pub fn validate(props: &BTreeMap<String, String>, broker: &BrokerConfig) -> Result<()> {
    for name in props.keys() {
        if group_key(name).is_none() {
            return Err(invalid(format!("Unknown group config name: {name}")));
        }
    }
    if let Some(tags) = props.get("streams.rack.aware.assignment.tags") {
        let items: Vec<&str> = if tags.trim().is_empty() {
            Vec::new()
        } else {
            tags.trim().split(',').map(str::trim).collect()
        };
        let unique: std::collections::BTreeSet<&str> = items.iter().copied().collect();
        if unique.len() != items.len() {
            return Err(invalid(
                "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
            ));
        }
    }
    let mut values = BTreeMap::new();
    for (name, raw) in props {
        let key =
            group_key(name).ok_or_else(|| invalid(format!("Unknown group config name: {name}")))?;
        let value = check(key.name, key.ty, &key.validator, raw).map_err(invalid)?;
        values.insert(key.name, value);
    }
    let b = |k: &str| broker.long(k);
    let ranges: &[(&str, &str, &str)] = &[
        (
            "consumer.heartbeat.interval.ms",
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
        ),
        (
            "consumer.session.timeout.ms",
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        ),
        (
            "consumer.assignment.interval.ms",
            "group.consumer.min.assignment.interval.ms",
            "group.consumer.max.assignment.interval.ms",
        ),
        (
            "share.heartbeat.interval.ms",
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
        ),
        (
            "share.session.timeout.ms",
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
        ),
        (
            "share.record.lock.duration.ms",
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        ),
        (
            "share.delivery.count.limit",
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        ),
        (
            "share.partition.max.record.locks",
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        ),
        (
            "share.assignment.interval.ms",
            "group.share.min.assignment.interval.ms",
            "group.share.max.assignment.interval.ms",
        ),
        (
            "streams.heartbeat.interval.ms",
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
        ),
        (
            "streams.session.timeout.ms",
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
        ),
    ];
    let range_checks = ranges
        .iter()
        .map(|(k, min, max)| (*k, Some(*min), Some(*max)))
        .chain([
            (
                "streams.num.standby.replicas",
                None,
                Some("group.streams.max.standby.replicas"),
            ),
            (
                "streams.assignment.interval.ms",
                Some("group.streams.min.assignment.interval.ms"),
                Some("group.streams.max.assignment.interval.ms"),
            ),
            (
                "streams.task.offset.interval.ms",
                Some("group.streams.min.task.offset.interval.ms"),
                None,
            ),
            (
                "streams.num.warmup.replicas",
                None,
                Some("group.streams.max.warmup.replicas"),
            ),
        ]);
    for (key, min, max) in range_checks {
        let Some(v) = int(&values, key) else {
            continue;
        };
        match (min.map(b), max.map(b)) {
            (Some(lo), Some(hi)) if v < lo || v > hi => {
                return Err(invalid(format!(
                    "{key} must be in the range {lo} to {hi} inclusive."
                )))
            }
            (None, Some(hi)) if v > hi => {
                return Err(invalid(format!("{key} must be less than or equal to {hi}")))
            }
            (Some(lo), None) if v < lo => {
                return Err(invalid(format!(
                    "{key} must be greater than or equal to {lo}"
                )))
            }
            _ => {}
        }
    }
    if let Some(Value::Str(name)) = values.get("streams.assignor.name") {
        let registered: Vec<&str> = broker
            .get("group.streams.assignors")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if !registered.contains(&name.as_str()) {
            return Err(invalid(format!(
                "streams.assignor.name '{name}' is not a registered task assignor. Registered \
                 assignors are: [{}].",
                registered.join(", ")
            )));
        }
    }
    for (session, hb) in [
        (
            "consumer.session.timeout.ms",
            "consumer.heartbeat.interval.ms",
        ),
        ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
        (
            "streams.session.timeout.ms",
            "streams.heartbeat.interval.ms",
        ),
    ] {
        if !values.contains_key(session) && !values.contains_key(hb) {
            continue;
        }
        let or_default = |k: &str| {
            int(&values, k).unwrap_or_else(|| {
                let key = group_key(k);
                key.and_then(|key| default_value(key, broker))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            })
        };
        if or_default(session) <= or_default(hb) {
            return Err(invalid(format!("{session} must be greater than {hb}")));
        }
    }
    if let Some(Value::Str(topic)) = values.get("errors.deadletterqueue.topic.name") {
        if topic.starts_with("__") {
            return Err(invalid(
                "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
            ));
        }
    }
    for name in props.keys() {
        if let Some(why) = refusal(name) {
            return Err(invalid(format!(
                "group config `{name}` is not supported: {why}"
            )));
        }
    }
    Ok(())
}

/// The durable store of every group's overrides.
#[derive(Debug)]
pub struct GroupConfigs {
    path: PathBuf,
    groups: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
}

impl GroupConfigs {
    /// Opens `<dir>/group-configs.json` (empty when absent).
    pub fn open(dir: &Path) -> Result<GroupConfigs> {
        let path = dir.join(FILE);
        let groups = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::config(path.display().to_string(), format!("unreadable: {e}"))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e.into()),
        };
        Ok(GroupConfigs {
            path,
            groups: RwLock::new(groups),
        })
    }

    /// A group's overrides.
    pub fn overrides(&self, group: &str) -> BTreeMap<String, String> {
        let groups = self.groups.read().unwrap_or_else(|e| e.into_inner());
        groups.get(group).cloned().unwrap_or_default()
    }

    /// The settings the group coordinator uses for `group` (see [`GroupSettings`]).
    pub fn settings(&self, group: &str, broker: &BrokerConfig) -> GroupSettings {
        let overrides = self.overrides(group);
        let value = |key: &str, default: &str, min: &str, max: &str| {
            let v = overrides
                .get(key)
                .and_then(|v| v.trim().parse::<i32>().ok())
                .unwrap_or_else(|| broker.int(default));
            let (lo, hi) = (broker.int(min), broker.int(max));
            if lo <= hi {
                v.clamp(lo, hi)
            } else {
                v
            }
        };
        GroupSettings {
            consumer_session_timeout_ms: value(
                "consumer.session.timeout.ms",
                "group.consumer.session.timeout.ms",
                "group.consumer.min.session.timeout.ms",
                "group.consumer.max.session.timeout.ms",
            ),
            consumer_heartbeat_interval_ms: value(
                "consumer.heartbeat.interval.ms",
                "group.consumer.heartbeat.interval.ms",
                "group.consumer.min.heartbeat.interval.ms",
                "group.consumer.max.heartbeat.interval.ms",
            ),
        }
    }

    /// Applies `changes` to `group` (`replace_all`: AlterConfigs, the given keys become the
    /// whole set), validating the resulting set; with `validate_only` nothing changes.
    /// Otherwise the file is replaced before the change is visible.
    pub fn alter(
        &self,
        group: &str,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
        validate_only: bool,
        broker: &BrokerConfig,
    ) -> Result<()> {
        let mut groups = self.groups.write().unwrap_or_else(|e| e.into_inner());
        let props = Self::plan(&groups, group, changes, replace_all, broker)?;
        if validate_only {
            return Ok(());
        }
        let mut next = groups.clone();
        if props.is_empty() {
            next.remove(group);
        } else {
            next.insert(group.to_string(), props);
        }
        if next != *groups {
            let bytes = serde_json::to_vec_pretty(&next)
                .map_err(|e| Error::config(FILE, format!("cannot encode: {e}")))?;
            crate::partition::write_meta(&self.path, &bytes)?;
            *groups = next;
        }
        Ok(())
    }

    /// The overrides `group` would have after `changes` (validated as [`GroupConfigs::alter`]
    /// does); nothing changes. Cluster mode sends these to the controller.
    pub fn overrides_after(
        &self,
        group: &str,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
        broker: &BrokerConfig,
    ) -> Result<BTreeMap<String, String>> {
        let groups = self.groups.read().unwrap_or_else(|e| e.into_inner());
        Self::plan(&groups, group, changes, replace_all, broker)
    }

    /// Takes every group's overrides from the cluster's metadata (cluster mode: the metadata
    /// log, not the local file, holds them); nothing is written here.
    pub fn follow(&self, all: BTreeMap<String, BTreeMap<String, String>>) {
        *self.groups.write().unwrap_or_else(|e| e.into_inner()) = all;
    }

    /// Whether any group has overrides.
    pub fn is_empty(&self) -> bool {
        self.groups
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// `group`'s overrides after `changes`, validated.
    fn plan(
        groups: &BTreeMap<String, BTreeMap<String, String>>,
        group: &str,
        changes: &[(String, Op, Option<String>)],
        replace_all: bool,
        broker: &BrokerConfig,
    ) -> Result<BTreeMap<String, String>> {
        if group.is_empty() {
            return Err(Error::kafka(
                ErrorCode::InvalidRequest,
                "Default group resources are not allowed.",
            ));
        }
        let mut props = if replace_all {
            BTreeMap::new()
        } else {
            groups.get(group).cloned().unwrap_or_default()
        };
        for (key, op, value) in changes {
            match (op, value) {
                (Op::Set, Some(v)) => {
                    props.insert(key.clone(), v.clone());
                }
                (Op::Delete, _) => {
                    props.remove(key);
                }
                (Op::Append | Op::Subtract, Some(v)) => {
                    let gk = group_key(key)
                        .ok_or_else(|| invalid(format!("Unknown group config name: {key}")))?;
                    if gk.ty != ConfigType::List {
                        return Err(invalid(format!(
                            "Config value append is not allowed for config key: {key}"
                        )));
                    }
                    let base = props
                        .get(key)
                        .cloned()
                        .or_else(|| default_value(gk, broker))
                        .unwrap_or_default();
                    let mut items = match parse_value(ConfigType::List, &base) {
                        Ok(Value::List(items)) => items,
                        _ => Vec::new(),
                    };
                    if let Ok(Value::List(new)) = parse_value(ConfigType::List, v) {
                        for item in new {
                            if *op == Op::Append && !items.contains(&item) {
                                items.push(item);
                            } else if *op == Op::Subtract {
                                items.retain(|i| *i != item);
                            }
                        }
                    }
                    props.insert(key.clone(), items.join(","));
                }
                _ => {
                    return Err(Error::kafka(
                        ErrorCode::InvalidRequest,
                        format!("missing value for `{key}`"),
                    ))
                }
            }
        }
        validate(&props, broker)?;
        Ok(props)
    }
}

/// Every non-internal group key, in Kafka's order (DescribeConfigs lists these).
pub fn described_keys() -> impl Iterator<Item = &'static GroupKey> {
    group_keys().iter().filter(|k| !k.internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker() -> BrokerConfig {
        BrokerConfig::from_entries(Vec::<(&str, &str)>::new()).unwrap()
    }

    fn set(k: &str, v: &str) -> (String, Op, Option<String>) {
        (k.to_string(), Op::Set, Some(v.to_string()))
    }

    fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kafka_checks_and_messages() {
        // Messages measured on Apache Kafka 4.4 with its default broker bounds.
        let b = broker();
        let err = |kv: &[(&str, &str)]| validate(&props(kv), &b).unwrap_err().to_string();
        assert!(validate(&props(&[("consumer.session.timeout.ms", "50000")]), &b).is_ok());
        assert!(err(&[("consumer.session.timeout.ms", "1000")]).contains(
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
        ));
        assert!(err(&[("consumer.session.timeout.ms", "abc")]).contains(
            "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"
        ));
        assert!(err(&[("consumer.session.timeout.ms", "0")]).contains("Value must be at least 1"));
        assert!(
            err(&[("consumer.heartbeat.interval.ms", "16000")]).contains(
                "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
            )
        );
        assert!(err(&[("foo.bar", "1")]).contains("Unknown group config name: foo.bar"));
        assert!(err(&[("share.delivery.count.limit", "20")])
            .contains("share.delivery.count.limit must be in the range 2 to 10 inclusive."));
        assert!(err(&[("streams.num.standby.replicas", "5")])
            .contains("streams.num.standby.replicas must be less than or equal to 2"));
        assert!(err(&[("streams.rack.aware.assignment.tags", "a,a")])
            .contains("must not contain duplicate tag keys."));
        // Values Kafka accepts for features this broker does not have: refused by name.
        let e = err(&[("share.auto.offset.reset", "earliest")]);
        assert!(
            e.contains("share.auto.offset.reset") && e.contains("share groups"),
            "{e}"
        );
        let e = err(&[("streams.num.standby.replicas", "1")]);
        assert!(e.contains("streams groups"), "{e}");
        let e = validate(&props(&[("consumer.assignor.offload.enable", "false")]), &b).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidConfig);
    }

    #[test]
    fn session_must_exceed_heartbeat() {
        let b = BrokerConfig::from_entries([
            ("group.consumer.min.session.timeout.ms", "1000"),
            ("group.consumer.max.heartbeat.interval.ms", "60000"),
        ])
        .unwrap();
        let e = validate(&props(&[("consumer.session.timeout.ms", "5000")]), &b).unwrap_err();
        assert!(e.to_string().contains(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        ));
        assert!(validate(&props(&[("consumer.session.timeout.ms", "5001")]), &b).is_ok());
    }

    #[test]
    fn store_persists_deletes_and_validates_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker();
        let store = GroupConfigs::open(dir.path()).unwrap();
        let defaults = store.settings("g", &b);
        assert_eq!(defaults.consumer_session_timeout_ms, 45_000);
        assert_eq!(defaults.consumer_heartbeat_interval_ms, 5_000);
        store
            .alter(
                "g",
                &[set("consumer.session.timeout.ms", "50000")],
                false,
                true,
                &b,
            )
            .unwrap();
        assert!(
            store.overrides("g").is_empty(),
            "validate_only changes nothing"
        );
        store
            .alter(
                "g",
                &[set("consumer.session.timeout.ms", "50000")],
                false,
                false,
                &b,
            )
            .unwrap();
        let again = GroupConfigs::open(dir.path()).unwrap();
        assert_eq!(again.settings("g", &b).consumer_session_timeout_ms, 50_000);
        assert_eq!(again.settings("other", &b), defaults);
        let bad = store.alter(
            "g",
            &[set("consumer.session.timeout.ms", "x")],
            false,
            false,
            &b,
        );
        assert_eq!(bad.unwrap_err().code(), ErrorCode::InvalidConfig);
        let empty = store.alter(
            "",
            &[set("consumer.session.timeout.ms", "50000")],
            false,
            false,
            &b,
        );
        assert_eq!(empty.unwrap_err().code(), ErrorCode::InvalidRequest);
        let delete = [("consumer.session.timeout.ms".to_string(), Op::Delete, None)];
        store.alter("g", &delete, false, false, &b).unwrap();
        assert!(GroupConfigs::open(dir.path())
            .unwrap()
            .overrides("g")
            .is_empty());
    }

    #[test]
    fn settings_clamp_to_the_current_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let store = GroupConfigs::open(dir.path()).unwrap();
        store
            .alter(
                "g",
                &[set("consumer.session.timeout.ms", "59000")],
                false,
                false,
                &broker(),
            )
            .unwrap();
        let tighter =
            BrokerConfig::from_entries([("group.consumer.max.session.timeout.ms", "50000")])
                .unwrap();
        assert_eq!(
            store.settings("g", &tighter).consumer_session_timeout_ms,
            50_000
        );
    }

    #[test]
    fn defaults_follow_broker_synonyms() {
        let b =
            BrokerConfig::from_entries([("group.consumer.session.timeout.ms", "50000")]).unwrap();
        let k = group_key("consumer.session.timeout.ms").unwrap();
        assert_eq!(default_value(k, &b).as_deref(), Some("50000"));
        let k = group_key("streams.assignor.name").unwrap();
        assert_eq!(default_value(k, &b).as_deref(), Some("sticky"));
        let k = group_key("share.auto.offset.reset").unwrap();
        assert_eq!(default_value(k, &b).as_deref(), Some("latest"));
    }
}
