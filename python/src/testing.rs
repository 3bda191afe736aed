//! `_TestCluster`: the in-process Kafka test cluster (`odradek_broker::testing::Cluster`) for
//! `odradek.testing`, which wraps it in the Python API and the pytest plugin.
//!
//! The brokers run on a thread of their own inside the extension, so the cluster serves any
//! client in the process (odradek's, confluent-kafka's, kafka-python's, aiokafka's) and every
//! call here returns quickly; the GIL is released around the ones that wait (start, stop,
//! brokers down and up, closing connections).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use odradek_broker::testing::spec::{self, RequestRecord, RuleSpec};
use odradek_broker::testing::{names, Cluster, RuleId};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn py_err(e: odradek_broker::Error) -> PyErr {
    match e {
        odradek_broker::Error::Io(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// An API key or error code given as a name or a number.
fn name_of(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(n) = value.extract::<i64>() {
        return Ok(n.to_string());
    }
    value.extract::<String>()
}

/// One logged request: `(api_key, api_name, api_version, client_id, correlation_id, peer,
/// broker, partitions, action, error, item_errors)`.
type Record = (
    i16,
    &'static str,
    i16,
    Option<String>,
    i32,
    String,
    i32,
    Vec<(String, i32)>,
    Option<&'static str>,
    Option<&'static str>,
    Vec<(String, i32, &'static str)>,
);

fn record(r: RequestRecord) -> Record {
    (
        r.api_key,
        r.api_name,
        r.api_version,
        r.client_id,
        r.correlation_id,
        r.peer,
        r.broker,
        r.partitions,
        r.action,
        r.error,
        r.item_errors,
    )
}

/// The native test cluster; use `odradek.testing.Cluster`.
#[pyclass(module = "odradek._odradek", name = "_TestCluster", frozen)]
pub struct TestCluster {
    inner: Mutex<Option<Cluster>>,
}

impl TestCluster {
    fn lock(&self) -> MutexGuard<'_, Option<Cluster>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the running cluster (ValueError once stopped).
    fn with<T>(&self, f: impl FnOnce(&Cluster) -> odradek_broker::Result<T>) -> PyResult<T> {
        let guard = self.lock();
        let cluster = guard
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the test cluster is stopped"))?;
        f(cluster).map_err(py_err)
    }

    /// [`TestCluster::with`] with the GIL released.
    fn detached<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Cluster) -> odradek_broker::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| self.with(f))
    }
}

#[pymethods]
impl TestCluster {
    #[new]
    #[pyo3(signature = (brokers, partitions, topics, config, storage, record_requests))]
    fn new(
        py: Python<'_>,
        brokers: usize,
        partitions: i32,
        topics: Vec<(String, i32)>,
        config: Vec<(String, String)>,
        storage: String,
        record_requests: bool,
    ) -> PyResult<TestCluster> {
        let mut builder = Cluster::builder()
            .brokers(brokers)
            .partitions(partitions)
            .storage(spec::storage(&storage))
            .record_requests(record_requests);
        for (name, n) in topics {
            builder = builder.topic(name, n);
        }
        for (k, v) in config {
            builder = builder.config(k, v);
        }
        let cluster = py.detach(|| builder.start()).map_err(py_err)?;
        Ok(TestCluster {
            inner: Mutex::new(Some(cluster)),
        })
    }

    /// `host:port,...` of every broker.
    fn bootstrap(&self) -> PyResult<String> {
        self.with(|c| Ok(c.bootstrap().to_string()))
    }

    fn broker_ids(&self) -> PyResult<Vec<i32>> {
        self.with(|c| Ok(c.broker_ids()))
    }

    fn broker_address(&self, broker: i32) -> PyResult<Option<String>> {
        self.with(|c| Ok(c.broker_addr(broker).map(|a| a.to_string())))
    }

    fn data_dir(&self) -> PyResult<String> {
        self.with(|c| Ok(c.data_dir().display().to_string()))
    }

    fn create_topic(&self, py: Python<'_>, name: String, partitions: i32) -> PyResult<()> {
        self.detached(py, |c| c.create_topic(&name, partitions))
    }

    #[pyo3(signature = (api, action, error, delay_ms, times, broker, topic, partition, client_id))]
    #[allow(clippy::too_many_arguments)]
    fn add_rule(
        &self,
        api: &Bound<'_, PyAny>,
        action: String,
        error: Option<&Bound<'_, PyAny>>,
        delay_ms: u64,
        times: Option<u64>,
        broker: Option<i32>,
        topic: Option<String>,
        partition: Option<i32>,
        client_id: Option<String>,
    ) -> PyResult<u64> {
        let spec = RuleSpec {
            api: name_of(api)?,
            action,
            error: error.map(name_of).transpose()?,
            delay_ms,
            times,
            broker,
            topic,
            partition,
            client_id,
        };
        let rule = spec.to_rule().map_err(py_err)?;
        self.with(|c| c.add_rule(rule).map(RuleId::get))
    }

    fn remove_rule(&self, id: u64) -> PyResult<bool> {
        self.with(|c| Ok(c.remove_rule(RuleId::from_raw(id))))
    }

    fn clear_rules(&self) -> PyResult<()> {
        self.with(|c| {
            c.clear_rules();
            Ok(())
        })
    }

    fn pending_rules(&self) -> PyResult<usize> {
        self.with(|c| Ok(c.pending_rules()))
    }

    fn record_requests(&self, on: bool) -> PyResult<()> {
        self.with(|c| {
            c.record_requests(on);
            Ok(())
        })
    }

    fn requests(&self, clear: bool) -> PyResult<Vec<Record>> {
        self.with(|c| {
            let log = if clear {
                c.take_requests()
            } else {
                c.requests()
            };
            Ok(log.iter().map(|r| record(RequestRecord::from(r))).collect())
        })
    }

    #[pyo3(signature = (broker, client_id))]
    fn close_connections(
        &self,
        py: Python<'_>,
        broker: Option<i32>,
        client_id: Option<String>,
    ) -> PyResult<usize> {
        self.detached(py, |c| c.close_connections(broker, client_id.as_deref()))
    }

    fn connection_count(&self, broker: i32) -> PyResult<usize> {
        self.with(|c| c.connection_count(broker))
    }

    fn set_broker_down(&self, py: Python<'_>, broker: i32) -> PyResult<()> {
        self.detached(py, |c| c.set_broker_down(broker))
    }

    fn set_broker_up(&self, py: Python<'_>, broker: i32) -> PyResult<()> {
        self.detached(py, |c| c.set_broker_up(broker))
    }

    fn is_broker_up(&self, broker: i32) -> PyResult<bool> {
        self.with(|c| Ok(c.is_broker_up(broker)))
    }

    fn set_broker_rtt(&self, broker: i32, rtt_ms: u64) -> PyResult<()> {
        self.with(|c| c.set_broker_rtt(broker, Duration::from_millis(rtt_ms)))
    }

    fn set_partition_leader(&self, topic: String, partition: i32, leader: i32) -> PyResult<i32> {
        self.with(|c| c.set_partition_leader(&topic, partition, leader))
    }

    #[pyo3(signature = (topic, partition, follower))]
    fn set_partition_follower(
        &self,
        topic: String,
        partition: i32,
        follower: Option<i32>,
    ) -> PyResult<()> {
        self.with(|c| c.set_partition_follower(&topic, partition, follower))
    }

    /// `(leader, epoch, follower)`.
    fn partition_leader(&self, topic: String, partition: i32) -> PyResult<(i32, i32, Option<i32>)> {
        self.with(|c| {
            let r = c.partition_leader(&topic, partition)?;
            Ok((r.leader, r.epoch, r.follower))
        })
    }

    #[pyo3(signature = (kind, key, broker))]
    fn set_coordinator(&self, kind: String, key: String, broker: Option<i32>) -> PyResult<()> {
        let kind = spec::coordinator_kind(&kind).map_err(py_err)?;
        self.with(|c| c.set_coordinator(kind, &key, broker))
    }

    fn coordinator(&self, kind: String, key: String) -> PyResult<i32> {
        let kind = spec::coordinator_kind(&kind).map_err(py_err)?;
        self.with(|c| Ok(c.coordinator(kind, &key)))
    }

    fn set_api_version(&self, api: &Bound<'_, PyAny>, min: i16, max: i16) -> PyResult<()> {
        let key = names::api_key(&name_of(api)?).map_err(py_err)?;
        self.with(|c| c.set_api_version(key, min, max))
    }

    fn clear_api_version(&self, api: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = names::api_key(&name_of(api)?).map_err(py_err)?;
        self.with(|c| {
            c.clear_api_version(key);
            Ok(())
        })
    }

    /// Stops the cluster and removes its data (idempotent).
    fn stop(&self, py: Python<'_>) {
        let cluster = self.lock().take();
        if let Some(c) = cluster {
            py.detach(|| c.stop());
        }
    }

    fn is_running(&self) -> bool {
        self.lock().is_some()
    }
}

/// Registers the class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TestCluster>()
}
