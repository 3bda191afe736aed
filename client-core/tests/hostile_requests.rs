//! Requests crafted to make a decoder allocate without bound must fail with a typed error.
//!
//! The generated decoders size vectors from array lengths read off the wire; this test installs
//! the allocator a broker uses ([`UntrustedInputAllocator`]) and checks that lying lengths in
//! tiny frames end in `Error::Malformed`, not in an aborted process.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

use bytes::{BufMut, Bytes, BytesMut};
use odradek::alloc::UntrustedInputAllocator;
use odradek::protocol::decode_request;
use odradek::Error;

#[global_allocator]
static ALLOC: UntrustedInputAllocator = UntrustedInputAllocator;

fn header(buf: &mut BytesMut, api_key: i16, version: i16, flexible: bool) {
    buf.put_i16(api_key);
    buf.put_i16(version);
    buf.put_i32(1);
    buf.put_i16(-1); // null client id
    if flexible {
        buf.put_u8(0); // no tagged fields
    }
}

#[test]
fn huge_array_length_in_a_tiny_frame() {
    for (api_key, version) in [(3i16, 0i16), (3, 8), (0, 3), (1, 4), (2, 1), (19, 4)] {
        let mut buf = BytesMut::new();
        header(&mut buf, api_key, version, false);
        // Optional leading fields differ per API; lie in every plausible position.
        buf.put_i32(i32::MAX);
        buf.put_i32(i32::MAX);
        buf.put_i32(i32::MAX);
        let err = decode_request(buf.freeze()).unwrap_err();
        assert!(
            matches!(err, Error::Malformed { .. }),
            "{api_key} v{version}: {err}"
        );
    }
}

#[test]
fn huge_compact_array_length_in_a_tiny_frame() {
    for (api_key, version) in [(3i16, 12i16), (0, 11), (1, 17), (11, 9), (32, 4)] {
        let mut buf = BytesMut::new();
        header(&mut buf, api_key, version, true);
        for _ in 0..4 {
            buf.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        }
        let err = decode_request(buf.freeze()).unwrap_err();
        assert!(
            matches!(err, Error::Malformed { .. }),
            "{api_key} v{version}: {err}"
        );
    }
}

#[test]
fn random_bodies_for_every_api_never_panic() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for api_key in 0i16..=92 {
        for version in 0i16..=18 {
            for _ in 0..20 {
                let mut buf = BytesMut::new();
                header(&mut buf, api_key, version, next() % 2 == 0);
                let len = (next() % 64) as usize;
                for _ in 0..len {
                    buf.put_u8(next() as u8);
                }
                let _ = decode_request(Bytes::from(buf));
            }
        }
    }
}
