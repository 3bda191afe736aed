//! Apache Kafka's own config definitions, as data: `kafka_broker_keys.tsv` (every key of Kafka
//! 4.4's broker `ConfigDef`, plus the replication throttles only `DynamicConfig.Broker` defines)
//! and `kafka_group_keys.tsv` (`GroupConfig`'s keys). Both are generated from Kafka's jars by
//! `broker-ref/tools/dump_kafka_configs.sh` and compiled in; this module parses them once.

use std::sync::LazyLock;

pub use super::types::ConfigType;
use super::validators::Validator;

/// How Kafka lets a broker key change at runtime (`DynamicBrokerConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Only in `server.properties`.
    ReadOnly,
    /// Per broker only (resource name = broker id), never as the cluster-wide default.
    PerBroker,
    /// Per broker or as the cluster-wide default.
    ClusterWide,
}

/// One key of Kafka's broker config definition.
#[derive(Debug, Clone)]
pub struct KafkaKey {
    /// Property name.
    pub name: &'static str,
    /// Kafka's type.
    pub ty: ConfigType,
    /// Kafka's default as text (`None`: null).
    pub default: Option<String>,
    /// Kafka has no default: the key must be set (`node.id`, `process.roles`, ...).
    pub required: bool,
    /// Kafka's validator.
    pub validator: Validator,
    /// Dynamic update mode.
    pub update: UpdateMode,
    /// Kafka marks it internal (DescribeConfigs leaves it out).
    pub internal: bool,
    /// In KafkaConfig's `ConfigDef` (DescribeConfigs lists it when not internal); `false` for
    /// the keys only `DynamicConfig.Broker` defines.
    pub in_config_def: bool,
}

/// One key of Kafka's `GroupConfig`.
#[derive(Debug, Clone)]
pub struct GroupKey {
    /// Property name.
    pub name: &'static str,
    /// Kafka's type.
    pub ty: ConfigType,
    /// Kafka's default as text (`None`: null).
    pub default: Option<String>,
    /// Kafka's validator.
    pub validator: Validator,
    /// The broker key whose value is the group key's default (`GroupConfig.brokerSynonym`).
    pub broker_synonym: Option<&'static str>,
    /// Kafka marks it internal (DescribeConfigs leaves it out).
    pub internal: bool,
}

const BROKER_TSV: &str = include_str!("kafka_broker_keys.tsv");
const GROUP_TSV: &str = include_str!("kafka_group_keys.tsv");

fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn default_of(field: &str) -> (Option<String>, bool) {
    match field {
        "<required>" => (None, true),
        "<null>" => (None, false),
        other => (Some(unescape(other)), false),
    }
}

fn rows(text: &'static str) -> impl Iterator<Item = (usize, Vec<&'static str>)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.split('\t').collect()))
}

/// Parses the broker table; an error names the line (the table is generated, so this only fails
/// for a hand-edited or truncated file, which the unit tests catch).
pub fn parse_broker_table(text: &'static str) -> Result<Vec<KafkaKey>, String> {
    rows(text)
        .map(|(line, f)| {
            let [name, ty, default, validator, update, internal, defined] = f[..] else {
                return Err(format!("line {line}: expected 7 fields, found {}", f.len()));
            };
            let ty = ConfigType::parse(ty).ok_or_else(|| format!("line {line}: type {ty}"))?;
            let update = match update {
                "read-only" => UpdateMode::ReadOnly,
                "per-broker" => UpdateMode::PerBroker,
                "cluster-wide" => UpdateMode::ClusterWide,
                other => return Err(format!("line {line}: update mode {other}")),
            };
            let (default, required) = default_of(default);
            Ok(KafkaKey {
                name,
                ty,
                default,
                required,
                validator: Validator::parse(&unescape(validator), ty),
                update,
                internal: internal == "true",
                in_config_def: defined == "config",
            })
        })
        .collect()
}

/// Parses the group table (see [`parse_broker_table`]).
pub fn parse_group_table(text: &'static str) -> Result<Vec<GroupKey>, String> {
    rows(text)
        .map(|(line, f)| {
            let [name, ty, default, validator, synonym, internal] = f[..] else {
                return Err(format!("line {line}: expected 6 fields, found {}", f.len()));
            };
            let ty = ConfigType::parse(ty).ok_or_else(|| format!("line {line}: type {ty}"))?;
            Ok(GroupKey {
                name,
                ty,
                default: default_of(default).0,
                validator: Validator::parse(&unescape(validator), ty),
                broker_synonym: (!synonym.is_empty()).then_some(synonym),
                internal: internal == "true",
            })
        })
        .collect()
}

static BROKER_KEYS: LazyLock<Vec<KafkaKey>> = LazyLock::new(|| {
    // The table is compiled in and checked by `tables_parse`; failing here is a build defect.
    parse_broker_table(BROKER_TSV).expect("kafka_broker_keys.tsv is well-formed")
});

static GROUP_KEYS: LazyLock<Vec<GroupKey>> =
    LazyLock::new(|| parse_group_table(GROUP_TSV).expect("kafka_group_keys.tsv is well-formed"));

/// Every key of Kafka's broker config table, sorted by name.
pub fn broker_keys() -> &'static [KafkaKey] {
    &BROKER_KEYS
}

/// A key of Kafka's broker config table.
pub fn kafka_key(name: &str) -> Option<&'static KafkaKey> {
    let keys = broker_keys();
    keys.binary_search_by(|k| k.name.cmp(name))
        .ok()
        .map(|i| &keys[i])
}

/// Every key of Kafka's `GroupConfig`, sorted by name.
pub fn group_keys() -> &'static [GroupKey] {
    &GROUP_KEYS
}

/// A key of Kafka's `GroupConfig`.
pub fn group_key(name: &str) -> Option<&'static GroupKey> {
    group_keys().iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_parse() {
        let broker = parse_broker_table(BROKER_TSV).unwrap();
        assert!(broker.len() > 350, "{}", broker.len());
        assert!(broker.windows(2).all(|w| w[0].name < w[1].name), "sorted");
        let group = parse_group_table(GROUP_TSV).unwrap();
        assert!(group.len() > 20);
        let k = kafka_key("sasl.kerberos.min.time.before.relogin").unwrap();
        assert_eq!(k.ty, ConfigType::Long);
        assert_eq!(k.update, UpdateMode::PerBroker);
        assert_eq!(k.default.as_deref(), Some("60000"));
        assert!(kafka_key("node.id").unwrap().required);
        assert_eq!(kafka_key("log.retention.ms").unwrap().default, None);
        assert!(
            !kafka_key("leader.replication.throttled.rate")
                .unwrap()
                .in_config_def
        );
        let g = group_key("consumer.session.timeout.ms").unwrap();
        assert_eq!(g.broker_synonym, Some("group.consumer.session.timeout.ms"));
    }

    #[test]
    fn every_validator_in_the_tables_is_implemented() {
        for k in broker_keys() {
            assert!(
                !matches!(k.validator, Validator::Unrecognised(_)),
                "{}: {:?}",
                k.name,
                k.validator
            );
        }
        for k in group_keys() {
            assert!(
                !matches!(k.validator, Validator::Unrecognised(_)),
                "{}: {:?}",
                k.name,
                k.validator
            );
        }
    }

    #[test]
    fn bad_rows_are_errors() {
        assert!(parse_broker_table("a\tINT\t1\n").is_err());
        assert!(parse_broker_table("a\tNUMBER\t1\t\tread-only\tfalse\tconfig\n").is_err());
        assert!(parse_group_table("a\tINT\t1\t\t\n").is_err());
        assert_eq!(unescape(r"a\tb\\c\n"), "a\tb\\c\n");
    }
}
