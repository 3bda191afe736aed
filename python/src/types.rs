//! `TopicPartition` and the conversions shared by the producer and consumer.

use std::sync::Arc;

use bytes::Bytes;
use odradek::producer::TopicPartition as CoreTp;
use odradek::records::Header;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::errors::KafkaError;

/// `OFFSET_INVALID`, the default offset of a `TopicPartition`.
pub const OFFSET_INVALID: i64 = -1001;

/// A topic, a partition, and optionally an offset (or a timestamp, for `offsets_for_times`).
/// Equality and hashing use topic and partition only, as in confluent-kafka.
#[pyclass(module = "odradek", name = "TopicPartition", subclass)]
pub struct TopicPartition {
    #[pyo3(get, set)]
    pub topic: String,
    #[pyo3(get, set)]
    pub partition: i32,
    #[pyo3(get, set)]
    pub offset: i64,
    #[pyo3(get, set)]
    pub metadata: Option<String>,
    #[pyo3(get, set)]
    pub leader_epoch: Option<i32>,
    #[pyo3(get, set)]
    pub error: Option<Py<KafkaError>>,
}

impl TopicPartition {
    pub fn new(topic: &str, partition: i32, offset: i64) -> Self {
        TopicPartition {
            topic: topic.to_string(),
            partition,
            offset,
            metadata: None,
            leader_epoch: None,
            error: None,
        }
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Self {
        TopicPartition {
            topic: self.topic.clone(),
            partition: self.partition,
            offset: self.offset,
            metadata: self.metadata.clone(),
            leader_epoch: self.leader_epoch,
            error: self.error.as_ref().map(|e| e.clone_ref(py)),
        }
    }

    pub fn core(&self) -> CoreTp {
        CoreTp {
            topic: Arc::from(self.topic.as_str()),
            partition: self.partition,
        }
    }
}

#[pymethods]
impl TopicPartition {
    #[new]
    #[pyo3(signature = (topic, partition=-1, offset=OFFSET_INVALID, metadata=None, leader_epoch=None))]
    fn py_new(
        topic: String,
        partition: i32,
        offset: i64,
        metadata: Option<String>,
        leader_epoch: Option<i32>,
    ) -> Self {
        TopicPartition {
            topic,
            partition,
            offset,
            metadata,
            leader_epoch,
            error: None,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let error = match &self.error {
            Some(e) => e.get().repr(),
            None => "None".to_string(),
        };
        let _ = py;
        let epoch = self
            .leader_epoch
            .map_or_else(|| "None".to_string(), |e| e.to_string());
        format!(
            "TopicPartition{{topic={},partition={},offset={},leader_epoch={},error={}}}",
            self.topic, self.partition, self.offset, epoch, error
        )
    }

    fn __str__(&self, py: Python<'_>) -> String {
        self.__repr__(py)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.topic.hash(&mut h);
        self.partition.hash(&mut h);
        h.finish()
    }

    fn __richcmp__(
        &self,
        other: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(o) = other.cast::<TopicPartition>() else {
            return Ok(py.NotImplemented());
        };
        let o = o.borrow();
        let a = (&self.topic, self.partition);
        let b = (&o.topic, o.partition);
        let r = op.matches(a.cmp(&b));
        Ok(pyo3::types::PyBool::new(py, r)
            .to_owned()
            .into_any()
            .unbind())
    }
}

/// Extracts a list of `TopicPartition`s (any iterable).
pub fn extract_tps(obj: &Bound<'_, PyAny>) -> PyResult<Vec<TopicPartition>> {
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let tp = item
            .cast::<TopicPartition>()
            .map_err(|_| PyTypeError::new_err("expected a list of TopicPartition"))?;
        out.push(tp.borrow().clone_ref(obj.py()));
    }
    Ok(out)
}

/// A value or key as bytes: `bytes`, `str` (UTF-8), `bytearray`, `memoryview` or `None`.
/// Borrowed from the object where possible; `holder` keeps a converted copy alive.
pub fn payload<'a, 'py>(
    obj: Option<&'a Bound<'py, PyAny>>,
    holder: &'a mut Option<Bound<'py, PyBytes>>,
    what: &str,
) -> PyResult<Option<&'a [u8]>> {
    let Some(obj) = obj else {
        return Ok(None);
    };
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        *holder = Some(s.encode_utf8()?);
        return Ok(holder.as_ref().map(|b| b.as_bytes()));
    }
    if obj.is_instance_of::<PyByteArray>()
        || obj.is_instance(&obj.py().import("builtins")?.getattr("memoryview")?)?
    {
        let copy = obj
            .py()
            .import("builtins")?
            .getattr("bytes")?
            .call1((obj,))?;
        *holder = Some(copy.cast_into::<PyBytes>()?);
        return Ok(holder.as_ref().map(|b| b.as_bytes()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, str or None, not {}",
        obj.get_type().name()?
    )))
}

/// Headers: a list of `(str, bytes|str|None)` pairs or a dict.
pub fn extract_headers(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Header>> {
    let Some(obj) = obj else {
        return Ok(Vec::new());
    };
    if obj.is_none() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut push = |k: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>| -> PyResult<()> {
        let key = if let Ok(s) = k.cast::<PyString>() {
            Bytes::copy_from_slice(s.to_cow()?.as_bytes())
        } else if let Ok(b) = k.cast::<PyBytes>() {
            Bytes::copy_from_slice(b.as_bytes())
        } else {
            return Err(PyTypeError::new_err("header keys must be str"));
        };
        let mut holder = None;
        let value = payload(Some(v), &mut holder, "header value")?.map(Bytes::copy_from_slice);
        out.push(Header { key, value });
        Ok(())
    };
    if let Ok(d) = obj.cast::<PyDict>() {
        for (k, v) in d.iter() {
            push(&k, &v)?;
        }
        return Ok(out);
    }
    for item in obj.try_iter()? {
        let item = item?;
        let pair = item.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err("headers must be a dict or a list of (key, value) tuples")
        })?;
        if pair.len() != 2 {
            return Err(PyTypeError::new_err(
                "each header must be a (key, value) tuple",
            ));
        }
        push(&pair.get_item(0)?, &pair.get_item(1)?)?;
    }
    Ok(out)
}

/// Headers as confluent-kafka returns them: a list of `(str, bytes|None)` tuples.
pub fn headers_to_py<'py>(py: Python<'py>, headers: &[Header]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for h in headers {
        let key = String::from_utf8_lossy(&h.key);
        let value: Option<Bound<'py, PyBytes>> = h.value.as_ref().map(|v| PyBytes::new(py, v));
        list.append((key, value))?;
    }
    Ok(list)
}
