//! Background upkeep: retention every `log.retention.check.interval.ms`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::broker::{now_ms, Broker};

const INITIAL_DELAY_MS: u64 = 30_000;

/// Runs until shutdown.
pub async fn run(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let interval = broker
        .config
        .long("log.retention.check.interval.ms")
        .clamp(10, i64::from(u32::MAX)) as u64;
    // Like Kafka (log.initial.task.delay.ms), the first check waits: a broker that just started
    // should serve what it recovered before deleting anything.
    let first = Duration::from_millis(interval.min(INITIAL_DELAY_MS));
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + first,
        Duration::from_millis(interval),
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = ticker.tick() => {}
        }
        let now = now_ms();
        for topic in broker.topics.list() {
            for partition in topic.partitions() {
                if let Err(e) = partition.enforce_retention(now) {
                    tracing::warn!(topic = %topic.name, partition = partition.index(), error = %e, "retention failed");
                }
                if let Err(e) = partition.log().and_then(|mut log| log.flush_if_due(now)) {
                    tracing::warn!(topic = %topic.name, partition = partition.index(), error = %e, "flush failed");
                }
            }
        }
    }
}
