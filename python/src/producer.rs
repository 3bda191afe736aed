//! `Producer`: confluent-kafka's producer API on the bindings' non-blocking producer.

use std::time::{Duration, Instant};

use bytes::Bytes;
use odradek::records::Header;
use odradek::ProducerRecord;
use odradek_bindings::producer::{Delivery, Event, Mode, ProducerClient};
use odradek_bindings::runtime::SLICE;
use odradek_bindings::{codes, ClientError};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::conf::{self, Callbacks};
use crate::errors::{kafka_error, not_implemented, IntoPy};
use crate::message::Message;
use crate::metadata::ClusterMetadata;
use crate::types::{extract_headers, payload, OFFSET_INVALID};
use crate::wait;

/// What a record carries to its delivery report.
pub struct Opaque {
    pub callback: Option<Py<PyAny>>,
    pub topic: Py<PyAny>,
    pub partition: i32,
    pub key: Option<Py<PyAny>>,
    pub value: Option<Py<PyAny>>,
    pub headers: Option<Py<PyAny>>,
    pub started: Instant,
}

/// A Kafka producer (confluent-kafka's `Producer` API). Safe to share between threads.
#[pyclass(module = "odradek", name = "Producer", subclass, frozen)]
pub struct Producer {
    client: ProducerClient<Opaque>,
    cbs: Callbacks,
}

fn callable(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Py<PyAny>>> {
    match obj {
        Some(o) if !o.is_none() => {
            if !o.is_callable() {
                return Err(PyTypeError::new_err(format!("{what} must be callable")));
            }
            Ok(Some(o.clone().unbind()))
        }
        _ => Ok(None),
    }
}

/// Builds a record from Python objects; callable twice (see `ProducerClient::produce`).
pub struct RecordSource<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: &'a [Header],
    pub timestamp: i64,
}

impl RecordSource<'_> {
    pub fn build(&self) -> ProducerRecord {
        ProducerRecord {
            topic: self.topic.to_string(),
            partition: (self.partition >= 0).then_some(self.partition),
            key: self.key.map(Bytes::copy_from_slice),
            value: self.value.map(Bytes::copy_from_slice),
            headers: self.headers.to_vec(),
            timestamp: (self.timestamp > 0).then_some(self.timestamp),
        }
    }
}

/// Checks the explicit partition argument.
pub fn check_partition(partition: i32) -> PyResult<()> {
    if partition < -1 {
        return Err(PyValueError::new_err(format!(
            "partition must be -1 (any) or a partition index, not {partition}"
        )));
    }
    Ok(())
}

/// A delivery report as `(KafkaError or None, Message)`.
pub fn report(
    py: Python<'_>,
    d: Delivery<Opaque>,
) -> PyResult<(Option<Py<crate::errors::KafkaError>>, Py<Message>)> {
    let o = d.opaque;
    let latency = o.started.elapsed().as_secs_f64();
    let (err, partition, offset, ts) = match d.result {
        Ok(m) => (None, m.partition, m.offset, Some(m.timestamp)),
        Err(e) => (Some(kafka_error(py, e)?), o.partition, OFFSET_INVALID, None),
    };
    let msg = Message::delivery(
        py,
        o.topic,
        partition,
        offset,
        ts,
        o.key,
        o.value,
        o.headers,
        err.as_ref().map(|e| e.clone_ref(py)),
        latency,
    );
    Ok((err, Py::new(py, msg)?))
}

impl Producer {
    fn serve(&self, py: Python<'_>, events: Vec<Event<Opaque>>) -> PyResult<usize> {
        let mut n = 0;
        let mut rest = events.into_iter();
        while let Some(ev) = rest.next() {
            let result = match ev {
                Event::Delivery(d) => {
                    let cb = d
                        .opaque
                        .callback
                        .as_ref()
                        .or(self.cbs.on_delivery.as_ref())
                        .map(|c| c.clone_ref(py));
                    match cb {
                        Some(cb) => {
                            report(py, d).and_then(|(err, msg)| cb.call1(py, (err, msg)).map(drop))
                        }
                        None => Ok(()),
                    }
                }
                Event::Error(e) => match &self.cbs.error_cb {
                    Some(cb) => kafka_error(py, e).and_then(|k| cb.call1(py, (k,)).map(drop)),
                    None => Ok(()),
                },
                Event::Stats(json) => match &self.cbs.stats_cb {
                    Some(cb) => cb.call1(py, (json,)).map(drop),
                    None => Ok(()),
                },
                Event::Flushed(_) => Ok(()),
            };
            n += 1;
            if let Err(e) = result {
                // The exception surfaces from poll()/flush(); later events wait for the next call.
                self.client.requeue(rest.collect());
                return Err(e);
            }
        }
        Ok(n)
    }

    /// Serves throttle reports (`throttle_cb`) and then `events`; returns how many ran. When a
    /// throttle callback raises, `events` wait for the next call.
    fn serve_all(
        &self,
        py: Python<'_>,
        events: Vec<Event<Opaque>>,
        throttles: Vec<odradek_bindings::throttle::Throttle>,
    ) -> PyResult<usize> {
        let client = &self.client;
        let served = crate::throttle::serve(py, self.cbs.throttle_cb.as_ref(), throttles, |rest| {
            client.requeue_throttles(rest)
        });
        match served {
            Ok(n) => Ok(n + self.serve(py, events)?),
            Err(e) => {
                self.client.requeue(events);
                Err(e)
            }
        }
    }

    fn needs_opaque(&self, per_message: &Option<Py<PyAny>>) -> bool {
        per_message.is_some() || self.cbs.on_delivery.is_some()
    }
}

#[pymethods]
impl Producer {
    #[new]
    #[pyo3(signature = (conf=None, **kwargs))]
    fn new(
        py: Python<'_>,
        conf: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (mut props, mut cbs) = conf::parse(py, conf, kwargs)?;
        conf::attach_logger(py, &mut props, &mut cbs)?;
        let props = odradek_bindings::config::with_librdkafka_producer_defaults(props);
        let (config, settings) =
            crate::oauth::split_config(py, props, cbs.oauth_cb.take()).py(py)?;
        let client = py
            .detach(|| ProducerClient::from_config(config, settings, Mode::Poll))
            .py(py)?;
        if cbs.throttle_cb.is_some() {
            client.report_throttles();
        }
        Ok(Producer { client, cbs })
    }

    /// Produces a message; returns at once. Delivery is reported to `on_delivery` (or
    /// `callback`) from `poll()` / `flush()`.
    #[pyo3(signature = (topic, value=None, key=None, partition=-1, on_delivery=None, timestamp=0, headers=None, callback=None))]
    #[allow(clippy::too_many_arguments)]
    fn produce(
        &self,
        py: Python<'_>,
        topic: &Bound<'_, PyString>,
        value: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        partition: i32,
        on_delivery: Option<&Bound<'_, PyAny>>,
        timestamp: i64,
        headers: Option<&Bound<'_, PyAny>>,
        callback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        check_partition(partition)?;
        let cb = match callable(callback, "callback")? {
            Some(c) => Some(c),
            None => callable(on_delivery, "on_delivery")?,
        };
        let (mut vh, mut kh) = (None, None);
        let v = payload(value, &mut vh, "value")?;
        let k = payload(key, &mut kh, "key")?;
        let hdrs = extract_headers(headers)?;
        let topic_name = topic.to_cow()?;
        let src = RecordSource {
            topic: &topic_name,
            partition,
            key: k,
            value: v,
            headers: &hdrs,
            timestamp,
        };
        let opaque = self.needs_opaque(&cb).then(|| Opaque {
            callback: cb,
            topic: topic.clone().into_any().unbind(),
            partition,
            key: key.map(|k| k.clone().unbind()),
            value: value.map(|v| v.clone().unbind()),
            headers: headers.map(|h| h.clone().unbind()),
            started: Instant::now(),
        });
        self.client.produce(|| src.build(), opaque).py(py)
    }

    /// Produces many messages to one topic with one call. `values` is a list of bytes/str/None
    /// (with `keys` an optional list of the same length), or a list of dicts with `value`,
    /// `key`, `partition`, `timestamp`, `headers` and `callback` entries as confluent-kafka's
    /// `produce_batch` takes. Returns the number of messages queued; a refused message is
    /// reported to its delivery callback (and, for dicts, its error is stored under `_error`).
    #[pyo3(signature = (topic, values, keys=None, partition=-1, on_delivery=None, timestamp=0, headers=None, callback=None))]
    #[allow(clippy::too_many_arguments)]
    fn produce_batch(
        &self,
        py: Python<'_>,
        topic: &Bound<'_, PyString>,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        partition: i32,
        on_delivery: Option<&Bound<'_, PyAny>>,
        timestamp: i64,
        headers: Option<&Bound<'_, PyAny>>,
        callback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        check_partition(partition)?;
        let values = values
            .cast::<PyList>()
            .map_err(|_| PyTypeError::new_err("values must be a list"))?;
        let keys = match keys {
            Some(k) if !k.is_none() => {
                let k = k
                    .cast::<PyList>()
                    .map_err(|_| PyTypeError::new_err("keys must be a list or None"))?;
                if k.len() != values.len() {
                    return Err(PyValueError::new_err(
                        "keys and values must have the same length",
                    ));
                }
                Some(k.clone())
            }
            _ => None,
        };
        let batch_cb = match callable(callback, "callback")? {
            Some(c) => Some(c),
            None => callable(on_delivery, "on_delivery")?,
        };
        let hdrs = extract_headers(headers)?;
        let topic_name = topic.to_cow()?;
        let topic_str: &str = &topic_name;
        let n = values.len();
        let mut py_err: Option<PyErr> = None;
        let outcome = {
            let mut make = |i: usize| -> Result<(ProducerRecord, Option<Opaque>), ClientError> {
                let build = || -> PyResult<(ProducerRecord, Option<Opaque>)> {
                    let item = values.get_item(i)?;
                    if let Ok(d) = item.cast::<PyDict>() {
                        return self
                            .dict_record(py, topic, topic_str, partition, timestamp, &batch_cb, d);
                    }
                    let key = match &keys {
                        Some(k) => Some(k.get_item(i)?),
                        None => None,
                    };
                    let (mut vh, mut kh) = (None, None);
                    let src = RecordSource {
                        topic: topic_str,
                        partition,
                        key: payload(key.as_ref(), &mut kh, "key")?,
                        value: payload(Some(&item), &mut vh, "value")?,
                        headers: &hdrs,
                        timestamp,
                    };
                    let opaque = self.needs_opaque(&batch_cb).then(|| Opaque {
                        callback: batch_cb.as_ref().map(|c| c.clone_ref(py)),
                        topic: topic.clone().into_any().unbind(),
                        partition,
                        key: key.as_ref().map(|k| k.clone().unbind()),
                        value: Some(item.clone().unbind()),
                        headers: headers.map(|h| h.clone().unbind()),
                        started: Instant::now(),
                    });
                    Ok((src.build(), opaque))
                };
                build().map_err(|e| {
                    let msg = e.to_string();
                    if py_err.is_none() {
                        py_err = Some(e);
                    }
                    ClientError::invalid_arg(msg)
                })
            };
            self.client.produce_batch(n, &mut make).py(py)?
        };
        if let Some(e) = py_err {
            // A malformed entry (wrong type): raise like produce() would, after queuing the rest.
            if outcome.queued == 0 {
                return Err(e);
            }
        }
        for (i, err) in outcome.failed {
            if err.code() == codes::QUEUE_FULL && outcome.queued == 0 {
                return Err(crate::errors::to_py_err(py, err));
            }
            let item = values.get_item(i)?;
            let (mut value, mut key, mut callback) = (Some(item.clone().unbind()), None, None);
            if let Ok(d) = item.cast::<PyDict>() {
                d.set_item("_error", kafka_error(py, err.clone())?)?;
                value = d.get_item("value")?.map(Bound::unbind);
                key = d.get_item("key")?.map(Bound::unbind);
                callback = d
                    .get_item("callback")?
                    .or(d.get_item("on_delivery")?)
                    .map(Bound::unbind);
            } else if let Some(k) = &keys {
                key = Some(k.get_item(i)?.unbind());
            }
            let callback = callback.or_else(|| batch_cb.as_ref().map(|c| c.clone_ref(py)));
            if self.needs_opaque(&callback) {
                let opaque = Opaque {
                    callback,
                    topic: topic.clone().into_any().unbind(),
                    partition,
                    key,
                    value,
                    headers: None,
                    started: Instant::now(),
                };
                // Reported from the next poll()/flush(), like every other delivery report.
                self.client.push_delivery(opaque, Err(err));
            }
        }
        Ok(outcome.queued)
    }

    /// Serves delivery reports and other callbacks (`error_cb`, `stats_cb`, `throttle_cb`);
    /// waits up to `timeout` seconds (`None` or -1:
    /// forever) for the first one. Returns how many were served. Exceptions raised by a callback
    /// propagate from here.
    #[pyo3(signature = (timeout=None))]
    fn poll(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        let deadline = wait::deadline(timeout);
        loop {
            conf::serve_log(py, &self.cbs)?;
            let events = self.client.take_events(usize::MAX);
            let throttles = self.client.take_throttles();
            if !events.is_empty() || !throttles.is_empty() {
                return self.serve_all(py, events, throttles);
            }
            if deadline.passed() {
                return Ok(0);
            }
            let slice = deadline.slice(SLICE);
            let client = &self.client;
            py.detach(|| client.wait_events(slice));
            py.check_signals()?;
        }
    }

    /// Waits until every message is delivered (serving callbacks) or `timeout` passes; returns
    /// the number still outstanding.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        let deadline = wait::deadline(timeout);
        self.client.start_flush();
        loop {
            conf::serve_log(py, &self.cbs)?;
            let events = self.client.take_events(usize::MAX);
            let throttles = self.client.take_throttles();
            if !events.is_empty() || !throttles.is_empty() {
                self.serve_all(py, events, throttles)?;
                continue;
            }
            if self.client.flushed() {
                return Ok(0);
            }
            if deadline.passed() {
                return Ok(self.client.len());
            }
            let slice = deadline.slice(SLICE);
            let client = &self.client;
            py.detach(|| client.wait_events(slice));
            py.check_signals()?;
            self.client.start_flush();
        }
    }

    /// Messages outstanding: queued, in flight, or delivered but not yet reported by `poll()`.
    fn __len__(&self) -> usize {
        self.client.len()
    }

    /// Fails the messages still waiting in the client's own queue with `_PURGE_QUEUE` (reported
    /// by the next `poll()`). Messages already batched by the core are delivered normally.
    #[pyo3(signature = (in_queue=true, in_flight=true, blocking=true))]
    fn purge(&self, in_queue: bool, in_flight: bool, blocking: bool) {
        let _ = (in_flight, blocking);
        if in_queue {
            self.client.purge_queue();
        }
    }

    /// Cluster metadata: brokers, and topics with their partitions and leaders.
    #[pyo3(signature = (topic=None, timeout=-1.0))]
    fn list_topics(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<ClusterMetadata> {
        self.client.check_usable().py(py)?;
        let cluster = self.client.core().cluster().clone();
        crate::metadata::list_topics(py, self.client.handle(), cluster, topic, timeout)
    }

    /// The cluster id, from metadata.
    #[pyo3(signature = (timeout=-1.0))]
    fn cluster_id(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<String>> {
        Ok(self.list_topics(py, None, timeout)?.cluster_id)
    }

    /// Flushes and closes the producer; later calls fail. Returns True.
    #[pyo3(signature = (timeout=None))]
    fn close(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        self.flush(py, timeout)?;
        let fut = self.client.close();
        wait::wait_future(py, self.client.handle(), fut, wait::deadline(timeout))?;
        Ok(true)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py, None)?;
        Ok(false)
    }

    /// Registers `transactional.id` with its coordinator, fencing older instances (call once,
    /// before the first transaction). Raises KafkaException (`_TIMED_OUT` is retriable: call
    /// again to keep waiting).
    #[pyo3(signature = (timeout=None))]
    fn init_transactions(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let fut = self.client.init_transactions(core_timeout(timeout));
        self.wait_txn(py, fut, timeout, "init_transactions")
    }

    /// Starts a transaction: records produced from now on belong to it.
    fn begin_transaction(&self, py: Python<'_>) -> PyResult<()> {
        self.client
            .begin_transaction()
            .map_err(|e| crate::errors::to_py_err(py, e))
    }

    /// Delivers every record of the transaction, then commits it. On an error with
    /// `txn_requires_abort()`, call `abort_transaction`; a `fatal()` one ends the producer.
    #[pyo3(signature = (timeout=None))]
    fn commit_transaction(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let fut = self.client.commit_transaction(core_timeout(timeout));
        self.wait_txn(py, fut, timeout, "commit_transaction")
    }

    /// Aborts the transaction: its records are never visible to read_committed consumers.
    #[pyo3(signature = (timeout=None))]
    fn abort_transaction(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let fut = self.client.abort_transaction(core_timeout(timeout));
        self.wait_txn(py, fut, timeout, "abort_transaction")
    }

    /// Commits a consumer's positions (`positions`: TopicPartitions whose offsets are the next
    /// records to read) with the transaction; `group_metadata` comes from
    /// `Consumer.consumer_group_metadata()`.
    #[pyo3(signature = (positions, group_metadata, timeout=None))]
    fn send_offsets_to_transaction(
        &self,
        py: Python<'_>,
        positions: &Bound<'_, PyAny>,
        group_metadata: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let meta = group_metadata
            .cast::<crate::group::ConsumerGroupMetadata>()
            .map_err(|_| {
                PyTypeError::new_err(
                    "group_metadata must come from Consumer.consumer_group_metadata()",
                )
            })?
            .get()
            .to_metadata();
        let meta = odradek_bindings::producer::TxnGroupMetadata {
            group_id: meta.group_id,
            member_id: meta.member_id,
            generation_id: meta.generation,
            group_instance_id: meta.group_instance_id,
        };
        let mut offsets = Vec::new();
        for tp in crate::types::extract_tps(positions)? {
            if tp.offset < 0 {
                return Err(PyValueError::new_err(format!(
                    "send_offsets_to_transaction: {} [{}] has no valid offset ({})",
                    tp.topic, tp.partition, tp.offset
                )));
            }
            let core_tp = odradek::producer::TopicPartition {
                topic: tp.topic.as_str().into(),
                partition: tp.partition,
            };
            offsets.push((core_tp, tp.offset));
        }
        let fut = self.client.send_offsets_to_transaction(&offsets, &meta);
        self.wait_txn(py, fut, timeout, "send_offsets_to_transaction")
    }

    /// Not supported in this release: raises KafkaException(_NOT_IMPLEMENTED).
    fn set_sasl_credentials(&self, py: Python<'_>, username: &str, password: &str) -> PyResult<()> {
        let _ = (username, password);
        Err(not_implemented(
            py,
            "SASL is not supported in this release of odradek",
        ))
    }
}

/// The core's timeout for a transactional call (`None` or negative: a day, i.e. as long as the
/// caller waits; the caller's own deadline is enforced separately and can be interrupted).
fn core_timeout(timeout: Option<f64>) -> Duration {
    match timeout {
        Some(t) if t >= 0.0 && t.is_finite() => Duration::from_secs_f64(t.min(86_400.0)),
        _ => Duration::from_secs(86_400),
    }
}

impl Producer {
    /// Waits for a transactional call with the GIL released; `_TIMED_OUT` (retriable) when the
    /// caller's timeout passes first.
    fn wait_txn<F>(&self, py: Python<'_>, fut: F, timeout: Option<f64>, what: &str) -> PyResult<()>
    where
        F: std::future::Future<Output = Result<(), ClientError>> + Send,
    {
        match wait::wait_future(py, self.client.handle(), fut, wait::deadline(timeout))? {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(crate::errors::to_py_err(py, e)),
            None => Err(crate::errors::to_py_err(
                py,
                ClientError::new(
                    codes::TIMED_OUT,
                    Some(format!(
                        "{what} did not finish in time; call it again to keep waiting"
                    )),
                ),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn dict_record(
        &self,
        py: Python<'_>,
        topic: &Bound<'_, PyString>,
        topic_str: &str,
        partition: i32,
        timestamp: i64,
        batch_cb: &Option<Py<PyAny>>,
        d: &Bound<'_, PyDict>,
    ) -> PyResult<(ProducerRecord, Option<Opaque>)> {
        let value = d.get_item("value")?;
        let key = d.get_item("key")?;
        let headers = d.get_item("headers")?;
        let partition = match d.get_item("partition")? {
            Some(p) => p.extract()?,
            None => partition,
        };
        check_partition(partition)?;
        let timestamp = match d.get_item("timestamp")? {
            Some(t) => t.extract()?,
            None => timestamp,
        };
        let cb = match d.get_item("callback")?.or(d.get_item("on_delivery")?) {
            Some(c) => callable(Some(&c), "callback")?,
            None => batch_cb.as_ref().map(|c| c.clone_ref(py)),
        };
        let hdrs = extract_headers(headers.as_ref())?;
        let (mut vh, mut kh) = (None, None);
        let src = RecordSource {
            topic: topic_str,
            partition,
            key: payload(key.as_ref(), &mut kh, "key")?,
            value: payload(value.as_ref(), &mut vh, "value")?,
            headers: &hdrs,
            timestamp,
        };
        let opaque = self.needs_opaque(&cb).then(|| Opaque {
            callback: cb,
            topic: topic.clone().into_any().unbind(),
            partition,
            key: key.as_ref().map(|k| k.clone().unbind()),
            value: value.as_ref().map(|v| v.clone().unbind()),
            headers: headers.as_ref().map(|h| h.clone().unbind()),
            started: Instant::now(),
        });
        Ok((src.build(), opaque))
    }
}
