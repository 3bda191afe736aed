//! Follower fetching (KIP-392): with `client.rack` set, a leader running a rack-aware replica
//! selector answers a fetch with `preferred_read_replica`; the consumer then fetches that
//! partition from the replica until `metadata.max.age.ms` passes (then the leader is asked
//! again), the replica fails, falls behind (OFFSET_OUT_OF_RANGE) or leaves the metadata.

use std::time::{Duration, Instant};

use crate::cluster::ClusterMetadata;

/// The replica a partition is read from instead of its leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadReplica {
    /// Its node id.
    pub node: i32,
    /// When the leader is asked again.
    pub until: Instant,
}

/// The node to fetch a partition from: its read replica while that is still valid and known
/// to the metadata, else its leader.
pub(crate) fn fetch_node(
    replica: &mut Option<ReadReplica>,
    leader: i32,
    meta: &ClusterMetadata,
    now: Instant,
) -> i32 {
    match *replica {
        Some(r) if r.until > now && meta.brokers.contains_key(&r.node) => r.node,
        Some(_) => {
            *replica = None;
            leader
        }
        None => leader,
    }
}

/// Takes note of a fetch answer's `preferred_read_replica` (-1: none) from `served_by`.
pub(crate) fn on_answer(
    replica: &mut Option<ReadReplica>,
    preferred: i32,
    served_by: i32,
    max_age: Duration,
) {
    if preferred >= 0 && preferred != served_by {
        *replica = Some(ReadReplica {
            node: preferred,
            until: Instant::now() + max_age,
        });
    }
}

/// Forgets the read replica if it is `node` (it failed or fell behind).
pub(crate) fn drop_if(replica: &mut Option<ReadReplica>, node: i32) -> bool {
    if replica.is_some_and(|r| r.node == node) {
        *replica = None;
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::BrokerInfo;

    fn meta_with(nodes: &[i32]) -> ClusterMetadata {
        let mut m = ClusterMetadata::default();
        for n in nodes {
            m.brokers.insert(
                *n,
                BrokerInfo {
                    node_id: *n,
                    host: "127.0.0.1".into(),
                    port: 9092,
                    rack: None,
                },
            );
        }
        m
    }

    #[test]
    fn a_preferred_replica_is_used_until_it_expires_or_leaves() {
        let now = Instant::now();
        let mut r = None;
        on_answer(&mut r, 2, 1, Duration::from_secs(60));
        assert_eq!(fetch_node(&mut r, 1, &meta_with(&[1, 2]), now), 2);
        // Gone from the metadata: back to the leader, and forgotten.
        assert_eq!(fetch_node(&mut r, 1, &meta_with(&[1]), now), 1);
        assert_eq!(r, None);
        on_answer(&mut r, 2, 1, Duration::from_secs(60));
        let later = now + Duration::from_secs(61);
        assert_eq!(fetch_node(&mut r, 1, &meta_with(&[1, 2]), later), 1);
        assert_eq!(r, None);
    }

    #[test]
    fn no_preference_or_the_serving_node_changes_nothing() {
        let mut r = None;
        on_answer(&mut r, -1, 1, Duration::from_secs(60));
        assert_eq!(r, None);
        on_answer(&mut r, 1, 1, Duration::from_secs(60));
        assert_eq!(r, None);
        on_answer(&mut r, 3, 1, Duration::from_secs(60));
        assert!(!drop_if(&mut r, 2));
        assert!(drop_if(&mut r, 3));
        assert_eq!(r, None);
    }
}
