//! Replication throttles (Kafka's `ReplicationQuotaManager`, KIP-73), used while partitions
//! are reassigned: a topic lists the replicas to throttle on the leader side
//! (`leader.replication.throttled.replicas`: `partition:broker` entries for the brokers that
//! may lead, or `*`) and on the follower side (`follower.replication.throttled.replicas`), and
//! each broker caps the bytes of its throttled replicas with `leader.replication.throttled.rate`
//! and `follower.replication.throttled.rate` (bytes per second, dynamic), measured over
//! `replication.quota.window.num` windows of `replication.quota.window.size.seconds`. As in
//! Kafka, only replicas out of the ISR are throttled, and a throttled partition is left out of
//! a replica fetch (leader: answered without records; follower: not asked for) while the
//! measured rate is above the limit.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use super::rate::{SampledRate, WindowConfig};
use crate::config::BrokerConfig;

/// One side's throttle: its limit and its measured rate.
#[derive(Debug)]
pub struct ReplicationQuota {
    /// Bytes per second (`i64::MAX`: no limit, Kafka's default).
    limit: AtomicI64,
    window: WindowConfig,
    rate: Mutex<SampledRate>,
}

impl ReplicationQuota {
    fn new(limit: i64, window: WindowConfig) -> ReplicationQuota {
        ReplicationQuota {
            limit: AtomicI64::new(limit),
            window,
            rate: Mutex::new(SampledRate::default()),
        }
    }

    /// Counts `bytes` of throttled replicas at `now_ms`.
    pub fn record(&self, bytes: usize, now_ms: i64) {
        if self.limit.load(Ordering::Relaxed) == i64::MAX {
            return;
        }
        let mut rate = self.rate.lock().unwrap_or_else(|e| e.into_inner());
        rate.record(self.window, bytes as f64, now_ms);
    }

    /// Whether throttled replicas are over the limit at `now_ms`.
    pub fn exceeded(&self, now_ms: i64) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == i64::MAX {
            return false;
        }
        let mut rate = self.rate.lock().unwrap_or_else(|e| e.into_inner());
        rate.measure(self.window, now_ms) > limit as f64
    }

    /// The limit in bytes per second (`i64::MAX`: none).
    pub fn limit(&self) -> i64 {
        self.limit.load(Ordering::Relaxed)
    }
}

/// The leader-side and follower-side throttles of a broker.
#[derive(Debug)]
pub struct ReplicationQuotas {
    /// Bytes served to throttled followers.
    pub leader: ReplicationQuota,
    /// Bytes fetched for throttled replicas of this broker.
    pub follower: ReplicationQuota,
}

impl ReplicationQuotas {
    /// The throttles `config` sets.
    pub fn new(config: &BrokerConfig) -> ReplicationQuotas {
        let window = WindowConfig::new(
            i64::from(config.int("replication.quota.window.num")),
            i64::from(config.int("replication.quota.window.size.seconds")),
        );
        ReplicationQuotas {
            leader: ReplicationQuota::new(config.long("leader.replication.throttled.rate"), window),
            follower: ReplicationQuota::new(
                config.long("follower.replication.throttled.rate"),
                window,
            ),
        }
    }

    /// Applies the rates of a new effective configuration (dynamic broker configs).
    pub fn apply(&self, config: &BrokerConfig) {
        self.leader.limit.store(
            config.long("leader.replication.throttled.rate"),
            Ordering::Relaxed,
        );
        self.follower.limit.store(
            config.long("follower.replication.throttled.rate"),
            Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_is_exceeded_only_past_its_limit() {
        let config = BrokerConfig::from_entries([
            ("leader.replication.throttled.rate", "1000"),
            ("replication.quota.window.num", "2"),
            ("replication.quota.window.size.seconds", "1"),
        ])
        .unwrap();
        let q = ReplicationQuotas::new(&config);
        assert!(!q.leader.exceeded(0));
        q.leader.record(500, 0);
        assert!(!q.leader.exceeded(10), "500 B over at least one window");
        q.leader.record(5000, 20);
        assert!(q.leader.exceeded(30));
        assert!(
            !q.follower.exceeded(30),
            "no follower limit: never exceeded"
        );
        q.follower.record(1 << 30, 30);
        assert!(!q.follower.exceeded(31));
        // A dynamic change lifts the leader's limit.
        q.apply(
            &BrokerConfig::from_entries([("leader.replication.throttled.rate", "100000000")])
                .unwrap(),
        );
        assert!(!q.leader.exceeded(40));
    }
}
