//! Sends arbitrary request frames through the broker's real dispatcher (decoding, routing,
//! handlers, storage) against a broker with a temporary data directory and one populated topic.
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

struct Harness {
    runtime: tokio::runtime::Runtime,
    broker: Arc<Broker>,
    connection: ConnectionContext,
    interceptor: Interceptor,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("odradek-fuzz-{}", std::process::id()));
        let config = BrokerConfig::from_entries([
            ("log.dirs", dir.display().to_string()),
            ("num.partitions", "2".to_string()),
        ])
        .expect("config");
        let broker = Broker::open(config, "127.0.0.1".into(), 9092).expect("broker");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let connection = ConnectionContext::plaintext(([127, 0, 0, 1], 40000).into(), "PLAINTEXT");
        Harness {
            runtime,
            broker,
            connection,
            interceptor: Interceptor::new(),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    h.runtime.block_on(async {
        // Long-polling fetches may legitimately wait; bound each request.
        let _ = tokio::time::timeout(
            Duration::from_millis(20),
            dispatch(
                &h.broker,
                &h.connection,
                &h.interceptor,
                Bytes::copy_from_slice(data),
            ),
        )
        .await;
    });
});
