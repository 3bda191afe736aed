//! Decodes arbitrary bytes as a request frame through the same entry point the broker uses.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use odradek::alloc::UntrustedInputAllocator;
use odradek::protocol::decode_request;

#[global_allocator]
static ALLOC: UntrustedInputAllocator = UntrustedInputAllocator;

fuzz_target!(|data: &[u8]| {
    let _ = decode_request(Bytes::copy_from_slice(data));
});
