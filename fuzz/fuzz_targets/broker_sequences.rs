//! Sends a sequence of request frames on one connection through the broker's real dispatcher,
//! so state that lives across requests (SASL handshakes, fetch sessions, groups, transactions,
//! producer state) meets arbitrary orders and contents. The input is a list of frames, each
//! prefixed by its length as a big-endian u16; a broker with a temporary data directory and
//! its state is shared by every input, so what one input leaves behind meets the next.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use odradek::alloc::UntrustedInputAllocator;
use odradek_broker::broker::Broker;
use odradek_broker::config::BrokerConfig;
use odradek_broker::handlers::ConnectionContext;
use odradek_broker::server::{dispatch, Interceptor};

#[global_allocator]
static ALLOC: UntrustedInputAllocator = UntrustedInputAllocator;

/// At most this many requests per input (a connection's pipeline in miniature).
const MAX_REQUESTS: usize = 16;

struct Harness {
    runtime: tokio::runtime::Runtime,
    broker: Arc<Broker>,
    interceptor: Interceptor,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("odradek-fuzz-seq-{}", std::process::id()));
        let config = BrokerConfig::from_entries([
            ("log.dirs", dir.display().to_string()),
            ("num.partitions", "2".to_string()),
            ("group.initial.rebalance.delay.ms", "0".to_string()),
        ])
        .expect("config");
        let broker = Broker::open(config, "127.0.0.1".into(), 9092).expect("broker");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        Harness {
            runtime,
            broker,
            interceptor: Interceptor::new(),
        }
    })
}

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
    let h = harness();
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
