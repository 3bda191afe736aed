//! Buffers the application hands over with `ODK_MSG_F_FREE`: shared as `Bytes` without a copy
//! and released with the C library's `free()` when the last reference goes.

use std::ffi::c_void;

use bytes::Bytes;

/// A `malloc`ed buffer the library owns.
struct Malloced {
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: the buffer is exclusively owned (the application gave it up) and only read.
unsafe impl Send for Malloced {}
// SAFETY: as above; reads from several threads are fine.
unsafe impl Sync for Malloced {}

impl AsRef<[u8]> for Malloced {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the application promised `len` readable bytes at `ptr`, owned by us now.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Malloced {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from the application's malloc and is freed exactly once, here.
        unsafe { libc::free(self.ptr) };
    }
}

/// Takes ownership of `len` bytes at `ptr` (from `malloc`).
pub fn take(ptr: *mut c_void, len: usize) -> Bytes {
    Bytes::from_owner(Malloced { ptr, len })
}
