//! The native half of `odradek.admin.AdminClient`: runs the core's admin calls on the runtime
//! and completes one `concurrent.futures.Future` per item (confluent-kafka's shape), with
//! `None` or a `KafkaException`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use odradek::admin::{
    AlterConfigOp, ConfigEntry, ConfigResource, ConfigSource, GroupMember, NewTopic, OffsetSpec,
    QuotaAlteration, QuotaEntity, QuotaFilter, QuotaMatch, TopicDescription,
};
use odradek::cluster::BrokerInfo;
use odradek::producer::TopicPartition;
use odradek::Admin;
use odradek_bindings::client_errors::ErrorQueue;
use odradek_bindings::runtime::{self, ForkGuard, Signal, SLICE};
use odradek_bindings::throttle::ThrottleQueue;
use odradek_bindings::{ClientError, Stage};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::runtime::Handle;

use crate::admin_security;
use crate::conf;
use crate::errors::{kafka_error, IntoPy, KafkaException};
use crate::metadata::ClusterMetadata;
use crate::wait;

/// Completes `futures[i]` with `results[i]` (`Ok` → None), or every future with `call_error`.
pub(crate) fn settle(
    futures: Vec<Py<PyAny>>,
    results: Result<Vec<Result<(), odradek::Error>>, odradek::Error>,
) {
    settle_with(futures, results, |py, ()| Ok(py.None()));
}

/// Completes `futures[i]` with `convert(results[i])` or its `KafkaException`; every future gets
/// the call's error when the call failed as a whole.
pub(crate) fn settle_with<T>(
    futures: Vec<Py<PyAny>>,
    results: Result<Vec<Result<T, odradek::Error>>, odradek::Error>,
    convert: impl Fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) {
    Python::try_attach(|py| {
        let outcome: Vec<Result<T, ClientError>> = match results {
            Ok(r) => r
                .into_iter()
                .map(|x| x.map_err(|e| ClientError::from_core(&e, Stage::Request)))
                .collect(),
            Err(e) => {
                let e = ClientError::from_core(&e, Stage::Request);
                futures.iter().map(|_| Err(e.clone())).collect()
            }
        };
        for (fut, result) in futures.iter().zip(outcome) {
            let fut = fut.bind(py);
            // A future the application cancelled cannot take a result.
            if fut
                .call_method0("done")
                .and_then(|d| d.is_truthy())
                .unwrap_or(true)
            {
                continue;
            }
            let r = match result.map(|v| convert(py, v)) {
                Ok(Ok(v)) => fut.call_method1("set_result", (v,)),
                Ok(Err(err)) => fut.call_method1("set_exception", (err.into_value(py),)),
                Err(e) => match kafka_error(py, e) {
                    Ok(k) => fut.call_method1(
                        "set_exception",
                        (KafkaException::new_err((k,)).into_value(py),),
                    ),
                    Err(err) => Err(err),
                },
            };
            if let Err(e) = r {
                e.write_unraisable(py, Some(fut));
            }
        }
    });
}

/// Bounds `fut` by a call's `request_timeout` in seconds (None, non-finite or <= 0: only the
/// client's own `default.api.timeout.ms`); past it the call fails with `_TIMED_OUT`.
pub(crate) async fn bounded<T>(
    timeout: Option<f64>,
    fut: impl Future<Output = Result<T, odradek::Error>>,
) -> Result<T, odradek::Error> {
    let limit = timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .and_then(|t| Duration::try_from_secs_f64(t).ok());
    match limit {
        Some(limit) => tokio::time::timeout(limit, fut).await.unwrap_or_else(|_| {
            Err(odradek::Error::Timeout(format!(
                "admin request timed out after {:.3}s (request_timeout)",
                limit.as_secs_f64()
            )))
        }),
        None => fut.await,
    }
}

/// An operation timeout in seconds from Python: `None` or 0 leave it to the request timeout; a
/// negative or non-finite value is refused with its name.
fn seconds(name: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(v) => Duration::try_from_secs_f64(v).map(Some).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "{name} must be a non-negative number of seconds, not {v}"
            ))
        }),
    }
}

/// A core error (from a per-item answer) as a Python `KafkaError`.
pub(crate) fn core_error(
    py: Python<'_>,
    e: &odradek::Error,
) -> PyResult<Py<crate::errors::KafkaError>> {
    kafka_error(py, ClientError::from_core(e, Stage::Request))
}

/// A `(topic, partition)` pair as the core's partition.
fn partition(topic: String, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// confluent-kafka's `ResourceType.TOPIC` value.
const RESOURCE_TOPIC: i32 = 2;
/// confluent-kafka's `ResourceType.BROKER` value.
const RESOURCE_BROKER: i32 = 4;

/// A `(resource type, name)` pair as the core's resource; only topics and brokers (named by
/// their integer id) have configs here, anything else is a `ValueError`.
fn config_resource(restype: i32, name: String) -> PyResult<ConfigResource> {
    match restype {
        RESOURCE_TOPIC => Ok(ConfigResource::Topic(name)),
        RESOURCE_BROKER => name
            .trim()
            .parse::<i32>()
            .map(ConfigResource::Broker)
            .map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "a broker resource is named by its integer node id, not {name:?}"
                ))
            }),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "configs of resource type {other} are not supported (only TOPIC and BROKER)"
        ))),
    }
}

/// Kafka's wire value of a config source (confluent-kafka reports `ConfigEntry.source` as
/// this integer).
fn source_value(source: ConfigSource) -> i32 {
    i32::from(source.wire())
}

/// A described config entry: `(name, value, source, read_only, sensitive)`.
type ConfigTuple = (String, Option<String>, i32, bool, bool);

/// A described entry as the tuple `describe_configs` hands to Python.
fn config_tuple(e: ConfigEntry) -> ConfigTuple {
    (
        e.name,
        e.value,
        source_value(e.source),
        e.read_only,
        e.sensitive,
    )
}

/// One legacy AlterConfigs resource: `(ResourceType value, name, [(config, value)])`.
type AlterConfigsArgs = (i32, String, Vec<(String, String)>);

/// One incremental change: `(config name, AlterConfigOpType value, value or None)`.
type IncrementalArgs = (String, i32, Option<String>);

/// An incremental change as the core's operation (`SET` = 0, `DELETE` = 1, `APPEND` = 2,
/// `SUBTRACT` = 3; all but `DELETE` need a value).
fn alter_op((name, op, value): IncrementalArgs) -> PyResult<AlterConfigOp> {
    let need = |v: Option<String>| {
        v.ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "config {name:?}: operation {op} needs a value"
            ))
        })
    };
    Ok(match op {
        0 => AlterConfigOp::set(name.clone(), need(value)?),
        1 => AlterConfigOp::delete(name),
        2 => AlterConfigOp::append(name.clone(), need(value)?),
        3 => AlterConfigOp::subtract(name.clone(), need(value)?),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "config {name:?}: unknown operation {other}"
            )))
        }
    })
}

/// A `list_offsets` spec value as confluent-kafka encodes it: -2 earliest, -1 latest, -3 max
/// timestamp, >= 0 a timestamp in ms.
fn offset_spec(value: i64) -> PyResult<OffsetSpec> {
    match value {
        -2 => Ok(OffsetSpec::Earliest),
        -1 => Ok(OffsetSpec::Latest),
        -3 => Ok(OffsetSpec::MaxTimestamp),
        ts if ts >= 0 => Ok(OffsetSpec::Timestamp(ts)),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "invalid offset spec {other}"
        ))),
    }
}

/// A member as `describe_groups` returns it: `(member_id, group_instance_id, client_id,
/// host, [(topic, partition)])`.
/// (member id, instance id, client id, host, assignment, target assignment: `None` in a
/// classic group).
type MemberTuple = (
    String,
    Option<String>,
    String,
    String,
    Vec<(String, i32)>,
    Option<Vec<(String, i32)>>,
);

fn member_tuple(m: GroupMember) -> MemberTuple {
    let pairs = |ps: Vec<TopicPartition>| -> Vec<(String, i32)> {
        ps.into_iter()
            .map(|tp| (tp.topic.to_string(), tp.partition))
            .collect()
    };
    let target = (m.member_epoch >= 0).then(|| pairs(m.target_assignment));
    (
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        pairs(m.assignment),
        target,
    )
}

/// A broker as Python's `Node` takes it: `(id, host, port, rack)`.
type NodeTuple = (i32, Option<String>, i32, Option<String>);

/// A described topic: `(name, (topic id msb, lsb), internal, [(partition, leader, replicas,
/// isr)])`.
type TopicTuple = (
    String,
    (i64, i64),
    bool,
    Vec<(i32, Option<NodeTuple>, Vec<NodeTuple>, Vec<NodeTuple>)>,
);

/// The cluster's brokers by id, refreshed once when a described partition names a node the
/// cached metadata does not list (a broker that joined since the last refresh).
async fn brokers_for(
    admin: &Admin,
    described: &[(String, Result<TopicDescription, odradek::Error>)],
) -> HashMap<i32, BrokerInfo> {
    let cluster = admin.cluster();
    let mut meta = cluster.metadata();
    let named = described
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|d| d.partitions.iter())
        .flat_map(|p| p.leader.iter().chain(&p.replicas).chain(&p.isr));
    let mut missing = false;
    for id in named {
        missing |= !meta.brokers.contains_key(id);
    }
    if missing {
        if let Ok(fresh) = cluster.refresh().await {
            meta = fresh;
        }
    }
    meta.brokers.clone()
}

fn node_tuple(id: i32, brokers: &HashMap<i32, BrokerInfo>) -> NodeTuple {
    match brokers.get(&id) {
        Some(b) => (id, Some(b.host.clone()), b.port, b.rack.clone()),
        None => (id, None, 0, None),
    }
}

fn topic_tuple(d: TopicDescription, brokers: &HashMap<i32, BrokerInfo>) -> TopicTuple {
    let bits = d.topic_id.as_u128();
    let nodes = |ids: &[i32]| ids.iter().map(|&i| node_tuple(i, brokers)).collect();
    let partitions = d
        .partitions
        .iter()
        .map(|p| {
            let leader = p.leader.map(|l| node_tuple(l, brokers));
            (p.partition, leader, nodes(&p.replicas), nodes(&p.isr))
        })
        .collect();
    // The two halves as Kafka's (and confluent-kafka's) signed 64-bit longs.
    let (msb, lsb) = ((bits >> 64) as u64 as i64, bits as u64 as i64);
    (d.name, (msb, lsb), d.internal, partitions)
}

/// `(name, partitions or -1, replication factor or -1, [(config, value)])`.
type NewTopicArgs = (String, i32, i16, Vec<(String, String)>);

/// A quota entity as Python passes it: `[(entity type, name or None for the default)]`.
type EntityArgs = Vec<(String, Option<String>)>;

/// One quota alteration: `(entity, [(key, value or None to remove)])`.
type QuotaAlterationArgs = (EntityArgs, Vec<(String, Option<f64>)>);

/// A described entity with its quotas, as `describe_client_quotas` hands them to Python.
type QuotaEntry = (EntityArgs, Vec<(String, f64)>);

/// A filter component `(entity type, match type, name)` as the core's: match types are Kafka's
/// (0 exactly `name`, 1 the default entity, 2 any entity of the type).
fn quota_component(
    (entity_type, match_type, name): (String, i32, Option<String>),
) -> PyResult<(String, QuotaMatch)> {
    let m = match (match_type, name) {
        (0, Some(n)) => QuotaMatch::Exact(n),
        (0, None) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "filter component {entity_type:?}: an exact match needs a name"
            )))
        }
        (1, _) => QuotaMatch::Default,
        (2, _) => QuotaMatch::Any,
        (other, _) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "filter component {entity_type:?}: unknown match type {other}"
            )))
        }
    };
    Ok((entity_type, m))
}

/// An alteration as the core's; every value must be a finite number (the Python layer has
/// already named a bad one's key; this is the last line).
fn quota_alteration((entity, ops): QuotaAlterationArgs) -> PyResult<QuotaAlteration> {
    for (key, value) in &ops {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "quota {key:?}: the value must be a finite number"
            )));
        }
    }
    Ok(QuotaAlteration {
        entity: entity.into_iter().collect(),
        ops,
    })
}

fn entity_args(e: QuotaEntity) -> EntityArgs {
    e.into_iter().collect()
}

/// The native admin client.
#[pyclass(module = "odradek._odradek", name = "_AdminClient", frozen)]
pub struct AdminCore {
    admin: Arc<Admin>,
    handle: Handle,
    fork: ForkGuard,
    /// `throttle_cb`, served by `poll`.
    throttle_cb: Option<Py<PyAny>>,
    /// The brokers' throttle reports, kept when there is a `throttle_cb`.
    throttles: Option<Arc<ThrottleQueue>>,
    /// `error_cb`, served by `poll`: client-level errors (authentication, brokers down).
    error_cb: Option<Py<PyAny>>,
    /// The errors waiting for `poll`, kept when there is an `error_cb`.
    errors: Option<Arc<ErrorQueue>>,
    /// Notified when a throttle report or an error arrives.
    signal: Arc<Signal>,
    /// confluent-kafka's `logger=`, served by `poll` with the core's log lines.
    logger: Option<Py<PyAny>>,
    /// The log lines waiting for `logger`.
    log: Option<Arc<odradek_bindings::log_router::LogQueue>>,
}

impl AdminCore {
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.fork.check().py(py)
    }

    /// Runs `error_cb` for each waiting error, then `throttle_cb` for the throttle reports;
    /// returns how many callbacks ran.
    fn serve(&self, py: Python<'_>) -> PyResult<usize> {
        conf::serve_log_to(py, self.logger.as_ref(), self.log.as_ref())?;
        let mut ran = 0;
        if let (Some(cb), Some(q)) = (&self.error_cb, &self.errors) {
            let mut waiting = q.take().into_iter();
            while let Some(e) = waiting.next() {
                let called = kafka_error(py, e).and_then(|err| cb.call1(py, (err,)));
                if let Err(raised) = called {
                    for rest in waiting {
                        q.push(rest);
                    }
                    return Err(raised);
                }
                ran += 1;
            }
        }
        if let Some(q) = &self.throttles {
            let reports = q.take();
            if !reports.is_empty() {
                ran += crate::throttle::serve(py, self.throttle_cb.as_ref(), reports, |rest| {
                    q.requeue(rest)
                })?;
            }
        }
        Ok(ran)
    }
}

#[pymethods]
impl AdminCore {
    #[new]
    #[pyo3(signature = (conf=None, **kwargs))]
    fn new(
        py: Python<'_>,
        conf: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (mut props, mut cbs) = conf::parse(py, conf, kwargs)?;
        conf::attach_logger(py, &mut props, &mut cbs)?;
        let (config, _settings) =
            crate::oauth::split_config(py, props, cbs.oauth_cb.take()).py(py)?;
        let handle = runtime::runtime().py(py)?;
        let admin = {
            let _enter = handle.enter();
            Arc::new(Admin::new(config))
        };
        let signal = Signal::new();
        let throttle_cb = cbs.throttle_cb.take();
        let throttles = throttle_cb
            .is_some()
            .then(|| ThrottleQueue::attach(admin.cluster(), signal.clone()));
        let error_cb = cbs.error_cb.take();
        let errors = error_cb
            .is_some()
            .then(|| ErrorQueue::attach(admin.cluster(), signal.clone()));
        Ok(AdminCore {
            admin,
            handle,
            fork: ForkGuard::new(),
            throttle_cb,
            throttles,
            error_cb,
            errors,
            signal,
            logger: cbs.logger.take(),
            log: cbs.log.take(),
        })
    }

    /// Serves `error_cb` (client-level errors, as librdkafka serves them from `poll`) and
    /// `throttle_cb` (the brokers' throttle reports), waiting up to `timeout` seconds (None or
    /// negative: forever) for the first; returns how many callbacks ran. An exception raised by
    /// a callback propagates (what is left waits for the next call, throttle reports included).
    #[pyo3(signature = (timeout=None))]
    fn poll(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        self.check(py)?;
        let deadline = wait::deadline(timeout);
        loop {
            let seen = self.signal.prepare();
            let served = self.serve(py);
            if !matches!(served, Ok(0)) || deadline.passed() {
                self.signal.cancel_wait();
                return served;
            }
            let slice = deadline.slice(SLICE);
            py.detach(|| self.signal.wait(seen, slice));
            py.check_signals()?;
        }
    }

    /// DescribeClientQuotas (`components`: `(entity type, match type, name or None)`, match
    /// types 0 exact, 1 default, 2 any): `future` gets `[(entity, [(key, value)])]`, entity as
    /// `[(entity type, name or None)]`.
    #[pyo3(signature = (components, strict, timeout, future))]
    fn describe_client_quotas(
        &self,
        py: Python<'_>,
        components: Vec<(String, i32, Option<String>)>,
        strict: bool,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        let filter = QuotaFilter {
            components: components
                .into_iter()
                .map(quota_component)
                .collect::<PyResult<Vec<_>>>()?,
            strict,
        };
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.describe_client_quotas(&filter))
                    .await
                    .map(|r| vec![Ok(r)])
            },
            move |results| {
                settle_with(vec![future], results, |py, entries| {
                    let out: Vec<QuotaEntry> = entries
                        .into_iter()
                        .map(|(e, values)| (entity_args(e), values.into_iter().collect()))
                        .collect();
                    Ok(out.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// AlterClientQuotas (`alterations`: `(entity, [(key, value or None to remove)])`): each
    /// future gets None or its entity's error.
    #[pyo3(signature = (alterations, validate_only, timeout, futures))]
    fn alter_client_quotas(
        &self,
        py: Python<'_>,
        alterations: Vec<QuotaAlterationArgs>,
        validate_only: bool,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        if alterations.len() != futures.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "one future per alteration",
            ));
        }
        let alterations = alterations
            .into_iter()
            .map(quota_alteration)
            .collect::<PyResult<Vec<_>>>()?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.alter_client_quotas(&alterations, validate_only),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// `topics`: `(name, partitions or -1, replication factor or -1, {config: value})`;
    /// `operation_timeout` (seconds) bounds the controller's work, `timeout` the call.
    #[pyo3(signature = (topics, validate_only, operation_timeout, timeout, futures))]
    fn create_topics(
        &self,
        py: Python<'_>,
        topics: Vec<NewTopicArgs>,
        validate_only: bool,
        operation_timeout: Option<f64>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        let operation_timeout = seconds("operation_timeout", operation_timeout)?;
        self.check(py)?;
        let new: Vec<NewTopic> = topics
            .into_iter()
            .map(|(name, partitions, replication, configs)| NewTopic {
                name,
                partitions: (partitions > 0).then_some(partitions),
                replication_factor: (replication > 0).then_some(replication),
                configs,
            })
            .collect();
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.create_topics_within(&new, validate_only, operation_timeout),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x.map(drop)).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// Deletes topics (`operation_timeout` and `timeout` as for `create_topics`).
    #[pyo3(signature = (topics, operation_timeout, timeout, futures))]
    fn delete_topics(
        &self,
        py: Python<'_>,
        topics: Vec<String>,
        operation_timeout: Option<f64>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        let operation_timeout = seconds("operation_timeout", operation_timeout)?;
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                bounded(
                    timeout,
                    admin.delete_topics_within(&names, operation_timeout),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// `topics`: `(name, new total partition count)` (`operation_timeout` and `timeout` as
    /// for `create_topics`).
    #[pyo3(signature = (topics, validate_only, operation_timeout, timeout, futures))]
    fn create_partitions(
        &self,
        py: Python<'_>,
        topics: Vec<(String, i32)>,
        validate_only: bool,
        operation_timeout: Option<f64>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        let operation_timeout = seconds("operation_timeout", operation_timeout)?;
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let items: Vec<(&str, i32)> =
                    topics.iter().map(|(t, n)| (t.as_str(), *n)).collect();
                bounded(
                    timeout,
                    admin.create_partitions_within(&items, validate_only, operation_timeout),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// Every group on every broker: completes `future` with `([(group_id, protocol_type,
    /// state)], [KafkaError per broker that failed])`.
    #[pyo3(signature = (timeout, future))]
    fn list_groups(&self, py: Python<'_>, timeout: Option<f64>, future: Py<PyAny>) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.list_groups())
                    .await
                    .map(|r| vec![Ok(r)])
            },
            move |results| {
                settle_with(vec![future], results, |py, per_broker| {
                    let mut valid = Vec::new();
                    let mut errors = Vec::new();
                    for (_, r) in per_broker {
                        match r {
                            Ok(groups) => valid.extend(
                                groups
                                    .into_iter()
                                    .map(|g| (g.group_id, g.protocol_type, g.state, g.group_type)),
                            ),
                            Err(e) => errors
                                .push(kafka_error(py, ClientError::from_core(&e, Stage::Request))?),
                        }
                    }
                    Ok((valid, errors).into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Describes groups: each future gets `(group_id, state, protocol_type, protocol,
    /// [member], group_type, coordinator node or None)` (see `MemberTuple`, `NodeTuple`).
    #[pyo3(signature = (groups, timeout, futures))]
    fn describe_groups(
        &self,
        py: Python<'_>,
        groups: Vec<String>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = groups.iter().map(String::as_str).collect();
                bounded(timeout, admin.describe_groups(&names))
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| {
                settle_with(futures, results, |py, d| {
                    let members: Vec<MemberTuple> =
                        d.members.into_iter().map(member_tuple).collect();
                    let coordinator: Option<NodeTuple> = d
                        .coordinator
                        .map(|b| (b.node_id, Some(b.host), b.port, b.rack));
                    let t = (
                        d.group_id,
                        d.state,
                        d.protocol_type,
                        d.protocol,
                        members,
                        d.group_type,
                        coordinator,
                    );
                    Ok(t.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Deletes groups (each future gets None or the group's error).
    #[pyo3(signature = (groups, timeout, futures))]
    fn delete_groups(
        &self,
        py: Python<'_>,
        groups: Vec<String>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = groups.iter().map(String::as_str).collect();
                bounded(timeout, admin.delete_groups(&names))
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// A group's committed offsets (of `partitions`, or all): `future` gets `[(topic,
    /// partition, offset or OFFSET_INVALID, metadata, KafkaError or None)]`.
    #[pyo3(signature = (group, partitions, timeout, future))]
    fn list_group_offsets(
        &self,
        py: Python<'_>,
        group: String,
        partitions: Option<Vec<(String, i32)>>,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        let partitions: Option<Vec<odradek::producer::TopicPartition>> = partitions.map(|ps| {
            ps.into_iter()
                .map(|(t, p)| odradek::producer::TopicPartition {
                    topic: t.into(),
                    partition: p,
                })
                .collect()
        });
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.list_group_offsets(&group, partitions.as_deref()),
                )
                .await
                .map(|r| vec![Ok(r)])
            },
            move |results| {
                settle_with(vec![future], results, |py, offsets| {
                    let mut out = Vec::with_capacity(offsets.len());
                    for o in offsets {
                        let error = o
                            .error
                            .map(|c| {
                                kafka_error(
                                    py,
                                    ClientError::from_core(
                                        &odradek::Error::Kafka(c),
                                        Stage::Request,
                                    ),
                                )
                            })
                            .transpose()?;
                        out.push((
                            o.partition.topic.to_string(),
                            o.partition.partition,
                            o.offset
                                .unwrap_or(odradek_bindings::consumer::OFFSET_INVALID),
                            o.metadata,
                            error,
                        ));
                    }
                    Ok(out.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Sets `group`'s committed offsets (`offsets`: `(topic, partition, offset)`); `future`
    /// gets `[(topic, partition, KafkaError or None)]` as the broker answered, or the call's
    /// `KafkaException` (e.g. the coordinator could not be found).
    #[pyo3(signature = (group, offsets, timeout, future))]
    fn alter_group_offsets(
        &self,
        py: Python<'_>,
        group: String,
        offsets: Vec<(String, i32, i64)>,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        let offsets: Vec<(TopicPartition, i64)> = offsets
            .into_iter()
            .map(|(t, p, o)| (partition(t, p), o))
            .collect();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.alter_group_offsets(&group, &offsets))
                    .await
                    .map(|r| vec![Ok(r)])
            },
            move |results| {
                settle_with(vec![future], results, |py, answers| {
                    let mut out = Vec::with_capacity(answers.len());
                    for (tp, r) in answers {
                        let error = match r {
                            Ok(()) => None,
                            Err(e) => Some(core_error(py, &e)?),
                        };
                        out.push((tp.topic.to_string(), tp.partition, error));
                    }
                    Ok(out.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Describes configs (`resources`: `(ResourceType value, name)`; TOPIC and BROKER only):
    /// each future gets `[(name, value, source, read_only, sensitive)]`.
    #[pyo3(signature = (resources, timeout, futures))]
    fn describe_configs(
        &self,
        py: Python<'_>,
        resources: Vec<(i32, String)>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let resources = resources
            .into_iter()
            .map(|(t, n)| config_resource(t, n))
            .collect::<PyResult<Vec<_>>>()?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.describe_configs(&resources))
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| {
                settle_with(futures, results, |py, entries| {
                    let entries: Vec<ConfigTuple> = entries.into_iter().map(config_tuple).collect();
                    Ok(entries.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Legacy AlterConfigs (`changes`: `(ResourceType value, name, [(config, value)])`; the
    /// given set replaces every override): each future gets None or the resource's error.
    #[pyo3(signature = (changes, validate_only, timeout, futures))]
    fn alter_configs(
        &self,
        py: Python<'_>,
        changes: Vec<AlterConfigsArgs>,
        validate_only: bool,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let changes = changes
            .into_iter()
            .map(|(t, n, configs)| Ok((config_resource(t, n)?, configs)))
            .collect::<PyResult<Vec<_>>>()?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.alter_configs(&changes, validate_only))
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// IncrementalAlterConfigs (`changes`: `(ResourceType value, name, [(config,
    /// AlterConfigOpType value, value or None)])`): each future gets None or the resource's
    /// error.
    #[pyo3(signature = (changes, validate_only, timeout, futures))]
    fn incremental_alter_configs(
        &self,
        py: Python<'_>,
        changes: Vec<(i32, String, Vec<IncrementalArgs>)>,
        validate_only: bool,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let changes = changes
            .into_iter()
            .map(|(t, n, ops)| {
                let ops = ops
                    .into_iter()
                    .map(alter_op)
                    .collect::<PyResult<Vec<_>>>()?;
                Ok((config_resource(t, n)?, ops))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.incremental_alter_configs(&changes, validate_only),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// The cluster's id, controller and brokers: `future` gets `(cluster_id, controller id or
    /// None, [(id, host, port, rack)])`.
    #[pyo3(signature = (timeout, future))]
    fn describe_cluster(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, admin.describe_cluster())
                    .await
                    .map(|d| vec![Ok(d)])
            },
            move |results| {
                settle_with(vec![future], results, |py, d| {
                    let nodes: Vec<(i32, String, i32, Option<String>)> = d
                        .brokers
                        .into_iter()
                        .map(|b| (b.id, b.host, b.port, b.rack))
                        .collect();
                    let t = (d.cluster_id, d.controller, nodes);
                    Ok(t.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Describes topics from Metadata: each future gets `(name, (topic id's most and least
    /// significant 64 bits), internal, [(partition, leader node or None, [replica node], [isr
    /// node])])`, a node being `(id, host, port, rack)` (`(id, None, 0, None)` for a node the
    /// cluster does not list), or UNKNOWN_TOPIC_OR_PART for a topic that does not exist.
    #[pyo3(signature = (topics, timeout, futures))]
    fn describe_topics(
        &self,
        py: Python<'_>,
        topics: Vec<String>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(timeout, async {
                    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                    let described = admin.describe_topics(&names).await?;
                    let brokers = brokers_for(&admin, &described).await;
                    Ok(described
                        .into_iter()
                        .map(|(_, r)| r.map(|d| topic_tuple(d, &brokers)))
                        .collect())
                })
                .await
            },
            move |results| {
                settle_with(futures, results, |py, t: TopicTuple| {
                    Ok(t.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Looks up offsets (`queries`: `(topic, partition, spec)`, spec as confluent-kafka's
    /// `OffsetSpec` values) at an isolation level (`read_committed`: latest is the last stable
    /// offset): each future gets `(offset, timestamp, leader_epoch)`, -1 for what is unknown
    /// (offset -1: no record matches).
    #[pyo3(signature = (queries, read_committed, timeout, futures))]
    fn list_offsets(
        &self,
        py: Python<'_>,
        queries: Vec<(String, i32, i64)>,
        read_committed: bool,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let queries = queries
            .into_iter()
            .map(|(t, p, spec)| Ok((partition(t, p), offset_spec(spec)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.list_offsets_isolated(&queries, read_committed),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| {
                settle_with(futures, results, |py, found| {
                    let t = match found {
                        Some(f) => (
                            f.offset,
                            f.timestamp.unwrap_or(-1),
                            f.leader_epoch.unwrap_or(-1),
                        ),
                        None => (-1, -1, -1),
                    };
                    Ok(t.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Deletes the records before each offset (`before`: `(topic, partition, offset)`, offset
    /// -1: the high watermark): each future gets the partition's new low watermark.
    #[pyo3(signature = (before, operation_timeout, timeout, futures))]
    fn delete_records(
        &self,
        py: Python<'_>,
        before: Vec<(String, i32, i64)>,
        operation_timeout: Option<f64>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let operation_timeout = seconds("operation_timeout", operation_timeout)?;
        let before: Vec<(TopicPartition, i64)> = before
            .into_iter()
            .map(|(t, p, o)| (partition(t, p), o))
            .collect();
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                bounded(
                    timeout,
                    admin.delete_records_within(&before, operation_timeout),
                )
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| {
                settle_with(futures, results, |py, low: i64| {
                    Ok(low.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Cluster metadata (as `Producer.list_topics`).
    /// CreateAcls (`acls`: binding tuples, see `admin_security`): each future gets None or
    /// its binding's error.
    #[pyo3(signature = (acls, timeout, futures))]
    fn create_acls(
        &self,
        py: Python<'_>,
        acls: Vec<admin_security::BindingArgs>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        admin_security::create_acls(self.admin.clone(), &self.handle, acls, timeout, futures);
        Ok(())
    }

    /// DescribeAcls: `future` gets the binding tuples `filter` matches.
    #[pyo3(signature = (filter, timeout, future))]
    fn describe_acls(
        &self,
        py: Python<'_>,
        filter: admin_security::FilterArgs,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        admin_security::describe_acls(self.admin.clone(), &self.handle, filter, timeout, future);
        Ok(())
    }

    /// DeleteAcls: each future gets its filter's matches as `(binding tuple, error or None)`.
    #[pyo3(signature = (filters, timeout, futures))]
    fn delete_acls(
        &self,
        py: Python<'_>,
        filters: Vec<admin_security::FilterArgs>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        admin_security::delete_acls(self.admin.clone(), &self.handle, filters, timeout, futures);
        Ok(())
    }

    /// DescribeUserScramCredentials (`users`: None for all): `future` gets
    /// `[(user, error or None, [(mechanism, iterations)])]`.
    #[pyo3(signature = (users, timeout, future))]
    fn describe_user_scram_credentials(
        &self,
        py: Python<'_>,
        users: Option<Vec<String>>,
        timeout: Option<f64>,
        future: Py<PyAny>,
    ) -> PyResult<()> {
        self.check(py)?;
        admin_security::describe_user_scram_credentials(
            self.admin.clone(),
            &self.handle,
            users,
            timeout,
            future,
        );
        Ok(())
    }

    /// AlterUserScramCredentials (`alterations`: `(user, mechanism, iterations, password or
    /// None for a deletion, salt or None)`): one future per distinct user, first-seen order.
    #[pyo3(signature = (alterations, timeout, futures))]
    fn alter_user_scram_credentials(
        &self,
        py: Python<'_>,
        alterations: Vec<admin_security::AlterationArgs>,
        timeout: Option<f64>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        admin_security::alter_user_scram_credentials(
            self.admin.clone(),
            &self.handle,
            alterations,
            timeout,
            futures,
        )
    }

    #[pyo3(signature = (topic=None, timeout=-1.0))]
    fn list_topics(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<ClusterMetadata> {
        self.check(py)?;
        let cluster = self.admin.cluster().clone();
        crate::metadata::list_topics(py, &self.handle, cluster, topic, timeout)
    }
}
