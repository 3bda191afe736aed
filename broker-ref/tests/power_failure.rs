//! The durability contract under a simulated power failure: the broker is torn down without a
//! clean shutdown and every segment write that was not fsynced is lost
//! (`odradek_broker::log::faults::lose_unsynced_writes_under`), unlike `kill -9`, which leaves
//! the page cache intact and so cannot see a missing fsync.
//!
//! - `flush.messages=1`: nothing acknowledged is lost.
//! - the default flush policy: the loss is real, and what survives is an exact prefix of what
//!   was acknowledged (no hole, nothing corrupt).
//! - `flush.ms`: records become durable on the broker's flush timer, without another append.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{create_topic, produce_request, temp_dir, Client};
use odradek::records::{BatchBuilder, Compression};
use odradek_broker::config::BrokerConfig;
use odradek_broker::log::faults;
use odradek_broker::server::{self, RunningBroker};

const TOPIC: &str = "power";

/// `(offset, value)` pairs in offset order.
type Records = Vec<(i64, String)>;

/// A broker on its own runtime, so that dropping the runtime tears it down mid-flight.
struct Node {
    runtime: tokio::runtime::Runtime,
    running: RunningBroker,
}

impl Node {
    fn start(data: &Path) -> Node {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let config = BrokerConfig::from_entries([
            ("listeners", "PLAINTEXT://127.0.0.1:0".to_string()),
            ("log.dirs", data.display().to_string()),
        ])
        .unwrap();
        let running = runtime.block_on(server::start(config)).unwrap();
        Node { runtime, running }
    }

    fn client(&self) -> Client {
        Client::connect(&self.running.local_addr.to_string())
    }

    /// No clean shutdown: tasks are dropped, files closed, nothing flushed; then the power
    /// fails. Returns the bytes lost.
    fn power_failure(self, data: &Path) -> u64 {
        let Node { runtime, running } = self;
        drop(running);
        runtime.shutdown_timeout(Duration::from_secs(5));
        faults::lose_unsynced_writes_under(data).unwrap()
    }

    fn stop(self) {
        self.runtime.block_on(self.running.shutdown()).unwrap();
    }
}

/// Produces `batches` batches of 4 records with acks=all; returns every acknowledged
/// `(offset, value)` in offset order.
fn produce(client: &mut Client, batches: usize) -> Records {
    let mut acked = Vec::new();
    for b in 0..batches {
        let values: Vec<String> = (0..4)
            .map(|i| format!("b{b}-r{i}-{}", "p".repeat(200)))
            .collect();
        let mut batch = BatchBuilder::new(Compression::None);
        for v in &values {
            batch.append(0, None, Some(v.as_bytes()), &[]).unwrap();
        }
        let req = produce_request(TOPIC, -1, batch.build().unwrap());
        let resp = client.call(&req, 9);
        let p = &resp.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0);
        for (i, v) in values.into_iter().enumerate() {
            acked.push((p.base_offset + i as i64, v));
        }
    }
    acked
}

/// Every stored `(offset, value)` from offset 0 (every batch's CRC checked).
fn read_all(client: &mut Client) -> Records {
    common::read_partition(client, TOPIC)
        .into_iter()
        .map(|(offset, value)| (offset, String::from_utf8_lossy(&value).into_owned()))
        .collect()
}

/// Runs one scenario: produce, optionally wait, power failure, restart. Returns the
/// acknowledged records, the stored ones after the restart and the bytes the failure lost.
fn scenario(
    tag: &str,
    configs: &[(&str, &str)],
    settle: impl FnOnce(&Path),
) -> (Records, Records, u64) {
    let data = temp_dir(tag).join("data");
    std::fs::create_dir_all(&data).unwrap();
    faults::track_durability_under(&data).unwrap();
    let node = Node::start(&data);
    let mut client = node.client();
    create_topic(&mut client, TOPIC, 1, configs);
    let acked = produce(&mut client, 60);
    settle(&data);
    drop(client);
    let lost = node.power_failure(&data);
    let node = Node::start(&data);
    let stored = read_all(&mut node.client());
    node.stop();
    let _ = std::fs::remove_dir_all(data.parent().unwrap());
    (acked, stored, lost)
}

#[test]
fn with_flush_messages_1_nothing_acknowledged_is_lost() {
    let (acked, stored, _) = scenario("power-flush1", &[("flush.messages", "1")], |_| {});
    assert_eq!(stored, acked);
}

#[test]
fn with_the_default_policy_the_loss_stays_an_exact_prefix_cut() {
    // Small segments: every roll fsyncs the segment it seals, so some data is durable.
    let (acked, stored, lost) = scenario("power-default", &[("segment.bytes", "8192")], |_| {});
    assert!(lost > 0, "the simulated power failure lost nothing");
    assert!(
        !stored.is_empty() && stored.len() < acked.len(),
        "sealed segments survive, the unflushed tail does not: {} of {}",
        stored.len(),
        acked.len()
    );
    assert_eq!(stored[..], acked[..stored.len()], "an exact prefix");
}

#[test]
fn flush_ms_makes_records_durable_without_another_append() {
    let (acked, stored, _) = scenario("power-flushms", &[("flush.ms", "100")], |data| {
        // The broker's flush timer moves the recovery point to the end; no append follows.
        let checkpoint = data
            .join(format!("{TOPIC}-0"))
            .join("recovery-point-checkpoint");
        let deadline = Instant::now() + Duration::from_secs(20);
        let end = 60 * 4;
        while recovery_point(&checkpoint) < Some(end) {
            assert!(Instant::now() < deadline, "flush.ms=100 never flushed");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_eq!(stored, acked);
}

/// The offset in a recovery-point checkpoint (`version`, `count`, `offset` lines).
fn recovery_point(path: &Path) -> Option<i64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().nth(2)?.trim().parse().ok()
}
