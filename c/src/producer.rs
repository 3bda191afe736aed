//! `odk_producer_t`: non-blocking `odk_produce`, delivery reports served on the caller's
//! thread by `odk_poll` / `odk_flush` (the librdkafka poll model), on the bindings' producer.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use odk_core::records::Header;
use odk_core::ProducerRecord;
use odradek_bindings::producer::{Event, Mode, ProducerClient};
use odradek_bindings::runtime::{Deadline, SLICE};
use odradek_bindings::{codes, ClientError};

use crate::conf::{
    odk_conf_t, odk_dr_msg_cb_t, odk_error_cb_t, odk_partitioner_cb_t, odk_stats_cb_t,
    odk_throttle_cb_t,
};
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg, Opaque};
use crate::message::odk_message_t;
use crate::topic_partition::c_string;

/// `odk_produce` partition: let the partitioner choose. The default is librdkafka's
/// `consistent_random` (CRC-32 of the key; null and empty keys sticky), so keys land where
/// librdkafka puts them; `partitioner=murmur2_random` gives the Java client's placement, and
/// every other librdkafka partitioner name is accepted too.
pub const ODK_PARTITION_ANY: i32 = -1;

/// `odk_produce` flag: the library takes ownership of `value`, which must come from
/// `malloc()`, and calls `free()` on it when it no longer needs it. Ownership passes whatever
/// `odk_produce` returns: never touch or free `value` after the call.
pub const ODK_MSG_F_FREE: i32 = 0x1;
/// `odk_produce` flag (the default when no flag is given): key, value and headers are copied
/// before `odk_produce` returns; the caller's buffers may be reused at once.
pub const ODK_MSG_F_COPY: i32 = 0x2;

/// A header to produce: `name` NUL-terminated; `value` NULL for a null header value, else
/// `value_len` bytes. Copied by `odk_produce`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_header_t {
    /// Header name (NUL-terminated).
    pub name: *const c_char,
    /// Header value, or NULL for a null value.
    pub value: *const c_void,
    /// Length of `value` in bytes.
    pub value_len: usize,
}

/// What a record carries to its delivery report.
pub(crate) struct Dr {
    opaque: Opaque,
    topic: Arc<str>,
    partition: i32,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

/// A producer.
pub struct odk_producer_t {
    pub(crate) client: ProducerClient<Dr>,
    dr_cb: odk_dr_msg_cb_t,
    partitioner_cb: odk_partitioner_cb_t,
    error_cb: odk_error_cb_t,
    stats_cb: odk_stats_cb_t,
    throttle_cb: odk_throttle_cb_t,
    log: crate::log::LogSink,
    opaque: Opaque,
    /// Topic names shared by delivery reports (one allocation per topic, not per record).
    topics: Mutex<Vec<Arc<str>>>,
    /// Counts this producer among the live clients (see `lifecycle`).
    _live: crate::lifecycle::Live,
}

impl odk_producer_t {
    fn topic_arc(&self, topic: &str) -> Arc<str> {
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = topics.iter().find(|t| &***t == topic) {
            return t.clone();
        }
        let t: Arc<str> = Arc::from(topic);
        if topics.len() < 1024 {
            topics.push(t.clone());
        }
        t
    }

    /// `topic`'s partition count from the metadata cache, else from the cluster: the first
    /// record of a topic waits for its metadata, at most `max.block.ms` (capped by
    /// `message.timeout.ms`), as a record without a partitioner callback would be held.
    fn partition_count(&self, topic: &str) -> Result<i32, ClientError> {
        let cluster = self.client.core().cluster();
        let known = cluster
            .metadata()
            .topics
            .get(topic)
            .filter(|t| t.error.is_ok() && !t.partitions.is_empty())
            .map(|t| t.partitions.len());
        let n = match known {
            Some(n) => n,
            None => {
                let p = &cluster.config().producer;
                let deadline = std::time::Instant::now() + p.max_block.min(p.delivery_timeout);
                let info = odradek_bindings::runtime::block_on(
                    self.client.handle(),
                    cluster.topic(topic, deadline),
                )
                .map_err(|e| ClientError::from_core(&e, odradek_bindings::Stage::Enqueue))?;
                info.partitions.len()
            }
        };
        Ok(i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// Runs the application's callbacks for `events` on this thread; returns how many ran.
    fn serve(&self, events: Vec<Event<Dr>>) -> usize {
        let me = (self as *const odk_producer_t).cast_mut();
        let mut n = 0;
        for ev in events {
            match ev {
                Event::Delivery(d) => {
                    let Some(cb) = self.dr_cb else { continue };
                    let o = d.opaque;
                    let mut msg = match &d.result {
                        Ok(md) => odk_message_t::delivery(
                            o.topic,
                            md.partition,
                            md.offset,
                            md.timestamp,
                            o.key,
                            o.value,
                            o.opaque,
                        ),
                        Err(_) => odk_message_t::delivery(
                            o.topic,
                            o.partition,
                            -1,
                            -1,
                            o.key,
                            o.value,
                            o.opaque,
                        ),
                    };
                    if let Err(e) = &d.result {
                        msg.set_error(e);
                    }
                    // SAFETY: the application's callback, called with a message borrowed for
                    // the call and the producer handle it gave us.
                    unsafe { cb(me, &msg, self.opaque.0) };
                    n += 1;
                }
                Event::Error(e) => {
                    n += crate::conf::serve_errors(self.error_cb, self.opaque.0, [e]);
                }
                Event::Stats(json) => {
                    if let Some(cb) = self.stats_cb {
                        let len = json.len();
                        let json = c_string(&json);
                        // SAFETY: as above.
                        unsafe { cb(json.as_ptr(), len, self.opaque.0) };
                        n += 1;
                    }
                }
                Event::Flushed(_) => {}
            }
        }
        n
    }

    /// Serves the throttle reports and log lines waiting; returns how many callbacks ran.
    fn serve_throttles(&self) -> usize {
        crate::conf::serve_throttles(
            self.throttle_cb,
            self.opaque.0,
            self.client.take_throttles(),
        ) + self.log.serve(self.opaque.0)
    }

    /// Serves events until one was served or `deadline` passes.
    pub(crate) fn poll(&self, deadline: Deadline) -> usize {
        loop {
            let throttled = self.serve_throttles();
            let events = self.client.take_events(usize::MAX);
            if !events.is_empty() || throttled > 0 {
                return throttled + self.serve(events);
            }
            if deadline.passed() {
                return 0;
            }
            self.client.wait_events(deadline.slice(SLICE));
        }
    }

    /// Sends everything and serves every report, until nothing is outstanding or `deadline`.
    pub(crate) fn flush(&self, deadline: Deadline) -> bool {
        self.client.start_flush();
        loop {
            let throttled = self.serve_throttles();
            let events = self.client.take_events(usize::MAX);
            if !events.is_empty() || throttled > 0 {
                self.serve(events);
                continue;
            }
            if self.client.flushed() {
                return true;
            }
            if deadline.passed() {
                return false;
            }
            self.client.wait_events(deadline.slice(SLICE));
            self.client.start_flush();
        }
    }
}

/// Creates a producer from `conf` (Kafka property names: `bootstrap.servers`, `linger.ms`,
/// `acks`, `compression.type`, `enable.idempotence`, `transactional.id`, ...; callbacks set with
/// `odk_conf_set_dr_msg_cb` / `odk_conf_set_error_cb` / `odk_conf_set_stats_cb` /
/// `odk_conf_set_throttle_cb` / `odk_conf_set_partitioner_cb`). Nothing is connected until the first record. Returns NULL on
/// error with the reason in `errstr`.
///
/// Ownership: `conf` is copied, not consumed (destroy it whenever you like). The caller owns
/// the producer and frees it with `odk_producer_destroy`.
/// Thread safety: every producer function except `odk_producer_destroy` may be called from
/// any thread, concurrently; callbacks run on the thread that calls `odk_poll` / `odk_flush`.
///
/// # Safety
/// `conf` NULL or live; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_new(
    conf: *const odk_conf_t,
    errstr: *mut c_char,
    errstr_size: usize,
) -> *mut odk_producer_t {
    let mut out = std::ptr::null_mut();
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let conf = unsafe { conf.as_ref() }.ok_or_else(|| ffi::null_handle("conf"))?;
        let (config, settings) = conf.client_config(true)?;
        let log = conf.log_sink()?;
        let client = ProducerClient::from_config(config, settings, Mode::Poll)?;
        if conf.throttle_cb.is_some() {
            client.report_throttles();
        }
        out = Box::into_raw(Box::new(odk_producer_t {
            client,
            dr_cb: conf.dr_msg_cb,
            partitioner_cb: conf.partitioner_cb,
            error_cb: conf.error_cb,
            stats_cb: conf.stats_cb,
            throttle_cb: conf.throttle_cb,
            log,
            opaque: Opaque(conf.opaque()),
            topics: Mutex::new(Vec::new()),
            _live: crate::lifecycle::Live::new(),
        }));
        Ok(())
    });
    out
}

/// Stops the producer and frees it. NULL is a no-op. Records already produced are still sent:
/// this waits until each is delivered or has failed (at most `delivery.timeout.ms`), but their
/// delivery callbacks are not called; call `odk_flush` first to serve them.
///
/// Thread safety: call once, after every other call on `p` has returned, and never from one of
/// `p`'s callbacks.
///
/// # Safety
/// `p` is NULL or a producer from `odk_producer_new` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_destroy(p: *mut odk_producer_t) {
    guard((), || {
        if p.is_null() {
            return;
        }
        // SAFETY: per the contract, p came from Box::into_raw and is destroyed once.
        let p = unsafe { Box::from_raw(p) };
        let close = p.client.close();
        odradek_bindings::runtime::block_on(p.client.handle(), close);
        drop(p);
    })
}

/// Produces one record to `topic`, partition `partition` or `ODK_PARTITION_ANY` (the
/// partitioner callback's choice, when one is set and `key` is not NULL). Does not block (except
/// that, with a partitioner callback, a topic's first record waits for its partition count):
/// the record is queued and sent in the background; its outcome arrives as a delivery report
/// (when a delivery callback is configured) served by `odk_poll` / `odk_flush`, with
/// `msg_opaque` attached.
///
/// `key` / `value`: NULL is Kafka's null (a null value is a tombstone); otherwise `key_len` /
/// `value_len` bytes (0 is an empty, non-null key or value). `headers`: `header_cnt` items
/// (NULL when 0). `msgflags`: `ODK_MSG_F_COPY` (or 0) copies key, value and headers now;
/// `ODK_MSG_F_FREE` hands `value` (from `malloc`) to the library, which frees it, whatever this
/// function returns; key and headers are always copied.
///
/// Returns `ODK_ERR_NO_ERROR` when queued, else (and no delivery report follows):
/// `ODK_ERR__QUEUE_FULL` (`queue.buffering.max.messages` outstanding: call `odk_poll`),
/// `ODK_ERR_MSG_SIZE_TOO_LARGE`, `ODK_ERR__UNKNOWN_PARTITION` (also for a partitioner
/// callback's choice out of range), `ODK_ERR__INVALID_ARG`
/// (NULL producer or topic, bad partition or flags), `ODK_ERR__DESTROY` (producer closing),
/// `ODK_ERR__STATE` (a transactional producer outside a transaction).
///
/// Ownership: `topic`, `key` and `headers` are copied; `value` is copied or taken per
/// `msgflags`. Thread safety: any thread, concurrently.
///
/// # Safety
/// `p` NULL or live; `topic` NULL or NUL-terminated; `key`/`value` NULL or of the given
/// lengths; `headers` NULL or `header_cnt` items with valid names and values.
#[no_mangle]
pub unsafe extern "C" fn odk_produce(
    p: *mut odk_producer_t,
    topic: *const c_char,
    partition: i32,
    key: *const c_void,
    key_len: usize,
    value: *mut c_void,
    value_len: usize,
    headers: *const odk_header_t,
    header_cnt: usize,
    msgflags: i32,
    msg_opaque: *mut c_void,
) -> odk_err_t {
    // Take ownership first, so a failure below can never leak or double-free it.
    let owned_value = if msgflags & ODK_MSG_F_FREE != 0 && !value.is_null() {
        Some(crate::malloc::take(value, value_len))
    } else {
        None
    };
    guard_err(std::ptr::null_mut(), 0, || {
        // SAFETY: per the contract.
        let p = unsafe { p.as_ref() }.ok_or_else(|| ffi::null_handle("producer"))?;
        check_msgflags(msgflags)?;
        // SAFETY: per the contract.
        let topic_name = unsafe { topic_arg(topic) }?;
        // SAFETY: per the contract.
        let headers = unsafe { read_headers(headers, header_cnt) }?;
        let value = match owned_value {
            Some(v) => Some(v),
            // SAFETY: per the contract.
            None => unsafe { ffi::bytes_arg(value, value_len) }.map(Bytes::copy_from_slice),
        };
        let one = OneRecord {
            partition,
            key,
            key_len,
            value,
            headers,
            msg_opaque,
        };
        // SAFETY: per the contract.
        let (record, dr) = unsafe { p.prepare(topic, topic_name, one, None) }?;
        let mut record = Some(record);
        p.client.produce(|| record.take().unwrap_or_default(), dr)
    })
}

/// One record of `odk_produce_batch`: the fields of librdkafka's `rd_kafka_message_t` that
/// `rd_kafka_produce_batch` reads, and the `err` it writes.
#[repr(C)]
#[derive(Debug)]
pub struct odk_batch_message_t {
    /// Key, or NULL for a null key.
    pub key: *const c_void,
    /// Length of `key` in bytes.
    pub key_len: usize,
    /// Value, or NULL for a null value (a tombstone).
    pub value: *mut c_void,
    /// Length of `value` in bytes.
    pub value_len: usize,
    /// `ODK_PARTITION_ANY` or a partition index.
    pub partition: i32,
    /// Attached to the record's delivery report.
    pub msg_opaque: *mut c_void,
    /// Set by `odk_produce_batch`: `ODK_ERR_NO_ERROR` when the record was queued, else why not
    /// (the codes `odk_produce` returns). No delivery report follows a refused record.
    pub err: odk_err_t,
}

/// Produces `cnt` records to `topic` in one call (librdkafka's `rd_kafka_produce_batch`): each
/// record as `odk_produce` would, at a fraction of the cost per record (one lock, clock read
/// and topic lookup per chunk of records). Returns how many were queued; every record's `err`
/// says whether it was (`ODK_ERR_NO_ERROR`) or why not. Records carry no headers (use
/// `odk_produce` for those). `msgflags` applies to every value: `ODK_MSG_F_COPY` (or 0) copies
/// keys and values now; `ODK_MSG_F_FREE` hands every non-NULL `value` (from `malloc`) to the
/// library, which frees it, whatever this function returns. A NULL producer or topic, or bad
/// flags, refuses every record (`ODK_ERR__INVALID_ARG`) and returns 0. When the queue fills
/// (`queue.buffering.max.messages` or `buffer.memory`), the rest are refused with
/// `ODK_ERR__QUEUE_FULL`: serve delivery reports with `odk_poll`, then produce those again.
///
/// Ownership: `topic` and keys are copied; values are copied or taken per `msgflags`; `msgs`
/// stays the caller's. Thread safety: any thread, concurrently.
///
/// # Safety
/// `p` NULL or live; `topic` NULL or NUL-terminated; `msgs` NULL (with `cnt` 0) or `cnt`
/// writable items whose keys and values are NULL or of their lengths.
#[no_mangle]
pub unsafe extern "C" fn odk_produce_batch(
    p: *mut odk_producer_t,
    topic: *const c_char,
    msgflags: i32,
    msgs: *mut odk_batch_message_t,
    cnt: usize,
) -> usize {
    if msgs.is_null() || cnt == 0 {
        return 0;
    }
    // SAFETY: per the contract, `cnt` writable items.
    let msgs = unsafe { std::slice::from_raw_parts_mut(msgs, cnt) };
    // Take ownership of every value first, so no failure below can leak or double-free one.
    let mut owned: Vec<Option<Bytes>> = msgs
        .iter()
        .map(|m| {
            (msgflags & ODK_MSG_F_FREE != 0 && !m.value.is_null())
                .then(|| crate::malloc::take(m.value, m.value_len))
        })
        .collect();
    let mut queued = 0;
    let outcome = guard_err(std::ptr::null_mut(), 0, || {
        // SAFETY: per the contract.
        let p = unsafe { p.as_ref() }.ok_or_else(|| ffi::null_handle("producer"))?;
        check_msgflags(msgflags)?;
        // SAFETY: per the contract.
        let topic_name = unsafe { topic_arg(topic) }?;
        // The partition count a partitioner callback gets, looked up once for the batch (and
        // before the producer's lock is taken: the first lookup may wait for metadata).
        let needs_count = p.partitioner_cb.is_some()
            && msgs
                .iter()
                .any(|m| m.partition == ODK_PARTITION_ANY && !m.key.is_null());
        let count = if needs_count {
            p.client.check_usable()?;
            Some(p.partition_count(topic_name)?)
        } else {
            None
        };
        let outcome = p.client.produce_batch(cnt, |i| {
            let m = &msgs[i];
            let value = match owned[i].take() {
                Some(v) => Some(v),
                // SAFETY: per the contract.
                None => unsafe { ffi::bytes_arg(m.value, m.value_len) }.map(Bytes::copy_from_slice),
            };
            let one = OneRecord {
                partition: m.partition,
                key: m.key,
                key_len: m.key_len,
                value,
                headers: Vec::new(),
                msg_opaque: m.msg_opaque,
            };
            // SAFETY: per the contract.
            unsafe { p.prepare(topic, topic_name, one, count) }
        })?;
        for m in msgs.iter_mut() {
            m.err = odk_err_t::ODK_ERR_NO_ERROR;
        }
        for (i, e) in &outcome.failed {
            if let Some(m) = msgs.get_mut(*i) {
                m.err = odk_err_t::from_code(e.code());
            }
        }
        queued = cnt - outcome.failed.len();
        Ok(())
    });
    if outcome != odk_err_t::ODK_ERR_NO_ERROR {
        for m in msgs.iter_mut() {
            m.err = outcome;
        }
        return 0;
    }
    queued
}

/// What `odk_produce` and `odk_produce_batch` know about one record before it is checked.
struct OneRecord {
    partition: i32,
    key: *const c_void,
    key_len: usize,
    value: Option<Bytes>,
    headers: Vec<Header>,
    msg_opaque: *mut c_void,
}

fn check_msgflags(msgflags: i32) -> Result<(), ClientError> {
    if msgflags & !(ODK_MSG_F_FREE | ODK_MSG_F_COPY) != 0
        || msgflags & (ODK_MSG_F_FREE | ODK_MSG_F_COPY) == (ODK_MSG_F_FREE | ODK_MSG_F_COPY)
    {
        return Err(ClientError::invalid_arg(format!(
            "invalid msgflags {msgflags:#x}"
        )));
    }
    Ok(())
}

/// The topic argument, checked: not NULL, UTF-8, not empty.
///
/// # Safety
/// `topic` NULL or NUL-terminated.
unsafe fn topic_arg<'a>(topic: *const c_char) -> Result<&'a str, ClientError> {
    // SAFETY: per the contract.
    let name = unsafe { str_arg(topic, "topic") }?;
    if name.is_empty() {
        return Err(ClientError::invalid_arg("topic must not be empty"));
    }
    Ok(name)
}

impl odk_producer_t {
    /// Checks `one`'s partition (asking the partitioner callback when one is set, the record
    /// has a key and no partition; with `count` as the partition count when given, else looked
    /// up), copies its key, and builds the record and what its delivery report carries.
    ///
    /// # Safety
    /// `topic_ptr` is the NUL-terminated `topic`; `one.key` NULL or `one.key_len` bytes.
    unsafe fn prepare(
        &self,
        topic_ptr: *const c_char,
        topic: &str,
        one: OneRecord,
        count: Option<i32>,
    ) -> Result<(ProducerRecord, Option<Dr>), ClientError> {
        let OneRecord {
            partition,
            key,
            key_len,
            value,
            headers,
            msg_opaque,
        } = one;
        if partition < ODK_PARTITION_ANY {
            return Err(ClientError::invalid_arg(format!(
                "partition must be ODK_PARTITION_ANY or a partition index, not {partition}"
            )));
        }
        let partition = match self.partitioner_cb {
            Some(cb) if partition == ODK_PARTITION_ANY && !key.is_null() => {
                let cnt = match count {
                    Some(n) => n,
                    None => {
                        self.client.check_usable()?;
                        self.partition_count(topic)?
                    }
                };
                // SAFETY: the application's callback, with its own topic and key pointers
                // (valid for this call per the contract) and its opaques.
                let chosen = unsafe { cb(topic_ptr, key, key_len, cnt, self.opaque.0, msg_opaque) };
                if !(0..cnt).contains(&chosen) {
                    return Err(ClientError::new(
                        codes::UNKNOWN_PARTITION,
                        Some(format!(
                            "the partitioner callback chose partition {chosen} of `{topic}`, which has {cnt}"
                        )),
                    ));
                }
                chosen
            }
            _ => partition,
        };
        // SAFETY: per the contract.
        let key = unsafe { ffi::bytes_arg(key, key_len) }.map(Bytes::copy_from_slice);
        let dr = self.dr_cb.is_some().then(|| Dr {
            opaque: Opaque(msg_opaque),
            topic: self.topic_arc(topic),
            partition,
            key: key.clone(),
            value: value.clone(),
        });
        let record = ProducerRecord {
            topic: topic.to_string(),
            partition: (partition >= 0).then_some(partition),
            key,
            value,
            headers,
            timestamp: None,
        };
        Ok((record, dr))
    }
}

/// # Safety
/// `headers` NULL or `n` items with NUL-terminated names and values of their lengths.
unsafe fn read_headers(headers: *const odk_header_t, n: usize) -> Result<Vec<Header>, ClientError> {
    // SAFETY: per the contract.
    let items = unsafe { ffi::slice_arg(headers, n, "headers") }?;
    items
        .iter()
        .map(|h| {
            // SAFETY: per the contract.
            let name = unsafe { str_arg(h.name, "header name") }?;
            // SAFETY: per the contract.
            let value = unsafe { ffi::bytes_arg(h.value, h.value_len) }.map(Bytes::copy_from_slice);
            Ok(Header {
                key: Bytes::copy_from_slice(name.as_bytes()),
                value,
            })
        })
        .collect()
}

/// Serves queued events (delivery reports, errors, statistics, throttle reports, log lines) by
/// calling their callbacks on this thread, waiting up to `timeout_ms` (0: do not wait, negative: forever) for the first.
/// Returns how many callbacks ran (0 for NULL). Call it regularly: reports are kept until
/// served, and they count against `queue.buffering.max.messages`.
///
/// Thread safety: any thread; callbacks run on the calling thread.
///
/// # Safety
/// `p` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_poll(p: *mut odk_producer_t, timeout_ms: i32) -> i32 {
    guard(0, || {
        // SAFETY: per the contract.
        let Some(p) = (unsafe { p.as_ref() }) else {
            return 0;
        };
        let n = p.poll(Deadline::after(ffi::timeout(timeout_ms)));
        i32::try_from(n).unwrap_or(i32::MAX)
    })
}

/// Sends every queued record without waiting for `linger.ms` and serves every delivery report,
/// waiting up to `timeout_ms` (negative: forever). Returns `ODK_ERR_NO_ERROR` when nothing is
/// outstanding, `ODK_ERR__TIMED_OUT` otherwise (see `odk_producer_outq_len`),
/// `ODK_ERR__INVALID_ARG` for NULL.
///
/// Thread safety: any thread; callbacks run on the calling thread.
///
/// # Safety
/// `p` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_flush(p: *mut odk_producer_t, timeout_ms: i32) -> odk_err_t {
    guard(odk_err_t::ODK_ERR__FAIL, || {
        // SAFETY: per the contract.
        let Some(p) = (unsafe { p.as_ref() }) else {
            return odk_err_t::ODK_ERR__INVALID_ARG;
        };
        if p.flush(Deadline::after(ffi::timeout(timeout_ms))) {
            odk_err_t::ODK_ERR_NO_ERROR
        } else {
            odk_err_t::ODK_ERR__TIMED_OUT
        }
    })
}

/// Records outstanding: queued, in flight, or delivered with a report not yet served
/// (librdkafka's `rd_kafka_outq_len`). 0 for NULL.
///
/// Thread safety: any thread.
///
/// # Safety
/// `p` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_outq_len(p: *mut odk_producer_t) -> i32 {
    guard(0, || {
        // SAFETY: per the contract.
        unsafe { p.as_ref() }.map_or(0, |p| i32::try_from(p.client.len()).unwrap_or(i32::MAX))
    })
}

/// Waits for `fut` on the runtime for at most `timeout` (None: forever).
pub(crate) fn wait<F: std::future::Future>(
    handle: &tokio::runtime::Handle,
    timeout: Option<Duration>,
    fut: F,
) -> Option<F::Output> {
    match timeout {
        None => Some(odradek_bindings::runtime::block_on(handle, fut)),
        Some(t) => odradek_bindings::runtime::block_on(handle, async move {
            tokio::time::timeout(t, fut).await.ok()
        }),
    }
}
