//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and the broker.

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, ResponseKind,
};
use odradek::ErrorCode;

use super::broker_configs::{alter_broker, describe_broker, dynamic_topic_default_source, op_of};
use super::config_entry::{ConfigEntry, ConfigSource, Described};
use super::context::RequestContext;
use super::group_configs::{alter_group, describe_group};
use super::reply::{error_parts, HandlerResult};
use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::dynamic_config::Op;
use crate::log::LogConfig;
use crate::{Error, Result};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const RESOURCE_GROUP: i8 = 32;

/// Every topic-level config of a topic, with its source (`broker_config`: the effective broker
/// configuration, which tells defaults set dynamically apart).
pub fn topic_config_entries(
    config: &LogConfig,
    overrides: &BTreeMap<String, String>,
    broker_defaults: &LogConfig,
    broker_config: &BrokerConfig,
) -> Vec<ConfigEntry> {
    let kafka_defaults: BTreeMap<&str, String> =
        LogConfig::default().entries().into_iter().collect();
    let broker: BTreeMap<&str, String> = broker_defaults.entries().into_iter().collect();
    config
        .entries()
        .into_iter()
        .map(|(name, value)| {
            let source = if overrides.contains_key(name) {
                ConfigSource::DynamicTopic
            } else if let Some(dynamic) = dynamic_topic_default_source(name, broker_config) {
                dynamic
            } else if broker.get(name) != kafka_defaults.get(name) {
                ConfigSource::StaticBroker
            } else {
                ConfigSource::Default
            };
            ConfigEntry {
                name,
                value,
                source,
            }
        })
        .collect()
}

fn describe_topic(broker: &Broker, name: &str) -> Result<Vec<ConfigEntry>> {
    let topic = broker.topics.get(name).ok_or_else(|| {
        Error::kafka(
            ErrorCode::UnknownTopicOrPartition,
            format!("unknown topic `{name}`"),
        )
    })?;
    let overrides = topic.overrides();
    let config = broker.topics.effective_config(&overrides)?;
    Ok(topic_config_entries(
        &config,
        &overrides,
        &broker.topics.defaults(),
        &broker.dynamic.effective(),
    ))
}

/// Handles DescribeConfigs.
pub fn describe(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: DescribeConfigsRequest,
) -> HandlerResult {
    let results = request
        .resources
        .into_iter()
        .map(|r| {
            let entries = match r.resource_type {
                RESOURCE_TOPIC => describe_topic(broker, &r.resource_name).map(|entries| {
                    entries
                        .into_iter()
                        .map(|e| {
                            // Secrets are reported as sensitive with no value, as Kafka does.
                            let sensitive = crate::config::is_sensitive(e.name);
                            Described {
                                name: e.name.to_string(),
                                value: (!sensitive).then_some(e.value),
                                source: e.source,
                                read_only: false,
                                sensitive,
                                config_type: 0,
                                documentation: None,
                                synonyms: Vec::new(),
                            }
                        })
                        .collect()
                }),
                RESOURCE_BROKER => describe_broker(broker, &r.resource_name),
                RESOURCE_GROUP => describe_group(broker, &r.resource_name),
                other => Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("unsupported resource type {other}"),
                )),
            };
            let result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            match entries {
                Ok(entries) => {
                    let wanted = r.configuration_keys.as_ref();
                    let configs = entries
                        .into_iter()
                        .filter(|e| {
                            wanted.is_none_or(|keys| keys.iter().any(|k| k.as_str() == e.name))
                        })
                        .map(|e| {
                            e.into_result(request.include_synonyms, request.include_documentation)
                        })
                        .collect();
                    result.with_configs(configs)
                }
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    result.with_error_code(code).with_error_message(message)
                }
            }
        })
        .collect();
    Ok(ResponseKind::DescribeConfigs(
        DescribeConfigsResponse::default().with_results(results),
    ))
}

/// Handles AlterConfigs: replaces a topic's whole set of overrides.
pub fn alter(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: AlterConfigsRequest,
) -> HandlerResult {
    let responses = request
        .resources
        .into_iter()
        .map(|r| {
            let outcome = match r.resource_type {
                RESOURCE_TOPIC => {
                    let mut overrides = BTreeMap::new();
                    for c in &r.configs {
                        if let Some(v) = &c.value {
                            overrides.insert(c.name.to_string(), v.to_string());
                        }
                    }
                    broker
                        .topics
                        .set_overrides(&r.resource_name, overrides, request.validate_only)
                }
                RESOURCE_BROKER | RESOURCE_GROUP => {
                    let changes: Vec<(String, Op, Option<String>)> = r
                        .configs
                        .iter()
                        .filter_map(|c| {
                            let v = c.value.as_ref()?;
                            Some((c.name.to_string(), Op::Set, Some(v.to_string())))
                        })
                        .collect();
                    let alter = if r.resource_type == RESOURCE_BROKER {
                        alter_broker
                    } else {
                        alter_group
                    };
                    alter(
                        broker,
                        &r.resource_name,
                        &changes,
                        true,
                        request.validate_only,
                    )
                }
                other => Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("unsupported resource type {other}"),
                )),
            };
            let resp = AlterConfigsResourceResponse::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name);
            match outcome {
                Ok(()) => resp,
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    resp.with_error_code(code).with_error_message(message)
                }
            }
        })
        .collect();
    Ok(ResponseKind::AlterConfigs(
        AlterConfigsResponse::default().with_responses(responses),
    ))
}

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

fn apply_incremental(
    broker: &Broker,
    topic: &str,
    ops: &[(String, i8, Option<String>)],
    validate_only: bool,
) -> Result<()> {
    let overrides = overrides_after(broker, topic, ops)?;
    broker.topics.set_overrides(topic, overrides, validate_only)
}

/// A topic's config overrides after IncrementalAlterConfigs `ops` (SET, DELETE, APPEND,
/// SUBTRACT), validated; nothing is applied.
pub(super) fn overrides_after(
    broker: &Broker,
    topic: &str,
    ops: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>> {
    let current = broker.topics.get(topic).ok_or_else(|| {
        Error::kafka(
            ErrorCode::UnknownTopicOrPartition,
            format!("unknown topic `{topic}`"),
        )
    })?;
    let mut overrides = current.overrides();
    let effective: BTreeMap<&str, String> = broker
        .topics
        .effective_config(&overrides)?
        .entries()
        .into_iter()
        .collect();
    for (name, op, value) in ops {
        let list = |v: &str| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        };
        match (*op, value) {
            (OP_SET, Some(v)) => {
                overrides.insert(name.clone(), v.clone());
            }
            (OP_DELETE, _) => {
                overrides.remove(name);
            }
            (OP_APPEND | OP_SUBTRACT, Some(v)) => {
                let base = overrides
                    .get(name)
                    .cloned()
                    .or_else(|| effective.get(name.as_str()).cloned())
                    .unwrap_or_default();
                let mut items = list(&base);
                for item in list(v) {
                    if *op == OP_APPEND && !items.contains(&item) {
                        items.push(item);
                    } else if *op == OP_SUBTRACT {
                        items.retain(|i| *i != item);
                    }
                }
                overrides.insert(name.clone(), items.join(","));
            }
            _ => {
                return Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("invalid operation {op} or missing value for `{name}`"),
                ))
            }
        }
    }
    broker
        .topics
        .set_overrides(topic, overrides.clone(), true)?;
    Ok(overrides)
}

/// Whether IncrementalAlterConfigs `ops` name a key twice (Kafka refuses the resource).
pub(super) fn names_a_key_twice(ops: &[(String, i8, Option<String>)]) -> bool {
    ops.iter()
        .enumerate()
        .any(|(i, (k, _, _))| ops[..i].iter().any(|(j, _, _)| j == k))
}

/// Handles IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT per key.
pub fn incremental_alter(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: IncrementalAlterConfigsRequest,
) -> HandlerResult {
    let responses = request
        .resources
        .into_iter()
        .map(|r| {
            let ops: Vec<(String, i8, Option<String>)> = r
                .configs
                .iter()
                .map(|c| {
                    (
                        c.name.to_string(),
                        c.config_operation,
                        c.value.as_ref().map(|v| v.to_string()),
                    )
                })
                .collect();
            let duplicate = names_a_key_twice(&ops);
            let outcome = match r.resource_type {
                // Kafka refuses a resource that names a key twice, whatever its type.
                _ if duplicate => Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    "Error due to duplicate config keys",
                )),
                RESOURCE_TOPIC => {
                    apply_incremental(broker, &r.resource_name, &ops, request.validate_only)
                }
                RESOURCE_BROKER | RESOURCE_GROUP => ops
                    .iter()
                    .map(|(k, op, v)| Ok((k.clone(), op_of(*op)?, v.clone())))
                    .collect::<Result<Vec<_>>>()
                    .and_then(|changes| {
                        let alter = if r.resource_type == RESOURCE_BROKER {
                            alter_broker
                        } else {
                            alter_group
                        };
                        alter(
                            broker,
                            &r.resource_name,
                            &changes,
                            false,
                            request.validate_only,
                        )
                    }),
                other => Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("unsupported resource type {other}"),
                )),
            };
            let resp = IncrementalResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name);
            match outcome {
                Ok(()) => resp,
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    resp.with_error_code(code).with_error_message(message)
                }
            }
        })
        .collect();
    Ok(ResponseKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse::default().with_responses(responses),
    ))
}
