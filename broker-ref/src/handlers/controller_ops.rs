//! The controller's requests from brokers, as Kafka shapes them: BrokerRegistration,
//! BrokerHeartbeat, AlterPartition, AllocateProducerIds, and the admin requests brokers forward
//! (CreateTopics, DeleteTopics, CreatePartitions). Each asks `cluster::controller::Controller`
//! and answers its errors with Kafka's codes; a node that is not the active controller answers
//! NOT_CONTROLLER.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    alter_partition_response, AllocateProducerIdsRequest, AllocateProducerIdsResponse,
    AlterPartitionRequest, AlterPartitionResponse, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
    BrokerId, BrokerRegistrationRequest, BrokerRegistrationResponse, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, ProducerId, ResponseKind, TopicName,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::{error_parts, sb};
use crate::cluster::controller::{Controller, IsrProposal, NewTopic, PRODUCER_ID_BLOCK};
use crate::cluster::records::EndpointRecord;
use crate::cluster::ClusterNode;
use crate::Error;

pub(super) fn controller(node: &ClusterNode) -> Result<&Controller, Error> {
    node.controller
        .as_deref()
        .ok_or_else(|| Error::kafka(ErrorCode::NotController, "not a controller"))
}

fn code(e: &Error) -> i16 {
    e.code().code()
}

/// BrokerRegistration.
pub async fn register(
    node: &ClusterNode,
    r: BrokerRegistrationRequest,
) -> BrokerRegistrationResponse {
    let result = async {
        if r.cluster_id.as_str() != node.settings.cluster_id {
            return Err(Error::kafka(
                ErrorCode::InconsistentClusterId,
                format!("cluster id {} is not this cluster's", r.cluster_id.as_str()),
            ));
        }
        let endpoints = r
            .listeners
            .iter()
            .map(|l| EndpointRecord {
                name: l.name.to_string(),
                host: l.host.to_string(),
                port: l.port,
                security_protocol: l.security_protocol,
            })
            .collect();
        controller(node)?
            .register_broker(
                r.broker_id.0,
                r.incarnation_id.to_string(),
                endpoints,
                r.rack.map(|s| s.to_string()),
            )
            .await
    }
    .await;
    match result {
        Ok(epoch) => BrokerRegistrationResponse::default().with_broker_epoch(epoch),
        Err(e) => BrokerRegistrationResponse::default()
            .with_error_code(code(&e))
            .with_broker_epoch(-1),
    }
}

/// BrokerHeartbeat.
pub async fn heartbeat(node: &ClusterNode, r: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse {
    let result = async {
        controller(node)?
            .heartbeat(
                r.broker_id.0,
                r.broker_epoch,
                r.current_metadata_offset,
                r.want_fence,
                r.want_shut_down,
            )
            .await
    }
    .await;
    match result {
        Ok(s) => BrokerHeartbeatResponse::default()
            .with_is_caught_up(s.caught_up)
            .with_is_fenced(s.fenced)
            .with_should_shut_down(s.should_shut_down),
        Err(e) => BrokerHeartbeatResponse::default()
            .with_error_code(code(&e))
            .with_is_fenced(true),
    }
}

/// AlterPartition.
pub async fn alter_partition(
    node: &ClusterNode,
    r: AlterPartitionRequest,
) -> AlterPartitionResponse {
    let mut proposals = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            let isr = if p.new_isr_with_epochs.is_empty() {
                p.new_isr.iter().map(|b| b.0).collect()
            } else {
                p.new_isr_with_epochs
                    .iter()
                    .map(|b| b.broker_id.0)
                    .collect()
            };
            proposals.push(IsrProposal {
                topic_id: t.topic_id.to_string(),
                partition: p.partition_index,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                new_isr: isr,
                recovered: p.leader_recovery_state == 0,
            });
        }
    }
    let keys: Vec<(uuid::Uuid, i32)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect();
    let outcome = match controller(node) {
        Ok(c) => {
            c.alter_partition(r.broker_id.0, r.broker_epoch, proposals)
                .await
        }
        Err(e) => Err(e),
    };
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            return AlterPartitionResponse::default().with_error_code(code(&e));
        }
    };
    let mut topics: BTreeMap<uuid::Uuid, Vec<alter_partition_response::PartitionData>> =
        BTreeMap::new();
    for ((topic_id, index), result) in keys.into_iter().zip(results) {
        let data = alter_partition_response::PartitionData::default().with_partition_index(index);
        let data = match result {
            Ok(p) => data
                .with_leader_id(BrokerId(p.leader))
                .with_leader_epoch(p.leader_epoch)
                .with_isr(p.isr.iter().map(|b| BrokerId(*b)).collect())
                .with_leader_recovery_state(i8::from(p.recovering))
                .with_partition_epoch(p.partition_epoch),
            Err(e) => data.with_error_code(code(&e)),
        };
        topics.entry(topic_id).or_default().push(data);
    }
    AlterPartitionResponse::default().with_topics(
        topics
            .into_iter()
            .map(|(id, partitions)| {
                alter_partition_response::TopicData::default()
                    .with_topic_id(id)
                    .with_partitions(partitions)
            })
            .collect(),
    )
}

/// AllocateProducerIds.
pub async fn allocate_producer_ids(
    node: &ClusterNode,
    r: AllocateProducerIdsRequest,
) -> AllocateProducerIdsResponse {
    let result = match controller(node) {
        Ok(c) => c.allocate_producer_ids(r.broker_id.0, r.broker_epoch).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(start) => AllocateProducerIdsResponse::default()
            .with_producer_id_start(ProducerId(start))
            .with_producer_id_len(PRODUCER_ID_BLOCK),
        Err(e) => AllocateProducerIdsResponse::default().with_error_code(code(&e)),
    }
}

/// CreateTopics (from a broker that authorized it). Configs are not listed back: the broker
/// that forwarded the request fills them for v5+ from its own registry.
pub async fn create_topics(
    node: &ClusterNode,
    _ctx: &RequestContext<'_>,
    r: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let topics: Vec<NewTopic> = r
        .topics
        .iter()
        .map(|t| NewTopic {
            name: t.name.to_string(),
            num_partitions: t.num_partitions,
            replication_factor: t.replication_factor,
            assignments: t
                .assignments
                .iter()
                .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                .collect(),
            configs: t
                .configs
                .iter()
                .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                .collect(),
        })
        .collect();
    let null_config = r
        .topics
        .iter()
        .map(|t| {
            t.configs
                .iter()
                .find(|c| c.value.is_none())
                .map(|c| c.name.to_string())
        })
        .collect::<Vec<_>>();
    let outcome = match controller(node) {
        Ok(c) => c.create_topics(topics, r.validate_only).await,
        Err(e) => Err(e),
    };
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            let (c, m) = error_parts(&e);
            return CreateTopicsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        CreatableTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(c)
                            .with_error_message(m.clone())
                            .with_num_partitions(-1)
                            .with_replication_factor(-1)
                    })
                    .collect(),
            );
        }
    };
    let topics = r
        .topics
        .iter()
        .zip(results)
        .zip(null_config)
        .map(|((t, result), null)| {
            let result = match null {
                Some(name) => Err(Error::kafka(
                    ErrorCode::InvalidConfig,
                    format!("null value for config `{name}`"),
                )),
                None => result,
            };
            let base = CreatableTopicResult::default().with_name(t.name.clone());
            match result {
                Ok(created) => base
                    .with_topic_id(uuid::Uuid::parse_str(&created.id).unwrap_or_default())
                    .with_num_partitions(created.partitions)
                    .with_replication_factor(created.replication_factor),
                Err(e) => {
                    let (c, m) = error_parts(&e);
                    base.with_error_code(c)
                        .with_error_message(m)
                        .with_num_partitions(-1)
                        .with_replication_factor(-1)
                }
            }
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

/// DeleteTopics by name (brokers resolve ids before forwarding).
pub async fn delete_topics(node: &ClusterNode, r: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let mut names: Vec<String> = r.topic_names.iter().map(|n| n.to_string()).collect();
    names.extend(
        r.topics
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.to_string())),
    );
    let outcome = match controller(node) {
        Ok(c) => c.delete_topics(names.clone()).await,
        Err(e) => Err(e),
    };
    let responses = match outcome {
        Ok(results) => names
            .into_iter()
            .zip(results)
            .map(|(name, result)| {
                let base = DeletableTopicResult::default().with_name(Some(TopicName(sb(&name))));
                match result {
                    Ok(id) => base.with_topic_id(uuid::Uuid::parse_str(&id).unwrap_or_default()),
                    Err(e) => {
                        let (c, m) = error_parts(&e);
                        base.with_error_code(c).with_error_message(m)
                    }
                }
            })
            .collect(),
        Err(e) => names
            .into_iter()
            .map(|name| {
                DeletableTopicResult::default()
                    .with_name(Some(TopicName(sb(&name))))
                    .with_error_code(code(&e))
            })
            .collect(),
    };
    DeleteTopicsResponse::default().with_responses(responses)
}

/// CreatePartitions (a topic named twice is refused; explicit assignments are checked by the
/// controller).
pub async fn create_partitions(
    node: &ClusterNode,
    r: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    // A topic named twice is refused (both entries answered once, as Kafka does); the rest go
    // together.
    let mut seen = std::collections::HashSet::new();
    let duplicates: std::collections::HashSet<String> = r
        .topics
        .iter()
        .map(|t| t.name.to_string())
        .filter(|n| !seen.insert(n.clone()))
        .collect();
    let growths: Vec<crate::cluster::controller::Growth> = r
        .topics
        .iter()
        .filter(|t| !duplicates.contains(t.name.as_str()))
        .map(|t| {
            let assignments = t.assignments.as_ref().map(|list| {
                list.iter()
                    .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                    .collect()
            });
            (t.name.to_string(), t.count, assignments)
        })
        .collect();
    let outcome = match controller(node) {
        Ok(c) => c.create_partitions(growths.clone(), r.validate_only).await,
        Err(e) => Err(e),
    };
    let mut written = match outcome {
        Ok(results) => results.into_iter(),
        Err(e) => growths
            .iter()
            .map(|_| Err(Error::kafka(e.code(), e.to_string())))
            .collect::<Vec<_>>()
            .into_iter(),
    };
    let mut reported = std::collections::HashSet::new();
    let topics: Vec<&kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic> =
        r.topics
            .iter()
            .filter(|t| {
                !duplicates.contains(t.name.as_str()) || reported.insert(t.name.to_string())
            })
            .collect();
    let results: Vec<crate::Result<()>> = topics
        .iter()
        .map(|t| {
            if duplicates.contains(t.name.as_str()) {
                return Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    "Duplicate topic name.",
                ));
            }
            written
                .next()
                .unwrap_or_else(|| Err(ErrorCode::UnknownServerError.into()))
        })
        .collect();
    CreatePartitionsResponse::default().with_results(
        topics
            .into_iter()
            .zip(results)
            .map(|(t, result)| {
                let base = CreatePartitionsTopicResult::default().with_name(t.name.clone());
                match result {
                    Ok(()) => base,
                    Err(e) => {
                        let (c, m) = error_parts(&e);
                        base.with_error_code(c).with_error_message(m)
                    }
                }
            })
            .collect(),
    )
}

/// Whether the controller takes a forwarded change of one resource's `keys` (SET: `Some`,
/// DELETE: `None`): topics are checked by the controller itself; broker and group resources
/// name a valid level and keys this broker can change at runtime (the forwarding broker
/// validated the values against its whole configuration).
fn forwarded_config_refusal(
    resource_type: i8,
    name: &str,
    keys: &[(String, Option<String>)],
) -> Option<Error> {
    use crate::dynamic_config::{check_change, Level};
    match resource_type {
        2 => None,
        4 => {
            let level = if name.is_empty() {
                Level::ClusterDefault
            } else if name.parse::<i32>().is_ok_and(|id| id >= 0) {
                Level::Broker
            } else {
                return Some(Error::kafka(
                    ErrorCode::InvalidRequest,
                    format!("invalid broker id `{name}`"),
                ));
            };
            keys.iter()
                .find_map(|(k, v)| check_change(k, v.as_deref(), level).err())
        }
        32 if name.is_empty() => Some(Error::kafka(
            ErrorCode::InvalidRequest,
            "Default group resources are not allowed.",
        )),
        32 => keys.iter().find_map(|(k, _)| {
            crate::group_config::refusal(k)
                .map(|m| Error::kafka(ErrorCode::InvalidConfig, format!("group config `{k}`: {m}")))
        }),
        other => Some(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("unsupported resource type {other}"),
        )),
    }
}

/// IncrementalAlterConfigs of topics, brokers and groups (SET and DELETE only: the broker that
/// forwards it turns APPEND and SUBTRACT into the resulting values).
pub async fn alter_configs(
    node: &ClusterNode,
    r: kafka_protocol::messages::IncrementalAlterConfigsRequest,
) -> kafka_protocol::messages::IncrementalAlterConfigsResponse {
    use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
    let mut changes = Vec::new();
    let mut refused = Vec::new();
    for res in &r.resources {
        let keys: Option<Vec<(String, Option<String>)>> = res
            .configs
            .iter()
            .map(|c| match c.config_operation {
                0 => c
                    .value
                    .as_ref()
                    .map(|v| (c.name.to_string(), Some(v.to_string()))),
                1 => Some((c.name.to_string(), None)),
                _ => None,
            })
            .collect();
        let Some(keys) = keys else {
            refused.push(Some(Error::kafka(
                ErrorCode::InvalidRequest,
                "the controller takes SET (with a value) and DELETE only",
            )));
            continue;
        };
        match forwarded_config_refusal(res.resource_type, &res.resource_name, &keys) {
            Some(e) => refused.push(Some(e)),
            None => {
                changes.push((res.resource_type, res.resource_name.to_string(), keys));
                refused.push(None);
            }
        }
    }
    let outcome = match controller(node) {
        Ok(c) => c.alter_configs(changes, r.validate_only).await,
        Err(e) => Err(e),
    };
    let mut written = match outcome {
        Ok(results) => results.into_iter(),
        Err(e) => refused
            .iter()
            .filter(|x| x.is_none())
            .map(|_| Err(Error::kafka(e.code(), e.to_string())))
            .collect::<Vec<_>>()
            .into_iter(),
    };
    kafka_protocol::messages::IncrementalAlterConfigsResponse::default().with_responses(
        r.resources
            .iter()
            .zip(refused)
            .map(|(res, refusal)| {
                let result = match refusal {
                    Some(e) => Err(e),
                    None => written
                        .next()
                        .unwrap_or_else(|| Err(ErrorCode::UnknownServerError.into())),
                };
                let base = AlterConfigsResourceResponse::default()
                    .with_resource_type(res.resource_type)
                    .with_resource_name(res.resource_name.clone());
                match result {
                    Ok(()) => base,
                    Err(e) => {
                        let (c, m) = error_parts(&e);
                        base.with_error_code(c).with_error_message(m)
                    }
                }
            })
            .collect(),
    )
}

/// AlterClientQuotas (forwarded by a broker that authorized it): checked and written by the
/// controller; every broker applies the result from its metadata.
pub async fn alter_client_quotas(
    node: &ClusterNode,
    r: kafka_protocol::messages::AlterClientQuotasRequest,
) -> ResponseKind {
    let alterations = super::client_quotas::alterations_of(&r);
    let outcome = match controller(node) {
        Ok(c) => c.alter_client_quotas(alterations, r.validate_only).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(verdicts) => super::client_quotas::alter_answer(&r, verdicts),
        Err(e) => super::client_quotas::alter_refused(&r, e.code()),
    }
}

/// ElectLeaders (PREFERRED = 0, UNCLEAN = 1), forwarded by a broker that authorized it.
pub async fn elect_leaders(
    node: &ClusterNode,
    r: kafka_protocol::messages::ElectLeadersRequest,
) -> kafka_protocol::messages::ElectLeadersResponse {
    use kafka_protocol::messages::elect_leaders_response::{
        PartitionResult, ReplicaElectionResult,
    };
    use kafka_protocol::messages::ElectLeadersResponse;
    let unclean = match r.election_type {
        0 => false,
        1 => true,
        _ => {
            return ElectLeadersResponse::default()
                .with_error_code(ErrorCode::InvalidRequest.code());
        }
    };
    let partitions: Option<Vec<(String, i32)>> = r.topic_partitions.as_ref().map(|list| {
        list.iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.to_string(), *p)))
            .collect()
    });
    let outcome = match controller(node) {
        Ok(c) => c.elect_leaders(unclean, partitions).await,
        Err(e) => Err(e),
    };
    let results = match outcome {
        Ok(results) => results,
        Err(e) => return ElectLeadersResponse::default().with_error_code(code(&e)),
    };
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for ((topic, index), result) in results {
        let entry = PartitionResult::default().with_partition_id(index);
        let entry = match result {
            Ok(()) => entry,
            Err(e) => {
                let (c, m) = error_parts(&e);
                entry.with_error_code(c).with_error_message(m)
            }
        };
        by_topic.entry(topic).or_default().push(entry);
    }
    ElectLeadersResponse::default().with_replica_election_results(
        by_topic
            .into_iter()
            .map(|(topic, results)| {
                ReplicaElectionResult::default()
                    .with_topic(TopicName(sb(&topic)))
                    .with_partition_result(results)
            })
            .collect(),
    )
}
