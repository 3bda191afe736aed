//! The GROUP resource (type 32) of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs,
//! over `crate::group_config`.

use odradek::ErrorCode;

use super::config_entry::{ConfigSource, Described};
use crate::broker::Broker;
use crate::config::broker_config::Source;
use crate::dynamic_config::Op;
use crate::group_config::{default_value, described_keys, refusal};
use crate::{Error, Result};

/// Every non-internal group key as Kafka describes it: the group's value (source GROUP_CONFIG)
/// or the default (its broker synonym's value, with that value's source: DEFAULT_CONFIG, or
/// STATIC_BROKER_CONFIG / a dynamic source when the broker key is set), synonyms naming the
/// group value and the broker key the default comes from.
pub(crate) fn describe_group(broker: &Broker, name: &str) -> Result<Vec<Described>> {
    if name.is_empty() {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            "Group name must not be empty",
        ));
    }
    let config = broker.dynamic.effective();
    let values = broker.dynamic.values();
    let static_config = broker.dynamic.static_config();
    let overrides = broker.group_configs.overrides(name);
    Ok(described_keys()
        .map(|key| {
            let default = default_value(key, &config);
            let broker_key = key.broker_synonym.unwrap_or(key.name);
            let default_source = super::broker_configs::protocol_source(
                config.entry(broker_key).map_or(Source::Default, |(_, s)| s),
            );
            let set = overrides.get(key.name);
            let mut synonyms = Vec::new();
            if let Some(v) = set {
                synonyms.push(Described::synonym(key.name, Some(v), ConfigSource::Group));
            }
            // The broker key's own synonyms, as Kafka lists them (set levels, then its default).
            match (crate::config::key_def(broker_key), &default) {
                (Some(def), Some(_)) => synonyms.extend(super::broker_configs::key_synonyms(
                    &values,
                    static_config,
                    def,
                )),
                (None, Some(d)) => {
                    synonyms.push(Described::synonym(broker_key, Some(d), default_source))
                }
                _ => {}
            }
            let documentation = match refusal(key.name) {
                None => "odradek-broker: stored; read by the consumer group coordinator.".into(),
                Some(why) => format!("odradek-broker: refused: {why}."),
            };
            Described {
                name: key.name.to_string(),
                value: set.cloned().or(default),
                source: if set.is_some() {
                    ConfigSource::Group
                } else {
                    default_source
                },
                read_only: false,
                sensitive: false,
                config_type: key.ty.protocol_code(),
                documentation: Some(documentation),
                synonyms,
            }
        })
        .collect())
}

/// Changes a group's configs (`replace_all`: AlterConfigs).
pub(crate) fn alter_group(
    broker: &Broker,
    name: &str,
    changes: &[(String, Op, Option<String>)],
    replace_all: bool,
    validate_only: bool,
) -> Result<()> {
    broker.group_configs.alter(
        name,
        changes,
        replace_all,
        validate_only,
        &broker.dynamic.effective(),
    )
}
