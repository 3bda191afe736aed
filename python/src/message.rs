//! `Message`: a consumed record, a delivery report, or an event (`error()` is set).
//!
//! Consumed messages keep the core's `Bytes` (slices of the fetched batch) and create Python
//! `bytes` only when `key()`/`value()` are called; delivery reports keep the objects the
//! application produced.

use std::sync::Arc;

use bytes::Bytes;
use odradek::records::{Header, TimestampType};
use odradek::ConsumerRecord;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::errors::KafkaError;
use crate::types::headers_to_py;

/// `TIMESTAMP_NOT_AVAILABLE`.
pub const TIMESTAMP_NOT_AVAILABLE: i32 = 0;
/// `TIMESTAMP_CREATE_TIME`.
pub const TIMESTAMP_CREATE_TIME: i32 = 1;
/// `TIMESTAMP_LOG_APPEND_TIME`.
pub const TIMESTAMP_LOG_APPEND_TIME: i32 = 2;

/// Key or value storage.
pub enum Payload {
    None,
    Bytes(Bytes),
    Object(Py<PyAny>),
}

impl Payload {
    fn to_py(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            Payload::None => py.None(),
            Payload::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
            Payload::Object(o) => {
                let b = o.bind(py);
                if let Ok(s) = b.cast::<PyString>() {
                    PyBytes::new(py, s.to_cow()?.as_bytes()).into_any().unbind()
                } else {
                    o.clone_ref(py)
                }
            }
        })
    }

    fn len(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(match self {
            Payload::None => 0,
            Payload::Bytes(b) => b.len(),
            Payload::Object(o) => {
                let b = o.bind(py);
                match b.cast::<PyString>() {
                    Ok(s) => s.to_cow()?.len(),
                    Err(_) => b.len()?,
                }
            }
        })
    }

    fn from_py(obj: Option<Py<PyAny>>, py: Python<'_>) -> Payload {
        match obj {
            Some(o) if !o.is_none(py) => Payload::Object(o),
            _ => Payload::None,
        }
    }
}

/// Headers storage.
pub enum Headers {
    None,
    Records(Vec<Header>),
    Object(Py<PyAny>),
}

/// A Kafka message or event.
#[pyclass(module = "odradek", name = "Message", subclass)]
pub struct Message {
    pub topic: Option<Arc<str>>,
    pub topic_obj: Option<Py<PyAny>>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub key: Payload,
    pub value: Payload,
    pub headers: Headers,
    pub error: Option<Py<KafkaError>>,
    pub timestamp_type: i32,
    pub timestamp: i64,
    pub latency: Option<f64>,
    pub leader_epoch: Option<i32>,
}

impl Message {
    /// A consumed record.
    pub fn from_record(r: ConsumerRecord) -> Self {
        Message {
            topic: Some(r.topic),
            topic_obj: None,
            partition: Some(r.partition),
            offset: Some(r.offset),
            key: r.key.map_or(Payload::None, Payload::Bytes),
            value: r.value.map_or(Payload::None, Payload::Bytes),
            headers: if r.headers.is_empty() {
                Headers::None
            } else {
                Headers::Records(r.headers)
            },
            error: None,
            timestamp_type: match r.timestamp_type {
                TimestampType::CreateTime => TIMESTAMP_CREATE_TIME,
                TimestampType::LogAppendTime => TIMESTAMP_LOG_APPEND_TIME,
            },
            timestamp: r.timestamp,
            latency: None,
            leader_epoch: r.leader_epoch,
        }
    }

    /// An event carrying only an error (and possibly its partition).
    pub fn event(
        error: Py<KafkaError>,
        topic: Option<Arc<str>>,
        partition: Option<i32>,
        offset: Option<i64>,
    ) -> Self {
        Message {
            topic,
            topic_obj: None,
            partition,
            offset,
            key: Payload::None,
            value: Payload::None,
            headers: Headers::None,
            error: Some(error),
            timestamp_type: TIMESTAMP_NOT_AVAILABLE,
            timestamp: 0,
            latency: None,
            leader_epoch: None,
        }
    }

    /// A delivery report for a record the application produced.
    #[allow(clippy::too_many_arguments)]
    pub fn delivery(
        py: Python<'_>,
        topic: Py<PyAny>,
        partition: i32,
        offset: i64,
        timestamp: Option<i64>,
        key: Option<Py<PyAny>>,
        value: Option<Py<PyAny>>,
        headers: Option<Py<PyAny>>,
        error: Option<Py<KafkaError>>,
        latency: f64,
    ) -> Self {
        Message {
            topic: None,
            topic_obj: Some(topic),
            partition: Some(partition),
            offset: Some(offset),
            key: Payload::from_py(key, py),
            value: Payload::from_py(value, py),
            headers: match headers {
                Some(h) if !h.is_none(py) => Headers::Object(h),
                _ => Headers::None,
            },
            error,
            timestamp_type: if timestamp.is_some() {
                TIMESTAMP_CREATE_TIME
            } else {
                TIMESTAMP_NOT_AVAILABLE
            },
            timestamp: timestamp.unwrap_or(0),
            latency: Some(latency),
            leader_epoch: None,
        }
    }
}

#[pymethods]
impl Message {
    #[new]
    #[pyo3(signature = (topic=None, partition=None, offset=None, key=None, value=None, headers=None, error=None, timestamp=None, latency=None, leader_epoch=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        topic: Option<Py<PyAny>>,
        partition: Option<i32>,
        offset: Option<i64>,
        key: Option<Py<PyAny>>,
        value: Option<Py<PyAny>>,
        headers: Option<Py<PyAny>>,
        error: Option<Py<KafkaError>>,
        timestamp: Option<(i32, i64)>,
        latency: Option<f64>,
        leader_epoch: Option<i32>,
    ) -> Self {
        let (timestamp_type, timestamp) = timestamp.unwrap_or((TIMESTAMP_NOT_AVAILABLE, 0));
        Message {
            topic: None,
            topic_obj: topic.filter(|t| !t.is_none(py)),
            partition,
            offset,
            key: Payload::from_py(key, py),
            value: Payload::from_py(value, py),
            headers: match headers {
                Some(h) if !h.is_none(py) => Headers::Object(h),
                _ => Headers::None,
            },
            error,
            timestamp_type,
            timestamp,
            latency,
            leader_epoch,
        }
    }

    /// The topic, or `None` for events not tied to one.
    fn topic(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        if let Some(t) = &self.topic_obj {
            return Some(t.clone_ref(py));
        }
        self.topic
            .as_deref()
            .map(|t| PyString::new(py, t).into_any().unbind())
    }

    /// The partition, or `None`.
    fn partition(&self) -> Option<i32> {
        self.partition
    }

    /// The offset, or `None`.
    fn offset(&self) -> Option<i64> {
        self.offset
    }

    /// The key as bytes, or `None`.
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.key.to_py(py)
    }

    /// The value as bytes, or `None`.
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.value.to_py(py)
    }

    /// Headers as a list of `(str, bytes)` tuples, or `None` when there are none.
    fn headers(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(match &self.headers {
            Headers::None => None,
            Headers::Records(h) => Some(headers_to_py(py, h)?.into_any().unbind()),
            Headers::Object(o) => {
                let b = o.bind(py);
                if let Ok(d) = b.cast::<pyo3::types::PyDict>() {
                    Some(PyList::new(py, d.items())?.into_any().unbind())
                } else {
                    Some(o.clone_ref(py))
                }
            }
        })
    }

    /// `(timestamp type, milliseconds since the epoch)`.
    fn timestamp(&self) -> (i32, i64) {
        (self.timestamp_type, self.timestamp)
    }

    /// The error or event, or `None` for a proper message.
    fn error(&self, py: Python<'_>) -> Option<Py<KafkaError>> {
        self.error.as_ref().map(|e| e.clone_ref(py))
    }

    /// Seconds from `produce()` to the delivery report (delivery reports only).
    fn latency(&self) -> Option<f64> {
        self.latency
    }

    /// The leader epoch of the record's batch, if known.
    fn leader_epoch(&self) -> Option<i32> {
        self.leader_epoch
    }

    /// The value's length in bytes.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.value.len(py)
    }

    fn set_value(&mut self, value: Option<Py<PyAny>>, py: Python<'_>) {
        self.value = Payload::from_py(value, py);
    }

    fn set_key(&mut self, key: Option<Py<PyAny>>, py: Python<'_>) {
        self.key = Payload::from_py(key, py);
    }

    fn set_headers(&mut self, headers: Option<Py<PyAny>>, py: Python<'_>) {
        self.headers = match headers {
            Some(h) if !h.is_none(py) => Headers::Object(h),
            _ => Headers::None,
        };
    }

    fn set_topic(&mut self, topic: Option<Py<PyAny>>, py: Python<'_>) {
        self.topic = None;
        self.topic_obj = topic.filter(|t| !t.is_none(py));
    }

    fn set_error(&mut self, error: Option<Py<KafkaError>>) {
        self.error = error;
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let topic = self
            .topic(py)
            .and_then(|t| t.bind(py).str().ok().map(|s| s.to_string()))
            .unwrap_or_else(|| "None".into());
        let err = self
            .error
            .as_ref()
            .map_or_else(|| "None".to_string(), |e| e.get().repr());
        format!(
            "Message{{topic={topic},partition={},offset={},error={err}}}",
            self.partition
                .map_or_else(|| "None".into(), |p| p.to_string()),
            self.offset.map_or_else(|| "None".into(), |o| o.to_string()),
        )
    }
}
