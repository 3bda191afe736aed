//! DescribeConfigs, AlterConfigs (legacy: replaces every override) and IncrementalAlterConfigs
//! (SET / DELETE / APPEND / SUBTRACT per key).
//!
//! Broker resources go to that broker. Topic resources are described by any broker and altered
//! through the controller.

use std::collections::HashMap;

use kafka_protocol::messages::alter_configs_request::{
    AlterConfigsResource, AlterableConfig as LegacyConfig,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig as IncrementalConfig,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{answers_by_key, retry_mutation, retry_read, Call, Outcome, Route};
use super::types::{AlterConfigOp, ConfigEntry, ConfigResource, ConfigSource};
use crate::net::Connection;
use crate::{ErrorCode, Result};

type Key = (i8, String);

fn key(r: &ConfigResource) -> Key {
    (r.wire_type(), r.wire_name())
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Routes config resources: brokers to themselves, topics to `topic_node`.
async fn route_resources<'r>(
    admin: &Admin,
    pending: &[usize],
    resource: impl Fn(usize) -> &'r ConfigResource,
    topics_to_controller: bool,
) -> Result<Vec<(usize, Route)>> {
    let meta = admin.cluster_metadata().await?;
    let mut topic_node = None;
    let mut routes = Vec::with_capacity(pending.len());
    for &i in pending {
        let route = match resource(i) {
            ConfigResource::Broker(id) if meta.brokers.contains_key(id) => Route::Node(*id),
            ConfigResource::Broker(_) => Route::Done(ErrorCode::BrokerNotAvailable.into()),
            ConfigResource::Topic(_) => {
                let node = match topic_node {
                    Some(n) => n,
                    None if topics_to_controller => admin.controller_node().await?,
                    None => admin.any_node().await?,
                };
                topic_node = Some(node);
                Route::Node(node)
            }
        };
        routes.push((i, route));
    }
    Ok(routes)
}

/// DescribeConfigs for a list of resources.
pub(crate) struct DescribeConfigs<'a> {
    pub(crate) resources: &'a [ConfigResource],
}

impl Call for DescribeConfigs<'_> {
    type Output = Vec<ConfigEntry>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_resources(admin, pending, |i| &self.resources[i], false).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<ConfigEntry>>)>> {
        let request = DescribeConfigsRequest::default().with_resources(
            items
                .iter()
                .map(|&i| {
                    let r = &self.resources[i];
                    DescribeConfigsResource::default()
                        .with_resource_type(r.wire_type())
                        .with_resource_name(sb(&r.wire_name()))
                        .with_configuration_keys(None)
                })
                .collect(),
        );
        let response = connection.send(&request).await?;
        let answers: HashMap<Key, (ErrorCode, Vec<ConfigEntry>)> = response
            .results
            .into_iter()
            .map(|r| {
                let entries = r
                    .configs
                    .into_iter()
                    .map(|c| ConfigEntry {
                        name: c.name.to_string(),
                        value: c.value.map(|v| v.to_string()),
                        source: ConfigSource::from_wire(c.config_source),
                        read_only: c.read_only,
                        sensitive: c.is_sensitive,
                    })
                    .collect();
                (
                    (r.resource_type, r.resource_name.to_string()),
                    (ErrorCode::from_code(r.error_code), entries),
                )
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| key(&self.resources[i]),
            answers,
            retry_read,
        ))
    }
}

/// AlterConfigs: each resource's overrides become exactly the given set.
pub(crate) struct AlterConfigs<'a> {
    pub(crate) changes: &'a [(ConfigResource, Vec<(String, String)>)],
    pub(crate) validate_only: bool,
}

impl Call for AlterConfigs<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_resources(admin, pending, |i| &self.changes[i].0, true).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let request = AlterConfigsRequest::default()
            .with_validate_only(self.validate_only)
            .with_resources(
                items
                    .iter()
                    .map(|&i| {
                        let (r, configs) = &self.changes[i];
                        AlterConfigsResource::default()
                            .with_resource_type(r.wire_type())
                            .with_resource_name(sb(&r.wire_name()))
                            .with_configs(
                                configs
                                    .iter()
                                    .map(|(k, v)| {
                                        LegacyConfig::default()
                                            .with_name(sb(k))
                                            .with_value(Some(sb(v)))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let response = connection.send(&request).await?;
        let answers: HashMap<Key, (ErrorCode, ())> = response
            .responses
            .into_iter()
            .map(|r| {
                (
                    (r.resource_type, r.resource_name.to_string()),
                    (ErrorCode::from_code(r.error_code), ()),
                )
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| key(&self.changes[i].0),
            answers,
            retry_mutation,
        ))
    }
}

/// IncrementalAlterConfigs: per-key SET / DELETE / APPEND / SUBTRACT.
pub(crate) struct IncrementalAlterConfigs<'a> {
    pub(crate) changes: &'a [(ConfigResource, Vec<AlterConfigOp>)],
    pub(crate) validate_only: bool,
}

impl Call for IncrementalAlterConfigs<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_resources(admin, pending, |i| &self.changes[i].0, true).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let request = IncrementalAlterConfigsRequest::default()
            .with_validate_only(self.validate_only)
            .with_resources(
                items
                    .iter()
                    .map(|&i| {
                        let (r, ops) = &self.changes[i];
                        IncrementalResource::default()
                            .with_resource_type(r.wire_type())
                            .with_resource_name(sb(&r.wire_name()))
                            .with_configs(
                                ops.iter()
                                    .map(|op| {
                                        let (code, value) = op.wire();
                                        IncrementalConfig::default()
                                            .with_name(sb(&op.name))
                                            .with_config_operation(code)
                                            .with_value(value.map(sb))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let response = connection.send(&request).await?;
        let answers: HashMap<Key, (ErrorCode, ())> = response
            .responses
            .into_iter()
            .map(|r| {
                (
                    (r.resource_type, r.resource_name.to_string()),
                    (ErrorCode::from_code(r.error_code), ()),
                )
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| key(&self.changes[i].0),
            answers,
            retry_mutation,
        ))
    }
}
