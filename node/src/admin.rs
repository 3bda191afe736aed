//! `NativeAdmin`: the core admin client and the group requests behind KafkaJS's `admin()`.
//!
//! Calls that take several items answer per item (`error` is an encoded error, see `error`,
//! or null), so the JavaScript layer can reproduce KafkaJS's aggregate errors and its
//! "already exists is not a failure" rule for `createTopics`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, PromiseRaw};
use napi::Env;
use napi_derive::napi;
use odradek::admin::{NewTopic, OffsetSpec, TopicDescription};
use odradek::producer::TopicPartition;
use odradek::{Admin, ErrorCode};

use crate::{error, rt};

/// A config entry.
#[napi(object)]
pub struct ConfigEntry {
    /// Property name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// A topic to create.
#[napi(object)]
pub struct TopicSpec {
    /// Name.
    pub topic: String,
    /// Partitions (-1 or absent: the broker's `num.partitions`).
    pub num_partitions: Option<i32>,
    /// Replication factor (-1 or absent: the broker's default).
    pub replication_factor: Option<i32>,
    /// Topic configs.
    pub config_entries: Option<Vec<ConfigEntry>>,
}

/// One item's outcome.
#[napi(object)]
pub struct ItemResult {
    /// Item name (topic or group).
    pub name: String,
    /// Encoded error, null on success.
    pub error: Option<String>,
}

/// A partition in topic metadata (KafkaJS's `PartitionMetadata`).
#[napi(object)]
pub struct PartitionInfo {
    /// Error code (0: none).
    pub partition_error_code: i32,
    /// Partition.
    pub partition_id: i32,
    /// Leader broker (-1: none).
    pub leader: i32,
    /// Replica brokers.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// Offline replicas.
    pub offline_replicas: Vec<i32>,
}

/// A topic's metadata.
#[napi(object)]
pub struct TopicInfo {
    /// Name.
    pub name: String,
    /// Encoded error, null on success.
    pub error: Option<String>,
    /// Partitions in order.
    pub partitions: Vec<PartitionInfo>,
}

/// A partition's watermarks.
#[napi(object)]
pub struct Watermarks {
    /// Partition.
    pub partition: i32,
    /// Log start offset.
    pub low: String,
    /// High watermark.
    pub high: String,
}

/// An offset of a partition.
#[napi(object)]
pub struct PartitionOffset {
    /// Partition.
    pub partition: i32,
    /// Offset (`-1`: none).
    pub offset: String,
    /// Commit metadata, where there is one.
    pub metadata: Option<String>,
}

/// A topic's committed offsets.
#[napi(object)]
pub struct TopicOffsets {
    /// Topic.
    pub topic: String,
    /// Partitions.
    pub partitions: Vec<PartitionOffset>,
}

/// A listed group.
#[napi(object)]
pub struct GroupOverview {
    /// Group id.
    pub group_id: String,
    /// Protocol type (`consumer`).
    pub protocol_type: String,
}

/// A member of a described group.
#[napi(object)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscription bytes.
    pub member_metadata: Buffer,
    /// Assignment bytes.
    pub member_assignment: Buffer,
}

/// A described group.
#[napi(object)]
pub struct GroupDescription {
    /// Error code (0: none).
    pub error_code: i32,
    /// Group id.
    pub group_id: String,
    /// State.
    pub state: String,
    /// Protocol type.
    pub protocol_type: String,
    /// Protocol (assignor).
    pub protocol: String,
    /// Members.
    pub members: Vec<MemberDescription>,
}

pub(crate) fn reason(e: odradek::Error) -> String {
    error::request(e).reason
}

/// Per-item results (topic or group name, outcome) as [`ItemResult`]s.
pub(crate) fn item_results<T>(results: Vec<(String, odradek::Result<T>)>) -> Vec<ItemResult> {
    results
        .into_iter()
        .map(|(name, r)| ItemResult {
            name,
            error: r.err().map(reason),
        })
        .collect()
}

fn topic_info(name: String, result: odradek::Result<TopicDescription>) -> TopicInfo {
    match result {
        Ok(d) => TopicInfo {
            name,
            error: None,
            partitions: d
                .partitions
                .into_iter()
                .map(|p| PartitionInfo {
                    partition_error_code: p.error.map_or(0, |c| i32::from(c.code())),
                    partition_id: p.partition,
                    leader: p.leader.unwrap_or(-1),
                    replicas: p.replicas,
                    isr: p.isr,
                    offline_replicas: p.offline,
                })
                .collect(),
        },
        Err(e) => TopicInfo {
            name,
            error: Some(reason(e)),
            partitions: Vec::new(),
        },
    }
}

/// Partition ids of `topic`, or its error.
async fn partitions_of(admin: &Admin, topic: &str) -> napi::Result<Vec<i32>> {
    let mut described = admin
        .describe_topics(&[topic])
        .await
        .map_err(error::request)?;
    match described.pop() {
        Some((_, Ok(d))) => Ok(d.partitions.iter().map(|p| p.partition).collect()),
        Some((_, Err(e))) => Err(error::request(e)),
        None => Err(error::kafka(ErrorCode::UnknownTopicOrPartition, topic)),
    }
}

/// The native admin client.
#[napi]
pub struct NativeAdmin {
    pub(crate) core: Arc<Admin>,
}

#[napi]
impl NativeAdmin {
    /// Creates an admin client from Kafka property names (nothing is connected yet).
    #[napi(constructor)]
    pub fn new(
        config: HashMap<String, String>,
        #[napi(ts_arg_type = "(() => Promise<string>) | undefined | null")] token_provider: Option<
            crate::oauth::JsTokenCallback,
        >,
    ) -> napi::Result<Self> {
        let config = crate::oauth::client_config(config, token_provider)?;
        let core = Admin::new(config);
        Ok(NativeAdmin {
            core: Arc::new(core),
        })
    }

    /// Checks that a broker answers (KafkaJS's `connect`).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            core.cluster().refresh().await.map_err(error::request)?;
            Ok(())
        })
    }

    /// Calls `callback` with every throttle time a broker reports to this client (KIP-219):
    /// each non-zero one, and the return to 0. Replaces an earlier callback.
    #[napi]
    pub fn on_throttle(
        &self,
        #[napi(ts_arg_type = "(event: ThrottleInfo) => void")]
        callback: crate::throttle::JsThrottleCallback,
    ) {
        crate::throttle::listen(self.core.cluster(), callback);
    }

    /// Calls `callback` with every client-level error (an authentication failure, a broker
    /// that cannot be reached any more, every broker down). Replaces an earlier callback.
    #[napi]
    pub fn on_client_error(
        &self,
        #[napi(ts_arg_type = "(event: ClientErrorInfo) => void")]
        callback: crate::client_errors::JsClientErrorCallback,
    ) {
        crate::client_errors::listen(self.core.cluster(), callback);
    }

    /// Calls `callback` with every request event of this client's connections (answered,
    /// timed out, waiting for an in-flight slot); set once the application listens to them.
    #[napi]
    pub fn on_request(
        &self,
        #[napi(ts_arg_type = "(event: RequestInfoJs) => void")]
        callback: crate::requests::JsRequestCallback,
    ) {
        crate::requests::listen(self.core.cluster(), callback);
    }

    /// Creates topics; one result per topic. `timeout_ms`: how long the controller may take
    /// (KafkaJS's `timeout`, the request's operation timeout).
    #[napi(ts_return_type = "Promise<Array<ItemResult>>")]
    pub fn create_topics<'env>(
        &self,
        env: &'env Env,
        topics: Vec<TopicSpec>,
        validate_only: bool,
        timeout_ms: Option<u32>,
    ) -> napi::Result<PromiseRaw<'env, Vec<ItemResult>>> {
        let mut specs = Vec::with_capacity(topics.len());
        for t in topics {
            let mut n = NewTopic::new(t.topic);
            if let Some(p) = t.num_partitions.filter(|p| *p != -1) {
                n = n.partitions(p);
            }
            if let Some(r) = t.replication_factor.filter(|r| *r != -1) {
                let r = i16::try_from(r)
                    .map_err(|_| error::invalid(format!("invalid replication factor {r}")))?;
                n = n.replication_factor(r);
            }
            for c in t.config_entries.unwrap_or_default() {
                n = n.config(c.name, c.value);
            }
            specs.push(n);
        }
        let core = self.core.clone();
        rt::promise(env, async move {
            let timeout = timeout_ms.map(|ms| std::time::Duration::from_millis(u64::from(ms)));
            let results = core
                .create_topics_within(&specs, validate_only, timeout)
                .await
                .map_err(error::request)?;
            Ok(item_results(results))
        })
    }

    /// Deletes topics; one result per topic. `timeout_ms`: how long the controller may take
    /// (KafkaJS's `timeout`, the request's operation timeout).
    #[napi(ts_return_type = "Promise<Array<ItemResult>>")]
    pub fn delete_topics<'env>(
        &self,
        env: &'env Env,
        topics: Vec<String>,
        timeout_ms: Option<u32>,
    ) -> napi::Result<PromiseRaw<'env, Vec<ItemResult>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            let timeout = timeout_ms.map(|ms| std::time::Duration::from_millis(u64::from(ms)));
            let results = core
                .delete_topics_within(&names, timeout)
                .await
                .map_err(error::request)?;
            Ok(item_results(results))
        })
    }

    /// Names of the topics that are not internal.
    #[napi(ts_return_type = "Promise<Array<string>>")]
    pub fn list_topics<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Vec<String>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let listed = core.list_topics().await.map_err(error::request)?;
            Ok(listed
                .into_iter()
                .filter(|t| !t.internal)
                .map(|t| t.name)
                .collect())
        })
    }

    /// Metadata of `topics`, or of every topic that is not internal.
    #[napi(ts_return_type = "Promise<Array<TopicInfo>>")]
    pub fn describe_topics<'env>(
        &self,
        env: &'env Env,
        topics: Option<Vec<String>>,
    ) -> napi::Result<PromiseRaw<'env, Vec<TopicInfo>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let names = match topics {
                Some(t) => t,
                None => core
                    .list_topics()
                    .await
                    .map_err(error::request)?
                    .into_iter()
                    .filter(|t| !t.internal)
                    .map(|t| t.name)
                    .collect(),
            };
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let described = core.describe_topics(&refs).await.map_err(error::request)?;
            Ok(described
                .into_iter()
                .map(|(name, r)| topic_info(name, r))
                .collect())
        })
    }

    /// Low and high watermarks of every partition of `topic`.
    #[napi(ts_return_type = "Promise<Array<Watermarks>>")]
    pub fn topic_offsets<'env>(
        &self,
        env: &'env Env,
        topic: String,
    ) -> napi::Result<PromiseRaw<'env, Vec<Watermarks>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let parts = partitions_of(&core, &topic).await?;
            let mut queries = Vec::with_capacity(parts.len() * 2);
            for p in &parts {
                let tp = TopicPartition {
                    topic: topic.as_str().into(),
                    partition: *p,
                };
                queries.push((tp.clone(), OffsetSpec::Earliest));
                queries.push((tp, OffsetSpec::Latest));
            }
            let found = core.list_offsets(&queries).await.map_err(error::request)?;
            let mut out = Vec::with_capacity(parts.len());
            for pair in found.chunks(2) {
                let [(tp, low), (_, high)] = pair else {
                    continue;
                };
                let get = |r: &odradek::Result<Option<odradek::admin::ListedOffset>>| match r {
                    Ok(o) => Ok(o.map_or(-1, |o| o.offset)),
                    Err(e) => Err(error::kafka(
                        e.kafka_code(),
                        &format!("{}-{}", tp.topic, tp.partition),
                    )),
                };
                out.push(Watermarks {
                    partition: tp.partition,
                    low: get(low)?.to_string(),
                    high: get(high)?.to_string(),
                });
            }
            Ok(out)
        })
    }

    /// Per partition of `topic`, the first offset whose timestamp is at or after `timestamp`
    /// (the high watermark when there is none).
    #[napi(ts_return_type = "Promise<Array<PartitionOffset>>")]
    pub fn offsets_by_timestamp<'env>(
        &self,
        env: &'env Env,
        topic: String,
        timestamp: f64,
    ) -> napi::Result<PromiseRaw<'env, Vec<PartitionOffset>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let parts = partitions_of(&core, &topic).await?;
            let mut queries = Vec::with_capacity(parts.len() * 2);
            for p in &parts {
                let tp = TopicPartition {
                    topic: topic.as_str().into(),
                    partition: *p,
                };
                queries.push((tp.clone(), OffsetSpec::Timestamp(timestamp as i64)));
                queries.push((tp, OffsetSpec::Latest));
            }
            let found = core.list_offsets(&queries).await.map_err(error::request)?;
            let mut out = Vec::with_capacity(parts.len());
            for pair in found.chunks(2) {
                let [(tp, at), (_, high)] = pair else {
                    continue;
                };
                let offset = match (at, high) {
                    (Ok(Some(o)), _) => o.offset,
                    (Ok(None), Ok(h)) => h.map_or(-1, |h| h.offset),
                    (Err(e), _) | (_, Err(e)) => {
                        return Err(error::kafka(
                            e.kafka_code(),
                            &format!("{}-{}", tp.topic, tp.partition),
                        ))
                    }
                };
                out.push(PartitionOffset {
                    partition: tp.partition,
                    offset: offset.to_string(),
                    metadata: None,
                });
            }
            Ok(out)
        })
    }

    /// Offsets `group_id` committed: for `topics` (every partition, `-1` where none), or for
    /// every topic the group committed to.
    #[napi(ts_return_type = "Promise<Array<TopicOffsets>>")]
    pub fn fetch_offsets<'env>(
        &self,
        env: &'env Env,
        group_id: String,
        topics: Option<Vec<String>>,
    ) -> napi::Result<PromiseRaw<'env, Vec<TopicOffsets>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let offsets = core
                .list_group_offsets(&group_id, None)
                .await
                .map_err(error::request)?;
            let mut committed: BTreeMap<String, Vec<(i32, i64, Option<String>)>> = BTreeMap::new();
            for o in offsets {
                if let Some(code) = o.error {
                    return Err(error::kafka(
                        code,
                        &format!("{}-{}", o.partition.topic, o.partition.partition),
                    ));
                }
                committed
                    .entry(o.partition.topic.to_string())
                    .or_default()
                    .push((
                        o.partition.partition,
                        o.offset.unwrap_or(-1),
                        Some(o.metadata),
                    ));
            }
            let names: Vec<String> = match topics {
                Some(t) => t,
                None => committed.keys().cloned().collect(),
            };
            let mut out = Vec::with_capacity(names.len());
            for topic in names {
                let found = committed.remove(&topic).unwrap_or_default();
                let mut parts: Vec<i32> = partitions_of(&core, &topic).await?;
                for c in &found {
                    if !parts.contains(&c.0) {
                        parts.push(c.0);
                    }
                }
                parts.sort_unstable();
                let partitions = parts
                    .into_iter()
                    .map(|p| {
                        let c = found.iter().find(|c| c.0 == p);
                        PartitionOffset {
                            partition: p,
                            offset: c.map_or(-1, |c| c.1).to_string(),
                            metadata: c.and_then(|c| c.2.clone()),
                        }
                    })
                    .collect();
                out.push(TopicOffsets { topic, partitions });
            }
            Ok(out)
        })
    }

    /// Every consumer group the brokers know.
    #[napi(ts_return_type = "Promise<Array<GroupOverview>>")]
    pub fn list_groups<'env>(
        &self,
        env: &'env Env,
    ) -> napi::Result<PromiseRaw<'env, Vec<GroupOverview>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let mut listed: BTreeMap<String, GroupOverview> = BTreeMap::new();
            for (_, answer) in core.list_groups().await.map_err(error::request)? {
                for g in answer.map_err(error::request)? {
                    listed.insert(
                        g.group_id.clone(),
                        GroupOverview {
                            group_id: g.group_id,
                            protocol_type: g.protocol_type,
                        },
                    );
                }
            }
            Ok(listed.into_values().collect())
        })
    }

    /// State, protocol and members of each group.
    #[napi(ts_return_type = "Promise<Array<GroupDescription>>")]
    pub fn describe_groups<'env>(
        &self,
        env: &'env Env,
        group_ids: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Vec<GroupDescription>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let names: Vec<&str> = group_ids.iter().map(String::as_str).collect();
            let described = core.describe_groups(&names).await.map_err(error::request)?;
            Ok(described
                .into_iter()
                .map(|(group_id, answer)| match answer {
                    Ok(g) => GroupDescription {
                        error_code: 0,
                        group_id: g.group_id,
                        state: g.state,
                        protocol_type: g.protocol_type,
                        protocol: g.protocol,
                        members: g
                            .members
                            .into_iter()
                            .map(|m| MemberDescription {
                                member_id: m.member_id,
                                client_id: m.client_id,
                                client_host: m.client_host,
                                member_metadata: Buffer::from(m.metadata_bytes.to_vec()),
                                member_assignment: Buffer::from(m.assignment_bytes.to_vec()),
                            })
                            .collect(),
                    },
                    Err(e) => GroupDescription {
                        error_code: i32::from(e.kafka_code().code()),
                        group_id,
                        state: String::new(),
                        protocol_type: String::new(),
                        protocol: String::new(),
                        members: Vec::new(),
                    },
                })
                .collect())
        })
    }

    /// Closes the admin client's connections.
    #[napi]
    pub fn close(&self) {
        self.core.close();
    }
}
