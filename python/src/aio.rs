//! asyncio support: futures completed from runtime threads through
//! `loop.call_soon_threadsafe`, in batches, with no thread per call.
//!
//! `_AIOProducer` is the bindings producer in push mode: each record's opaque holds its asyncio
//! future; the bindings' driver task collects finished deliveries and, once per batch, attaches
//! to the interpreter and schedules `_resolve(batch)` on the loop, which sets each future's
//! result (a `Message`) or exception (`KafkaException`) unless it was cancelled.

use std::sync::Arc;
use std::time::Instant;

use odradek_bindings::producer::{Event, EventSink, Mode, ProducerClient};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::conf;
use crate::errors::{IntoPy, KafkaException};
use crate::producer::{check_partition, report, Opaque, RecordSource};
use crate::types::{extract_headers, payload};

static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Sets results on a batch of `(future, ok, value)` triples, skipping futures already done
/// (cancelled by the application).
#[pyfunction]
fn _resolve(batch: &Bound<'_, PyList>) -> PyResult<()> {
    for item in batch.iter() {
        let t = item.cast::<PyTuple>()?;
        let fut = t.get_item(0)?;
        if fut.call_method0("done")?.is_truthy()? {
            continue;
        }
        let value = t.get_item(2)?;
        if t.get_item(1)?.is_truthy()? {
            fut.call_method1("set_result", (value,))?;
        } else {
            fut.call_method1("set_exception", (value,))?;
        }
    }
    Ok(())
}

/// Registers `_resolve` and keeps a reference for the runtime threads.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let f = wrap_pyfunction!(_resolve, m)?;
    m.add_function(f.clone())?;
    let _ = RESOLVE.set(m.py(), f.into_any().unbind());
    m.add_class::<AioProducer>()?;
    Ok(())
}

/// Schedules `batch` on `event_loop` (from any thread). Does nothing once the interpreter is
/// shutting down or the loop is closed.
fn schedule(py: Python<'_>, event_loop: &Py<PyAny>, batch: Bound<'_, PyList>) {
    let Some(resolve) = RESOLVE.get(py) else {
        return;
    };
    if let Err(e) =
        event_loop.call_method1(py, "call_soon_threadsafe", (resolve.clone_ref(py), batch))
    {
        // The loop is closed: nobody can await these futures any more.
        drop(e);
    }
}

/// Completes one asyncio future from a runtime thread.
pub fn complete_future<T>(event_loop: Py<PyAny>, future: Py<PyAny>, value: Result<T, PyErr>)
where
    T: for<'py> IntoPyObject<'py> + Send,
{
    Python::try_attach(|py| {
        let triple: PyResult<Bound<'_, PyTuple>> = match value {
            Ok(v) => v.into_bound_py_any(py).and_then(|v| {
                PyTuple::new(
                    py,
                    [
                        future.bind(py).clone(),
                        pyo3::types::PyBool::new(py, true).to_owned().into_any(),
                        v,
                    ],
                )
            }),
            Err(e) => PyTuple::new(
                py,
                [
                    future.bind(py).clone(),
                    pyo3::types::PyBool::new(py, false).to_owned().into_any(),
                    e.into_value(py).into_bound(py).into_any(),
                ],
            ),
        };
        if let Ok(t) = triple {
            if let Ok(batch) = PyList::new(py, [t]) {
                schedule(py, &event_loop, batch);
            }
        }
    });
}

fn sink(event_loop: Py<PyAny>) -> EventSink<Opaque> {
    Arc::new(move |events: Vec<Event<Opaque>>| {
        Python::try_attach(|py| {
            let batch = PyList::empty(py);
            for ev in events {
                let entry = match ev {
                    Event::Delivery(d) => {
                        let Some(fut) = d.opaque.callback.as_ref().map(|f| f.clone_ref(py)) else {
                            continue;
                        };
                        match report(py, d) {
                            Ok((None, msg)) => (fut, true, msg.into_any()),
                            Ok((Some(err), _)) => {
                                let exc = KafkaException::new_err((err,)).into_value(py);
                                (fut, false, exc.into_any())
                            }
                            Err(e) => (fut, false, e.into_value(py).into_any()),
                        }
                    }
                    Event::Flushed(o) => match o.callback {
                        Some(fut) => (
                            fut,
                            true,
                            0i32.into_pyobject(py)
                                .map_or_else(|_| py.None(), |v| v.into_any().unbind()),
                        ),
                        None => continue,
                    },
                    Event::Error(_) | Event::Stats(_) => continue,
                };
                let _ = batch.append(entry);
            }
            if !batch.is_empty() {
                schedule(py, &event_loop, batch);
            }
        });
    })
}

/// The native half of `odradek.aio.AIOProducer`.
#[pyclass(module = "odradek._odradek", name = "_AIOProducer", frozen)]
pub struct AioProducer {
    client: ProducerClient<Opaque>,
    event_loop: Py<PyAny>,
}

#[pymethods]
impl AioProducer {
    #[new]
    #[pyo3(signature = (event_loop, conf=None, **kwargs))]
    fn new(
        py: Python<'_>,
        event_loop: Py<PyAny>,
        conf: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (props, cbs) = conf::parse(py, conf, kwargs)?;
        if cbs.logger.is_some() {
            return Err(PyTypeError::new_err(
                "AIOProducer does not take logger= (nothing polls it): use debug= (stderr) or the synchronous Producer",
            ));
        }
        if cbs.on_delivery.is_some() {
            return Err(PyTypeError::new_err(
                "AIOProducer reports deliveries through the futures send() returns; on_delivery is not used",
            ));
        }
        let mode = Mode::Push(sink(event_loop.clone_ref(py)));
        let props = odradek_bindings::config::with_librdkafka_producer_defaults(props);
        let mut cbs = cbs;
        let (config, settings) =
            crate::oauth::split_config(py, props, cbs.oauth_cb.take()).py(py)?;
        let client = py
            .detach(|| ProducerClient::from_config(config, settings, mode))
            .py(py)?;
        Ok(AioProducer { client, event_loop })
    }

    /// Produces a record whose delivery completes `future`.
    #[pyo3(signature = (future, topic, value=None, key=None, partition=-1, timestamp=0, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        py: Python<'_>,
        future: Py<PyAny>,
        topic: &Bound<'_, PyString>,
        value: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        partition: i32,
        timestamp: i64,
        headers: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        check_partition(partition)?;
        let (mut vh, mut kh) = (None, None);
        let hdrs = extract_headers(headers)?;
        let topic_name = topic.to_cow()?;
        let src = RecordSource {
            topic: &topic_name,
            partition,
            key: payload(key, &mut kh, "key")?,
            value: payload(value, &mut vh, "value")?,
            headers: &hdrs,
            timestamp,
        };
        let opaque = Opaque {
            callback: Some(future),
            topic: topic.clone().into_any().unbind(),
            partition,
            key: key.map(|k| k.clone().unbind()),
            value: value.map(|v| v.clone().unbind()),
            headers: headers.map(|h| h.clone().unbind()),
            started: Instant::now(),
        };
        self.client.produce(|| src.build(), Some(opaque)).py(py)
    }

    /// Completes `future` (with 0) once every record sent so far is resolved; their futures
    /// complete first.
    fn flush(&self, py: Python<'_>, future: Py<PyAny>) {
        self.client.start_flush();
        self.client.flush_then_notify(Opaque {
            callback: Some(future),
            topic: py.None(),
            partition: -1,
            key: None,
            value: None,
            headers: None,
            started: Instant::now(),
        });
    }

    /// Closes the producer (after a flush); completes `future` with None.
    fn close(&self, py: Python<'_>, future: Py<PyAny>) {
        let event_loop = self.event_loop.clone_ref(py);
        let fut = self.client.close();
        odradek_bindings::runtime::spawn_then(self.client.handle(), fut, move |()| {
            complete_future(event_loop, future, Ok(0i32));
        });
    }

    /// Records outstanding.
    fn __len__(&self) -> usize {
        self.client.len()
    }

    /// Cluster metadata (blocking; `odradek.aio` runs it in an executor).
    #[pyo3(signature = (topic=None, timeout=-1.0))]
    fn list_topics(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<crate::metadata::ClusterMetadata> {
        let cluster = self.client.core().cluster().clone();
        crate::metadata::list_topics(py, self.client.handle(), cluster, topic, timeout)
    }
}
