//! Follower fetching for consumers (KIP-392). With `replica.selector.class` set to Kafka's
//! `RackAwareReplicaSelector`, a partition leader answers a consumer's fetch that carries a
//! `rack_id` (Fetch v11+) with `preferred_read_replica` = an in-sync replica in the consumer's
//! rack that holds the fetch offset (the leader itself when it is in that rack, the most
//! caught-up follower otherwise) and no records; the consumer then fetches from that follower,
//! which serves consumers up to its own high watermark. Kafka's `LeaderSelector` (the
//! default) always keeps consumers on the leader. Other selector classes are refused at
//! startup: this broker loads no plugins.

use crate::broker::Broker;
use crate::config::replica_selector::ReplicaSelector;
use crate::partition::{Partition, ReplicaCandidate};

/// Kafka's `RackAwareReplicaSelector.select`: among `candidates` (the leader included, as
/// `leader`), those in `client_rack`; the leader if it is one of them, else the one with the
/// highest log end offset (then the most recently caught up); the leader when none is or
/// the client names no rack.
pub fn select_rack_aware(
    client_rack: &str,
    candidates: &[ReplicaCandidate],
    leader: i32,
    rack_of: impl Fn(i32) -> Option<String>,
) -> i32 {
    if client_rack.is_empty() {
        return leader;
    }
    let same_rack: Vec<&ReplicaCandidate> = candidates
        .iter()
        .filter(|c| rack_of(c.broker).as_deref() == Some(client_rack))
        .collect();
    if same_rack.is_empty() || same_rack.iter().any(|c| c.broker == leader) {
        return leader;
    }
    same_rack
        .into_iter()
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                .then(b.ms_since_caught_up.cmp(&a.ms_since_caught_up))
        })
        .map_or(leader, |c| c.broker)
}

/// Where a consumer's fetch may be served and redirected.
#[derive(Debug, Clone, Copy)]
pub struct ReadSite<'a> {
    /// Followers serve this fetch (it carries client metadata: Fetch v11+, cluster mode).
    pub followers_serve: bool,
    /// The consumer's rack, when a rack-aware selector runs on this broker.
    rack: Option<&'a str>,
    broker: &'a Broker,
    listener: &'a str,
}

impl<'a> ReadSite<'a> {
    /// The site of a consumer fetch at `version` from `rack_id` on `listener`.
    pub fn of(broker: &'a Broker, version: i16, rack_id: &'a str, listener: &'a str) -> Self {
        let clustered = broker.cluster_node().is_some();
        let rack_aware = clustered
            && version >= 11
            && !rack_id.is_empty()
            && ReplicaSelector::from_class(broker.config.get("replica.selector.class"))
                .is_ok_and(|s| s == ReplicaSelector::RackAware);
        ReadSite {
            followers_serve: clustered && version >= 11,
            rack: rack_aware.then_some(rack_id),
            broker,
            listener,
        }
    }

    /// The broker serving the fetch.
    pub fn broker(&self) -> &'a Broker {
        self.broker
    }

    /// The replica `partition`'s reader at `fetch_offset` should fetch from instead of this
    /// leader, if any.
    pub fn preferred(&self, partition: &Partition, fetch_offset: i64) -> Option<i32> {
        let rack = self.rack?;
        let node = self.broker.cluster_node()?;
        let candidates = partition.read_replica_candidates(fetch_offset, crate::clock::now_ms())?;
        // Only brokers the client can reach on its listener.
        let reachable = super::metadata::live_brokers(self.broker, self.listener);
        let candidates: Vec<ReplicaCandidate> = candidates
            .into_iter()
            .filter(|c| reachable.iter().any(|(id, ..)| *id == c.broker))
            .collect();
        let leader = self.broker.node_id;
        let chosen = select_rack_aware(rack, &candidates, leader, |id| {
            node.image
                .read(|i| i.brokers.get(&id).and_then(|b| b.rack.clone()))
        });
        (chosen != leader).then_some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(broker: i32, leo: i64, since: i64) -> ReplicaCandidate {
        ReplicaCandidate {
            broker,
            log_end_offset: leo,
            ms_since_caught_up: since,
        }
    }

    #[test]
    fn the_rack_aware_selector_prefers_the_leader_then_the_most_caught_up_in_the_clients_rack() {
        let rack = |id: i32| Some(format!("r{}", id.min(2)));
        // Brokers 2 and 3 are in r2; 1 (the leader) in r1.
        let all = [c(2, 10, 5), c(3, 12, 9), c(1, 12, 0)];
        assert_eq!(select_rack_aware("r2", &all, 1, rack), 3, "highest log end");
        let tie = [c(2, 12, 5), c(3, 12, 9), c(1, 12, 0)];
        assert_eq!(
            select_rack_aware("r2", &tie, 1, rack),
            2,
            "then most recently caught up"
        );
        assert_eq!(
            select_rack_aware("r1", &all, 1, rack),
            1,
            "the leader is in the rack"
        );
        assert_eq!(select_rack_aware("elsewhere", &all, 1, rack), 1);
        assert_eq!(
            select_rack_aware("", &all, 1, rack),
            1,
            "no rack: the leader"
        );
        assert_eq!(
            select_rack_aware("r2", &[c(1, 12, 0)], 1, rack),
            1,
            "no follower holds the offset"
        );
    }

    #[test]
    fn another_selector_class_is_refused_at_startup() {
        let refused = crate::config::BrokerConfig::from_entries([(
            "replica.selector.class",
            "com.example.MySelector",
        )])
        .unwrap_err()
        .to_string();
        assert!(refused.contains("replica.selector.class"), "{refused}");
    }
}
