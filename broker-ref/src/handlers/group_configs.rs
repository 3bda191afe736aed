//! The GROUP resource (type 32) of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs,
//! over `crate::group_config`.

use odradek::ErrorCode;

use super::config_entry::{ConfigSource, Described};
use crate::broker::Broker;
use crate::dynamic_config::Op;
use crate::group_config::{default_value, described_keys, refusal};
use crate::{Error, Result};

/// Every non-internal group key as Kafka describes it: the group's value (source GROUP_CONFIG)
/// or the default (its broker synonym's value, source DEFAULT_CONFIG), synonyms naming the
/// group value and the broker key the default comes from.
pub(crate) fn describe_group(broker: &Broker, name: &str) -> Result<Vec<Described>> {
    if name.is_empty() {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            "Group name must not be empty",
        ));
    }
    let config = broker.dynamic.effective();
    let overrides = broker.group_configs.overrides(name);
    Ok(described_keys()
        .map(|key| {
            let default = default_value(key, &config);
            let set = overrides.get(key.name);
            let mut synonyms = Vec::new();
            if let Some(v) = set {
                synonyms.push(Described::synonym(key.name, Some(v), ConfigSource::Group));
            }
            if default.is_some() {
                synonyms.push(Described::synonym(
                    key.broker_synonym.unwrap_or(key.name),
                    default.as_deref(),
                    ConfigSource::Default,
                ));
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
                    ConfigSource::Default
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
