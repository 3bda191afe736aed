//! A global allocator for processes that decode untrusted wire input.
//!
//! Protocol decoders (including the generated ones in the `kafka-protocol` crate) size vectors
//! from element counts read off the wire. A 20-byte frame can announce two billion array
//! elements; the decoder then asks for hundreds of GiB *before* it discovers that the bytes are
//! missing. The system allocator refuses, and Rust aborts the process: one hostile packet would
//! take a broker down.
//!
//! [`UntrustedInputAllocator`] serves every allocation of at least [`HUGE_ALLOCATION`] bytes with
//! an anonymous `MAP_NORESERVE` mapping: the kernel hands out address space without committing
//! memory, so the doomed reservation costs nothing until pages are touched, and a decoder only
//! touches what it actually decodes, which the frame-size limit bounds. Smaller allocations go to
//! the system allocator unchanged. Install it in a binary with
//! `#[global_allocator] static A: UntrustedInputAllocator = UntrustedInputAllocator;`.
//!
//! Limits: with `vm.overcommit_memory=2` the kernel ignores `MAP_NORESERVE` and a huge request
//! still fails; a reservation above the address space (128 TiB on x86-64) fails too.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations of at least this many bytes are served lazily by `mmap` (1 GiB).
pub const HUGE_ALLOCATION: usize = 1 << 30;

/// The system allocator, except that huge allocations reserve address space lazily.
#[derive(Debug, Default, Clone, Copy)]
pub struct UntrustedInputAllocator;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

fn is_huge(layout: Layout) -> bool {
    layout.size() >= HUGE_ALLOCATION && layout.align() <= page_size()
}

unsafe fn map_lazily(size: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        ptr.cast()
    }
}

// SAFETY: every pointer is released by the allocator that produced it: `is_huge` depends only on
// the layout, which Rust passes unchanged to `dealloc`, and `realloc` moves data between the two
// kinds explicitly.
unsafe impl GlobalAlloc for UntrustedInputAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_huge(layout) {
            // SAFETY: see map_lazily.
            unsafe { map_lazily(layout.size()) }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_huge(layout) {
            // Fresh anonymous pages are already zero.
            // SAFETY: see map_lazily.
            unsafe { map_lazily(layout.size()) }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_huge(layout) {
            // SAFETY: ptr came from map_lazily with this size.
            unsafe {
                libc::munmap(ptr.cast(), layout.size());
            }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees new_size with layout.align() forms a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !is_huge(layout) && !is_huge(new_layout) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: new_layout is valid (see above).
        let new_ptr = unsafe { self.alloc(new_layout) };
        if !new_ptr.is_null() {
            // SAFETY: both regions are valid for the smaller size and do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new_ptr, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new_ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_reservation_succeeds_without_committing_memory() {
        let a = UntrustedInputAllocator;
        // 512 GiB: more than any test machine has, so only a lazy reservation can succeed.
        let layout = Layout::from_size_align(512 << 30, 8).unwrap();
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            p.write(7);
            *p.add(1 << 30) = 9;
            assert_eq!(*p, 7);
            let p2 = a.realloc(p, layout, 16);
            assert!(!p2.is_null());
            assert_eq!(*p2, 7);
            a.dealloc(p2, Layout::from_size_align(16, 8).unwrap());
        }
    }

    #[test]
    fn small_allocations_use_the_system_allocator() {
        let a = UntrustedInputAllocator;
        let layout = Layout::from_size_align(64, 8).unwrap();
        unsafe {
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert_eq!(*p.add(63), 0);
            let p = a.realloc(p, layout, 128);
            assert!(!p.is_null());
            a.dealloc(p, Layout::from_size_align(128, 8).unwrap());
        }
    }
}
