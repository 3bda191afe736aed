//! The native half of `odradek.admin.AdminClient`: runs the core's admin calls on the runtime
//! and completes one `concurrent.futures.Future` per item (confluent-kafka's shape), with
//! `None` or a `KafkaException`.

use std::sync::Arc;

use odradek::admin::{GroupMember, NewTopic};
use odradek::Admin;
use odradek_bindings::runtime::{self, ForkGuard};
use odradek_bindings::{ClientError, Stage};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::runtime::Handle;

use crate::conf;
use crate::errors::{kafka_error, IntoPy, KafkaException};
use crate::metadata::ClusterMetadata;

/// Completes `futures[i]` with `results[i]` (`Ok` → None), or every future with `call_error`.
fn settle(
    futures: Vec<Py<PyAny>>,
    results: Result<Vec<Result<(), odradek::Error>>, odradek::Error>,
) {
    settle_with(futures, results, |py, ()| Ok(py.None()));
}

/// Completes `futures[i]` with `convert(results[i])` or its `KafkaException`; every future gets
/// the call's error when the call failed as a whole.
fn settle_with<T>(
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

/// A member as `describe_groups` returns it: `(member_id, group_instance_id, client_id,
/// host, [(topic, partition)])`.
type MemberTuple = (String, Option<String>, String, String, Vec<(String, i32)>);

fn member_tuple(m: GroupMember) -> MemberTuple {
    let parts = m
        .assignment
        .into_iter()
        .map(|tp| (tp.topic.to_string(), tp.partition))
        .collect();
    (
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        parts,
    )
}

/// `(name, partitions or -1, replication factor or -1, [(config, value)])`.
type NewTopicArgs = (String, i32, i16, Vec<(String, String)>);

/// The native admin client.
#[pyclass(module = "odradek._odradek", name = "_AdminClient", frozen)]
pub struct AdminCore {
    admin: Arc<Admin>,
    handle: Handle,
    fork: ForkGuard,
}

impl AdminCore {
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.fork.check().py(py)
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
        let (props, _cbs) = conf::parse(py, conf, kwargs)?;
        let (config, _settings) = odradek_bindings::config::split(props).py(py)?;
        let handle = runtime::runtime().py(py)?;
        let admin = {
            let _enter = handle.enter();
            Arc::new(Admin::new(config))
        };
        Ok(AdminCore {
            admin,
            handle,
            fork: ForkGuard::new(),
        })
    }

    /// `topics`: `(name, partitions or -1, replication factor or -1, {config: value})`.
    fn create_topics(
        &self,
        py: Python<'_>,
        topics: Vec<NewTopicArgs>,
        validate_only: bool,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
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
                admin
                    .create_topics(&new, validate_only)
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x.map(drop)).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// Deletes topics.
    fn delete_topics(
        &self,
        py: Python<'_>,
        topics: Vec<String>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                admin
                    .delete_topics(&names)
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// `topics`: `(name, new total partition count)`.
    fn create_partitions(
        &self,
        py: Python<'_>,
        topics: Vec<(String, i32)>,
        validate_only: bool,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let items: Vec<(&str, i32)> =
                    topics.iter().map(|(t, n)| (t.as_str(), *n)).collect();
                admin
                    .create_partitions(&items, validate_only)
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// Every group on every broker: completes `future` with `([(group_id, protocol_type,
    /// state)], [KafkaError per broker that failed])`.
    fn list_groups(&self, py: Python<'_>, future: Py<PyAny>) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move { admin.list_groups().await.map(|r| vec![Ok(r)]) },
            move |results| {
                settle_with(vec![future], results, |py, per_broker| {
                    let mut valid = Vec::new();
                    let mut errors = Vec::new();
                    for (_, r) in per_broker {
                        match r {
                            Ok(groups) => valid.extend(
                                groups
                                    .into_iter()
                                    .map(|g| (g.group_id, g.protocol_type, g.state)),
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
    /// [member])` (see `MemberTuple`).
    fn describe_groups(
        &self,
        py: Python<'_>,
        groups: Vec<String>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = groups.iter().map(String::as_str).collect();
                admin
                    .describe_groups(&names)
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| {
                settle_with(futures, results, |py, d| {
                    let members: Vec<MemberTuple> =
                        d.members.into_iter().map(member_tuple).collect();
                    let t = (d.group_id, d.state, d.protocol_type, d.protocol, members);
                    Ok(t.into_pyobject(py)?.into_any().unbind())
                })
            },
        );
        Ok(())
    }

    /// Deletes groups (each future gets None or the group's error).
    fn delete_groups(
        &self,
        py: Python<'_>,
        groups: Vec<String>,
        futures: Vec<Py<PyAny>>,
    ) -> PyResult<()> {
        self.check(py)?;
        let admin = self.admin.clone();
        runtime::spawn_then(
            &self.handle,
            async move {
                let names: Vec<&str> = groups.iter().map(String::as_str).collect();
                admin
                    .delete_groups(&names)
                    .await
                    .map(|r| r.into_iter().map(|(_, x)| x).collect())
            },
            move |results| settle(futures, results),
        );
        Ok(())
    }

    /// A group's committed offsets (of `partitions`, or all): `future` gets `[(topic,
    /// partition, offset or OFFSET_INVALID, metadata, KafkaError or None)]`.
    #[pyo3(signature = (group, partitions, future))]
    fn list_group_offsets(
        &self,
        py: Python<'_>,
        group: String,
        partitions: Option<Vec<(String, i32)>>,
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
                admin
                    .list_group_offsets(&group, partitions.as_deref())
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

    /// Cluster metadata (as `Producer.list_topics`).
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
