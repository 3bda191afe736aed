//! `odk_consumer_t`: assign or subscribe, `odk_consumer_poll` one message at a time, commits,
//! seeks, close. Rebalance callbacks and statistics run on the thread that polls.

#![allow(non_camel_case_types)]

use std::collections::VecDeque;
use std::ffi::{c_char, c_void};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};

use odk_core::producer::TopicPartition;
use odradek_bindings::consumer::{
    CommitOffset, CommitReport, CommitSource, ConsumerClient, GroupEvent, Item, RebalanceKind,
};
use odradek_bindings::runtime::{Deadline, SLICE};
use odradek_bindings::{codes, ClientError};

use crate::conf::{
    odk_conf_t, odk_error_cb_t, odk_offset_commit_cb_t, odk_rebalance_cb_t, odk_stats_cb_t,
    odk_throttle_cb_t,
};
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg, Opaque};
use crate::message::odk_message_t;
use crate::producer::wait;
use crate::topic_partition::{self, odk_topic_partition_t, Borrowed};

/// Logical offset: the log start.
pub const ODK_OFFSET_BEGINNING: i64 = -2;
/// Logical offset: the end of the log (the next record produced).
pub const ODK_OFFSET_END: i64 = -1;
/// Logical offset: the group's committed offset (`auto.offset.reset` when there is none).
pub const ODK_OFFSET_STORED: i64 = -1000;
/// No offset: the committed offset with `group.id`, else `auto.offset.reset`. Also what
/// `odk_consumer_committed` reports for a partition without a committed offset.
pub const ODK_OFFSET_INVALID: i64 = -1001;

/// A consumer.
pub struct odk_consumer_t {
    pub(crate) client: ConsumerClient,
    rebalance_cb: odk_rebalance_cb_t,
    offset_commit_cb: odk_offset_commit_cb_t,
    error_cb: odk_error_cb_t,
    stats_cb: odk_stats_cb_t,
    throttle_cb: odk_throttle_cb_t,
    log: crate::log::LogSink,
    opaque: Opaque,
    /// Outcomes of `odk_consumer_commit` calls waiting for the commit callback (asynchronous
    /// and automatic commits queue theirs among the group events).
    commit_reports: Mutex<VecDeque<CommitReport>>,
    /// Counts this consumer among the live clients (see `lifecycle`).
    _live: crate::lifecycle::Live,
}

impl odk_consumer_t {
    /// Serves queued group events, client-level errors, statistics and throttle reports on
    /// this thread; returns how many.
    fn serve_events(&self) -> Result<usize, ClientError> {
        let me = (self as *const odk_consumer_t).cast_mut();
        let mut n = crate::conf::serve_throttles(
            self.throttle_cb,
            self.opaque.0,
            self.client.take_throttles(),
        );
        n += crate::conf::serve_errors(self.error_cb, self.opaque.0, self.client.take_errors());
        n += self.log.serve(self.opaque.0);
        if let Some(cb) = self.stats_cb {
            for json in self.client.take_stats() {
                let len = json.len();
                let json = topic_partition::c_string(&json);
                // SAFETY: the application's callback; the string outlives the call.
                unsafe { cb(json.as_ptr(), len, self.opaque.0) };
                n += 1;
            }
        }
        loop {
            let report = lock(&self.commit_reports).pop_front();
            let Some(report) = report else { break };
            n += self.serve_commit(report);
        }
        while let Some(event) = self.client.take_group_event() {
            let r = match event {
                GroupEvent::Rebalance(r) => r,
                GroupEvent::Commit(report) => {
                    n += self.serve_commit(report);
                    continue;
                }
            };
            if let Some(cb) = self.rebalance_cb {
                let kind = match r.kind {
                    RebalanceKind::Assign => odk_err_t::ODK_ERR__ASSIGN_PARTITIONS,
                    RebalanceKind::Revoke => odk_err_t::ODK_ERR__REVOKE_PARTITIONS,
                    RebalanceKind::Lost => odk_err_t::ODK_ERR__ASSIGNMENT_LOST,
                };
                let list = Borrowed::new(&r.partitions);
                let items = list.as_slice();
                // SAFETY: the application's callback; the array outlives the call.
                unsafe { cb(me, kind, items.as_ptr(), items.len(), self.opaque.0) };
                n += 1;
            }
            self.client.finish_rebalance(r)?;
        }
        Ok(n)
    }

    /// Runs the commit callback (when set) for `report`; returns how many callbacks ran.
    fn serve_commit(&self, report: CommitReport) -> usize {
        let Some(cb) = self.offset_commit_cb else {
            return 0;
        };
        let me = (self as *const odk_consumer_t).cast_mut();
        let err = report.error.as_ref().map_or(0, ClientError::code);
        let list = Borrowed::with_offsets(report.offsets.iter().map(|o| {
            let code = o.error.as_ref().map_or(0, ClientError::code);
            (&o.partition, o.offset, code)
        }));
        let items = list.as_slice();
        let ptr = if items.is_empty() {
            std::ptr::null()
        } else {
            items.as_ptr()
        };
        // SAFETY: the application's callback; the array outlives the call.
        unsafe {
            cb(
                me,
                odk_err_t::from_code(err),
                ptr,
                items.len(),
                self.opaque.0,
            )
        };
        1
    }

    /// Keeps the outcome of a synchronous commit for the commit callback (librdkafka serves it
    /// from the next poll).
    fn queue_commit_report(&self, report: CommitReport) {
        if self.offset_commit_cb.is_some() {
            lock(&self.commit_reports).push_back(report);
        }
    }

    /// Runs `fut` to completion on this thread, serving group events while it waits (leaving
    /// the group revokes partitions, and the member waits until the revoke was served).
    fn run_serving<F: Future>(&self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        loop {
            // Errors of default assignment changes are not the caller's to handle here.
            let _ = self.serve_events();
            if let Some(out) = self.client.run_serving(fut.as_mut(), SLICE) {
                return out;
            }
        }
    }

    fn poll(&self, deadline: Deadline) -> Result<Option<Item>, ClientError> {
        loop {
            self.serve_events()?;
            if let Some(item) = self.client.take_one() {
                return Ok(Some(item));
            }
            self.client.check_usable()?;
            if deadline.passed() {
                return Ok(None);
            }
            self.client.fetch(deadline.slice(SLICE));
            if self.client.has_group_events() {
                continue;
            }
            if let Some(item) = self.client.take_one() {
                return Ok(Some(item));
            }
            if deadline.passed() {
                return Ok(None);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn consumer<'a>(c: *mut odk_consumer_t) -> Result<&'a odk_consumer_t, ClientError> {
    // SAFETY: every caller passes the application's pointer, NULL or live per its contract.
    unsafe { c.as_ref() }.ok_or_else(|| ffi::null_handle("consumer"))
}

fn item_message(item: Item) -> odk_message_t {
    match item {
        Item::Record(r) => odk_message_t::record(r),
        Item::Error(e) => odk_message_t::error(&e, None, -1, -1),
        Item::Eof {
            topic,
            partition,
            offset,
        } => odk_message_t::error(
            &ClientError::new(
                codes::PARTITION_EOF,
                Some(format!(
                    "reached the end of {topic}-{partition} at offset {offset}"
                )),
            ),
            Some(topic),
            partition,
            offset,
        ),
    }
}

/// Creates a consumer from `conf` (`bootstrap.servers`, `group.id`, `auto.offset.reset`,
/// `enable.auto.commit`, `enable.auto.offset.store`, `enable.partition.eof`,
/// `max.poll.records`, ...; `odk_conf_set_rebalance_cb`, `odk_conf_set_offset_commit_cb`,
/// `odk_conf_set_error_cb`, `odk_conf_set_stats_cb`, `odk_conf_set_throttle_cb`). Returns NULL on error with the reason
/// in `errstr`.
///
/// Ownership: `conf` is copied, not consumed. The caller owns the consumer: `odk_consumer_close`
/// then `odk_consumer_destroy`. Thread safety: consumer functions may be called from any
/// thread, concurrently, except `odk_consumer_destroy`; callbacks run on the thread that calls
/// `odk_consumer_poll` (or `odk_consumer_close` / `odk_consumer_unsubscribe`).
///
/// # Safety
/// `conf` NULL or live; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_new(
    conf: *const odk_conf_t,
    errstr: *mut c_char,
    errstr_size: usize,
) -> *mut odk_consumer_t {
    let mut out = std::ptr::null_mut();
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let conf = unsafe { conf.as_ref() }.ok_or_else(|| ffi::null_handle("conf"))?;
        let (config, settings) = conf.client_config(false)?;
        let log = conf.log_sink()?;
        let client = ConsumerClient::from_config(config, settings)?;
        if conf.throttle_cb.is_some() {
            client.report_throttles();
        }
        client.report_commits(conf.offset_commit_cb.is_some());
        out = Box::into_raw(Box::new(odk_consumer_t {
            client,
            rebalance_cb: conf.rebalance_cb,
            offset_commit_cb: conf.offset_commit_cb,
            error_cb: conf.error_cb,
            stats_cb: conf.stats_cb,
            throttle_cb: conf.throttle_cb,
            log,
            opaque: Opaque(conf.opaque()),
            commit_reports: Mutex::new(VecDeque::new()),
            _live: crate::lifecycle::Live::new(),
        }));
        Ok(())
    });
    out
}

/// Closes the consumer if `odk_consumer_close` was not called, then frees it. NULL is a no-op.
///
/// Thread safety: call once, after every other call on `c` has returned, and never from one of
/// `c`'s callbacks.
///
/// # Safety
/// `c` is NULL or a consumer from `odk_consumer_new` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_destroy(c: *mut odk_consumer_t) {
    guard((), || {
        if c.is_null() {
            return;
        }
        // SAFETY: per the contract, c came from Box::into_raw and is destroyed once.
        let c = unsafe { Box::from_raw(c) };
        if !c.client.is_closed() {
            c.run_serving(c.client.close());
        }
        drop(c);
    })
}

/// Leaves the group (serving the final revoke on this thread; with `enable.auto.commit` the
/// stored offsets are committed), stops fetching and closes connections. Later calls fail with
/// `ODK_ERR__STATE`; `odk_consumer_destroy` is still needed. Returns `ODK_ERR__INVALID_ARG` for
/// NULL.
///
/// Thread safety: any thread; not from one of the consumer's callbacks.
///
/// # Safety
/// `c` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_close(c: *mut odk_consumer_t) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        if !c.client.is_closed() {
            c.run_serving(c.client.close());
        }
        Ok(())
    })
}

/// Subscribes to `topic_cnt` topics (names, or regular expressions starting with `^`),
/// replacing any previous subscription or assignment. Needs `group.id`. Partitions arrive
/// through rebalances, served by `odk_consumer_poll`.
///
/// Ownership: `topics` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `topics` NULL or `topic_cnt` NUL-terminated strings; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_subscribe(
    c: *mut odk_consumer_t,
    topics: *const *const c_char,
    topic_cnt: usize,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let names = unsafe { ffi::slice_arg(topics, topic_cnt, "topics") }?;
        let names = names
            .iter()
            // SAFETY: per the contract.
            .map(|&t| unsafe { str_arg(t, "topic") }.map(str::to_string))
            .collect::<Result<Vec<String>, _>>()?;
        c.client.subscribe(&names)
    })
}

/// Leaves the group and drops the assignment (serving the revoke on this thread).
///
/// Thread safety: any thread; not from one of the consumer's callbacks.
///
/// # Safety
/// `c` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_unsubscribe(c: *mut odk_consumer_t) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        c.client.check_usable()?;
        c.run_serving(c.client.unsubscribe());
        Ok(())
    })
}

/// Replaces the assignment with `partition_cnt` partitions, each starting at its `offset`
/// (absolute, `ODK_OFFSET_BEGINNING`, `ODK_OFFSET_END`, or `ODK_OFFSET_STORED` /
/// `ODK_OFFSET_INVALID` for the committed offset or `auto.offset.reset`). NULL / 0 unassigns
/// everything. May be called from a rebalance callback to choose offsets.
///
/// Ownership: `partitions` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` NULL or `partition_cnt` items with valid topics; `errstr`
/// NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_assign(
    c: *mut odk_consumer_t,
    partitions: *const odk_topic_partition_t,
    partition_cnt: usize,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        c.client.assign(&list)
    })
}

/// The current assignment as a new array in `*partitions` (NULL when empty) of `*partition_cnt`
/// items (offsets `ODK_OFFSET_INVALID`).
///
/// Ownership: the caller frees the array with `odk_topic_partitions_destroy(*partitions,
/// *partition_cnt)`. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` and `partition_cnt` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_assignment(
    c: *mut odk_consumer_t,
    partitions: *mut *mut odk_topic_partition_t,
    partition_cnt: *mut usize,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        if partitions.is_null() || partition_cnt.is_null() {
            return Err(ClientError::invalid_arg(
                "partitions and partition_cnt must not be NULL",
            ));
        }
        let items = c
            .client
            .assignment()
            .into_iter()
            .map(|tp| (tp, ODK_OFFSET_INVALID, 0))
            .collect();
        let (p, n) = topic_partition::into_owned(items);
        // SAFETY: both checked non-NULL; writable per the contract.
        unsafe {
            *partitions = p;
            *partition_cnt = n;
        }
        Ok(())
    })
}

/// Returns the next message, waiting up to `timeout_ms` (0: do not wait, negative: forever);
/// NULL when none arrived in time or `c` is NULL. Rebalance, commit, error, statistics,
/// throttle and log callbacks are served here first. Check `odk_message_err`: besides records (`ODK_ERR_NO_ERROR`) the
/// consumer returns end-of-partition events (`ODK_ERR__PARTITION_EOF`, with `enable.partition.eof`),
/// consume errors, and `ODK_ERR__STATE` once closed. With `enable.auto.offset.store` (the
/// default) a record's offset + 1 is stored for the next commit when it is returned.
///
/// Ownership: the caller owns the message and frees it with `odk_message_destroy`.
/// Thread safety: any thread; callbacks run on the calling thread.
///
/// # Safety
/// `c` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_poll(
    c: *mut odk_consumer_t,
    timeout_ms: i32,
) -> *mut odk_message_t {
    guard(std::ptr::null_mut(), || {
        let Ok(c) = consumer(c) else {
            return std::ptr::null_mut();
        };
        let msg = match c.poll(Deadline::after(ffi::timeout(timeout_ms))) {
            Ok(Some(item)) => item_message(item),
            Ok(None) => return std::ptr::null_mut(),
            Err(e) => odk_message_t::error(&e, None, -1, -1),
        };
        Box::into_raw(Box::new(msg))
    })
}

fn commit(c: &odk_consumer_t, source: CommitSource) -> Result<(), ClientError> {
    c.client.check_usable()?;
    let report = match c.client.commit(source) {
        // Bounded by request.timeout.ms inside.
        Ok(fut) => odradek_bindings::runtime::block_on(c.client.handle(), fut),
        Err(e) => CommitReport {
            error: Some(e),
            offsets: Vec::new(),
        },
    };
    let result = match &report.error {
        Some(e) => Err(e.clone()),
        None => Ok(()),
    };
    c.queue_commit_report(report);
    result
}

/// What `offsets` / `offset_cnt` ask a commit to send: the stored offsets when empty.
///
/// # Safety
/// As `odk_consumer_commit`'s `offsets`.
unsafe fn commit_source(
    offsets: *const odk_topic_partition_t,
    offset_cnt: usize,
) -> Result<CommitSource, ClientError> {
    // SAFETY: per the contract.
    let list = unsafe { topic_partition::read_list(offsets, offset_cnt) }?;
    Ok(if list.is_empty() {
        CommitSource::Stored
    } else {
        CommitSource::Offsets(
            list.into_iter()
                .map(|(partition, offset)| CommitOffset {
                    partition,
                    offset,
                    metadata: None,
                })
                .collect(),
        )
    })
}

/// What committing a message sends: its offset + 1.
///
/// # Safety
/// `msg` NULL or a live message.
unsafe fn message_source(msg: *const odk_message_t) -> Result<CommitSource, ClientError> {
    // SAFETY: per the contract.
    let m = unsafe { msg.as_ref() }.ok_or_else(|| ffi::null_handle("msg"))?;
    let (Some(topic), true) = (&m.topic, m.err == 0 && m.offset >= 0) else {
        return Err(ClientError::invalid_arg(
            "only a record (a message without error) can be committed",
        ));
    };
    Ok(CommitSource::Offsets(vec![CommitOffset {
        partition: TopicPartition {
            topic: topic.clone(),
            partition: m.partition,
        },
        offset: m.offset + 1,
        metadata: None,
    }]))
}

/// Commits offsets and waits for the result (retrying coordinator moves within
/// `request.timeout.ms`). With `offsets` NULL / 0: the stored offsets of assigned partitions
/// that changed since the last commit (`ODK_ERR__NO_OFFSET` when there are none); otherwise
/// exactly the given `offset`s (the next record to consume: a processed record's offset + 1).
/// Needs `group.id`. With a commit callback (`odk_conf_set_offset_commit_cb`) the outcome is
/// also reported to it by the next `odk_consumer_poll`, as librdkafka does.
///
/// Ownership: `offsets` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `offsets` NULL or `offset_cnt` items with valid topics; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_commit(
    c: *mut odk_consumer_t,
    offsets: *const odk_topic_partition_t,
    offset_cnt: usize,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let source = unsafe { commit_source(offsets, offset_cnt) }?;
        commit(c, source)
    })
}

/// Commits like `odk_consumer_commit` without waiting (librdkafka's `rd_kafka_commit` with
/// `async` 1): returns `ODK_ERR_NO_ERROR` once the commit is scheduled; its outcome, including
/// `ODK_ERR__NO_OFFSET` when nothing was stored, goes to the commit callback
/// (`odk_conf_set_offset_commit_cb`), served by `odk_consumer_poll`; without one it is
/// dropped. Returns an error at once only for bad arguments (`ODK_ERR__INVALID_ARG`) or a
/// closed consumer (`ODK_ERR__STATE`).
///
/// Ownership: `offsets` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `offsets` NULL or `offset_cnt` items with valid topics; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_commit_async(
    c: *mut odk_consumer_t,
    offsets: *const odk_topic_partition_t,
    offset_cnt: usize,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let source = unsafe { commit_source(offsets, offset_cnt) }?;
        c.client.commit_async(source)
    })
}

/// Commits `msg`'s offset + 1 for its partition and waits for the result.
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `msg` NULL or a live message; `errstr` NULL or `errstr_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_commit_message(
    c: *mut odk_consumer_t,
    msg: *const odk_message_t,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let source = unsafe { message_source(msg) }?;
        commit(c, source)
    })
}

/// Commits `msg`'s offset + 1 like `odk_consumer_commit_async`: the outcome goes to the commit
/// callback.
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `msg` NULL or a live message; `errstr` NULL or `errstr_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_commit_message_async(
    c: *mut odk_consumer_t,
    msg: *const odk_message_t,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let source = unsafe { message_source(msg) }?;
        c.client.commit_async(source)
    })
}

/// Stores offsets for the next commit (with `enable.auto.offset.store=false`; fails with
/// `ODK_ERR__INVALID_ARG` otherwise, as librdkafka does).
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `offsets` NULL or `offset_cnt` items with valid topics.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_store_offsets(
    c: *mut odk_consumer_t,
    offsets: *const odk_topic_partition_t,
    offset_cnt: usize,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(offsets, offset_cnt) }?;
        let list: Vec<CommitOffset> = list
            .into_iter()
            .map(|(partition, offset)| CommitOffset {
                partition,
                offset,
                metadata: None,
            })
            .collect();
        c.client.store_offsets(&list)
    })
}

/// Fills each item's `offset` with the group's committed offset (`ODK_OFFSET_INVALID` when
/// none) and its `err`, waiting up to `timeout_ms` (negative: forever). Returns the request's
/// error (`ODK_ERR__TIMED_OUT` on timeout). Needs `group.id`.
///
/// Ownership: `partitions` stays the caller's; only `offset` and `err` are written.
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` NULL or `partition_cnt` writable items with valid topics.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_committed(
    c: *mut odk_consumer_t,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    timeout_ms: i32,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        c.client.check_usable()?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        let tps: Vec<TopicPartition> = list.into_iter().map(|(tp, _)| tp).collect();
        let fut = c.client.committed(tps);
        let found = wait(c.client.handle(), ffi::timeout(timeout_ms), fut)
            .ok_or_else(|| ClientError::new(codes::TIMED_OUT, None))??;
        // SAFETY: partition_cnt writable items per the contract.
        unsafe { write_offsets(partitions, partition_cnt, found) };
        Ok(())
    })
}

/// Writes the looked-up offsets into the caller's items, in order (`err` cleared).
///
/// # Safety
/// `partitions` points to `partition_cnt` writable items.
unsafe fn write_offsets<T>(
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    found: impl IntoIterator<Item = (T, i64)>,
) {
    for (i, (_, offset)) in found.into_iter().enumerate().take(partition_cnt) {
        // SAFETY: i < partition_cnt, writable per the contract.
        let item = unsafe { &mut *partitions.add(i) };
        item.offset = offset;
        item.err = 0;
    }
}

/// Looks offsets up by timestamp (librdkafka's `rd_kafka_offsets_for_times`): on input each
/// item's `offset` is a timestamp (milliseconds since the epoch); on return it is the earliest
/// offset whose record timestamp is at or after it, or `ODK_OFFSET_END` (-1) when no record
/// is, and `err` is 0. Waits up to `timeout_ms` (negative: forever). Returns
/// `ODK_ERR__TIMED_OUT` on timeout, `ODK_ERR__INVALID_ARG` for an empty list or a partition
/// listed twice, or the lookup's error (`ODK_ERR_UNKNOWN_TOPIC_OR_PART`, ...); `partitions` is unchanged on error. Does not
/// need `group.id` or an assignment.
///
/// Ownership: only `offset` and `err` are written. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` NULL or `partition_cnt` writable items with valid topics.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_offsets_for_times(
    c: *mut odk_consumer_t,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    timeout_ms: i32,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        c.client.check_usable()?;
        // SAFETY: per the contract.
        let query = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        if query.is_empty() {
            return Err(ClientError::invalid_arg("the partition list is empty"));
        }
        for (i, (tp, _)) in query.iter().enumerate() {
            if query[..i].iter().any(|(seen, _)| seen == tp) {
                return Err(ClientError::invalid_arg(format!(
                    "partition {}-{} is listed twice",
                    tp.topic, tp.partition
                )));
            }
        }
        let fut = c.client.offsets_for_times(query);
        let found = wait(c.client.handle(), ffi::timeout(timeout_ms), fut)
            .ok_or_else(|| ClientError::new(codes::TIMED_OUT, None))??;
        // SAFETY: partition_cnt writable items per the contract.
        unsafe { write_offsets(partitions, partition_cnt, found) };
        Ok(())
    })
}

/// Fills each item's `offset` with the consumer's position (the offset of the next message
/// `odk_consumer_poll` returns for that partition), looking it up if needed, and its `err`
/// (e.g. `ODK_ERR__INVALID_ARG` for a partition not assigned).
///
/// Ownership: only `offset` and `err` are written. Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` NULL or `partition_cnt` writable items with valid topics.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_position(
    c: *mut odk_consumer_t,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        c.client.check_usable()?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        let tps: Vec<TopicPartition> = list.into_iter().map(|(tp, _)| tp).collect();
        let found = odradek_bindings::runtime::block_on(c.client.handle(), c.client.positions(tps));
        for (i, r) in found.into_iter().enumerate().take(partition_cnt) {
            // SAFETY: i < partition_cnt, writable per the contract.
            let item = unsafe { &mut *partitions.add(i) };
            match r {
                Ok(o) => {
                    item.offset = o;
                    item.err = 0;
                }
                Err(e) => {
                    item.offset = ODK_OFFSET_INVALID;
                    item.err = e.code();
                }
            }
        }
        Ok(())
    })
}

/// Moves an assigned partition's position to `offset` (absolute, `ODK_OFFSET_BEGINNING` or
/// `ODK_OFFSET_END`); messages already fetched for it are dropped. `ODK_ERR__STATE` when the
/// partition is not assigned.
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `topic` NULL or NUL-terminated; `errstr` NULL or `errstr_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_seek(
    c: *mut odk_consumer_t,
    topic: *const c_char,
    partition: i32,
    offset: i64,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let topic = unsafe { str_arg(topic, "topic") }?;
        c.client.seek(
            &TopicPartition {
                topic: Arc::from(topic),
                partition,
            },
            offset,
        )
    })
}

/// Pauses (`pause` true) or resumes partitions: nothing is fetched or returned for a paused
/// partition; positions are kept.
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `partitions` NULL or `partition_cnt` items with valid topics.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_pause(
    c: *mut odk_consumer_t,
    partitions: *const odk_topic_partition_t,
    partition_cnt: usize,
    pause: bool,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        let tps: Vec<TopicPartition> = list.into_iter().map(|(tp, _)| tp).collect();
        if pause {
            c.client.pause(&tps)
        } else {
            c.client.resume(&tps)
        }
    })
}

/// Asks the partition's leader for its low (log start) and high (next offset) watermarks,
/// waiting up to `timeout_ms` (negative: forever).
///
/// Thread safety: any thread.
///
/// # Safety
/// `c` NULL or live; `topic` NULL or NUL-terminated; `low`/`high` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_query_watermarks(
    c: *mut odk_consumer_t,
    topic: *const c_char,
    partition: i32,
    low: *mut i64,
    high: *mut i64,
    timeout_ms: i32,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        let c = consumer(c)?;
        c.client.check_usable()?;
        // SAFETY: per the contract.
        let topic = unsafe { str_arg(topic, "topic") }?;
        let tp = TopicPartition {
            topic: Arc::from(topic),
            partition,
        };
        let (lo, hi) = wait(
            c.client.handle(),
            ffi::timeout(timeout_ms),
            c.client.watermarks(tp),
        )
        .ok_or_else(|| ClientError::new(codes::TIMED_OUT, None))??;
        // SAFETY: NULL or writable per the contract.
        unsafe {
            if let Some(l) = low.as_mut() {
                *l = lo;
            }
            if let Some(h) = high.as_mut() {
                *h = hi;
            }
        }
        Ok(())
    })
}

/// The opaque pointer of the configuration the consumer was created from.
///
/// # Safety
/// `c` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_consumer_opaque(c: *mut odk_consumer_t) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        consumer(c).map_or(std::ptr::null_mut(), |c| c.opaque.0)
    })
}
