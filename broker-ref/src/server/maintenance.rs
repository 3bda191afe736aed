//! Background upkeep: retention every `log.retention.check.interval.ms`, a flush timer for
//! `flush.ms` (woken at the earliest due log, at least every `log.flush.scheduler.interval.ms`),
//! the log cleaner (compaction) every `log.cleaner.backoff.ms` when `log.cleaner.enable` is true,
//! group timers, transaction timeouts every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms`, and idle producers' state
//! every `producer.id.expiration.check.interval.ms`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::broker::Broker;
use crate::clock::now_ms;
use crate::log::cleaner::{CleanOutcome, CleanerOptions};
use crate::partition::Partition;
use crate::Result;

const INITIAL_DELAY_MS: u64 = 30_000;

/// Runs until shutdown.
pub async fn run(broker: Arc<Broker>, shutdown: watch::Receiver<bool>) {
    tokio::join!(
        retention_loop(broker.clone(), shutdown.clone()),
        group_timers(broker.clone(), shutdown.clone()),
        txn_timers(broker.clone(), shutdown.clone()),
        producer_expiry(broker.clone(), shutdown.clone()),
        flush_loop(broker.clone(), shutdown.clone()),
        quota_report(broker.clone(), shutdown.clone()),
        cleaner_loop(broker, shutdown)
    );
}

/// How often the throttling of client quotas is logged.
const QUOTA_REPORT_PERIOD: Duration = Duration::from_secs(30);

/// Every 30 s, one `info` line per quota sensor that throttled its client since the last
/// report (the broker's per-entity throttling statistics; `Quotas::metrics` has the numbers).
async fn quota_report(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + QUOTA_REPORT_PERIOD,
        QUOTA_REPORT_PERIOD,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reported: std::collections::HashMap<(crate::quota::QuotaKind, String, String), u64> =
        std::collections::HashMap::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = ticker.tick() => {}
        }
        let metrics = broker.quotas.metrics(now_ms());
        let mut seen = std::collections::HashMap::new();
        for m in metrics {
            let key = (m.kind, m.user.clone(), m.client_id.clone());
            let before = reported.get(&key).copied().unwrap_or(0);
            if m.throttled > before {
                tracing::info!(
                    quota = m.kind.name(),
                    user = %m.user,
                    client_id = %m.client_id,
                    limit = m.limit,
                    rate = m.rate,
                    throttled = m.throttled - before,
                    throttle_ms_total = m.throttle_ms_total,
                    throttle_ms_max = m.throttle_ms_max,
                    "client throttled by its quota"
                );
            }
            seen.insert(key, m.throttled);
        }
        reported = seen;
    }
}

/// Every `producer.id.expiration.check.interval.ms`, forgets the idempotent producers of every
/// partition that have written nothing for `producer.id.expiration.ms` (Kafka's
/// `PeriodicProducerExpirationCheck`), so short-lived producers do not pile up in memory and in
/// every producer snapshot.
async fn producer_expiry(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let interval = broker
        .config
        .long("producer.id.expiration.check.interval.ms")
        .clamp(1, i64::from(u32::MAX)) as u64;
    let expiration = broker.config.long("producer.id.expiration.ms");
    let period = Duration::from_millis(interval);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = ticker.tick() => {}
        }
        let now = now_ms();
        let mut expired = 0;
        for topic in broker.topics.list() {
            for partition in topic.partitions() {
                match partition.expire_producers(now, expiration) {
                    Ok(n) => expired += n,
                    Err(e) => {
                        tracing::warn!(topic = %topic.name, partition = partition.index(), error = %e, "producer expiration failed")
                    }
                }
            }
        }
        if expired > 0 {
            tracing::debug!(
                producers = expired,
                "expired idle producers (producer.id.expiration.ms)"
            );
        }
    }
}

async fn retention_loop(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
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
            }
        }
    }
}

/// The longest the flush timer sleeps: a topic whose `flush.ms` was just lowered, or a log that
/// just got its first unflushed record, is seen within this.
const FLUSH_RESCAN_MS: i64 = 1000;
/// The shortest sleep between flush passes (a `flush.ms` below it is honoured to within it).
const FLUSH_MIN_WAIT_MS: i64 = 10;

/// Flushes every log whose `flush.ms` passed since its last flush. Kafka checks every
/// `log.flush.scheduler.interval.ms` (by default never, so `flush.ms` only acts on appends);
/// this timer checks at least that often and also wakes when the earliest log falls due, so a
/// topic's `flush.ms` holds without any append or scheduler setting. Passes run on the blocking
/// pool: fsync must not stall the async workers.
async fn flush_loop(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let scheduler = broker
        .config
        .long("log.flush.scheduler.interval.ms")
        .max(FLUSH_MIN_WAIT_MS);
    loop {
        let b = broker.clone();
        let next_due = tokio::task::spawn_blocking(move || flush_due_logs(&b, now_ms()))
            .await
            .ok()
            .flatten();
        let wait = next_due
            .map_or(FLUSH_RESCAN_MS, |due| due.saturating_sub(now_ms()))
            .clamp(FLUSH_MIN_WAIT_MS, FLUSH_RESCAN_MS)
            .min(scheduler);
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(Duration::from_millis(wait as u64)) => {}
        }
    }
}

/// One flush pass; returns when the next log falls due (`None`: none has a deadline).
fn flush_due_logs(broker: &Broker, now: i64) -> Option<i64> {
    let mut next_due: Option<i64> = None;
    for topic in broker.topics.list() {
        for partition in topic.partitions() {
            let due = partition.log().and_then(|mut log| {
                log.flush_if_due(now)?;
                Ok(log.flush_due_at())
            });
            match due {
                Ok(Some(at)) => next_due = Some(next_due.map_or(at, |n| n.min(at))),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(topic = %topic.name, partition = partition.index(), error = %e, "flush failed")
                }
            }
        }
    }
    next_due
}

/// Every `log.cleaner.backoff.ms` (measured from the end of the previous pass), cleans each
/// compacted partition that needs it, on a blocking-pool thread so the async workers keep
/// serving. One pass at a time; a pass stops between partitions when shutdown begins.
async fn cleaner_loop(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    if !broker.config.bool("log.cleaner.enable") {
        return;
    }
    loop {
        // Read before each pass: both settings can change at runtime (dynamic broker configs).
        let config = broker.dynamic.effective();
        let backoff = config
            .long("log.cleaner.backoff.ms")
            .clamp(1, i64::from(u32::MAX)) as u64;
        let options = CleanerOptions {
            dedupe_buffer_bytes: config.long("log.cleaner.dedupe.buffer.size").max(1) as u64,
        };
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(Duration::from_millis(backoff)) => {}
        }
        let (broker, options, stop) = (broker.clone(), options.clone(), shutdown.clone());
        let pass = tokio::task::spawn_blocking(move || clean_all(&broker, &options, &stop));
        if let Err(e) = pass.await {
            tracing::error!(error = %e, "log cleaner pass panicked");
        }
    }
}

/// One pass over every compacted partition.
fn clean_all(broker: &Broker, options: &CleanerOptions, stop: &watch::Receiver<bool>) {
    for topic in broker.topics.list() {
        for partition in topic.partitions() {
            if *stop.borrow() {
                return;
            }
            if let Err(e) = clean_partition(&partition, options) {
                tracing::warn!(topic = %topic.name, partition = partition.index(), error = %e, "log cleaning failed");
            }
        }
    }
}

/// Cleans one partition if it needs it. The partition lock is taken twice, briefly: to plan
/// (pick the range, open the segments) and to commit (swap the cleaned segments in); the
/// reading and writing in between runs unlocked, so produce and fetch are not blocked by it.
fn clean_partition(
    partition: &Partition,
    options: &CleanerOptions,
) -> Result<Option<CleanOutcome>> {
    let plan = {
        let log = partition.log()?;
        if !log.config().is_compacted() {
            return Ok(None);
        }
        log.plan_cleaning(now_ms(), options)?
    };
    let Some(plan) = plan else {
        return Ok(None);
    };
    let built = plan.build()?;
    let outcome = partition.log()?.commit_cleaning(built)?;
    Ok(Some(outcome))
}

/// Group coordinator timers: member sessions and join deadlines every 100 ms, offset retention
/// of empty groups every `offsets.retention.check.interval.ms`.
async fn group_timers(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let retention_check = Duration::from_millis(
        broker
            .config
            .long("offsets.retention.check.interval.ms")
            .clamp(1, i64::from(u32::MAX)) as u64,
    );
    let mut next_expiry = tokio::time::Instant::now() + retention_check;
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = ticker.tick() => broker.groups.tick(),
        }
        if tokio::time::Instant::now() >= next_expiry {
            broker.groups.expire_offsets();
            next_expiry = tokio::time::Instant::now() + retention_check;
        }
    }
}

/// Transaction coordinator timers: aborts transactions past their `transaction.timeout.ms` and
/// expires idle transactional ids.
async fn txn_timers(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let interval = broker
        .config
        .long("transaction.abort.timed.out.transaction.cleanup.interval.ms")
        .clamp(10, i64::from(u32::MAX)) as u64;
    let mut ticker = tokio::time::interval(Duration::from_millis(interval));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = ticker.tick() => {
                let b = broker.clone();
                // Markers are file writes: keep them off the async workers.
                if let Err(e) = tokio::task::spawn_blocking(move || b.txns.tick()).await {
                    tracing::error!(error = %e, "transaction timer panicked");
                }
            }
        }
    }
}
