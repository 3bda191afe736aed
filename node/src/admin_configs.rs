//! KafkaJS admin calls over the core's admin client that `node/src/admin.rs` does not hold:
//! `createPartitions`, `describeConfigs`, `alterConfigs`, `deleteGroups`,
//! `deleteTopicRecords`, `setOffsets` (and so `resetOffsets`) and `describeCluster`.
//! `node/lib/admin.js` shapes their answers and errors as KafkaJS does.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use odradek::admin::{ConfigResource, ConfigSource};
use odradek::producer::TopicPartition;

use crate::admin::{item_results, reason, ConfigEntry, ItemResult, NativeAdmin};
use crate::{error, rt};

/// A topic and its new total partition count.
#[napi(object)]
pub struct PartitionCount {
    /// Topic.
    pub topic: String,
    /// The new total.
    pub count: i32,
}

/// A config resource: KafkaJS's `ConfigResourceTypes` code (2 topic, 4 broker) and its name.
#[napi(object)]
pub struct ResourceSpec {
    /// Resource type.
    pub resource_type: i32,
    /// Resource name (a broker's id in decimal).
    pub resource_name: String,
    /// For alterConfigs: the resource's whole set of values.
    pub config_entries: Option<Vec<ConfigEntry>>,
}

/// One described config entry, in KafkaJS's names.
#[napi(object)]
pub struct DescribedEntry {
    /// Name.
    pub config_name: String,
    /// Value (null when sensitive or unset).
    pub config_value: Option<String>,
    /// Whether it cannot be altered.
    pub read_only: bool,
    /// Whether the value is the default.
    pub is_default: bool,
    /// Kafka's `ConfigSource` code.
    pub config_source: i32,
    /// Whether the value is sensitive.
    pub is_sensitive: bool,
}

/// One resource's answer.
#[napi(object)]
pub struct ResourceResult {
    /// Resource type.
    pub resource_type: i32,
    /// Resource name.
    pub resource_name: String,
    /// Encoded error, null on success.
    pub error: Option<String>,
    /// Its entries (describeConfigs).
    pub config_entries: Vec<DescribedEntry>,
}

/// A partition and an offset.
#[napi(object)]
pub struct PartitionAt {
    /// Partition.
    pub partition: i32,
    /// Offset, as KafkaJS's strings.
    pub offset: String,
}

/// A partition's outcome.
#[napi(object)]
pub struct PartitionResult {
    /// Partition.
    pub partition: i32,
    /// Encoded error, null on success.
    pub error: Option<String>,
    /// deleteTopicRecords: the new low watermark.
    pub low_watermark: Option<String>,
}

/// A broker in describeCluster.
#[napi(object)]
pub struct BrokerInfo {
    /// Node id.
    pub node_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
}

/// describeCluster's answer.
#[napi(object)]
pub struct ClusterInfo {
    /// Brokers.
    pub brokers: Vec<BrokerInfo>,
    /// The controller's id (null when unknown).
    pub controller: Option<i32>,
    /// The cluster id.
    pub cluster_id: String,
}

fn resource(spec: &ResourceSpec) -> napi::Result<ConfigResource> {
    match spec.resource_type {
        2 => Ok(ConfigResource::Topic(spec.resource_name.clone())),
        4 => spec
            .resource_name
            .parse::<i32>()
            .map(ConfigResource::Broker)
            .map_err(|_| error::invalid(format!("invalid broker id `{}`", spec.resource_name))),
        other => Err(error::invalid(format!(
            "resource type {other} is not supported (TOPIC = 2, BROKER = 4)"
        ))),
    }
}

/// `topic`'s partitions at the offsets KafkaJS gives as strings.
fn partitions_at(
    topic: &str,
    partitions: &[PartitionAt],
) -> napi::Result<Vec<(TopicPartition, i64)>> {
    partitions
        .iter()
        .map(|p| {
            let offset = p
                .offset
                .trim()
                .parse::<i64>()
                .map_err(|_| error::invalid(format!("invalid offset `{}`", p.offset)))?;
            let tp = TopicPartition {
                topic: topic.into(),
                partition: p.partition,
            };
            Ok((tp, offset))
        })
        .collect()
}

#[napi]
impl NativeAdmin {
    /// Raises topics' partition counts; one result per topic.
    #[napi(ts_return_type = "Promise<Array<ItemResult>>")]
    pub fn create_partitions<'env>(
        &self,
        env: &'env Env,
        topics: Vec<PartitionCount>,
        validate_only: bool,
    ) -> napi::Result<PromiseRaw<'env, Vec<ItemResult>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let items: Vec<(&str, i32)> =
                topics.iter().map(|t| (t.topic.as_str(), t.count)).collect();
            let results = core
                .create_partitions(&items, validate_only)
                .await
                .map_err(error::request)?;
            Ok(item_results(results))
        })
    }

    /// Every config entry of each resource (`names`: only those, when given).
    #[napi(ts_return_type = "Promise<Array<ResourceResult>>")]
    pub fn describe_configs<'env>(
        &self,
        env: &'env Env,
        resources: Vec<ResourceSpec>,
        names: Option<Vec<Vec<String>>>,
    ) -> napi::Result<PromiseRaw<'env, Vec<ResourceResult>>> {
        let wanted: Vec<ConfigResource> = resources
            .iter()
            .map(resource)
            .collect::<napi::Result<_>>()?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core
                .describe_configs(&wanted)
                .await
                .map_err(error::request)?;
            Ok(results
                .into_iter()
                .zip(resources)
                .enumerate()
                .map(|(i, ((_, r), spec))| {
                    let only = names
                        .as_ref()
                        .and_then(|n| n.get(i))
                        .filter(|n| !n.is_empty());
                    match r {
                        Ok(entries) => ResourceResult {
                            resource_type: spec.resource_type,
                            resource_name: spec.resource_name,
                            error: None,
                            config_entries: entries
                                .into_iter()
                                .filter(|e| only.is_none_or(|n| n.contains(&e.name)))
                                .map(|e| DescribedEntry {
                                    is_default: e.source == ConfigSource::Default,
                                    config_source: i32::from(e.source.wire()),
                                    config_name: e.name,
                                    config_value: e.value,
                                    read_only: e.read_only,
                                    is_sensitive: e.sensitive,
                                })
                                .collect(),
                        },
                        Err(e) => ResourceResult {
                            resource_type: spec.resource_type,
                            resource_name: spec.resource_name,
                            error: Some(reason(e)),
                            config_entries: Vec::new(),
                        },
                    }
                })
                .collect())
        })
    }

    /// Legacy AlterConfigs: each resource's values become exactly its `config_entries`.
    #[napi(ts_return_type = "Promise<Array<ResourceResult>>")]
    pub fn alter_configs<'env>(
        &self,
        env: &'env Env,
        resources: Vec<ResourceSpec>,
        validate_only: bool,
    ) -> napi::Result<PromiseRaw<'env, Vec<ResourceResult>>> {
        let mut changes = Vec::with_capacity(resources.len());
        for spec in &resources {
            let entries = spec
                .config_entries
                .iter()
                .flatten()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect();
            changes.push((resource(spec)?, entries));
        }
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core
                .alter_configs(&changes, validate_only)
                .await
                .map_err(error::request)?;
            Ok(results
                .into_iter()
                .zip(resources)
                .map(|((_, r), spec)| ResourceResult {
                    resource_type: spec.resource_type,
                    resource_name: spec.resource_name,
                    error: r.err().map(reason),
                    config_entries: Vec::new(),
                })
                .collect())
        })
    }

    /// Deletes groups; one result per group.
    #[napi(ts_return_type = "Promise<Array<ItemResult>>")]
    pub fn delete_groups<'env>(
        &self,
        env: &'env Env,
        groups: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Vec<ItemResult>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let names: Vec<&str> = groups.iter().map(String::as_str).collect();
            let results = core.delete_groups(&names).await.map_err(error::request)?;
            Ok(item_results(results))
        })
    }

    /// Deletes the records of `topic`'s partitions before each offset (-1: the high
    /// watermark); per partition, the new low watermark or the error.
    #[napi(ts_return_type = "Promise<Array<PartitionResult>>")]
    pub fn delete_records<'env>(
        &self,
        env: &'env Env,
        topic: String,
        partitions: Vec<PartitionAt>,
    ) -> napi::Result<PromiseRaw<'env, Vec<PartitionResult>>> {
        let before = partitions_at(&topic, &partitions)?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core.delete_records(&before).await.map_err(error::request)?;
            Ok(results
                .into_iter()
                .map(|(tp, r)| match r {
                    Ok(low) => PartitionResult {
                        partition: tp.partition,
                        error: None,
                        low_watermark: Some(low.to_string()),
                    },
                    Err(e) => PartitionResult {
                        partition: tp.partition,
                        error: Some(reason(e)),
                        low_watermark: None,
                    },
                })
                .collect())
        })
    }

    /// Sets a group's committed offsets of `topic`'s partitions (the group must be empty).
    #[napi(ts_return_type = "Promise<Array<PartitionResult>>")]
    pub fn set_group_offsets<'env>(
        &self,
        env: &'env Env,
        group: String,
        topic: String,
        partitions: Vec<PartitionAt>,
    ) -> napi::Result<PromiseRaw<'env, Vec<PartitionResult>>> {
        let offsets = partitions_at(&topic, &partitions)?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core
                .alter_group_offsets(&group, &offsets)
                .await
                .map_err(error::request)?;
            Ok(results
                .into_iter()
                .map(|(tp, r)| PartitionResult {
                    partition: tp.partition,
                    error: r.err().map(reason),
                    low_watermark: None,
                })
                .collect())
        })
    }

    /// The brokers, the controller and the cluster id.
    #[napi(ts_return_type = "Promise<ClusterInfo>")]
    pub fn describe_cluster<'env>(
        &self,
        env: &'env Env,
    ) -> napi::Result<PromiseRaw<'env, ClusterInfo>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let d = core.describe_cluster().await.map_err(error::request)?;
            Ok(ClusterInfo {
                brokers: d
                    .brokers
                    .into_iter()
                    .map(|b| BrokerInfo {
                        node_id: b.id,
                        host: b.host,
                        port: b.port,
                    })
                    .collect(),
                controller: d.controller,
                cluster_id: d.cluster_id,
            })
        })
    }
}
