//! What the fidelity tests (`fidelity_*.rs`) share: Apache Kafka's address from
//! `ODRADEK_FIDELITY_KAFKA`, a fresh odradek-broker beside it configured as that Kafka was
//! (`ODRADEK_FIDELITY_BROKER_PROPS`: the `key=value` lines given to Kafka's server.properties
//! beyond kafka.sh's own, e.g. scripts/test.sh's `ODRADEK_KAFKA_EXTRA_PROPS`), and names unique
//! to a run (Kafka keeps its topics and groups between runs).

use super::{temp_dir, BrokerProcess};

/// The host:port of the running Apache Kafka 4.x the answers are compared with.
pub fn kafka_addr() -> String {
    std::env::var("ODRADEK_FIDELITY_KAFKA").unwrap_or_else(|_| {
        panic!(
            "ODRADEK_FIDELITY_KAFKA is not set: start Apache Kafka 4.4 with \
             `tests/compat/kafka.sh start DIR` and set ODRADEK_FIDELITY_KAFKA to the host:port it \
             prints"
        )
    })
}

/// A fresh odradek-broker (kept running) and Kafka's address.
pub struct Brokers {
    pub ours: BrokerProcess,
    pub kafka: String,
}

impl Brokers {
    /// Starts our broker (data under a temporary directory tagged `tag`) with the settings
    /// Kafka was given (`ODRADEK_FIDELITY_BROKER_PROPS`), so defaults compare like with like.
    pub fn start(tag: &str) -> Brokers {
        let kafka = kafka_addr();
        Brokers {
            ours: start_like_kafka(tag),
            kafka,
        }
    }

    /// `(label, address)` of both brokers, ours first.
    pub fn both(&self) -> [(&'static str, &str); 2] {
        [("odradek", &self.ours.addr), ("kafka", &self.kafka)]
    }
}

/// A fresh odradek-broker with the settings Kafka was given (`ODRADEK_FIDELITY_BROKER_PROPS`).
pub fn start_like_kafka(tag: &str) -> BrokerProcess {
    let props = std::env::var("ODRADEK_FIDELITY_BROKER_PROPS").unwrap_or_default();
    let overrides: Vec<(&str, &str)> = props
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .collect();
    BrokerProcess::start(&temp_dir(tag), &overrides)
}

/// A name unique to this run.
pub fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("fid-{tag}-{}-{nanos}", std::process::id())
}
