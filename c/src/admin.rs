//! `odk_admin_t`: the admin basics (create / delete topics, add partitions, list topics) and
//! client quotas (describe / alter), each a blocking call with a timeout and one result per
//! item; `odk_admin_poll` serves the error and throttle callbacks.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CString};
use std::sync::Arc;

use odk_core::admin::NewTopic;
use odk_core::Admin;
use odradek_bindings::client_errors::ErrorQueue;
use odradek_bindings::runtime::{self, Deadline, ForkGuard, Signal, SLICE};
use odradek_bindings::throttle::ThrottleQueue;
use odradek_bindings::{codes, ClientError, Stage};
use tokio::runtime::Handle;

use crate::conf::{odk_conf_t, odk_error_cb_t, odk_throttle_cb_t};
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg, Opaque};
use crate::producer::wait;
use crate::topic_partition::c_string;

mod configs;
mod groups;
mod quotas;
pub use configs::*;
pub use groups::*;
pub use quotas::*;

/// A topic to create.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_new_topic_t {
    /// Topic name (NUL-terminated).
    pub name: *const c_char,
    /// Partition count, or -1 for the broker's `num.partitions`.
    pub num_partitions: i32,
    /// Replication factor, or -1 for the broker's `default.replication.factor`.
    pub replication_factor: i16,
    /// `config_cnt` pairs of NUL-terminated strings: name, value, name, value, ... (NULL when
    /// `config_cnt` is 0).
    pub configs: *const *const c_char,
    /// Number of name/value pairs in `configs`.
    pub config_cnt: usize,
}

/// A topic as `odk_admin_list_topics` reports it.
#[repr(C)]
#[derive(Debug)]
pub struct odk_topic_info_t {
    /// Topic name (NUL-terminated).
    pub name: *const c_char,
    /// Number of partitions.
    pub partition_cnt: i32,
    /// Whether the topic is internal (`__consumer_offsets`, ...).
    pub internal: bool,
}

/// An admin client.
pub struct odk_admin_t {
    admin: Admin,
    handle: Handle,
    fork: ForkGuard,
    throttle_cb: odk_throttle_cb_t,
    error_cb: odk_error_cb_t,
    log: crate::log::LogSink,
    opaque: Opaque,
    /// The brokers' throttle reports, kept when there is a throttle callback.
    throttles: Option<Arc<ThrottleQueue>>,
    /// Client-level errors (brokers down, authentication), kept when there is an error
    /// callback.
    errors: Option<Arc<ErrorQueue>>,
    /// Notified when a throttle report or an error arrives.
    signal: Arc<Signal>,
    /// Counts this admin client among the live clients (see `lifecycle`).
    _live: crate::lifecycle::Live,
}

fn admin<'a>(a: *mut odk_admin_t) -> Result<&'a odk_admin_t, ClientError> {
    // SAFETY: every caller passes the application's pointer, NULL or live per its contract.
    let a = unsafe { a.as_ref() }.ok_or_else(|| ffi::null_handle("admin"))?;
    a.fork.check()?;
    Ok(a)
}

fn core_err(e: &odk_core::Error) -> ClientError {
    ClientError::from_core(e, Stage::Request)
}

impl odk_admin_t {
    /// Waits for an admin call, mapping its errors, bounded by `timeout_ms`.
    fn call<T>(
        &self,
        timeout_ms: i32,
        fut: impl std::future::Future<Output = odk_core::Result<T>>,
    ) -> Result<T, ClientError> {
        wait(&self.handle, ffi::timeout(timeout_ms), fut)
            .ok_or_else(|| ClientError::new(codes::TIMED_OUT, None))?
            .map_err(|e| core_err(&e))
    }

    /// Runs the error callback for each waiting error, then the throttle callback for the
    /// throttle reports, then the log callback for the waiting log lines; returns how many ran.
    fn serve(&self) -> usize {
        let errors = self.errors.as_ref().map(|q| q.take()).unwrap_or_default();
        let mut n = crate::conf::serve_errors(self.error_cb, self.opaque.0, errors);
        n += self.log.serve(self.opaque.0);
        if let Some(q) = &self.throttles {
            n += crate::conf::serve_throttles(self.throttle_cb, self.opaque.0, q.take());
        }
        n
    }
}

/// Writes per-item outcomes to `results` (when not NULL) and returns the first failure.
///
/// # Safety
/// `results` is NULL or has room for `outcomes.len()` items.
unsafe fn settle(
    results: *mut i32,
    outcomes: Vec<(String, odk_core::Result<()>)>,
) -> Result<(), ClientError> {
    let mut first = None;
    for (i, (name, r)) in outcomes.into_iter().enumerate() {
        let code = match r {
            Ok(()) => 0,
            Err(e) => {
                let e = core_err(&e);
                let code = e.code();
                first.get_or_insert_with(|| ClientError::new(code, Some(format!("{name}: {e}"))));
                code
            }
        };
        if !results.is_null() {
            // SAFETY: per the contract.
            unsafe { *results.add(i) = code };
        }
    }
    first.map_or(Ok(()), Err)
}

/// Creates an admin client from `conf` (`bootstrap.servers`, `request.timeout.ms`,
/// `default.api.timeout.ms`, ...). Nothing is connected until the first call. Returns NULL on
/// error with the reason in `errstr`.
///
/// Ownership: `conf` is copied; the caller frees the client with `odk_admin_destroy`.
/// Thread safety: admin functions may be called from any thread, concurrently, except
/// `odk_admin_destroy`.
///
/// # Safety
/// `conf` NULL or live; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_new(
    conf: *const odk_conf_t,
    errstr: *mut c_char,
    errstr_size: usize,
) -> *mut odk_admin_t {
    let mut out = std::ptr::null_mut();
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let conf = unsafe { conf.as_ref() }.ok_or_else(|| ffi::null_handle("conf"))?;
        let (config, _) = conf.client_config(false)?;
        let log = conf.log_sink()?;
        let handle = runtime::runtime()?;
        let admin = {
            let _enter = handle.enter();
            Admin::new(config)
        };
        let signal = Signal::new();
        let throttles = conf
            .throttle_cb
            .is_some()
            .then(|| ThrottleQueue::attach(admin.cluster(), signal.clone()));
        let errors = conf
            .error_cb
            .is_some()
            .then(|| ErrorQueue::attach(admin.cluster(), signal.clone()));
        out = Box::into_raw(Box::new(odk_admin_t {
            admin,
            handle,
            fork: ForkGuard::new(),
            throttle_cb: conf.throttle_cb,
            error_cb: conf.error_cb,
            log,
            opaque: Opaque(conf.opaque()),
            throttles,
            errors,
            signal,
            _live: crate::lifecycle::Live::new(),
        }));
        Ok(())
    });
    out
}

/// Closes the admin client's connections and frees it. NULL is a no-op.
///
/// Thread safety: call once, after every other call on `a` has returned.
///
/// # Safety
/// `a` is NULL or an admin client from `odk_admin_new` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_destroy(a: *mut odk_admin_t) {
    guard((), || {
        if !a.is_null() {
            // SAFETY: per the contract, a came from Box::into_raw and is destroyed once.
            let a = unsafe { Box::from_raw(a) };
            a.admin.close();
        }
    })
}

/// Serves the error callback (`odk_conf_set_error_cb`: brokers down, authentication
/// failures), the throttle callback (`odk_conf_set_throttle_cb`) and the log callback
/// (`odk_conf_set_log_cb`; lines do not end the wait) on this thread, waiting up
/// to `timeout_ms` (0: do not wait, negative: forever) for the first event. Returns how many
/// callbacks ran (0 for NULL, or when nothing came before the timeout). Events wait for this
/// call only when their callback is set.
///
/// Thread safety: any thread; the callbacks run on the calling thread.
///
/// # Safety
/// `a` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_poll(a: *mut odk_admin_t, timeout_ms: i32) -> i32 {
    guard(0, || {
        let Ok(a) = admin(a) else { return 0 };
        let deadline = Deadline::after(ffi::timeout(timeout_ms));
        loop {
            let seen = a.signal.prepare();
            let n = a.serve();
            if n > 0 || deadline.passed() {
                a.signal.cancel_wait();
                return i32::try_from(n).unwrap_or(i32::MAX);
            }
            a.signal.wait(seen, deadline.slice(SLICE));
        }
    })
}

/// Creates `topic_cnt` topics, waiting up to `timeout_ms` (negative: forever). When `results`
/// is not NULL, `results[i]` receives topic i's `odk_err_t` (`ODK_ERR_TOPIC_ALREADY_EXISTS`,
/// `ODK_ERR_INVALID_PARTITIONS`, ...). Returns the first failure (the call's, or the first
/// topic's) with its message in `errstr`, or `ODK_ERR_NO_ERROR` when every topic was created.
///
/// Ownership: `topics` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `topics` NULL or `topic_cnt` valid items; `results` NULL or `topic_cnt`
/// writable items; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_create_topics(
    a: *mut odk_admin_t,
    topics: *const odk_new_topic_t,
    topic_cnt: usize,
    results: *mut i32,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let items = unsafe { ffi::slice_arg(topics, topic_cnt, "topics") }?;
        let mut new = Vec::with_capacity(items.len());
        for t in items {
            // SAFETY: per the contract.
            let name = unsafe { str_arg(t.name, "topic name") }?;
            // SAFETY: per the contract.
            let pairs =
                unsafe { ffi::slice_arg(t.configs, t.config_cnt.saturating_mul(2), "configs") }?;
            let mut configs = Vec::with_capacity(t.config_cnt);
            for kv in pairs.chunks(2) {
                // SAFETY: per the contract.
                let k = unsafe { str_arg(kv[0], "config name") }?;
                // SAFETY: per the contract.
                let v = unsafe { str_arg(kv[1], "config value") }?;
                configs.push((k.to_string(), v.to_string()));
            }
            new.push(NewTopic {
                name: name.to_string(),
                partitions: (t.num_partitions > 0).then_some(t.num_partitions),
                replication_factor: (t.replication_factor > 0).then_some(t.replication_factor),
                configs,
            });
        }
        let out = a.call(timeout_ms, a.admin.create_topics(&new, false))?;
        let outcomes = out.into_iter().map(|(n, r)| (n, r.map(drop))).collect();
        // SAFETY: per the contract.
        unsafe { settle(results, outcomes) }
    })
}

/// Deletes `topic_cnt` topics by name, like `odk_admin_create_topics` (per-topic results,
/// `ODK_ERR_UNKNOWN_TOPIC_OR_PART` for a topic that does not exist).
///
/// Ownership: `topics` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `topics` NULL or `topic_cnt` NUL-terminated strings; `results` NULL or
/// `topic_cnt` writable items; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_delete_topics(
    a: *mut odk_admin_t,
    topics: *const *const c_char,
    topic_cnt: usize,
    results: *mut i32,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let items = unsafe { ffi::slice_arg(topics, topic_cnt, "topics") }?;
        let names = items
            .iter()
            // SAFETY: per the contract.
            .map(|&t| unsafe { str_arg(t, "topic") })
            .collect::<Result<Vec<&str>, _>>()?;
        let out = a.call(timeout_ms, a.admin.delete_topics(&names))?;
        // SAFETY: per the contract.
        unsafe { settle(results, out) }
    })
}

/// Raises `topic`'s partition count to `new_total` (`ODK_ERR_INVALID_PARTITIONS` when it is
/// not larger than the current count), waiting up to `timeout_ms` (negative: forever).
///
/// Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `topic` NULL or NUL-terminated; `errstr` NULL or `errstr_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_create_partitions(
    a: *mut odk_admin_t,
    topic: *const c_char,
    new_total: i32,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let topic = unsafe { str_arg(topic, "topic") }?;
        let out = a.call(
            timeout_ms,
            a.admin.create_partitions(&[(topic, new_total)], false),
        )?;
        // SAFETY: NULL results.
        unsafe { settle(std::ptr::null_mut(), out) }
    })
}

/// Lists every topic (internal ones included), sorted by name, as a new array in `*topics`
/// (NULL when there are none) of `*topic_cnt` items, waiting up to `timeout_ms`.
///
/// Ownership: the caller frees the array with `odk_topic_infos_destroy(*topics, *topic_cnt)`.
/// Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `topics` and `topic_cnt` NULL or writable; `errstr` NULL or `errstr_size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_list_topics(
    a: *mut odk_admin_t,
    topics: *mut *mut odk_topic_info_t,
    topic_cnt: *mut usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if topics.is_null() || topic_cnt.is_null() {
            return Err(ClientError::invalid_arg(
                "topics and topic_cnt must not be NULL",
            ));
        }
        let listed = a.call(timeout_ms, a.admin.list_topics())?;
        let list: Box<[odk_topic_info_t]> = listed
            .into_iter()
            .map(|t| odk_topic_info_t {
                name: c_string(&t.name).into_raw(),
                partition_cnt: i32::try_from(t.partitions).unwrap_or(i32::MAX),
                internal: t.internal,
            })
            .collect();
        let n = list.len();
        let p = if n == 0 {
            std::ptr::null_mut()
        } else {
            Box::into_raw(list).cast::<odk_topic_info_t>()
        };
        // SAFETY: both checked non-NULL; writable per the contract.
        unsafe {
            *topics = p;
            *topic_cnt = n;
        }
        Ok(())
    })
}

/// Frees an array from `odk_admin_list_topics`. NULL is a no-op.
///
/// Ownership: `topics` and `topic_cnt` exactly as returned, unmodified. Thread safety: any
/// thread, once.
///
/// # Safety
/// As stated.
#[no_mangle]
pub unsafe extern "C" fn odk_topic_infos_destroy(topics: *mut odk_topic_info_t, topic_cnt: usize) {
    guard((), || {
        if topics.is_null() || topic_cnt == 0 {
            return;
        }
        // SAFETY: per the contract, the boxed slice leaked by odk_admin_list_topics.
        let list = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(topics, topic_cnt)) };
        for t in list.iter() {
            if !t.name.is_null() {
                // SAFETY: every name came from CString::into_raw.
                drop(unsafe { CString::from_raw(t.name.cast_mut()) });
            }
        }
    })
}
