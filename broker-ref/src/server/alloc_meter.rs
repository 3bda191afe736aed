//! Counting the bytes one thread allocates, so request decoding can be bounded by the memory it
//! really takes ([`super::bounded_decode`]).
//!
//! The broker binary installs [`MeteredAllocator`] around its allocator; every allocation adds
//! its size to a per-thread counter (one thread-local add, no lock). Decoding a request is
//! synchronous on one thread, so the counter's growth while it runs is what the decode
//! allocated. Where no metered allocator is installed (the in-process test cluster embedded in
//! the language packages), [`thread_allocated`] returns `None` and decoding falls back to
//! counting reads.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Wraps a global allocator, counting allocated bytes per thread.
#[derive(Debug)]
pub struct MeteredAllocator<A>(pub A);

fn add(bytes: usize) {
    // `try_with`: the thread's slot may already be gone while it exits.
    let _ = ALLOCATED.try_with(|c| c.set(c.get().wrapping_add(bytes)));
}

// SAFETY: every call is forwarded unchanged to the wrapped allocator; the counter is a
// thread-local `Cell<usize>` with a const initializer and no destructor, so it never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for MeteredAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size());
        INSTALLED.store(true, Ordering::Relaxed);
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size());
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size.saturating_sub(layout.size()));
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// Bytes this thread allocated so far (a running total that wraps; compare differences), or
/// `None` when no [`MeteredAllocator`] is installed.
pub fn thread_allocated() -> Option<usize> {
    if !INSTALLED.load(Ordering::Relaxed) {
        return None;
    }
    ALLOCATED.try_with(Cell::get).ok()
}
