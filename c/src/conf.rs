//! `odk_conf_t`: Kafka property names and values, plus the application's callbacks. A client
//! copies what it needs when it is created; the configuration stays the caller's.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

use odradek_bindings::{codes, ClientError};

use crate::consumer::odk_consumer_t;
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg, Opaque};
use crate::message::odk_message_t;
use crate::producer::odk_producer_t;
use crate::topic_partition::odk_topic_partition_t;

/// Delivery report callback, served by `odk_poll` / `odk_flush` on the thread that calls them,
/// once per record produced. `msg` is borrowed for the duration of the call (copy what you need
/// to keep); `odk_message_err(msg)` tells success from failure and `odk_message_opaque(msg)`
/// returns the `msg_opaque` given to `odk_produce`. `opaque` is the configuration's opaque.
pub type odk_dr_msg_cb_t = Option<
    unsafe extern "C" fn(
        producer: *mut odk_producer_t,
        msg: *const odk_message_t,
        opaque: *mut c_void,
    ),
>;

/// Client-level error callback of a producer, consumer or admin client, served by `odk_poll` /
/// `odk_flush` (producer), `odk_consumer_poll` (consumer) and `odk_admin_poll` (admin): an
/// authentication failure, a broker that
/// cannot be reached any more (`ODK_ERR__TRANSPORT`), every known broker down
/// (`ODK_ERR__ALL_BROKERS_DOWN`), and for a producer a fatal error or a record without
/// delivery callback that failed fatally. Consumers report fetch errors as messages from
/// `odk_consumer_poll`. `reason` is borrowed for the call.
pub type odk_error_cb_t =
    Option<unsafe extern "C" fn(err: odk_err_t, reason: *const c_char, opaque: *mut c_void)>;

/// Statistics callback (`statistics.interval.ms`), served like the error callback. `json` is a
/// NUL-terminated JSON document of `json_len` bytes, borrowed for the call.
pub type odk_stats_cb_t =
    Option<unsafe extern "C" fn(json: *const c_char, json_len: usize, opaque: *mut c_void)>;

/// Throttle callback (librdkafka's `throttle_cb`): a broker throttled this client (KIP-219
/// quotas). Called once for every response that carried a non-zero throttle time and once when
/// the throttling ended (`throttle_time_ms` 0). `broker_name` is the broker's `host:port`, as
/// librdkafka passes it (the bootstrap address for a bootstrap connection), borrowed for the
/// call; `broker_id` is its node id (-1 for a bootstrap connection). Served on the
/// application's thread by `odk_poll` / `odk_flush` (producer), `odk_consumer_poll`
/// (consumer) and `odk_admin_poll` (admin). Unlike librdkafka's, it gets no client handle (one
/// callback type serves the three kinds of client): use the configuration's opaque.
pub type odk_throttle_cb_t = Option<
    unsafe extern "C" fn(
        broker_name: *const c_char,
        broker_id: i32,
        throttle_time_ms: c_int,
        opaque: *mut c_void,
    ),
>;

/// Group rebalance callback, served by `odk_consumer_poll`. `event` is
/// `ODK_ERR__ASSIGN_PARTITIONS` (partitions added to this member), `ODK_ERR__REVOKE_PARTITIONS`
/// (partitions taken away in an orderly rebalance) or `ODK_ERR__ASSIGNMENT_LOST` (taken away
/// without a chance to commit). Like librdkafka's, the callback may call `odk_consumer_assign`
/// (to choose start offsets) or commit; if it does not change the assignment, the library
/// applies the change itself when the callback returns. The group waits for the callback, so
/// offsets committed in a revoke are committed before the partitions move. `partitions`
/// (offsets `ODK_OFFSET_INVALID`) is borrowed for the call.
pub type odk_rebalance_cb_t = Option<
    unsafe extern "C" fn(
        consumer: *mut odk_consumer_t,
        event: odk_err_t,
        partitions: *const odk_topic_partition_t,
        partition_cnt: usize,
        opaque: *mut c_void,
    ),
>;

/// Offset commit callback (librdkafka's `offset_commit_cb`), served by `odk_consumer_poll` on
/// the thread that calls it: the outcome of every commit, `odk_consumer_commit` (after it
/// returned) and `odk_consumer_commit_async` alike, and of automatic commits that sent
/// something. `err` is the commit's error: `ODK_ERR__NO_OFFSET` (not a failure) when there was
/// nothing to commit, else the request's error or the first partition's. `offsets` holds each
/// partition's attempted `offset` and its own `err`; for a commit of the stored offsets, the
/// partitions of the assignment with nothing to commit appear with `ODK_OFFSET_INVALID`.
/// `offsets` (NULL when empty) is borrowed for the call.
pub type odk_offset_commit_cb_t = Option<
    unsafe extern "C" fn(
        consumer: *mut odk_consumer_t,
        err: odk_err_t,
        offsets: *const odk_topic_partition_t,
        offset_cnt: usize,
        opaque: *mut c_void,
    ),
>;

/// Partitioner callback (librdkafka's `rd_kafka_topic_conf_set_partitioner_cb`, with the topic's
/// name for its topic handle), called by `odk_produce` on the calling thread, before it returns,
/// for a record produced with `ODK_PARTITION_ANY` and a non-NULL key (as in librdkafka, records
/// with a NULL key keep the sticky partitioning of the `partitioner` property). `topic` and
/// `key` (`keylen` bytes) are borrowed for the call; `opaque` is the configuration's,
/// `msg_opaque` the one given to `odk_produce`. It must return a partition in
/// `0..partition_cnt-1`; any other value fails that `odk_produce` call with
/// `ODK_ERR__UNKNOWN_PARTITION`. It must not call the producer.
pub type odk_partitioner_cb_t = Option<
    unsafe extern "C" fn(
        topic: *const c_char,
        key: *const c_void,
        keylen: usize,
        partition_cnt: i32,
        opaque: *mut c_void,
        msg_opaque: *mut c_void,
    ) -> i32,
>;

/// A client configuration: Kafka / librdkafka property names and the application's callbacks.
#[derive(Debug, Clone, Default)]
pub struct odk_conf_t {
    pub(crate) entries: Vec<(String, String)>,
    pub(crate) dr_msg_cb: odk_dr_msg_cb_t,
    pub(crate) error_cb: odk_error_cb_t,
    pub(crate) stats_cb: odk_stats_cb_t,
    pub(crate) throttle_cb: odk_throttle_cb_t,
    pub(crate) log_cb: crate::log::odk_log_cb_t,
    pub(crate) rebalance_cb: odk_rebalance_cb_t,
    pub(crate) offset_commit_cb: odk_offset_commit_cb_t,
    pub(crate) partitioner_cb: odk_partitioner_cb_t,
    pub(crate) oauthbearer_token_cb: crate::oauth::odk_oauthbearer_token_cb_t,
    pub(crate) opaque: Option<OpaqueBox>,
}

/// The configuration's opaque, kept as an address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpaqueBox(pub Opaque);

impl odk_conf_t {
    /// The core's configuration and the binding's settings from the properties (behind
    /// librdkafka's producer defaults when `producer`), with the token callback if one is set.
    pub(crate) fn client_config(
        &self,
        producer: bool,
    ) -> Result<
        (
            odk_core::ClientConfig,
            odradek_bindings::config::BindingSettings,
        ),
        ClientError,
    > {
        let mut entries: Vec<(String, String)> = if producer {
            odradek_bindings::config::with_librdkafka_producer_defaults(
                self.entries.iter().cloned(),
            )
        } else {
            self.entries.clone()
        };
        if self.log_cb.is_some() {
            // The log callback takes the `debug` contexts (`log_sink`), not stderr.
            entries.retain(|(k, _)| k.trim() != "debug");
        }
        let (mut config, settings) = odradek_bindings::config::split(entries)?;
        if let Some(cb) = self.oauthbearer_token_cb {
            let sasl_config = self
                .entries
                .iter()
                .rev()
                .find(|(k, _)| k == "sasl.oauthbearer.config")
                .map_or("", |(_, v)| v.as_str());
            let provider = crate::oauth::CTokenProvider::new(cb, sasl_config, self.opaque());
            config
                .set_token_provider(std::sync::Arc::new(provider))
                .map_err(|e| ClientError::from_core(&e, odradek_bindings::Stage::Request))?;
        }
        Ok((config, settings))
    }

    /// The log sink of a client made from this configuration (`odk_conf_set_log_cb`).
    pub(crate) fn log_sink(&self) -> Result<crate::log::LogSink, ClientError> {
        crate::log::LogSink::new(self.log_cb, &self.entries)
    }

    /// The application's opaque pointer (NULL when unset).
    pub(crate) fn opaque(&self) -> *mut c_void {
        self.opaque.map_or(std::ptr::null_mut(), |o| o.0 .0)
    }

    fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), ClientError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(ClientError::invalid_arg("property name must not be empty"));
        }
        match value {
            None => self.entries.retain(|(k, _)| k != name),
            Some(v) => {
                // Checks the key and value alone; combinations are checked when a client is
                // created from the whole configuration.
                odradek_bindings::config::check_property(name, v)?;
                match self.entries.iter_mut().find(|(k, _)| k == name) {
                    Some(slot) => slot.1 = v.to_string(),
                    None => self.entries.push((name.to_string(), v.to_string())),
                }
            }
        }
        Ok(())
    }
}

/// Creates an empty configuration.
///
/// Ownership: the caller owns the result and frees it with `odk_conf_destroy`; creating a
/// client does not consume it. Returns NULL only if memory is exhausted.
#[no_mangle]
pub extern "C" fn odk_conf_new() -> *mut odk_conf_t {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(odk_conf_t::default()))
    })
}

/// Frees a configuration. NULL is a no-op.
///
/// Thread safety: must not race with any other use of `conf`.
///
/// # Safety
/// `conf` is NULL or a configuration from `odk_conf_new` / `odk_conf_dup` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_destroy(conf: *mut odk_conf_t) {
    guard((), || {
        if !conf.is_null() {
            // SAFETY: per the contract, conf came from Box::into_raw and is destroyed once.
            drop(unsafe { Box::from_raw(conf) });
        }
    })
}

/// Copies a configuration (properties, callbacks and opaque). Returns NULL if `conf` is NULL.
///
/// Ownership: the caller owns the copy (`odk_conf_destroy`). Thread safety: may run alongside
/// other readers of `conf`, not alongside a writer.
///
/// # Safety
/// `conf` is NULL or a live configuration.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_dup(conf: *const odk_conf_t) -> *mut odk_conf_t {
    guard(std::ptr::null_mut(), || {
        // SAFETY: NULL or live per the contract.
        match unsafe { conf.as_ref() } {
            Some(c) => Box::into_raw(Box::new(c.clone())),
            None => std::ptr::null_mut(),
        }
    })
}

/// Sets a property by its Kafka / librdkafka name (`bootstrap.servers`, `linger.ms`, `acks`,
/// `group.id`, `auto.offset.reset`, `enable.partition.eof`, ...). A NULL `value` removes the
/// property (back to its default). The key and value are checked now: an unknown key or a bad
/// value returns `ODK_ERR__INVALID_ARG` (`ODK_ERR__NOT_IMPLEMENTED` for a feature this release
/// lacks) with a message naming the key in `errstr`; the configuration is then unchanged.
///
/// Ownership: `name` and `value` are copied. `errstr` may be NULL; otherwise it receives a
/// NUL-terminated message (empty on success), truncated to `errstr_size` bytes.
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live; `name`/`value` are NULL or NUL-terminated; `errstr` is NULL or
/// has `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set(
    conf: *mut odk_conf_t,
    name: *const c_char,
    value: *const c_char,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: NULL or live per the contract.
        let conf = unsafe { conf.as_mut() }.ok_or_else(|| ffi::null_handle("conf"))?;
        // SAFETY: NULL or NUL-terminated per the contract.
        let name = unsafe { str_arg(name, "name") }?;
        let value = if value.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { str_arg(value, "value") }?)
        };
        conf.set(name, value)
    })
}

/// Reads a property set with `odk_conf_set`. On entry `*dest_size` is the size of `dest`
/// (`dest` may be NULL to ask for the size); on return it is the size the value needs,
/// terminator included. Returns `ODK_ERR__NOENT` when the property is not set (defaults are
/// not reported), `ODK_ERR__INVALID_ARG` for NULL arguments. A value longer than `dest` is
/// truncated (check `*dest_size`).
///
/// Thread safety: may run alongside other readers of `conf`, not alongside a writer.
///
/// # Safety
/// `conf` NULL or live, `name` NULL or NUL-terminated, `dest` NULL or `*dest_size` writable
/// bytes, `dest_size` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_get(
    conf: *const odk_conf_t,
    name: *const c_char,
    dest: *mut c_char,
    dest_size: *mut usize,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        // SAFETY: per the contract.
        let conf = unsafe { conf.as_ref() }.ok_or_else(|| ffi::null_handle("conf"))?;
        // SAFETY: per the contract.
        let name = unsafe { str_arg(name, "name") }?;
        // SAFETY: per the contract.
        let size = unsafe { dest_size.as_mut() }.ok_or_else(|| ffi::null_handle("dest_size"))?;
        let Some((_, v)) = conf.entries.iter().find(|(k, _)| k == name.trim()) else {
            return Err(ClientError::new(codes::NOENT, None));
        };
        let available = *size;
        *size = v.len() + 1;
        // SAFETY: dest is NULL or has `available` writable bytes.
        unsafe { ffi::write_str(dest, available, v) };
        Ok(())
    })
}

/// Sets the delivery report callback (producers). NULL turns delivery reports off, which
/// saves tracking every record. No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_dr_msg_cb(conf: *mut odk_conf_t, cb: odk_dr_msg_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.dr_msg_cb = cb;
        }
    })
}

/// Sets the OAUTHBEARER token callback (`sasl.mechanism=OAUTHBEARER`), which takes precedence
/// over `sasl.oauthbearer.method`. No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_oauthbearer_token_cb(
    conf: *mut odk_conf_t,
    cb: crate::oauth::odk_oauthbearer_token_cb_t,
) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.oauthbearer_token_cb = cb;
        }
    })
}

/// Sets the error callback of producers, consumers and admin clients, served by their poll
/// calls:
/// client-level errors such as an authentication failure, a broker that cannot be reached any
/// more (`ODK_ERR__TRANSPORT`, once until it answers again) and every known broker down at once
/// (`ODK_ERR__ALL_BROKERS_DOWN`, once each time). The same code is told at most once a second.
/// No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_error_cb(conf: *mut odk_conf_t, cb: odk_error_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.error_cb = cb;
        }
    })
}

/// Sets the statistics callback (with `statistics.interval.ms`). No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_stats_cb(conf: *mut odk_conf_t, cb: odk_stats_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.stats_cb = cb;
        }
    })
}

/// Sets the throttle callback (producers, consumers and admin clients; see
/// `odk_throttle_cb_t`). NULL turns throttle reports off (the default: nothing is kept).
/// No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_throttle_cb(conf: *mut odk_conf_t, cb: odk_throttle_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.throttle_cb = cb;
        }
    })
}

/// Sets the log callback (librdkafka's `rd_kafka_conf_set_log_cb`; see `odk_log_cb_t`): the
/// core's warnings and errors, and the contexts of the `debug` property, which then no longer
/// go to stderr. NULL restores stderr for `debug` and nothing otherwise. No-op when `conf` is
/// NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_log_cb(conf: *mut odk_conf_t, cb: crate::log::odk_log_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.log_cb = cb;
        }
    })
}

/// Runs the error callback `cb` (when set) for each of `errors`; returns how many ran. The
/// consumers', producers' and admin clients' poll calls serve their errors through it.
pub(crate) fn serve_errors(
    cb: odk_error_cb_t,
    opaque: *mut c_void,
    errors: impl IntoIterator<Item = ClientError>,
) -> usize {
    let Some(cb) = cb else { return 0 };
    let mut n = 0;
    for e in errors {
        let reason = crate::topic_partition::c_string(e.message());
        // SAFETY: the application's callback; `reason` outlives the call.
        unsafe { cb(odk_err_t::from_code(e.code()), reason.as_ptr(), opaque) };
        n += 1;
    }
    n
}

/// Serves `throttles` with `cb` (when set) on this thread; returns how many calls ran.
pub(crate) fn serve_throttles(
    cb: odk_throttle_cb_t,
    opaque: *mut c_void,
    throttles: Vec<odradek_bindings::throttle::Throttle>,
) -> usize {
    let Some(cb) = cb else { return 0 };
    let n = throttles.len();
    for t in throttles {
        let name = crate::topic_partition::c_string(&t.broker_name);
        // SAFETY: the application's callback; `name` outlives the call.
        unsafe { cb(name.as_ptr(), t.broker_id, t.throttle_time_ms, opaque) };
    }
    n
}

/// Sets the rebalance callback (consumers with `group.id` that subscribe). No-op when `conf`
/// is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_rebalance_cb(conf: *mut odk_conf_t, cb: odk_rebalance_cb_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.rebalance_cb = cb;
        }
    })
}

/// Sets the offset commit callback of consumers (see `odk_offset_commit_cb_t`). NULL turns
/// commit reports off (the default: nothing is kept). No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_offset_commit_cb(
    conf: *mut odk_conf_t,
    cb: odk_offset_commit_cb_t,
) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.offset_commit_cb = cb;
        }
    })
}

/// Sets the partitioner callback of producers (see `odk_partitioner_cb_t`); NULL restores the
/// `partitioner` property's choice. No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_partitioner_cb(
    conf: *mut odk_conf_t,
    cb: odk_partitioner_cb_t,
) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.partitioner_cb = cb;
        }
    })
}

/// Sets the opaque pointer passed to every callback of clients created from `conf`. The
/// library never dereferences it. No-op when `conf` is NULL.
///
/// Thread safety: must not race with other uses of `conf`.
///
/// # Safety
/// `conf` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_conf_set_opaque(conf: *mut odk_conf_t, opaque: *mut c_void) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { conf.as_mut() } {
            c.opaque = Some(OpaqueBox(Opaque(opaque)));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn set_checks_keys_and_values() {
        let conf = odk_conf_new();
        let mut err = [0 as c_char; 256];
        let set = |k: &CStr, v: Option<&CStr>, err: &mut [c_char; 256]| unsafe {
            odk_conf_set(
                conf,
                k.as_ptr(),
                v.map_or(std::ptr::null(), |v| v.as_ptr()),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(
            set(c"linger.ms", Some(c"5"), &mut err),
            odk_err_t::ODK_ERR_NO_ERROR
        );
        assert_eq!(
            set(c"no.such.key", Some(c"1"), &mut err),
            odk_err_t::ODK_ERR__INVALID_ARG
        );
        let msg = unsafe { CStr::from_ptr(err.as_ptr()) }.to_str().unwrap();
        assert!(msg.contains("no.such.key"), "{msg}");
        assert_eq!(
            set(c"linger.ms", Some(c"soon"), &mut err),
            odk_err_t::ODK_ERR__INVALID_ARG
        );
        let mut size = 0usize;
        let mut buf = [0 as c_char; 8];
        unsafe {
            assert_eq!(
                odk_conf_get(conf, c"linger.ms".as_ptr(), std::ptr::null_mut(), &mut size),
                odk_err_t::ODK_ERR_NO_ERROR
            );
            assert_eq!(size, 2);
            size = buf.len();
            odk_conf_get(conf, c"linger.ms".as_ptr(), buf.as_mut_ptr(), &mut size);
            assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str().unwrap(), "5");
        }
        assert_eq!(
            set(c"linger.ms", None, &mut err),
            odk_err_t::ODK_ERR_NO_ERROR
        );
        unsafe {
            assert_eq!(
                odk_conf_get(conf, c"linger.ms".as_ptr(), buf.as_mut_ptr(), &mut size),
                odk_err_t::ODK_ERR__NOENT
            );
            assert_eq!(
                odk_conf_set(
                    std::ptr::null_mut(),
                    c"a".as_ptr(),
                    c"b".as_ptr(),
                    err.as_mut_ptr(),
                    0
                ),
                odk_err_t::ODK_ERR__INVALID_ARG
            );
            odk_conf_destroy(conf);
            odk_conf_destroy(std::ptr::null_mut());
        }
    }
}
