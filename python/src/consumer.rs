//! `Consumer`: confluent-kafka's consumer API: `assign` or consumer groups (`subscribe`, with
//! rebalance and commit callbacks served on the thread that calls `poll`).

use std::sync::Mutex;
use std::time::Duration;

use odradek_bindings::consumer::{ConsumerClient, Item};
use odradek_bindings::runtime::{Deadline, SLICE};
use odradek_bindings::{codes, ClientError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::conf::{self, Callbacks};
use crate::errors::{kafka_error, not_implemented, to_py_err, IntoPy};
use crate::group::{self, ConsumerGroupMetadata, RebalanceCallbacks};
use crate::message::Message;
use crate::metadata::ClusterMetadata;
use crate::types::{extract_tps, TopicPartition};
use crate::wait;

/// A Kafka consumer (confluent-kafka's `Consumer` API). Safe to share between threads.
#[pyclass(module = "odradek", name = "Consumer", subclass, frozen)]
pub struct Consumer {
    pub(crate) client: ConsumerClient,
    cbs: Callbacks,
    rebalance: Mutex<RebalanceCallbacks>,
    /// `unsubscribe()` was called: the group is left (its revoke callback served) by the next
    /// `poll`, `consume`, `subscribe` or `close`, as confluent-kafka does.
    unsubscribing: std::sync::atomic::AtomicBool,
}

fn closed_error() -> PyErr {
    PyRuntimeError::new_err("Consumer closed")
}

/// Converts a queued item to a `Message`.
pub fn item_to_message(py: Python<'_>, item: Item) -> PyResult<Py<Message>> {
    let msg = match item {
        Item::Record(r) => Message::from_record(r),
        Item::Error(e) => Message::event(kafka_error(py, e)?, None, None, None),
        Item::Eof {
            topic,
            partition,
            offset,
        } => {
            let e = ClientError::new(
                codes::PARTITION_EOF,
                Some(format!(
                    "Fetch from {topic} [{partition}] reached end of partition at offset {offset}"
                )),
            );
            Message::event(
                kafka_error(py, e)?,
                Some(topic),
                Some(partition),
                Some(offset),
            )
        }
    };
    Py::new(py, msg)
}

impl Consumer {
    /// Leaves the group now if `unsubscribe()` asked for it, serving the revoke callback on
    /// this thread.
    fn finish_unsubscribe(slf: &Bound<'_, Self>) -> PyResult<()> {
        let this = slf.get();
        if !this
            .unsubscribing
            .swap(false, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        let fut = this.client.unsubscribe();
        Consumer::wait_serving(slf, fut)
    }

    fn usable(&self, py: Python<'_>) -> PyResult<()> {
        if self.client.is_closed() {
            return Err(closed_error());
        }
        self.client.check_usable().py(py)
    }

    fn serve_stats(&self, py: Python<'_>) -> PyResult<()> {
        conf::serve_log(py, &self.cbs)?;
        if let Some(cb) = &self.cbs.stats_cb {
            for json in self.client.take_stats() {
                cb.call1(py, (json,))?;
            }
        }
        // Client-level errors (authentication, brokers down): error_cb, as librdkafka serves
        // it from poll. Without one they are dropped (the consumer keeps retrying).
        let errors = self.client.take_errors();
        if let Some(cb) = &self.cbs.error_cb {
            for e in errors {
                cb.call1(py, (kafka_error(py, e)?,))?;
            }
        }
        let client = &self.client;
        crate::throttle::serve(
            py,
            self.cbs.throttle_cb.as_ref(),
            client.take_throttles(),
            |rest| client.requeue_throttles(rest),
        )?;
        Ok(())
    }

    /// Serves statistics, throttle, rebalance and commit callbacks on this thread.
    fn serve(slf: &Bound<'_, Self>) -> PyResult<()> {
        let this = slf.get();
        this.serve_stats(slf.py())?;
        if !this.client.has_group_events() {
            return Ok(());
        }
        group::serve_events(
            slf.py(),
            slf.as_any(),
            &this.client,
            &this.rebalance,
            this.cbs.on_commit.as_ref(),
        )
    }

    /// Waits for a group operation (`unsubscribe`, `close`) while serving its callbacks.
    fn wait_serving<F>(slf: &Bound<'_, Self>, fut: F) -> PyResult<F::Output>
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        let client = &slf.get().client;
        group::wait_serving(slf.py(), client, fut, |_| Consumer::serve(slf))
    }

    fn wait<F>(
        &self,
        py: Python<'_>,
        fut: F,
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<F::Output>
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        match wait::wait_future(py, self.client.handle(), fut, wait::deadline(timeout))? {
            Some(v) => Ok(v),
            None => Err(to_py_err(
                py,
                ClientError::new(codes::TIMED_OUT, Some(format!("{what} timed out"))),
            )),
        }
    }

    /// Fills `out` with up to `max` messages, waiting until `deadline` for at least `min`. Asks
    /// the core at least once, so `poll(0)` returns what was already fetched.
    fn collect(
        slf: &Bound<'_, Self>,
        max: usize,
        min: usize,
        deadline: Deadline,
    ) -> PyResult<Vec<Item>> {
        let (py, this) = (slf.py(), slf.get());
        let mut out = Vec::new();
        loop {
            Consumer::serve(slf)?;
            this.client.take(max - out.len(), &mut out);
            if out.len() >= min {
                return Ok(out);
            }
            if this.client.is_closed() {
                return Err(closed_error());
            }
            let slice = deadline.slice(SLICE);
            let client = &this.client;
            py.detach(|| client.fetch(slice));
            Consumer::serve(slf)?;
            this.client.take(max - out.len(), &mut out);
            if out.len() >= min || deadline.passed() {
                return Ok(out);
            }
            py.check_signals()?;
        }
    }
}

#[pymethods]
impl Consumer {
    #[new]
    #[pyo3(signature = (conf=None, **kwargs))]
    fn new(
        py: Python<'_>,
        conf: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (mut props, mut cbs) = conf::parse(py, conf, kwargs)?;
        conf::attach_logger(py, &mut props, &mut cbs)?;
        let (config, settings) =
            crate::oauth::split_config(py, props, cbs.oauth_cb.take()).py(py)?;
        let client = py
            .detach(|| ConsumerClient::from_config(config, settings))
            .py(py)?;
        client.report_commits(cbs.on_commit.is_some());
        if cbs.throttle_cb.is_some() {
            client.report_throttles();
        }
        Ok(Consumer {
            client,
            cbs,
            rebalance: Mutex::new(RebalanceCallbacks::default()),
            unsubscribing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Sets the assignment: these partitions, starting at their offsets (`OFFSET_BEGINNING`,
    /// `OFFSET_END`, an absolute offset, or `OFFSET_INVALID`/`OFFSET_STORED` for
    /// `auto.offset.reset`).
    fn assign(&self, py: Python<'_>, partitions: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let tps = extract_tps(partitions)?;
        let list: Vec<_> = tps.iter().map(|tp| (tp.core(), tp.offset)).collect();
        self.client.assign(&list).py(py)
    }

    /// Adds partitions to the assignment.
    fn incremental_assign(&self, py: Python<'_>, partitions: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let tps = extract_tps(partitions)?;
        let list: Vec<_> = tps.iter().map(|tp| (tp.core(), tp.offset)).collect();
        self.client.incremental_assign(&list).py(py)
    }

    /// Removes partitions from the assignment.
    fn incremental_unassign(&self, py: Python<'_>, partitions: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let tps: Vec<_> = extract_tps(partitions)?
            .iter()
            .map(TopicPartition::core)
            .collect();
        self.client.incremental_unassign(&tps).py(py)
    }

    /// Removes every partition from the assignment.
    fn unassign(&self, py: Python<'_>) -> PyResult<()> {
        self.usable(py)?;
        self.client.assign(&[]).py(py)
    }

    /// The current assignment.
    fn assignment(&self, py: Python<'_>) -> PyResult<Vec<TopicPartition>> {
        self.usable(py)?;
        Ok(self
            .client
            .assignment()
            .iter()
            .map(|tp| TopicPartition::new(&tp.topic, tp.partition, crate::types::OFFSET_INVALID))
            .collect())
    }

    /// Moves an assigned partition to `partition.offset` (absolute or logical).
    fn seek(&self, py: Python<'_>, partition: &Bound<'_, TopicPartition>) -> PyResult<()> {
        self.usable(py)?;
        let tp = partition.borrow();
        self.client.seek(&tp.core(), tp.offset).py(py)
    }

    /// Pauses fetching and delivery of these partitions.
    fn pause(&self, py: Python<'_>, partitions: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let tps: Vec<_> = extract_tps(partitions)?
            .iter()
            .map(TopicPartition::core)
            .collect();
        self.client.pause(&tps).py(py)
    }

    /// Resumes paused partitions.
    fn resume(&self, py: Python<'_>, partitions: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let tps: Vec<_> = extract_tps(partitions)?
            .iter()
            .map(TopicPartition::core)
            .collect();
        self.client.resume(&tps).py(py)
    }

    /// The next offset to consume for each partition (`error` set on failure).
    fn position(
        &self,
        py: Python<'_>,
        partitions: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<TopicPartition>> {
        self.usable(py)?;
        let mut tps = extract_tps(partitions)?;
        let fut = self
            .client
            .positions(tps.iter().map(TopicPartition::core).collect());
        let results = self.wait(py, fut, None, "position")?;
        for (tp, r) in tps.iter_mut().zip(results) {
            match r {
                Ok(o) => tp.offset = o,
                Err(e) => {
                    tp.offset = crate::types::OFFSET_INVALID;
                    tp.error = Some(kafka_error(py, e)?);
                }
            }
        }
        Ok(tps)
    }

    /// `(low, high)` watermarks of a partition (`cached` is accepted; the broker is always
    /// asked).
    #[pyo3(signature = (partition, timeout=None, cached=false))]
    fn get_watermark_offsets(
        &self,
        py: Python<'_>,
        partition: &Bound<'_, TopicPartition>,
        timeout: Option<f64>,
        cached: bool,
    ) -> PyResult<Option<(i64, i64)>> {
        let _ = cached;
        self.usable(py)?;
        let tp = partition.borrow().core();
        let fut = self.client.watermarks(tp);
        match wait::wait_future(py, self.client.handle(), fut, wait::deadline(timeout))? {
            Some(r) => r.map(Some).py(py),
            None => Ok(None),
        }
    }

    /// For each partition, the earliest offset whose timestamp (given in `offset`, ms) is at or
    /// after it; -1 when there is none.
    #[pyo3(signature = (partitions, timeout=None))]
    fn offsets_for_times(
        &self,
        py: Python<'_>,
        partitions: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<TopicPartition>> {
        self.usable(py)?;
        let mut tps = extract_tps(partitions)?;
        let query = tps.iter().map(|tp| (tp.core(), tp.offset)).collect();
        let fut = self.client.offsets_for_times(query);
        let found = self.wait(py, fut, timeout, "offsets_for_times")?.py(py)?;
        for (tp, (_, offset)) in tps.iter_mut().zip(found) {
            tp.offset = offset;
        }
        Ok(tps)
    }

    /// Returns the next message or event, waiting up to `timeout` seconds (`None`/-1: forever);
    /// `None` on timeout.
    #[pyo3(signature = (timeout=None))]
    fn poll(slf: &Bound<'_, Self>, timeout: Option<f64>) -> PyResult<Option<Py<Message>>> {
        let (py, this) = (slf.py(), slf.get());
        Consumer::finish_unsubscribe(slf)?;
        if !this.client.has_group_events() {
            if let Some(item) = this.client.take_one() {
                return item_to_message(py, item).map(Some);
            }
        }
        this.usable(py)?;
        let mut items = Consumer::collect(slf, 1, 1, wait::deadline(timeout))?;
        match items.pop() {
            Some(item) => item_to_message(py, item).map(Some),
            None => Ok(None),
        }
    }

    /// Returns up to `num_messages` messages, waiting up to `timeout` seconds (-1: forever) for
    /// that many.
    #[pyo3(signature = (num_messages=1, timeout=-1.0))]
    fn consume(
        slf: &Bound<'_, Self>,
        num_messages: usize,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyList>> {
        let py = slf.py();
        if num_messages > 1_000_000 {
            return Err(PyValueError::new_err(
                "num_messages must be at most 1000000",
            ));
        }
        slf.get().usable(py)?;
        Consumer::finish_unsubscribe(slf)?;
        let n = num_messages.max(1);
        let items = Consumer::collect(slf, n, n, wait::deadline(timeout))?;
        let list = PyList::empty(py);
        for item in items {
            list.append(item_to_message(py, item)?)?;
        }
        Ok(list.unbind())
    }

    /// Cluster metadata.
    #[pyo3(signature = (topic=None, timeout=-1.0))]
    fn list_topics(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<ClusterMetadata> {
        self.usable(py)?;
        let cluster = self.client.core().cluster().clone();
        crate::metadata::list_topics(py, self.client.handle(), cluster, topic, timeout)
    }

    /// The cluster id, from metadata.
    #[pyo3(signature = (timeout=-1.0))]
    fn cluster_id(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<String>> {
        Ok(self.list_topics(py, None, timeout)?.cluster_id)
    }

    /// Leaves the group (the final revoke callback runs here; with `enable.auto.commit` the
    /// stored offsets are committed), stops consuming and closes connections. Later calls
    /// raise RuntimeError.
    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        let this = slf.get();
        if this.client.is_closed() {
            return Ok(());
        }
        // close() leaves the group anyway; a pending unsubscribe is part of that.
        this.unsubscribing
            .store(false, std::sync::atomic::Ordering::Release);
        let fut = this.client.close();
        Consumer::wait_serving(slf, fut)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(slf: &Bound<'_, Self>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        Consumer::close(slf)?;
        Ok(false)
    }

    /// Joins the group (`group.id`) for `topics` (names, or regular expressions starting with
    /// `^`). `on_assign(consumer, partitions)`, `on_revoke` and `on_lost` run inside `poll` on
    /// the calling thread; unless they call `assign` / `incremental_assign` (or the unassign
    /// counterparts) themselves, the change is applied after they return.
    #[pyo3(signature = (topics, on_assign=None, on_revoke=None, on_lost=None))]
    fn subscribe(
        slf: &Bound<'_, Self>,
        topics: &Bound<'_, PyAny>,
        on_assign: Option<&Bound<'_, PyAny>>,
        on_revoke: Option<&Bound<'_, PyAny>>,
        on_lost: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        slf.get().usable(py)?;
        let topics = group::topics(topics)?;
        // The previous subscription's pending unsubscribe revokes with its own callbacks.
        Consumer::finish_unsubscribe(slf)?;
        let this = slf.get();
        let cbs = RebalanceCallbacks {
            on_assign: group::callback("on_assign", on_assign)?,
            on_revoke: group::callback("on_revoke", on_revoke)?,
            on_lost: group::callback("on_lost", on_lost)?,
        };
        if let Ok(mut slot) = this.rebalance.lock() {
            *slot = cbs;
        }
        this.client.subscribe(&topics).py(py)
    }

    /// Leaves the group, as confluent-kafka does: returns at once; the assignment is revoked
    /// (the revoke callback served, stored offsets committed with `enable.auto.commit`) by
    /// the next `poll`, `consume`, `subscribe` or `close` on the calling thread.
    fn unsubscribe(slf: &Bound<'_, Self>) -> PyResult<()> {
        let this = slf.get();
        this.usable(slf.py())?;
        this.unsubscribing
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Leaves the group now, serving the revoke callback on this thread (`AIOConsumer`'s
    /// `unsubscribe`, whose polls do not go through `poll`).
    fn _unsubscribe_now(slf: &Bound<'_, Self>) -> PyResult<()> {
        Consumer::unsubscribe(slf)?;
        Consumer::finish_unsubscribe(slf)
    }

    /// Commits the offset after `message`, the given `offsets`, or (neither) the stored offsets
    /// of the assignment. Asynchronous by default: the result goes to the `on_commit`
    /// callback; with `asynchronous=False` returns the committed `TopicPartition`s or raises.
    #[pyo3(signature = (message=None, offsets=None, asynchronous=true))]
    fn commit(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
        offsets: Option<&Bound<'_, PyAny>>,
        asynchronous: bool,
    ) -> PyResult<Option<Vec<TopicPartition>>> {
        self.usable(py)?;
        let source = group::commit_source(group::offsets_arg(message, offsets, "commit")?);
        if asynchronous {
            self.client.commit_async(source).py(py)?;
            return Ok(None);
        }
        let fut = self.client.commit(source).py(py)?;
        let report = self.wait(py, fut, None, "commit")?;
        let committed = report.into_result().py(py)?;
        group::committed_list(py, committed).map(Some)
    }

    /// The group's committed offsets (`OFFSET_INVALID` where none).
    #[pyo3(signature = (partitions, timeout=None))]
    fn committed(
        &self,
        py: Python<'_>,
        partitions: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<TopicPartition>> {
        self.usable(py)?;
        let tps = extract_tps(partitions)?;
        let fut = self
            .client
            .committed(tps.iter().map(TopicPartition::core).collect());
        let found = self.wait(py, fut, timeout, "committed")?.py(py)?;
        Ok(found
            .into_iter()
            .map(|(tp, offset)| TopicPartition::new(&tp.topic, tp.partition, offset))
            .collect())
    }

    /// Stores the offset after `message`, or the given `offsets`, for the next commit (needs
    /// `enable.auto.offset.store=false`).
    #[pyo3(signature = (message=None, offsets=None))]
    fn store_offsets(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
        offsets: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.usable(py)?;
        let Some(list) = group::offsets_arg(message, offsets, "store_offsets")? else {
            return Err(PyValueError::new_err("expected either message or offsets"));
        };
        self.client.store_offsets(&list).py(py)
    }

    /// Group id, member id and generation, for `Producer.send_offsets_to_transaction`.
    fn consumer_group_metadata(&self, py: Python<'_>) -> PyResult<ConsumerGroupMetadata> {
        self.usable(py)?;
        match self.client.group_metadata() {
            Some(m) => Ok(ConsumerGroupMetadata::from_metadata(m)),
            None => Err(to_py_err(
                py,
                ClientError::invalid_arg("consumer_group_metadata needs group.id"),
            )),
        }
    }

    /// The member id in the group, or None before joining.
    fn memberid(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.usable(py)?;
        Ok(self.client.member_id())
    }

    /// Not supported in this release: raises KafkaException(_NOT_IMPLEMENTED).
    fn set_sasl_credentials(&self, py: Python<'_>, username: &str, password: &str) -> PyResult<()> {
        let _ = (username, password);
        Err(not_implemented(
            py,
            "SASL is not supported in this release of odradek",
        ))
    }

    // ---- asyncio support (used by odradek.aio) ----

    /// Takes one queued message or event without waiting (serving statistics, rebalance and
    /// commit callbacks first).
    fn _take(slf: &Bound<'_, Self>) -> PyResult<Option<Py<Message>>> {
        let (py, this) = (slf.py(), slf.get());
        Consumer::serve(slf)?;
        match this.client.take_one() {
            Some(item) => item_to_message(py, item).map(Some),
            None => {
                this.usable(py)?;
                Ok(None)
            }
        }
    }

    /// Fetches on the runtime for up to `timeout` seconds, then completes the asyncio `future`
    /// (with the number of items queued) through `loop.call_soon_threadsafe`. No thread waits.
    fn _fetch_async(
        &self,
        py: Python<'_>,
        future: Py<PyAny>,
        event_loop: Py<PyAny>,
        timeout: f64,
    ) -> PyResult<()> {
        self.usable(py)?;
        let wait = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
        self.client.fetch_then(wait, move |n| {
            crate::aio::complete_future(event_loop, future, Ok(n));
        });
        Ok(())
    }
}
