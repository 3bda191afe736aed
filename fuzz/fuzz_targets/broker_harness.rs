//! The broker the `broker_dispatch` and `broker_sequences` targets send to: a real `Broker`
//! over a temporary data directory, its request interceptor and a single-threaded runtime,
//! shared by every input of one fuzzing process.

use std::sync::{Arc, OnceLock};

use odradek_broker::broker::Broker;
use odradek_broker::config::BrokerConfig;
use odradek_broker::server::Interceptor;

pub struct Harness {
    pub runtime: tokio::runtime::Runtime,
    pub broker: Arc<Broker>,
    pub interceptor: Interceptor,
}

/// The process's harness, its data directory named by `tag`.
pub fn harness(tag: &str) -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("odradek-fuzz-{tag}-{}", std::process::id()));
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
