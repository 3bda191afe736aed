//! The BROKER resource of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: sources and
//! synonyms of every broker key, and dynamic changes (`crate::dynamic_config`).

use odradek::ErrorCode;

use super::config_entry::{ConfigSource, Described};
use crate::broker::Broker;
use crate::config::keys::{all_keys, documentation};
use crate::config::{BrokerConfig, Source};
use crate::dynamic_config::{is_read_only, Level, Op};
use crate::{Error, Result};

/// Broker keys that set the default of a topic key (Kafka's synonyms), highest priority first.
pub(crate) const TOPIC_SYNONYMS: &[(&str, &[&str])] = &[
    ("segment.bytes", &["log.segment.bytes"]),
    ("segment.ms", &["log.roll.ms", "log.roll.hours"]),
    ("segment.index.bytes", &["log.index.size.max.bytes"]),
    ("index.interval.bytes", &["log.index.interval.bytes"]),
    (
        "retention.ms",
        &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
    ),
    ("retention.bytes", &["log.retention.bytes"]),
    ("cleanup.policy", &["log.cleanup.policy"]),
    ("flush.messages", &["log.flush.interval.messages"]),
    ("flush.ms", &["log.flush.interval.ms"]),
    ("max.message.bytes", &["message.max.bytes"]),
    ("message.timestamp.type", &["log.message.timestamp.type"]),
    (
        "message.timestamp.before.max.ms",
        &["log.message.timestamp.before.max.ms"],
    ),
    (
        "message.timestamp.after.max.ms",
        &["log.message.timestamp.after.max.ms"],
    ),
    ("delete.retention.ms", &["log.cleaner.delete.retention.ms"]),
    (
        "min.compaction.lag.ms",
        &["log.cleaner.min.compaction.lag.ms"],
    ),
    (
        "max.compaction.lag.ms",
        &["log.cleaner.max.compaction.lag.ms"],
    ),
    (
        "min.cleanable.dirty.ratio",
        &["log.cleaner.min.cleanable.ratio"],
    ),
    ("file.delete.delay.ms", &["log.segment.delete.delay.ms"]),
    ("compression.type", &["compression.type"]),
];

/// The dynamic source of a topic key's broker-level default, if one of its synonyms was set
/// dynamically.
pub(crate) fn dynamic_topic_default_source(
    topic_key: &str,
    config: &BrokerConfig,
) -> Option<ConfigSource> {
    let (_, keys) = TOPIC_SYNONYMS.iter().find(|(k, _)| *k == topic_key)?;
    let sources: Vec<Source> = keys
        .iter()
        .filter_map(|k| config.entry(k).map(|(_, s)| s))
        .collect();
    if sources.contains(&Source::DynamicBroker) {
        Some(ConfigSource::DynamicBroker)
    } else if sources.contains(&Source::DynamicDefault) {
        Some(ConfigSource::DynamicDefaultBroker)
    } else {
        None
    }
}

/// The DescribeConfigs source of a broker value's [`Source`].
pub(crate) fn protocol_source(source: Source) -> ConfigSource {
    match source {
        Source::Default => ConfigSource::Default,
        Source::Static => ConfigSource::StaticBroker,
        Source::DynamicDefault => ConfigSource::DynamicDefaultBroker,
        Source::DynamicBroker => ConfigSource::DynamicBroker,
    }
}

/// Which level a BROKER resource name addresses: empty = cluster-wide default, this node's id
/// = this broker.
pub(crate) fn level_of(broker: &Broker, name: &str) -> Result<Level> {
    if name.is_empty() {
        Ok(Level::ClusterDefault)
    } else if name == broker.node_id.to_string() {
        Ok(Level::Broker)
    } else {
        Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!(
                "unexpected broker id {name}, this is broker {}",
                broker.node_id
            ),
        ))
    }
}

/// The BROKER resource as Kafka describes it: every key of Kafka's broker `ConfigDef` that is
/// not internal (null values included), plus any other key that is set; Kafka's type, read-only
/// flag and sensitivity; sources and synonyms (every level that sets the key, highest
/// precedence first). `documentation` says what this broker does with the key.
pub(crate) fn describe_broker(broker: &Broker, name: &str) -> Result<Vec<Described>> {
    level_of(broker, name)?;
    let effective = broker.dynamic.effective();
    let values = broker.dynamic.values();
    let static_config = broker.dynamic.static_config();
    Ok(all_keys()
        .iter()
        .filter(|def| def.described || effective.is_set(def.name))
        .filter_map(|def| {
            let key = def.name;
            let (value, source) = effective.entry(key)?;
            let null = effective.is_null(key);
            let sensitive = def.sensitive();
            let shown = |v: &str| (!sensitive).then(|| v.to_string());
            let synonyms = if null {
                Vec::new()
            } else {
                key_synonyms(&values, static_config, def)
            };
            Some(Described {
                name: key.to_string(),
                value: if null { None } else { shown(value) },
                source: protocol_source(source),
                read_only: is_read_only(key),
                sensitive,
                config_type: def.ty.protocol_code(),
                documentation: Some(documentation(def)),
                synonyms,
            })
        })
        .collect())
}

/// The synonyms of broker key `def` as Kafka lists them: every level that sets it, highest
/// precedence first (this broker's dynamic value, the cluster-wide default, the static config),
/// then Kafka's default; values hidden for a sensitive key.
pub(crate) fn key_synonyms(
    values: &crate::dynamic_config::DynamicValues,
    static_config: &crate::config::BrokerConfig,
    def: &crate::config::KeyDef,
) -> Vec<kafka_protocol::messages::describe_configs_response::DescribeConfigsSynonym> {
    let key = def.name;
    let shown = |v: &str| (!def.sensitive()).then(|| v.to_string());
    let mut synonyms = Vec::new();
    let mut add = |v: &str, s: ConfigSource| {
        let v = shown(v);
        synonyms.push(Described::synonym(key, v.as_deref(), s));
    };
    if let Some(v) = values.broker.get(key) {
        add(v, ConfigSource::DynamicBroker);
    }
    if let Some(v) = values.cluster_default.get(key) {
        add(v, ConfigSource::DynamicDefaultBroker);
    }
    if let Some((v, Source::Static)) = static_config.entry(key) {
        add(v, ConfigSource::StaticBroker);
    }
    if let Some(d) = &def.default {
        add(d, ConfigSource::Default);
    }
    synonyms
}

/// Applies dynamic changes to the level `name` addresses and, unless `validate_only`, to the
/// running broker. `replace_all` (AlterConfigs): the given keys become the level's whole set.
pub(crate) fn alter_broker(
    broker: &Broker,
    name: &str,
    changes: &[(String, Op, Option<String>)],
    replace_all: bool,
    validate_only: bool,
) -> Result<()> {
    let level = level_of(broker, name)?;
    if let Some(effective) = broker
        .dynamic
        .alter(level, changes, replace_all, validate_only)?
    {
        broker.apply_dynamic(&effective)?;
        tracing::info!(resource = name, "dynamic broker configs changed");
    }
    Ok(())
}

/// IncrementalAlterConfigs' operation code.
pub(crate) fn op_of(code: i8) -> Result<Op> {
    match code {
        0 => Ok(Op::Set),
        1 => Ok(Op::Delete),
        2 => Ok(Op::Append),
        3 => Ok(Op::Subtract),
        other => Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("invalid config operation {other}"),
        )),
    }
}
