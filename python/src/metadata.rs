//! `ClusterMetadata` and friends, as `list_topics()` returns them in confluent-kafka.

use std::sync::Arc;

use odradek::cluster::Cluster;
use odradek_bindings::metadata::{self as meta};
use odradek_bindings::{codes, ClientError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tokio::runtime::Handle;

use crate::errors::{kafka_error, to_py_err, KafkaError};
use crate::wait;

/// A broker.
#[pyclass(module = "odradek", name = "BrokerMetadata", frozen)]
pub struct BrokerMetadata {
    #[pyo3(get)]
    id: i32,
    #[pyo3(get)]
    host: String,
    #[pyo3(get)]
    port: i32,
}

#[pymethods]
impl BrokerMetadata {
    fn __repr__(&self) -> String {
        format!("BrokerMetadata({}, {}:{})", self.id, self.host, self.port)
    }

    fn __str__(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.id)
    }
}

/// A partition: leader, replicas, in-sync replicas.
#[pyclass(module = "odradek", name = "PartitionMetadata", frozen)]
pub struct PartitionMetadata {
    #[pyo3(get)]
    id: i32,
    #[pyo3(get)]
    leader: i32,
    #[pyo3(get)]
    replicas: Py<PyList>,
    #[pyo3(get)]
    isrs: Py<PyList>,
    #[pyo3(get)]
    error: Option<Py<KafkaError>>,
}

#[pymethods]
impl PartitionMetadata {
    fn __repr__(&self) -> String {
        format!("PartitionMetadata({})", self.id)
    }
}

/// A topic: its partitions by id.
#[pyclass(module = "odradek", name = "TopicMetadata", frozen)]
pub struct TopicMetadata {
    #[pyo3(get)]
    topic: String,
    #[pyo3(get)]
    partitions: Py<PyDict>,
    #[pyo3(get)]
    error: Option<Py<KafkaError>>,
}

#[pymethods]
impl TopicMetadata {
    fn __repr__(&self) -> String {
        format!("TopicMetadata({})", self.topic)
    }

    fn __str__(&self) -> String {
        self.topic.clone()
    }
}

/// Cluster metadata: brokers and topics by id / name.
#[pyclass(module = "odradek", name = "ClusterMetadata", frozen)]
pub struct ClusterMetadata {
    #[pyo3(get)]
    pub cluster_id: Option<String>,
    #[pyo3(get)]
    controller_id: i32,
    #[pyo3(get)]
    brokers: Py<PyDict>,
    #[pyo3(get)]
    topics: Py<PyDict>,
    #[pyo3(get)]
    orig_broker_id: i32,
    #[pyo3(get)]
    orig_broker_name: String,
}

#[pymethods]
impl ClusterMetadata {
    fn __repr__(&self) -> String {
        format!(
            "ClusterMetadata({})",
            self.cluster_id.as_deref().unwrap_or("")
        )
    }
}

fn opt_error(py: Python<'_>, e: Option<ClientError>) -> PyResult<Option<Py<KafkaError>>> {
    e.map(|e| kafka_error(py, e)).transpose()
}

fn convert(py: Python<'_>, m: meta::ClusterMeta) -> PyResult<ClusterMetadata> {
    let brokers = PyDict::new(py);
    for b in m.brokers {
        brokers.set_item(
            b.id,
            Py::new(
                py,
                BrokerMetadata {
                    id: b.id,
                    host: b.host,
                    port: b.port,
                },
            )?,
        )?;
    }
    let topics = PyDict::new(py);
    for t in m.topics {
        let partitions = PyDict::new(py);
        for p in t.partitions {
            let pm = PartitionMetadata {
                id: p.id,
                leader: p.leader,
                replicas: PyList::new(py, p.replicas)?.unbind(),
                isrs: PyList::new(py, p.isrs)?.unbind(),
                error: opt_error(py, p.error)?,
            };
            partitions.set_item(p.id, Py::new(py, pm)?)?;
        }
        let tm = TopicMetadata {
            topic: t.name.clone(),
            partitions: partitions.unbind(),
            error: opt_error(py, t.error)?,
        };
        topics.set_item(t.name, Py::new(py, tm)?)?;
    }
    Ok(ClusterMetadata {
        cluster_id: m.cluster_id,
        controller_id: m.controller_id,
        brokers: brokers.unbind(),
        topics: topics.unbind(),
        orig_broker_id: m.orig_broker_id,
        orig_broker_name: m.orig_broker_name,
    })
}

/// `list_topics` for both clients: waits with the GIL released, up to `timeout` seconds.
pub fn list_topics(
    py: Python<'_>,
    handle: &Handle,
    cluster: Arc<Cluster>,
    topic: Option<String>,
    timeout: Option<f64>,
) -> PyResult<ClusterMetadata> {
    let fut = async move { meta::list_topics(&cluster, topic.as_deref()).await };
    match wait::wait_future(py, handle, fut, wait::deadline(timeout))? {
        Some(Ok(m)) => convert(py, m),
        Some(Err(e)) => Err(to_py_err(py, e)),
        None => Err(to_py_err(
            py,
            ClientError::new(codes::TIMED_OUT, Some("list_topics timed out".into())),
        )),
    }
}
