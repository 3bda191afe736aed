//! Sends arbitrary request frames through the broker's real dispatcher (decoding, routing,
//! handlers, storage) against a broker with a temporary data directory and one populated topic.
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

/// One connection for every input (the sequences target opens one per input).
fn connection() -> &'static ConnectionContext {
    static CONNECTION: std::sync::OnceLock<ConnectionContext> = std::sync::OnceLock::new();
    CONNECTION
        .get_or_init(|| ConnectionContext::plaintext(([127, 0, 0, 1], 40000).into(), "PLAINTEXT"))
}

fuzz_target!(|data: &[u8]| {
    let h = broker_harness::harness("dispatch");
    h.runtime.block_on(async {
        // Long-polling fetches may legitimately wait; bound each request.
        let _ = tokio::time::timeout(
            Duration::from_millis(20),
            dispatch(
                &h.broker,
                connection(),
                &h.interceptor,
                Bytes::copy_from_slice(data),
            ),
        )
        .await;
    });
});
