//! CreateTopics, DeleteTopics and CreatePartitions, sent to the controller (or any broker,
//! which forwards them in KRaft).

use std::collections::HashMap;
use std::time::Duration;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::client::Admin;
use super::driver::{all_to, answers_by_key, operation_ms, retry_mutation, Call, Outcome, Route};
use super::types::{ConfigEntry, ConfigSource, CreatedTopic, NewTopic};
use crate::net::Connection;
use crate::{ErrorCode, Result};

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// CreateTopics for a list of new topics.
pub(crate) struct CreateTopics<'a> {
    pub(crate) topics: &'a [NewTopic],
    pub(crate) validate_only: bool,
    pub(crate) operation_timeout: Option<Duration>,
}

impl Call for CreateTopics<'_> {
    type Output = CreatedTopic;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.controller_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<CreatedTopic>)>> {
        let version = connection.versions().version(ApiKey::CreateTopics)?;
        let topics = items
            .iter()
            .map(|&i| {
                let t = &self.topics[i];
                CreatableTopic::default()
                    .with_name(topic_name(&t.name))
                    .with_num_partitions(t.partitions.unwrap_or(-1))
                    .with_replication_factor(t.replication_factor.unwrap_or(-1))
                    .with_configs(
                        t.configs
                            .iter()
                            .map(|(k, v)| {
                                CreatableTopicConfig::default()
                                    .with_name(StrBytes::from_string(k.clone()))
                                    .with_value(Some(StrBytes::from_string(v.clone())))
                            })
                            .collect(),
                    )
            })
            .collect();
        let request = CreateTopicsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(operation_ms(self.operation_timeout, timeout_ms))
            .with_validate_only(self.validate_only);
        let response = connection.send_versioned(&request, version).await?;
        let answers: HashMap<String, (ErrorCode, CreatedTopic)> = response
            .topics
            .into_iter()
            .map(|r| {
                let name = r.name.to_string();
                let requested = self.topics.iter().find(|t| t.name == name);
                // Before v5 the response carries no partition count or replication factor.
                let (partitions, replication_factor) = if version >= 5 {
                    (r.num_partitions, r.replication_factor)
                } else {
                    (
                        requested.and_then(|t| t.partitions).unwrap_or(-1),
                        requested.and_then(|t| t.replication_factor).unwrap_or(-1),
                    )
                };
                let configs = r
                    .configs
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| ConfigEntry {
                        name: c.name.to_string(),
                        value: c.value.map(|v| v.to_string()),
                        source: ConfigSource::from_wire(c.config_source),
                        read_only: c.read_only,
                        sensitive: c.is_sensitive,
                    })
                    .collect();
                let created = CreatedTopic {
                    topic_id: r.topic_id,
                    partitions,
                    replication_factor,
                    configs,
                };
                (name, (ErrorCode::from_code(r.error_code), created))
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| self.topics[i].name.clone(),
            answers,
            retry_mutation,
        ))
    }
}

/// DeleteTopics by name.
pub(crate) struct DeleteTopics<'a> {
    pub(crate) topics: &'a [&'a str],
    pub(crate) operation_timeout: Option<Duration>,
}

impl Call for DeleteTopics<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.controller_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let version = connection.versions().version(ApiKey::DeleteTopics)?;
        let names = items.iter().map(|&i| topic_name(self.topics[i]));
        // v6 addresses topics as (name, id) pairs; earlier versions by a list of names.
        let request = if version >= 6 {
            DeleteTopicsRequest::default().with_topics(
                names
                    .map(|n| {
                        DeleteTopicState::default()
                            .with_name(Some(n))
                            .with_topic_id(Uuid::nil())
                    })
                    .collect(),
            )
        } else {
            DeleteTopicsRequest::default().with_topic_names(names.collect())
        }
        .with_timeout_ms(operation_ms(self.operation_timeout, timeout_ms));
        let response = connection.send_versioned(&request, version).await?;
        let answers: HashMap<String, (ErrorCode, ())> = response
            .responses
            .into_iter()
            .filter_map(|r| {
                Some((
                    r.name?.to_string(),
                    (ErrorCode::from_code(r.error_code), ()),
                ))
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| self.topics[i].to_string(),
            answers,
            retry_mutation,
        ))
    }
}

/// CreatePartitions: raises each topic's partition count to a new total.
pub(crate) struct CreatePartitions<'a> {
    pub(crate) topics: &'a [(&'a str, i32)],
    pub(crate) validate_only: bool,
    pub(crate) operation_timeout: Option<Duration>,
}

impl Call for CreatePartitions<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.controller_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let request = CreatePartitionsRequest::default()
            .with_topics(
                items
                    .iter()
                    .map(|&i| {
                        let (name, count) = self.topics[i];
                        CreatePartitionsTopic::default()
                            .with_name(topic_name(name))
                            .with_count(count)
                            .with_assignments(None)
                    })
                    .collect(),
            )
            .with_timeout_ms(operation_ms(self.operation_timeout, timeout_ms))
            .with_validate_only(self.validate_only);
        let response = connection.send(&request).await?;
        let answers: HashMap<String, (ErrorCode, ())> = response
            .results
            .into_iter()
            .map(|r| (r.name.to_string(), (ErrorCode::from_code(r.error_code), ())))
            .collect();
        Ok(answers_by_key(
            items,
            |i| self.topics[i].0.to_string(),
            answers,
            retry_mutation,
        ))
    }
}
