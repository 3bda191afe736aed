//! Consumer-group glue for `Consumer`: serving rebalance and commit events on the calling thread,
//! argument conversions for `commit` / `store_offsets`, and `ConsumerGroupMetadata`.

use std::sync::Mutex;

use odradek_bindings::consumer::{
    CommitOffset, CommitReport, CommitSource, CommittedOffset, ConsumerClient, GroupEvent,
    GroupMetadata, RebalanceKind,
};
use odradek_bindings::runtime::{Deadline, SLICE};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::errors::{kafka_error, to_py_err};
use crate::message::Message;
use crate::types::{extract_tps, TopicPartition, OFFSET_INVALID};

/// The callbacks given to `subscribe`.
#[derive(Default)]
pub struct RebalanceCallbacks {
    pub on_assign: Option<Py<PyAny>>,
    pub on_revoke: Option<Py<PyAny>>,
    pub on_lost: Option<Py<PyAny>>,
}

impl RebalanceCallbacks {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        let c = |o: &Option<Py<PyAny>>| o.as_ref().map(|o| o.clone_ref(py));
        RebalanceCallbacks {
            on_assign: c(&self.on_assign),
            on_revoke: c(&self.on_revoke),
            on_lost: c(&self.on_lost),
        }
    }
}

/// Checks that a callback argument is callable or None.
pub fn callback(name: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) if o.is_callable() => Ok(Some(o.clone().unbind())),
        Some(_) => Err(PyTypeError::new_err(format!("{name} must be callable"))),
    }
}

/// The topic list of `subscribe`: a list of str.
pub fn topics(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() || !obj.is_instance_of::<PyList>() {
        return Err(PyTypeError::new_err(
            "expected list of topic unicode strings",
        ));
    }
    obj.try_iter()?
        .map(|t| {
            t?.extract::<String>()
                .map_err(|_| PyTypeError::new_err("expected list of topic unicode strings"))
        })
        .collect()
}

fn tp_list<'py>(
    py: Python<'py>,
    parts: impl IntoIterator<Item = TopicPartition>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for tp in parts {
        list.append(Py::new(py, tp)?)?;
    }
    Ok(list)
}

/// Committed offsets as `TopicPartition`s (with per-partition errors).
pub fn committed_list(
    py: Python<'_>,
    offsets: Vec<CommittedOffset>,
) -> PyResult<Vec<TopicPartition>> {
    offsets
        .into_iter()
        .map(|o| {
            let mut tp = TopicPartition::new(&o.partition.topic, o.partition.partition, o.offset);
            tp.error = o.error.map(|e| kafka_error(py, e)).transpose()?;
            Ok(tp)
        })
        .collect()
}

/// Serves every waiting group event on this thread: rebalance callbacks (then the default
/// assignment change unless the callback made one) and `on_commit`. The first exception a
/// callback raised is returned after all events were served.
pub fn serve_events(
    py: Python<'_>,
    consumer: &Bound<'_, PyAny>,
    client: &ConsumerClient,
    cbs: &Mutex<RebalanceCallbacks>,
    on_commit: Option<&Py<PyAny>>,
) -> PyResult<()> {
    let mut first: Option<PyErr> = None;
    while let Some(event) = client.take_group_event() {
        match event {
            GroupEvent::Rebalance(r) => {
                let current = cbs.lock().map(|c| c.clone_ref(py)).unwrap_or_default();
                let cb = match r.kind {
                    RebalanceKind::Assign => current.on_assign,
                    RebalanceKind::Revoke => current.on_revoke,
                    RebalanceKind::Lost => current.on_lost.or(current.on_revoke),
                };
                if let Some(cb) = cb {
                    let parts = r
                        .partitions
                        .iter()
                        .map(|tp| TopicPartition::new(&tp.topic, tp.partition, OFFSET_INVALID));
                    let called = tp_list(py, parts).and_then(|l| cb.call1(py, (consumer, l)));
                    if let Err(e) = called {
                        first.get_or_insert(e);
                    }
                }
                if let Err(e) = client.finish_rebalance(r) {
                    first.get_or_insert(to_py_err(py, e));
                }
            }
            GroupEvent::Commit(report) => {
                if let Some(cb) = on_commit {
                    if let Err(e) = call_on_commit(py, cb, report) {
                        first.get_or_insert(e);
                    }
                }
            }
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn call_on_commit(py: Python<'_>, cb: &Py<PyAny>, report: CommitReport) -> PyResult<()> {
    let err = report.error.map(|e| kafka_error(py, e)).transpose()?;
    let parts = committed_list(py, report.offsets)?;
    cb.call1(py, (err, tp_list(py, parts)?))?;
    Ok(())
}

/// What `commit` / `store_offsets` were given: a message (its offset + 1) or offsets.
pub fn offsets_arg(
    message: Option<&Bound<'_, PyAny>>,
    offsets: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Vec<CommitOffset>>> {
    let message = message.filter(|m| !m.is_none());
    let offsets = offsets.filter(|o| !o.is_none());
    match (message, offsets) {
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "message and offsets are mutually exclusive",
        )),
        (Some(m), None) => {
            let m = m
                .cast::<Message>()
                .map_err(|_| PyTypeError::new_err("expected message object"))?
                .borrow();
            let (Some(topic), Some(partition), Some(offset)) =
                (m.topic.clone(), m.partition, m.offset)
            else {
                return Err(PyValueError::new_err(format!(
                    "{what}: the message has no topic, partition or offset"
                )));
            };
            Ok(Some(vec![CommitOffset {
                partition: odradek::producer::TopicPartition { topic, partition },
                offset: offset + 1,
                metadata: None,
            }]))
        }
        (None, Some(o)) => Ok(Some(
            extract_tps(o)?
                .into_iter()
                .map(|tp| CommitOffset {
                    partition: tp.core(),
                    offset: tp.offset,
                    metadata: tp.metadata,
                })
                .collect(),
        )),
        (None, None) => Ok(None),
    }
}

/// The source of a commit: explicit offsets, or the stored ones.
pub fn commit_source(list: Option<Vec<CommitOffset>>) -> CommitSource {
    match list {
        Some(l) => CommitSource::Offsets(l),
        None => CommitSource::Stored,
    }
}

/// Runs a group wait (`unsubscribe`, `close`) on this thread, serving group events (rebalance
/// callbacks) between slices with the GIL held, and waiting with it released.
pub fn wait_serving<F>(
    py: Python<'_>,
    client: &ConsumerClient,
    fut: F,
    mut serve: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    let mut fut = std::pin::pin!(fut);
    let mut first: Option<PyErr> = None;
    let deadline = Deadline::after(None);
    loop {
        let f = fut.as_mut();
        let slice = deadline.slice(SLICE);
        if let Some(out) = py.detach(|| client.run_serving(f, slice)) {
            if let Err(e) = serve(py) {
                first.get_or_insert(e);
            }
            return match first {
                Some(e) => Err(e),
                None => Ok(out),
            };
        }
        if let Err(e) = serve(py) {
            first.get_or_insert(e);
        }
        py.check_signals()?;
    }
}

/// `ConsumerGroupMetadata`: what `Producer.send_offsets_to_transaction` needs.
#[pyclass(module = "odradek", name = "ConsumerGroupMetadata", frozen)]
pub struct ConsumerGroupMetadata {
    /// `group.id`.
    #[pyo3(get)]
    pub group_id: String,
    /// The member id ("" before joining).
    #[pyo3(get)]
    pub member_id: String,
    /// The generation (-1 before joining).
    #[pyo3(get)]
    pub generation_id: i32,
    /// `group.instance.id`.
    #[pyo3(get)]
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// From the bindings' metadata.
    pub fn from_metadata(m: GroupMetadata) -> Self {
        ConsumerGroupMetadata {
            group_id: m.group_id,
            member_id: m.member_id,
            generation_id: m.generation,
            group_instance_id: m.group_instance_id,
        }
    }

    /// Back to the bindings' metadata.
    pub fn to_metadata(&self) -> GroupMetadata {
        GroupMetadata {
            group_id: self.group_id.clone(),
            member_id: self.member_id.clone(),
            generation: self.generation_id,
            group_instance_id: self.group_instance_id.clone(),
        }
    }
}

#[pymethods]
impl ConsumerGroupMetadata {
    fn __repr__(&self) -> String {
        format!(
            "ConsumerGroupMetadata(group_id={:?}, member_id={:?}, generation_id={})",
            self.group_id, self.member_id, self.generation_id
        )
    }
}
