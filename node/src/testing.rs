//! `NativeTestCluster`: the in-process Kafka test cluster (`odradek_broker::testing::Cluster`)
//! behind `odradek/testing` (`node/lib/testing.js`).
//!
//! The brokers run on a thread of their own inside the addon and serve any client of the
//! process (odradek's, kafkajs's). Calls that wait for the brokers (start, stop, a broker down
//! or up, closing connections) return Promises and wait on the shared runtime's blocking pool,
//! so the event loop never waits; the rest only change the cluster's state and return at once.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use odradek_broker::testing::spec::{self, RequestRecord, RuleSpec};
use odradek_broker::testing::{names, Cluster, RuleId};

use crate::rt;

fn js_err(e: odradek_broker::Error) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, e.to_string())
}

fn stopped() -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, "the test cluster is stopped")
}

/// What a cluster starts with.
#[napi(object)]
pub struct TestClusterOptions {
    /// Brokers (default 1).
    pub brokers: Option<u32>,
    /// Partitions of auto-created topics (default 1).
    pub partitions: Option<i32>,
    /// Topics created before it starts.
    pub topics: Option<Vec<TestTopic>>,
    /// Broker settings with Apache Kafka's names.
    pub config: Option<std::collections::HashMap<String, String>>,
    /// `memory` (default), `tempdir`, or a directory kept after stop.
    pub storage: Option<String>,
    /// Turns the request log on from the first request.
    pub record_requests: Option<bool>,
}

/// A topic to create.
#[napi(object)]
pub struct TestTopic {
    /// Name.
    pub topic: String,
    /// Partitions (default 1).
    pub num_partitions: Option<i32>,
}

/// A rule in plain values (see `odradek_broker::testing::spec::RuleSpec`).
#[napi(object)]
pub struct TestRule {
    /// API key name (`Produce`) or number as a string.
    pub api: String,
    /// `error`, `delay`, `drop` or `close`.
    pub action: String,
    /// Error name or number for `error`.
    pub error: Option<String>,
    /// Delay in milliseconds.
    pub delay_ms: Option<u32>,
    /// Matching requests it applies to (absent: every one until removed).
    pub times: Option<u32>,
    /// Only this broker.
    pub broker: Option<i32>,
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this partition of `topic`.
    pub partition: Option<i32>,
    /// Only this client id.
    pub client_id: Option<String>,
}

/// A topic-partition.
#[napi(object)]
pub struct TestPartition {
    /// Topic.
    pub topic: String,
    /// Partition (-1 for topic-level items).
    pub partition: i32,
}

/// An error injected into one partition.
#[napi(object)]
pub struct TestItemError {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Error name.
    pub error: String,
}

/// One logged request.
#[napi(object)]
pub struct TestRequest {
    /// API key number.
    pub api_key: i32,
    /// API name (`Produce`).
    pub api_name: String,
    /// Request version.
    pub api_version: i32,
    /// Header client id.
    pub client_id: Option<String>,
    /// Header correlation id.
    pub correlation_id: i32,
    /// The client's `host:port`.
    pub peer: String,
    /// The broker that received it.
    pub broker: i32,
    /// Topic-partitions the request named.
    pub partitions: Vec<TestPartition>,
    /// `error`, `delay`, `drop`, `close`, or null (handled normally).
    pub action: Option<String>,
    /// The injected error's name for `error`.
    pub error: Option<String>,
    /// Errors injected into single partitions.
    pub item_errors: Vec<TestItemError>,
}

impl From<RequestRecord> for TestRequest {
    fn from(r: RequestRecord) -> Self {
        TestRequest {
            api_key: i32::from(r.api_key),
            api_name: r.api_name.to_string(),
            api_version: i32::from(r.api_version),
            client_id: r.client_id,
            correlation_id: r.correlation_id,
            peer: r.peer,
            broker: r.broker,
            partitions: r
                .partitions
                .into_iter()
                .map(|(topic, partition)| TestPartition { topic, partition })
                .collect(),
            action: r.action.map(str::to_string),
            error: r.error.map(str::to_string),
            item_errors: r
                .item_errors
                .into_iter()
                .map(|(topic, partition, error)| TestItemError {
                    topic,
                    partition,
                    error: error.to_string(),
                })
                .collect(),
        }
    }
}

/// Who serves a partition.
#[napi(object)]
pub struct TestPartitionLeader {
    /// Leader (-1: none).
    pub leader: i32,
    /// Leader epoch.
    pub epoch: i32,
    /// Read replica, if any.
    pub follower: Option<i32>,
}

type Shared = Arc<Mutex<Option<Cluster>>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Option<Cluster>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the cluster on the blocking pool; a Promise of its result.
fn blocking<'env, T, F>(env: &'env Env, shared: &Shared, f: F) -> napi::Result<PromiseRaw<'env, T>>
where
    T: napi::bindgen_prelude::ToNapiValue + Send + 'static,
    F: FnOnce(&Cluster) -> odradek_broker::Result<T> + Send + 'static,
{
    let shared = shared.clone();
    rt::promise(env, async move {
        tokio::task::spawn_blocking(move || {
            let guard = lock(&shared);
            let cluster = guard.as_ref().ok_or_else(stopped)?;
            f(cluster).map_err(js_err)
        })
        .await
        .map_err(|e| napi::Error::from_reason(format!("test cluster task failed: {e}")))?
    })
}

/// The native test cluster; use `odradek/testing`'s `Cluster`.
#[napi]
pub struct NativeTestCluster {
    inner: Shared,
}

#[napi]
impl NativeTestCluster {
    /// Starts a cluster; resolves once every broker accepts connections.
    #[napi(ts_return_type = "Promise<NativeTestCluster>")]
    pub fn start<'env>(
        env: &'env Env,
        options: TestClusterOptions,
    ) -> napi::Result<PromiseRaw<'env, NativeTestCluster>> {
        let mut builder = Cluster::builder()
            .brokers(options.brokers.unwrap_or(1) as usize)
            .partitions(options.partitions.unwrap_or(1))
            .storage(spec::storage(
                options.storage.as_deref().unwrap_or("memory"),
            ))
            .record_requests(options.record_requests.unwrap_or(false));
        for t in options.topics.unwrap_or_default() {
            builder = builder.topic(t.topic, t.num_partitions.unwrap_or(1));
        }
        for (k, v) in options.config.unwrap_or_default() {
            builder = builder.config(k, v);
        }
        rt::promise(env, async move {
            let cluster = tokio::task::spawn_blocking(move || builder.start())
                .await
                .map_err(|e| napi::Error::from_reason(format!("test cluster task failed: {e}")))?
                .map_err(js_err)?;
            Ok(NativeTestCluster {
                inner: Arc::new(Mutex::new(Some(cluster))),
            })
        })
    }

    fn with<T>(&self, f: impl FnOnce(&Cluster) -> odradek_broker::Result<T>) -> napi::Result<T> {
        let guard = lock(&self.inner);
        let cluster = guard.as_ref().ok_or_else(stopped)?;
        f(cluster).map_err(js_err)
    }

    /// `host:port,...` of every broker.
    #[napi]
    pub fn bootstrap(&self) -> napi::Result<String> {
        self.with(|c| Ok(c.bootstrap().to_string()))
    }

    /// The brokers' node ids.
    #[napi]
    pub fn broker_ids(&self) -> napi::Result<Vec<i32>> {
        self.with(|c| Ok(c.broker_ids()))
    }

    /// A broker's `host:port`.
    #[napi]
    pub fn broker_address(&self, broker: i32) -> napi::Result<Option<String>> {
        self.with(|c| Ok(c.broker_addr(broker).map(|a| a.to_string())))
    }

    /// The data directory.
    #[napi]
    pub fn data_dir(&self) -> napi::Result<String> {
        self.with(|c| Ok(c.data_dir().display().to_string()))
    }

    /// Creates a topic.
    #[napi]
    pub fn create_topic(&self, name: String, partitions: i32) -> napi::Result<()> {
        self.with(|c| c.create_topic(&name, partitions))
    }

    /// Adds a rule; returns its id.
    #[napi]
    pub fn add_rule(&self, rule: TestRule) -> napi::Result<i64> {
        let spec = RuleSpec {
            api: rule.api,
            action: rule.action,
            error: rule.error,
            delay_ms: u64::from(rule.delay_ms.unwrap_or(0)),
            times: rule.times.map(u64::from),
            broker: rule.broker,
            topic: rule.topic,
            partition: rule.partition,
            client_id: rule.client_id,
        };
        let rule = spec.to_rule().map_err(js_err)?;
        self.with(|c| c.add_rule(rule).map(|id| id.get() as i64))
    }

    /// Removes a rule; false if it was used up.
    #[napi]
    pub fn remove_rule(&self, id: i64) -> napi::Result<bool> {
        self.with(|c| Ok(c.remove_rule(RuleId::from_raw(id.max(0) as u64))))
    }

    /// Removes every rule.
    #[napi]
    pub fn clear_rules(&self) -> napi::Result<()> {
        self.with(|c| {
            c.clear_rules();
            Ok(())
        })
    }

    /// Rules not used up yet.
    #[napi]
    pub fn pending_rules(&self) -> napi::Result<u32> {
        self.with(|c| Ok(c.pending_rules() as u32))
    }

    /// Turns the request log on or off.
    #[napi]
    pub fn record_requests(&self, on: bool) -> napi::Result<()> {
        self.with(|c| {
            c.record_requests(on);
            Ok(())
        })
    }

    /// The logged requests, oldest first (`clear` empties the log).
    #[napi]
    pub fn requests(&self, clear: bool) -> napi::Result<Vec<TestRequest>> {
        self.with(|c| {
            let log = if clear {
                c.take_requests()
            } else {
                c.requests()
            };
            Ok(log
                .iter()
                .map(|r| TestRequest::from(RequestRecord::from(r)))
                .collect())
        })
    }

    /// Cuts open connections (of one broker and/or one client id); resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn close_connections<'env>(
        &self,
        env: &'env Env,
        broker: Option<i32>,
        client_id: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, u32>> {
        blocking(env, &self.inner, move |c| {
            c.close_connections(broker, client_id.as_deref())
                .map(|n| n as u32)
        })
    }

    /// Open connections of a broker.
    #[napi]
    pub fn connection_count(&self, broker: i32) -> napi::Result<u32> {
        self.with(|c| c.connection_count(broker).map(|n| n as u32))
    }

    /// Takes a broker down (listener closed, connections cut).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_broker_down<'env>(
        &self,
        env: &'env Env,
        broker: i32,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        blocking(env, &self.inner, move |c| c.set_broker_down(broker))
    }

    /// Brings a broker back on the same port.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_broker_up<'env>(
        &self,
        env: &'env Env,
        broker: i32,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        blocking(env, &self.inner, move |c| c.set_broker_up(broker))
    }

    /// Whether a broker is up.
    #[napi]
    pub fn is_broker_up(&self, broker: i32) -> napi::Result<bool> {
        self.with(|c| Ok(c.is_broker_up(broker)))
    }

    /// Adds `rtt_ms` before every response of a broker (0 removes it).
    #[napi]
    pub fn set_broker_rtt(&self, broker: i32, rtt_ms: u32) -> napi::Result<()> {
        self.with(|c| c.set_broker_rtt(broker, Duration::from_millis(u64::from(rtt_ms))))
    }

    /// Moves a partition's leader (-1: none); returns the new leader epoch.
    #[napi]
    pub fn set_partition_leader(
        &self,
        topic: String,
        partition: i32,
        leader: i32,
    ) -> napi::Result<i32> {
        self.with(|c| c.set_partition_leader(&topic, partition, leader))
    }

    /// Sets or clears a partition's read replica.
    #[napi]
    pub fn set_partition_follower(
        &self,
        topic: String,
        partition: i32,
        follower: Option<i32>,
    ) -> napi::Result<()> {
        self.with(|c| c.set_partition_follower(&topic, partition, follower))
    }

    /// Who serves a partition.
    #[napi]
    pub fn partition_leader(
        &self,
        topic: String,
        partition: i32,
    ) -> napi::Result<TestPartitionLeader> {
        self.with(|c| {
            let r = c.partition_leader(&topic, partition)?;
            Ok(TestPartitionLeader {
                leader: r.leader,
                epoch: r.epoch,
                follower: r.follower,
            })
        })
    }

    /// Pins a group's (`group`) or transactional id's (`transaction`) coordinator.
    #[napi]
    pub fn set_coordinator(
        &self,
        kind: String,
        key: String,
        broker: Option<i32>,
    ) -> napi::Result<()> {
        let kind = spec::coordinator_kind(&kind).map_err(js_err)?;
        self.with(|c| c.set_coordinator(kind, &key, broker))
    }

    /// The broker coordinating a group or transactional id.
    #[napi]
    pub fn coordinator(&self, kind: String, key: String) -> napi::Result<i32> {
        let kind = spec::coordinator_kind(&kind).map_err(js_err)?;
        self.with(|c| Ok(c.coordinator(kind, &key)))
    }

    /// Serves only versions `min..=max` of an API.
    #[napi]
    pub fn set_api_version(&self, api: String, min: i32, max: i32) -> napi::Result<()> {
        let key = names::api_key(&api).map_err(js_err)?;
        let clamp = |v: i32| v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
        self.with(|c| c.set_api_version(key, clamp(min), clamp(max)))
    }

    /// Removes an API's version clamp.
    #[napi]
    pub fn clear_api_version(&self, api: String) -> napi::Result<()> {
        let key = names::api_key(&api).map_err(js_err)?;
        self.with(|c| {
            c.clear_api_version(key);
            Ok(())
        })
    }

    /// Stops the cluster and removes its data (idempotent).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stop<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let shared = self.inner.clone();
        rt::promise(env, async move {
            tokio::task::spawn_blocking(move || {
                let cluster = lock(&shared).take();
                if let Some(c) = cluster {
                    c.stop();
                }
            })
            .await
            .map_err(|e| napi::Error::from_reason(format!("test cluster task failed: {e}")))
        })
    }

    /// Whether the cluster runs.
    #[napi]
    pub fn is_running(&self) -> bool {
        lock(&self.inner).is_some()
    }
}
