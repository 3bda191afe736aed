//! The boundary helpers every exported function uses: panics never cross into C, C strings and
//! buffers are read and written only after their pointers are checked.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use odradek_bindings::{codes, ClientError};

use crate::error::odk_err_t;

/// Runs `f`, turning a panic into `on_panic`. Every `extern "C"` function's body goes through
/// here (or [`guard_err`]): unwinding into C is undefined behaviour.
pub fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// Like [`guard`] for functions that return an error code and fill an error buffer: an `Err`
/// is written to `errstr` and its code returned; a panic becomes `_FAIL`.
pub fn guard_err(
    errstr: *mut c_char,
    errstr_size: usize,
    f: impl FnOnce() -> Result<(), ClientError>,
) -> odk_err_t {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(ClientError::new(
            codes::FAIL,
            Some("internal error (a panic inside libodradek was caught)".into()),
        ))
    });
    match outcome {
        Ok(()) => {
            // SAFETY: the caller documents errstr as NULL or errstr_size writable bytes.
            unsafe { write_str(errstr, errstr_size, "") };
            odk_err_t::ODK_ERR_NO_ERROR
        }
        Err(e) => {
            // SAFETY: as above.
            unsafe { write_str(errstr, errstr_size, e.message()) };
            odk_err_t::from_code(e.code())
        }
    }
}

/// Writes `s` as a NUL-terminated string into `buf` (truncated to `size - 1` bytes, never
/// splitting a UTF-8 sequence). Does nothing when `buf` is NULL or `size` is 0.
///
/// # Safety
/// `buf` is NULL or points to `size` writable bytes.
pub unsafe fn write_str(buf: *mut c_char, size: usize, s: &str) {
    if buf.is_null() || size == 0 {
        return;
    }
    let mut n = s.len().min(size - 1);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: n < size bytes are written, then the terminator at index n < size.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// Reads a required C string argument as UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
pub unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, ClientError> {
    if p.is_null() {
        return Err(ClientError::invalid_arg(format!("{what} must not be NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| ClientError::invalid_arg(format!("{what} is not valid UTF-8")))
}

/// Reads `len` bytes at `p`; NULL means "no value" (Kafka's null), whatever `len` says.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes.
pub unsafe fn bytes_arg<'a>(p: *const std::ffi::c_void, len: usize) -> Option<&'a [u8]> {
    if p.is_null() {
        None
    } else if len == 0 {
        Some(&[])
    } else {
        // SAFETY: per the caller's contract.
        Some(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
    }
}

/// Reads an array argument of `n` items; NULL is accepted only when `n` is 0.
///
/// # Safety
/// `p` is NULL or points to `n` initialised items.
pub unsafe fn slice_arg<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], ClientError> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(ClientError::invalid_arg(format!(
            "{what} is NULL but its count is {n}"
        )));
    }
    // SAFETY: per the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A timeout in milliseconds as C callers pass it: negative means wait forever.
pub fn timeout(ms: i32) -> Option<std::time::Duration> {
    u64::try_from(ms).ok().map(std::time::Duration::from_millis)
}

/// `_INVALID_ARG` for a NULL handle.
pub fn null_handle(what: &str) -> ClientError {
    ClientError::invalid_arg(format!("{what} must not be NULL"))
}

/// A raw pointer the application owns, carried across threads inside the library. The library
/// never dereferences it; it only hands it back to the application's callbacks.
#[derive(Debug, Clone, Copy)]
pub struct Opaque(pub *mut std::ffi::c_void);

// SAFETY: the pointer is never dereferenced by the library, only returned to the application on
// the thread that calls odk_poll / odk_consumer_poll.
unsafe impl Send for Opaque {}
// SAFETY: as above.
unsafe impl Sync for Opaque {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_str_truncates_on_char_boundaries() {
        let mut buf = [0x7f as c_char; 6];
        unsafe { write_str(buf.as_mut_ptr(), buf.len(), "héllo wörld") };
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert_eq!(s, "héll");
        unsafe { write_str(buf.as_mut_ptr(), 1, "abc") };
        assert_eq!(buf[0], 0);
        unsafe { write_str(std::ptr::null_mut(), 10, "abc") };
    }

    #[test]
    fn guard_turns_panics_into_fail() {
        let mut buf = [0 as c_char; 64];
        let code = guard_err(buf.as_mut_ptr(), buf.len(), || panic!("boom"));
        assert_eq!(code as i32, codes::FAIL);
        assert_eq!(guard(7, || panic!("boom")), 7);
    }

    #[test]
    fn timeouts() {
        assert_eq!(timeout(-1), None);
        assert_eq!(timeout(5), Some(std::time::Duration::from_millis(5)));
    }
}
