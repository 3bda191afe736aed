//! Admin requests a cluster broker forwards to the active controller (as Kafka's brokers do):
//! CreateTopics (also for Metadata's auto-creation), DeleteTopics and CreatePartitions. The
//! broker authorizes them first (`authorize.rs`), forwards, retries while the controller moves
//! (NOT_CONTROLLER, a lost connection) until the request's timeout, and answers once its own
//! metadata has the change, so the client's next Metadata to this broker sees it.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::Request;
use odradek::protocol::Throttled;
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::cluster::ClusterNode;
use crate::{Error, Result};

/// Sends `request` to the active controller, retrying while there is none or it moved, until
/// `timeout`. `retry` says whether an answer is only a "not the controller".
pub(super) async fn forward<R>(
    node: &ClusterNode,
    request: &R,
    timeout: Duration,
    retry: impl Fn(&R::Response) -> bool,
) -> Result<R::Response>
where
    R: Request<Response: Throttled>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let attempt = match node.quorum.status().leader {
            Some(controller) => node.peers.call(controller, request).await,
            None => Err(Error::kafka(
                ErrorCode::NotController,
                "no active controller",
            )),
        };
        let last = match attempt {
            Ok(r) if !retry(&r) => return Ok(r),
            Ok(_) => Error::kafka(ErrorCode::NotController, "the controller moved"),
            Err(e) => e,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(last);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until this broker hosts `topics` (or none of them, with `gone`), up to `timeout`.
async fn settle(broker: &Broker, topics: &[String], gone: bool, timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        let done = topics
            .iter()
            .all(|t| broker.topics.get(t).is_some() != gone);
        if done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(super) fn timeout_of(ms: i32) -> Duration {
    Duration::from_millis(ms.clamp(1_000, 60_000) as u64)
}

/// CreateTopics in cluster mode.
pub async fn create_topics(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    request: CreateTopicsRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let timeout = timeout_of(request.timeout_ms);
    let validate_only = request.validate_only;
    let mut response = forward(node, &request, timeout, |r: &CreateTopicsResponse| {
        r.topics
            .iter()
            .any(|t| t.error_code == ErrorCode::NotController.code())
    })
    .await?;
    let created: Vec<String> = response
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .map(|t| t.name.to_string())
        .collect();
    if !validate_only {
        settle(broker, &created, false, timeout).await;
    }
    if version >= 5 {
        for t in response.topics.iter_mut().filter(|t| t.error_code == 0) {
            let overrides: BTreeMap<String, String> = request
                .topics
                .iter()
                .find(|r: &&CreatableTopic| r.name == t.name)
                .map(|r| {
                    r.configs
                        .iter()
                        .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let configs = super::admin_topics::created_topic_configs(broker, &overrides);
            t.configs = Some(configs);
        }
    }
    Ok(ResponseKind::CreateTopics(response))
}

/// DeleteTopics in cluster mode: ids are resolved to names here.
pub async fn delete_topics(
    broker: &Broker,
    node: &ClusterNode,
    mut request: DeleteTopicsRequest,
) -> HandlerResult {
    let timeout = timeout_of(request.timeout_ms);
    let mut unknown_ids = Vec::new();
    for t in &mut request.topics {
        if t.name.is_none() {
            match broker.topics.get_by_id(t.topic_id) {
                Some(local) => t.name = Some(TopicName(sb(&local.name))),
                None => unknown_ids.push(t.topic_id),
            }
        }
    }
    request.topics.retain(|t| t.name.is_some());
    // v0-5 name topics in `topic_names`, a field the version the controller is sent (v6)
    // does not carry: both lists name every topic, the one the wire version has is sent.
    let by_name: Vec<TopicName> = request.topic_names.clone();
    for name in by_name {
        if !request
            .topics
            .iter()
            .any(|t| t.name.as_ref() == Some(&name))
        {
            request.topics.push(
                kafka_protocol::messages::delete_topics_request::DeleteTopicState::default()
                    .with_name(Some(name)),
            );
        }
    }
    let named: Vec<TopicName> = request
        .topics
        .iter()
        .filter_map(|t| t.name.clone())
        .collect();
    for name in named {
        if !request.topic_names.contains(&name) {
            request.topic_names.push(name);
        }
    }
    if !broker.config.bool("delete.topic.enable") {
        return Err(Error::kafka(
            ErrorCode::TopicDeletionDisabled,
            "topic deletion is disabled (delete.topic.enable=false)",
        ));
    }
    let mut response = forward(node, &request, timeout, |r| {
        r.responses
            .iter()
            .any(|t| t.error_code == ErrorCode::NotController.code())
    })
    .await?;
    let deleted: Vec<String> = response
        .responses
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect();
    settle(broker, &deleted, true, timeout).await;
    for id in unknown_ids {
        response.responses.push(
            kafka_protocol::messages::delete_topics_response::DeletableTopicResult::default()
                .with_topic_id(id)
                .with_error_code(ErrorCode::UnknownTopicId.code()),
        );
    }
    Ok(ResponseKind::DeleteTopics(response))
}

/// CreatePartitions in cluster mode.
pub async fn create_partitions(
    broker: &Broker,
    node: &ClusterNode,
    request: CreatePartitionsRequest,
) -> HandlerResult {
    let timeout = timeout_of(request.timeout_ms);
    let wanted: Vec<(String, i32)> = request
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.count))
        .collect();
    let response = forward(node, &request, timeout, |r| {
        r.results
            .iter()
            .any(|t| t.error_code == ErrorCode::NotController.code())
    })
    .await?;
    if !request.validate_only {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            let grown = response
                .results
                .iter()
                .filter(|r| r.error_code == 0)
                .all(|r| {
                    let want = wanted
                        .iter()
                        .find(|(n, _)| n == r.name.as_str())
                        .map_or(0, |(_, c)| *c);
                    broker
                        .topics
                        .get(r.name.as_str())
                        .is_some_and(|t| t.partition_count() >= want)
                });
            if grown {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(ResponseKind::CreatePartitions(response))
}

/// Metadata's auto-creation in cluster mode: asks the controller to create `names` with the
/// broker defaults (errors are left to the Metadata answer, which says LEADER_NOT_AVAILABLE
/// until the topic shows up).
pub async fn auto_create(node: &ClusterNode, names: Vec<String>) {
    if names.is_empty() {
        return;
    }
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(
            names
                .into_iter()
                .map(|n| {
                    CreatableTopic::default()
                        .with_name(TopicName(sb(n)))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1)
                })
                .collect(),
        );
    if let Err(e) = forward(
        node,
        &request,
        Duration::from_secs(5),
        |r: &CreateTopicsResponse| {
            r.topics
                .iter()
                .any(|t| t.error_code == ErrorCode::NotController.code())
        },
    )
    .await
    {
        tracing::debug!(error = %e, "auto-creation not forwarded");
    }
}

/// One config resource's wanted values: its type (2 topic, 4 broker, 32 group), its name and the
/// whole set of values it should hold.
type WantedConfig = (i8, String, BTreeMap<String, String>);

/// The values a config resource holds on this broker now (as the metadata image gave them).
fn current_values(broker: &Broker, resource_type: i8, name: &str) -> BTreeMap<String, String> {
    match resource_type {
        2 => broker
            .topics
            .get(name)
            .map(|t| t.overrides())
            .unwrap_or_default(),
        4 => match super::broker_configs::level_of(broker, name) {
            Ok(level) => broker.dynamic.values().level(level).clone(),
            Err(_) => BTreeMap::new(),
        },
        _ => broker.group_configs.overrides(name),
    }
}

/// The values a BROKER (4) or GROUP (32) resource would hold after `changes`, validated here
/// (this broker holds the static configuration they are checked against); `replace_all`:
/// AlterConfigs.
fn values_after(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    changes: &[(String, crate::dynamic_config::Op, Option<String>)],
    replace_all: bool,
) -> Result<BTreeMap<String, String>> {
    if resource_type == 4 {
        let level = super::broker_configs::level_of(broker, name)?;
        broker.dynamic.values_after(level, changes, replace_all)
    } else {
        broker.group_configs.overrides_after(
            name,
            changes,
            replace_all,
            &broker.dynamic.effective(),
        )
    }
}

/// Sends config changes (the resulting values of each resource, as SET and DELETE of the keys
/// that change) to the controller and waits until this broker has them. One result per
/// resource.
async fn change_configs(
    broker: &Broker,
    node: &ClusterNode,
    wanted: Vec<WantedConfig>,
    validate_only: bool,
) -> Vec<Result<()>> {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    };
    if wanted.is_empty() {
        return Vec::new();
    }
    let resources = wanted
        .iter()
        .map(|(resource_type, name, overrides)| {
            let current = current_values(broker, *resource_type, name);
            let mut configs: Vec<AlterableConfig> = overrides
                .iter()
                .filter(|(k, v)| current.get(*k) != Some(*v))
                .map(|(k, v)| {
                    AlterableConfig::default()
                        .with_name(sb(k))
                        .with_config_operation(0)
                        .with_value(Some(sb(v)))
                })
                .collect();
            configs.extend(
                current
                    .keys()
                    .filter(|k| !overrides.contains_key(*k))
                    .map(|k| {
                        AlterableConfig::default()
                            .with_name(sb(k))
                            .with_config_operation(1)
                    }),
            );
            AlterConfigsResource::default()
                .with_resource_type(*resource_type)
                .with_resource_name(sb(name))
                .with_configs(configs)
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default()
        .with_resources(resources)
        .with_validate_only(validate_only);
    let answer = forward(
        node,
        &request,
        Duration::from_secs(30),
        |r: &IncrementalAlterConfigsResponse| {
            r.responses
                .iter()
                .any(|x| x.error_code == ErrorCode::NotController.code())
        },
    )
    .await;
    let results: Vec<Result<()>> = match answer {
        Ok(r) => r
            .responses
            .iter()
            .map(|x| match ErrorCode::from_code(x.error_code) {
                ErrorCode::NoError => Ok(()),
                code => Err(Error::kafka(
                    code,
                    x.error_message
                        .as_ref()
                        .map_or(code.name().to_string(), |m| m.to_string()),
                )),
            })
            .collect(),
        Err(e) => wanted
            .iter()
            .map(|_| Err(Error::kafka(e.code(), e.to_string())))
            .collect(),
    };
    if !validate_only {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::time::Instant::now() < deadline {
            let applied = wanted
                .iter()
                .zip(&results)
                .all(|((resource_type, name, values), r)| {
                    r.is_err() || &current_values(broker, *resource_type, name) == values
                });
            if applied {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    results
}

/// A config request's answers in request order: a resource whose `outcome` is `None` is this
/// broker's (the next of `others`); a topic refused here keeps its error; a topic sent to the
/// controller takes the next of `sent`. `answer` builds a topic's entry.
fn in_request_order<R: Default>(
    resources: impl Iterator<Item = (i8, kafka_protocol::protocol::StrBytes)>,
    outcomes: Vec<Option<Result<()>>>,
    sent: Vec<Result<()>>,
    others: Vec<R>,
    answer: impl Fn(i8, kafka_protocol::protocol::StrBytes, Result<()>) -> R,
) -> Vec<R> {
    let mut sent = sent.into_iter();
    let mut others = others.into_iter();
    resources
        .zip(outcomes)
        .map(|((kind, name), outcome)| match outcome {
            None => others.next().unwrap_or_default(),
            Some(Ok(())) => answer(
                kind,
                name,
                sent.next()
                    .unwrap_or_else(|| Err(ErrorCode::UnknownServerError.into())),
            ),
            Some(Err(e)) => answer(kind, name, Err(e)),
        })
        .collect()
}

/// Config resources whose values live in the metadata log in cluster mode: topics, brokers and
/// groups.
const IN_METADATA: [i8; 3] = [2, 4, 32];

/// IncrementalAlterConfigs in cluster mode: topic, broker and group resources go to the
/// controller (their resulting values computed and validated here); any other is answered here
/// (refused as a single node refuses it).
pub async fn incremental_alter_configs(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    request: kafka_protocol::messages::IncrementalAlterConfigsRequest,
) -> HandlerResult {
    use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
    use kafka_protocol::messages::IncrementalAlterConfigsResponse;
    let validate_only = request.validate_only;
    let mut local = request.clone();
    local
        .resources
        .retain(|r| !IN_METADATA.contains(&r.resource_type));
    let mut outcomes: Vec<Option<Result<()>>> = Vec::new();
    let mut wanted = Vec::new();
    for r in request.resources.iter() {
        if !IN_METADATA.contains(&r.resource_type) {
            outcomes.push(None);
            continue;
        }
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
        let computed = if super::admin_configs::names_a_key_twice(&ops) {
            Err(Error::kafka(
                ErrorCode::InvalidRequest,
                "Error due to duplicate config keys",
            ))
        } else if r.resource_type == 2 {
            super::admin_configs::overrides_after(broker, &r.resource_name, &ops)
        } else {
            ops.iter()
                .map(|(k, op, v)| Ok((k.clone(), super::broker_configs::op_of(*op)?, v.clone())))
                .collect::<Result<Vec<_>>>()
                .and_then(|changes| {
                    values_after(broker, r.resource_type, &r.resource_name, &changes, false)
                })
        };
        match computed {
            Ok(values) => {
                wanted.push((r.resource_type, r.resource_name.to_string(), values));
                outcomes.push(Some(Ok(())));
            }
            Err(e) => outcomes.push(Some(Err(e))),
        }
    }
    let sent = change_configs(broker, node, wanted, validate_only).await;
    let others = match super::admin_configs::incremental_alter(broker, ctx, local)? {
        ResponseKind::IncrementalAlterConfigs(r) => r.responses,
        _ => Vec::new(),
    };
    let names = request
        .resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.clone()));
    let responses = in_request_order(names, outcomes, sent, others, |kind, name, result| {
        let base = AlterConfigsResourceResponse::default()
            .with_resource_type(kind)
            .with_resource_name(name);
        match result {
            Ok(()) => base,
            Err(e) => {
                let (code, message) = super::reply::error_parts(&e);
                base.with_error_code(code).with_error_message(message)
            }
        }
    });
    Ok(ResponseKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse::default().with_responses(responses),
    ))
}

/// AlterConfigs in cluster mode: a topic's, broker level's or group's whole set of values goes
/// to the controller; any other resource is answered here.
pub async fn alter_configs(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    request: kafka_protocol::messages::AlterConfigsRequest,
) -> HandlerResult {
    use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
    use kafka_protocol::messages::AlterConfigsResponse;
    let validate_only = request.validate_only;
    let mut local = request.clone();
    local
        .resources
        .retain(|r| !IN_METADATA.contains(&r.resource_type));
    let mut outcomes: Vec<Option<Result<()>>> = Vec::new();
    let mut wanted = Vec::new();
    for r in request.resources.iter() {
        if !IN_METADATA.contains(&r.resource_type) {
            outcomes.push(None);
            continue;
        }
        let values: BTreeMap<String, String> = r
            .configs
            .iter()
            .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
            .collect();
        let checked = if r.resource_type == 2 {
            broker
                .topics
                .set_overrides(&r.resource_name, values.clone(), true)
                .map(|()| values)
        } else {
            let changes: Vec<_> = values
                .iter()
                .map(|(k, v)| (k.clone(), crate::dynamic_config::Op::Set, Some(v.clone())))
                .collect();
            values_after(broker, r.resource_type, &r.resource_name, &changes, true)
        };
        match checked {
            Ok(values) => {
                wanted.push((r.resource_type, r.resource_name.to_string(), values));
                outcomes.push(Some(Ok(())));
            }
            Err(e) => outcomes.push(Some(Err(e))),
        }
    }
    let sent = change_configs(broker, node, wanted, validate_only).await;
    let others = match super::admin_configs::alter(broker, ctx, local)? {
        ResponseKind::AlterConfigs(r) => r.responses,
        _ => Vec::new(),
    };
    let names = request
        .resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.clone()));
    let responses = in_request_order(names, outcomes, sent, others, |kind, name, result| {
        let base = AlterConfigsResourceResponse::default()
            .with_resource_type(kind)
            .with_resource_name(name);
        match result {
            Ok(()) => base,
            Err(e) => {
                let (code, message) = super::reply::error_parts(&e);
                base.with_error_code(code).with_error_message(message)
            }
        }
    });
    Ok(ResponseKind::AlterConfigs(
        AlterConfigsResponse::default().with_responses(responses),
    ))
}

/// AlterClientQuotas in cluster mode: the controller checks and writes them; this broker
/// answers once its own quotas show the change.
pub async fn alter_client_quotas(
    broker: &Broker,
    node: &ClusterNode,
    request: kafka_protocol::messages::AlterClientQuotasRequest,
) -> HandlerResult {
    use kafka_protocol::messages::AlterClientQuotasResponse;
    let response = forward(
        node,
        &request,
        Duration::from_secs(30),
        |r: &AlterClientQuotasResponse| {
            r.entries
                .iter()
                .any(|e| e.error_code == ErrorCode::NotController.code())
        },
    )
    .await?;
    if !request.validate_only {
        // Answer once this broker's quotas hold what the controller accepted.
        let accepted: Vec<crate::quota::Alteration> =
            super::client_quotas::alterations_of(&request)
                .into_iter()
                .zip(&response.entries)
                .filter(|(_, e)| e.error_code == 0)
                .map(|(a, _)| a)
                .collect();
        let applied = || {
            let store = broker.quotas.store.snapshot();
            accepted.iter().all(|a| {
                let Ok(entity) = crate::quota::entity::entity_from_wire(
                    a.components.iter().map(|(t, n)| (t.as_str(), n.as_deref())),
                ) else {
                    return true;
                };
                let values = store.get(&entity);
                a.ops
                    .iter()
                    .all(|(k, v)| values.and_then(|m| m.get(k)).copied() == *v)
            })
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !applied() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(ResponseKind::AlterClientQuotas(response))
}

/// ElectLeaders in cluster mode: the controller decides.
pub async fn elect_leaders(
    node: &ClusterNode,
    request: kafka_protocol::messages::ElectLeadersRequest,
) -> HandlerResult {
    let timeout = timeout_of(request.timeout_ms);
    let response = forward(node, &request, timeout, |r| {
        r.error_code == ErrorCode::NotController.code()
    })
    .await?;
    Ok(ResponseKind::ElectLeaders(response))
}
