//! Sends a sequence of request frames on one connection through the broker's real dispatcher,
//! so state that lives across requests (SASL handshakes, fetch sessions, groups, transactions,
//! producer state) meets arbitrary orders and contents. The input is a list of frames, each
//! prefixed by its length as a big-endian u16; a broker with a temporary data directory and
//! its state is shared by every input, so what one input leaves behind meets the next.
#![no_main]

#[path = "broker_harness.rs"]
mod broker_harness;

use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use odradek::alloc::UntrustedInputAllocator;
use odradek_broker::handlers::ConnectionContext;
use odradek_broker::server::dispatch;

#[global_allocator]
static ALLOC: UntrustedInputAllocator = UntrustedInputAllocator;

/// At most this many requests per input (a connection's pipeline in miniature).
const MAX_REQUESTS: usize = 16;

/// Splits `data` into length-prefixed frames (a truncated last frame is sent as it is).
fn frames(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while data.len() >= 2 && out.len() < MAX_REQUESTS {
        let len = usize::from(u16::from_be_bytes([data[0], data[1]]));
        let end = (2 + len).min(data.len());
        out.push(&data[2..end]);
        data = &data[end..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let h = broker_harness::harness("seq");
    // One connection per input: its state starts fresh, the broker's carries over.
    let connection = ConnectionContext::plaintext(([127, 0, 0, 1], 40001).into(), "PLAINTEXT");
    h.runtime.block_on(async {
        for frame in frames(data) {
            // Long-polling fetches and group joins may legitimately wait; bound each request.
            let _ = tokio::time::timeout(
                Duration::from_millis(20),
                dispatch(
                    &h.broker,
                    &connection,
                    &h.interceptor,
                    Bytes::copy_from_slice(frame),
                ),
            )
            .await;
        }
    });
});
