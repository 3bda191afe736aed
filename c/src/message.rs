//! `odk_message_t`: a consumed record, a consume event (error, partition EOF), or a delivery
//! report. Read through accessors; immutable once created.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use odk_core::records::{Header, TimestampType};
use odradek_bindings::ClientError;

use crate::error::odk_err_t;
use crate::ffi::{guard, str_arg, Opaque};
use crate::topic_partition::c_string;

/// `odk_message_timestamp`: no timestamp.
pub const ODK_TIMESTAMP_NOT_AVAILABLE: i32 = 0;
/// `odk_message_timestamp`: set by the producer.
pub const ODK_TIMESTAMP_CREATE_TIME: i32 = 1;
/// `odk_message_timestamp`: set by the broker when it appended the record.
pub const ODK_TIMESTAMP_LOG_APPEND_TIME: i32 = 2;

/// A record, an event or a delivery report.
#[derive(Debug, Default)]
pub struct odk_message_t {
    pub(crate) topic: Option<Arc<str>>,
    /// The topic as a C string, made on first request.
    topic_c: OnceLock<CString>,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) timestamp_type: i32,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<Header>,
    pub(crate) err: i32,
    pub(crate) errstr: Option<CString>,
    pub(crate) opaque: Option<Opaque>,
}

impl odk_message_t {
    /// A consumed record.
    pub fn record(r: odk_core::ConsumerRecord) -> odk_message_t {
        odk_message_t {
            topic: Some(r.topic),
            partition: r.partition,
            offset: r.offset,
            timestamp: r.timestamp,
            timestamp_type: match r.timestamp_type {
                TimestampType::CreateTime => ODK_TIMESTAMP_CREATE_TIME,
                TimestampType::LogAppendTime => ODK_TIMESTAMP_LOG_APPEND_TIME,
            },
            key: r.key,
            value: r.value,
            headers: r.headers,
            ..Default::default()
        }
    }

    /// An event carrying an error (a consume error, a partition EOF).
    pub fn error(
        err: &ClientError,
        topic: Option<Arc<str>>,
        partition: i32,
        offset: i64,
    ) -> odk_message_t {
        odk_message_t {
            topic,
            partition,
            offset,
            timestamp: -1,
            err: err.code(),
            errstr: Some(c_string(err.message())),
            ..Default::default()
        }
    }

    /// Sets the error of a delivery report.
    pub fn set_error(&mut self, err: &ClientError) {
        self.err = err.code();
        self.errstr = Some(c_string(err.message()));
    }

    /// A delivery report's fields before its outcome is known.
    #[allow(clippy::too_many_arguments)]
    pub fn delivery(
        topic: Arc<str>,
        partition: i32,
        offset: i64,
        timestamp: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        opaque: Opaque,
    ) -> odk_message_t {
        odk_message_t {
            topic: Some(topic),
            partition,
            offset,
            timestamp,
            timestamp_type: if timestamp >= 0 {
                ODK_TIMESTAMP_CREATE_TIME
            } else {
                ODK_TIMESTAMP_NOT_AVAILABLE
            },
            key,
            value,
            opaque: Some(opaque),
            ..Default::default()
        }
    }

    fn topic_ptr(&self) -> *const c_char {
        match &self.topic {
            None => std::ptr::null(),
            Some(t) => self.topic_c.get_or_init(|| c_string(t)).as_ptr(),
        }
    }
}

fn bytes_out(b: &Option<Bytes>, len: *mut usize) -> *const c_void {
    let (p, n) = match b {
        Some(b) if b.is_empty() => (NonNullEmpty::PTR, 0),
        Some(b) => (b.as_ptr().cast::<c_void>(), b.len()),
        None => (std::ptr::null(), 0),
    };
    if !len.is_null() {
        // SAFETY: the caller passes NULL or a writable size_t.
        unsafe { *len = n };
    }
    p
}

/// A non-NULL address for empty keys and values, so that "empty" and "null" differ.
struct NonNullEmpty;
impl NonNullEmpty {
    const PTR: *const c_void = c"".as_ptr().cast::<c_void>();
}

macro_rules! with_msg {
    ($m:expr, $default:expr, |$msg:ident| $body:expr) => {
        guard($default, || {
            // SAFETY: the caller passes NULL or a live message.
            match unsafe { $m.as_ref() } {
                Some($msg) => $body,
                None => $default,
            }
        })
    };
}

/// The topic (NUL-terminated), or NULL for an event not tied to a topic or a NULL `m`.
///
/// Ownership: borrowed from `m`, valid until `m` is destroyed (or the delivery callback
/// returns). Thread safety: any thread.
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_topic(m: *const odk_message_t) -> *const c_char {
    with_msg!(m, std::ptr::null(), |m| m.topic_ptr())
}

/// The partition, or -1 when unknown (an event not tied to a partition, a failed delivery
/// before a partition was chosen, a NULL `m`).
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_partition(m: *const odk_message_t) -> i32 {
    with_msg!(m, -1, |m| m.partition)
}

/// The offset: the record's, the delivered record's (-1 with `acks=0` or a failed delivery),
/// or for a `ODK_ERR__PARTITION_EOF` event the offset the next record will have. -1 for NULL.
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_offset(m: *const odk_message_t) -> i64 {
    with_msg!(m, -1, |m| m.offset)
}

/// The timestamp in milliseconds since the epoch, or -1 when there is none. When `tstype` is
/// not NULL it receives `ODK_TIMESTAMP_CREATE_TIME`, `ODK_TIMESTAMP_LOG_APPEND_TIME` or
/// `ODK_TIMESTAMP_NOT_AVAILABLE`.
///
/// # Safety
/// `m` is NULL or a live message; `tstype` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_message_timestamp(m: *const odk_message_t, tstype: *mut i32) -> i64 {
    with_msg!(m, -1, |m| {
        if !tstype.is_null() {
            // SAFETY: per the contract.
            unsafe { *tstype = m.timestamp_type };
        }
        if m.timestamp_type == ODK_TIMESTAMP_NOT_AVAILABLE {
            -1
        } else {
            m.timestamp
        }
    })
}

/// The key: NULL for a null key (then `*len` is 0), else a pointer to `*len` bytes (non-NULL
/// even when empty). `len` may be NULL.
///
/// Ownership: borrowed from `m`, valid until `m` is destroyed (or the delivery callback
/// returns). Thread safety: any thread.
///
/// # Safety
/// `m` is NULL or a live message; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_message_key(
    m: *const odk_message_t,
    len: *mut usize,
) -> *const c_void {
    with_msg!(m, bytes_out(&None, len), |m| bytes_out(&m.key, len))
}

/// The value (payload): NULL for a null value (a tombstone), else `*len` bytes. `len` may be
/// NULL.
///
/// Ownership: borrowed from `m`, like `odk_message_key`. Thread safety: any thread.
///
/// # Safety
/// `m` is NULL or a live message; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_message_value(
    m: *const odk_message_t,
    len: *mut usize,
) -> *const c_void {
    with_msg!(m, bytes_out(&None, len), |m| bytes_out(&m.value, len))
}

/// The number of headers (0 for NULL).
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_header_count(m: *const odk_message_t) -> usize {
    with_msg!(m, 0, |m| m.headers.len())
}

/// Header `idx` (in wire order; names may repeat). `name` receives the name's bytes (not
/// NUL-terminated, `*name_len` long); `value` receives NULL for a null value or `*value_len`
/// bytes. Any output pointer may be NULL. Returns `ODK_ERR__NOENT` when `idx` is out of range.
///
/// Ownership: borrowed from `m`. Thread safety: any thread.
///
/// # Safety
/// `m` is NULL or live; each output pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_message_header_get(
    m: *const odk_message_t,
    idx: usize,
    name: *mut *const c_void,
    name_len: *mut usize,
    value: *mut *const c_void,
    value_len: *mut usize,
) -> odk_err_t {
    with_msg!(m, odk_err_t::ODK_ERR__INVALID_ARG, |m| {
        let Some(h) = m.headers.get(idx) else {
            return odk_err_t::ODK_ERR__NOENT;
        };
        let key = Some(h.key.clone());
        let k = bytes_out(&key, name_len);
        let v = bytes_out(&h.value, value_len);
        if !name.is_null() {
            // SAFETY: per the contract. The pointer stays valid: `key` shares `h.key`'s buffer.
            unsafe { *name = k };
        }
        if !value.is_null() {
            // SAFETY: per the contract.
            unsafe { *value = v };
        }
        odk_err_t::ODK_ERR_NO_ERROR
    })
}

/// The value of the last header named `name` (NUL-terminated): NULL for a null value, else
/// `*value_len` bytes. Returns `ODK_ERR__NOENT` when there is no such header.
///
/// Ownership: borrowed from `m`. Thread safety: any thread.
///
/// # Safety
/// `m` NULL or live; `name` NULL or NUL-terminated; outputs NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_message_header_get_last(
    m: *const odk_message_t,
    name: *const c_char,
    value: *mut *const c_void,
    value_len: *mut usize,
) -> odk_err_t {
    with_msg!(m, odk_err_t::ODK_ERR__INVALID_ARG, |m| {
        // SAFETY: per the contract.
        let Ok(name) = (unsafe { str_arg(name, "name") }) else {
            return odk_err_t::ODK_ERR__INVALID_ARG;
        };
        let Some(h) = m.headers.iter().rev().find(|h| h.key == name.as_bytes()) else {
            return odk_err_t::ODK_ERR__NOENT;
        };
        let v = bytes_out(&h.value, value_len);
        if !value.is_null() {
            // SAFETY: per the contract.
            unsafe { *value = v };
        }
        odk_err_t::ODK_ERR_NO_ERROR
    })
}

/// The message's error: `ODK_ERR_NO_ERROR` for a record or a successful delivery;
/// `ODK_ERR__PARTITION_EOF` for an end-of-partition event; any other code for a consume error
/// or a failed delivery. `ODK_ERR__INVALID_ARG` for NULL.
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_err(m: *const odk_message_t) -> odk_err_t {
    with_msg!(
        m,
        odk_err_t::ODK_ERR__INVALID_ARG,
        |m| odk_err_t::from_code(m.err)
    )
}

/// A message describing the error (`""` when there is none; never NULL).
///
/// Ownership: borrowed from `m`. Thread safety: any thread.
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_errstr(m: *const odk_message_t) -> *const c_char {
    const EMPTY: &CStr = c"";
    with_msg!(m, EMPTY.as_ptr(), |m| m
        .errstr
        .as_deref()
        .map_or(EMPTY.as_ptr(), CStr::as_ptr))
}

/// The `msg_opaque` given to `odk_produce` (delivery reports); NULL for consumed messages.
///
/// # Safety
/// `m` is NULL or a live message.
#[no_mangle]
pub unsafe extern "C" fn odk_message_opaque(m: *const odk_message_t) -> *mut c_void {
    with_msg!(m, std::ptr::null_mut(), |m| m
        .opaque
        .map_or(std::ptr::null_mut(), |o| o.0))
}

/// Frees a message returned by `odk_consumer_poll`. NULL is a no-op. Never call it on the
/// message a delivery callback receives (the library owns that one).
///
/// Thread safety: any thread, once, after every other use of `m` has ended.
///
/// # Safety
/// `m` is NULL or a message from `odk_consumer_poll` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn odk_message_destroy(m: *mut odk_message_t) {
    guard((), || {
        if !m.is_null() {
            // SAFETY: per the contract, m came from Box::into_raw in odk_consumer_poll.
            drop(unsafe { Box::from_raw(m) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use odradek_bindings::codes;

    fn client_error(code: i32) -> ClientError {
        ClientError::new(code, None)
    }

    #[test]
    fn accessors() {
        let m = odk_message_t {
            topic: Some(Arc::from("t")),
            partition: 1,
            offset: 9,
            timestamp: 5,
            timestamp_type: ODK_TIMESTAMP_CREATE_TIME,
            key: Some(Bytes::new()),
            value: None,
            headers: vec![Header::new("h", Some("a")), Header::new("h", None::<Bytes>)],
            ..Default::default()
        };
        let p = &m as *const odk_message_t;
        unsafe {
            assert_eq!(CStr::from_ptr(odk_message_topic(p)).to_str().unwrap(), "t");
            let mut len = 7usize;
            assert!(!odk_message_key(p, &mut len).is_null());
            assert_eq!(len, 0);
            assert!(odk_message_value(p, &mut len).is_null());
            assert_eq!(odk_message_header_count(p), 2);
            let mut v: *const c_void = std::ptr::null();
            assert_eq!(
                odk_message_header_get_last(p, c"h".as_ptr(), &mut v, &mut len),
                odk_err_t::ODK_ERR_NO_ERROR
            );
            assert!(v.is_null());
            assert_eq!(
                odk_message_header_get(
                    p,
                    2,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut v,
                    &mut len
                ),
                odk_err_t::ODK_ERR__NOENT
            );
            assert_eq!(odk_message_err(p), odk_err_t::ODK_ERR_NO_ERROR);
            assert_eq!(odk_message_offset(std::ptr::null()), -1);
            assert_eq!(
                odk_message_err(std::ptr::null()),
                odk_err_t::ODK_ERR__INVALID_ARG
            );
        }
        let e = odk_message_t::error(&client_error(codes::PARTITION_EOF), None, 0, 3);
        assert_eq!(e.err, codes::PARTITION_EOF);
    }
}
