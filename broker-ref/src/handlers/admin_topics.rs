//! CreateTopics, DeleteTopics and CreatePartitions.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, ResponseKind, TopicName,
};
use odradek::ErrorCode;
use uuid::Uuid;

use super::admin_configs::topic_config_entries;
use super::context::RequestContext;
use super::reply::{error_parts, sb, HandlerResult};
use crate::broker::Broker;
use crate::{Error, Result};

fn check_replication(broker: &Broker, factor: i16) -> Result<()> {
    let factor = if factor == -1 {
        broker.config.int("default.replication.factor")
    } else {
        i32::from(factor)
    };
    if factor == 1 {
        return Ok(());
    }
    Err(Error::kafka(
        ErrorCode::InvalidReplicationFactor,
        format!(
            "Unable to replicate the partition {factor} time(s): the target replication factor of {factor} cannot be reached because only 1 broker(s) are registered."
        ),
    ))
}

fn check_assignment(
    broker: &Broker,
    broker_ids: &[kafka_protocol::messages::BrokerId],
) -> Result<()> {
    if broker_ids.len() == 1 && broker_ids[0].0 == broker.node_id {
        return Ok(());
    }
    Err(Error::kafka(
        ErrorCode::InvalidReplicaAssignment,
        format!(
            "replica assignment {broker_ids:?} must name exactly this broker ({})",
            broker.node_id
        ),
    ))
}

/// The controller mutation quota of one CreateTopics / DeleteTopics / CreatePartitions
/// (Kafka's `ControllerMutationQuota`): strict from the version Kafka names (a request to a
/// client already over its quota is refused per topic with THROTTLING_QUOTA_EXCEEDED), else
/// permissive (the mutations are made and the response throttled).
struct MutationQuota<'a> {
    broker: &'a Broker,
    user: &'a str,
    client_id: &'a str,
    strict: bool,
    enabled: bool,
    throttle_ms: i64,
}

impl<'a> MutationQuota<'a> {
    fn new(broker: &'a Broker, ctx: &'a RequestContext<'_>, strict_since: i16) -> Self {
        MutationQuota {
            broker,
            user: &ctx.principal().name,
            client_id: ctx.client_id(),
            strict: ctx.api_version >= strict_since,
            enabled: broker
                .quotas
                .enabled(crate::quota::QuotaKind::ControllerMutation),
            throttle_ms: 0,
        }
    }

    /// Takes `partitions` mutations, or refuses them (strict mode).
    fn charge(&mut self, partitions: i32) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let now = crate::clock::now_ms();
        let q = &self.broker.quotas;
        let n = f64::from(partitions.max(0));
        if self.strict {
            if let Err(ms) = q.take_mutations_strict(self.user, self.client_id, n, now) {
                self.throttle_ms = self.throttle_ms.max(ms);
                return Err(Error::kafka(
                    ErrorCode::ThrottlingQuotaExceeded,
                    "The throttling quota has been exceeded.",
                ));
            }
        } else {
            let ms = q.take_mutations_permissive(self.user, self.client_id, n, now);
            self.throttle_ms = self.throttle_ms.max(ms);
        }
        Ok(())
    }

    /// The response's throttle time (also counted in the client's quota metrics).
    fn throttle_time_ms(&self) -> i32 {
        if self.throttle_ms > 0 {
            self.broker.quotas.note_throttle(
                crate::quota::QuotaKind::ControllerMutation,
                self.user,
                self.client_id,
                self.throttle_ms,
                crate::clock::now_ms(),
            );
        }
        i32::try_from(self.throttle_ms).unwrap_or(i32::MAX)
    }
}

fn create_one(
    broker: &Broker,
    t: &CreatableTopic,
    validate_only: bool,
    quota: &mut MutationQuota<'_>,
) -> Result<(Uuid, i32, BTreeMap<String, String>)> {
    let partitions = if !t.assignments.is_empty() {
        if t.num_partitions != -1 || t.replication_factor != -1 {
            return Err(Error::kafka(
                ErrorCode::InvalidRequest,
                "both replica assignments and partition count or replication factor were given",
            ));
        }
        for a in &t.assignments {
            check_assignment(broker, &a.broker_ids)?;
        }
        t.assignments.len() as i32
    } else {
        check_replication(broker, t.replication_factor)?;
        if t.num_partitions == -1 {
            broker.config.num_partitions()
        } else {
            t.num_partitions
        }
    };
    let mut overrides = BTreeMap::new();
    for c in &t.configs {
        let value = c.value.as_ref().ok_or_else(|| {
            Error::kafka(
                ErrorCode::InvalidConfig,
                format!("null value for config `{}`", c.name.as_str()),
            )
        })?;
        overrides.insert(c.name.to_string(), value.to_string());
    }
    if quota.enabled {
        // Validated first, then charged, then made: what Kafka's controller does.
        broker
            .topics
            .create(&t.name, partitions, overrides.clone(), true)?;
        quota.charge(partitions)?;
    }
    let topic = broker
        .topics
        .create(&t.name, partitions, overrides.clone(), validate_only)?;
    Ok((topic.id, partitions, overrides))
}

/// The configs a CreateTopics v5+ answer lists for a topic created with `overrides`: every
/// topic config with its value and source.
pub(super) fn created_topic_configs(
    broker: &Broker,
    overrides: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    broker
        .topics
        .effective_config(overrides)
        .map(|c| {
            topic_config_entries(
                &c,
                overrides,
                &broker.topics.defaults(),
                &broker.dynamic.effective(),
            )
        })
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            CreatableTopicConfigs::default()
                .with_name(sb(e.name))
                .with_value(Some(sb(e.value)))
                .with_config_source(e.source as i8)
                .with_read_only(false)
                .with_is_sensitive(false)
        })
        .collect()
}

/// Handles CreateTopics.
pub fn create_topics(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: CreateTopicsRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let mut quota = MutationQuota::new(broker, ctx, 6);
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = request
        .topics
        .iter()
        .filter(|t| !seen.insert(t.name.to_string()))
        .map(|t| t.name.to_string())
        .collect();
    let results = request
        .topics
        .iter()
        .map(|t| {
            let result = CreatableTopicResult::default().with_name(t.name.clone());
            let outcome = if duplicates.contains(t.name.as_str()) {
                Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("topic `{}` appears twice in the request", t.name.as_str()),
                ))
            } else {
                create_one(broker, t, request.validate_only, &mut quota)
            };
            match outcome {
                Ok((id, partitions, overrides)) => {
                    let mut r = result
                        .with_topic_id(id)
                        .with_num_partitions(partitions)
                        .with_replication_factor(1);
                    if version >= 5 {
                        r = r.with_configs(Some(created_topic_configs(broker, &overrides)));
                    }
                    r
                }
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    result
                        .with_error_code(code)
                        .with_error_message(message)
                        .with_num_partitions(-1)
                        .with_replication_factor(-1)
                }
            }
        })
        .collect();
    Ok(ResponseKind::CreateTopics(
        CreateTopicsResponse::default()
            .with_topics(results)
            .with_throttle_time_ms(quota.throttle_time_ms()),
    ))
}

/// Handles DeleteTopics (by name, or by id from v6).
pub fn delete_topics(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: DeleteTopicsRequest,
) -> HandlerResult {
    let mut quota = MutationQuota::new(broker, ctx, 5);
    let mut targets: Vec<(Option<TopicName>, Uuid)> = request
        .topic_names
        .into_iter()
        .map(|n| (Some(n), Uuid::nil()))
        .collect();
    targets.extend(request.topics.into_iter().map(|t| (t.name, t.topic_id)));
    let responses = targets
        .into_iter()
        .map(|(name, id)| {
            let resolved = match &name {
                Some(n) => broker.topics.get(n),
                None => broker.topics.get_by_id(id),
            };
            let outcome = match resolved {
                None => Err(Error::kafka(
                    if name.is_some() {
                        ErrorCode::UnknownTopicOrPartition
                    } else {
                        ErrorCode::UnknownTopicId
                    },
                    "unknown topic",
                )),
                Some(_) if !broker.config.bool("delete.topic.enable") => Err(Error::kafka(
                    ErrorCode::TopicDeletionDisabled,
                    "topic deletion is disabled (delete.topic.enable=false)",
                )),
                Some(t) if t.is_internal() => Err(Error::kafka(
                    ErrorCode::InvalidTopic,
                    format!("cannot delete internal topic `{}`", t.name),
                )),
                Some(t) => quota
                    .charge(t.partition_count())
                    .and_then(|()| broker.topics.delete(&t.name)),
            };
            let result = DeletableTopicResult::default()
                .with_name(name)
                .with_topic_id(id);
            match outcome {
                Ok(t) => result
                    .with_name(Some(TopicName(sb(&t.name))))
                    .with_topic_id(t.id),
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    result.with_error_code(code).with_error_message(message)
                }
            }
        })
        .collect();
    Ok(ResponseKind::DeleteTopics(
        DeleteTopicsResponse::default()
            .with_responses(responses)
            .with_throttle_time_ms(quota.throttle_time_ms()),
    ))
}

/// Handles CreatePartitions. A topic named more than once gets one INVALID_REQUEST result and
/// is left unchanged, as Kafka's controller does.
pub fn create_partitions(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: CreatePartitionsRequest,
) -> HandlerResult {
    let mut quota = MutationQuota::new(broker, ctx, 3);
    let mut seen = HashSet::new();
    let duplicates: HashSet<TopicName> = request
        .topics
        .iter()
        .filter(|t| !seen.insert(t.name.clone()))
        .map(|t| t.name.clone())
        .collect();
    let mut reported = HashSet::new();
    let results = request
        .topics
        .into_iter()
        .filter(|t| !duplicates.contains(&t.name) || reported.insert(t.name.clone()))
        .map(|t| {
            if duplicates.contains(&t.name) {
                return CreatePartitionsTopicResult::default()
                    .with_name(t.name)
                    .with_error_code(ErrorCode::InvalidRequest.code())
                    .with_error_message(Some(sb("Duplicate topic name.")));
            }
            let outcome = (|| {
                if let Some(assignments) = &t.assignments {
                    for a in assignments {
                        check_assignment(broker, &a.broker_ids)?;
                    }
                }
                if quota.enabled {
                    broker.topics.add_partitions(&t.name, t.count, true)?;
                    let current = broker
                        .topics
                        .get(&t.name)
                        .map_or(0, |x| x.partition_count());
                    quota.charge(t.count - current)?;
                }
                broker
                    .topics
                    .add_partitions(&t.name, t.count, request.validate_only)
            })();
            let result = CreatePartitionsTopicResult::default().with_name(t.name);
            match outcome {
                Ok(()) => result,
                Err(e) => {
                    let (code, message) = error_parts(&e);
                    result.with_error_code(code).with_error_message(message)
                }
            }
        })
        .collect();
    Ok(ResponseKind::CreatePartitions(
        CreatePartitionsResponse::default()
            .with_results(results)
            .with_throttle_time_ms(quota.throttle_time_ms()),
    ))
}
