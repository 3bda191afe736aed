//! `replica.selector.class` (KIP-392): the replica selectors odradek-broker has, by Kafka's
//! class names. Any other class is refused at startup naming the key: this broker loads no
//! plugins.

use crate::{Error, Result};

/// Kafka's default selector class: consumers read from leaders.
pub const LEADER_SELECTOR: &str = "org.apache.kafka.common.replica.LeaderSelector";
/// Kafka's rack-aware selector class.
pub const RACK_AWARE_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
const KEY: &str = "replica.selector.class";

/// The replica selectors this broker has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Consumers read from the leader (`LeaderSelector`, or no selector).
    Leader,
    /// `RackAwareReplicaSelector`.
    RackAware,
}

impl ReplicaSelector {
    /// The selector `replica.selector.class` = `class` names; any class but Kafka's two is
    /// refused, naming the key.
    pub fn from_class(class: &str) -> Result<ReplicaSelector> {
        match class.trim() {
            "" | LEADER_SELECTOR => Ok(ReplicaSelector::Leader),
            RACK_AWARE_SELECTOR => Ok(ReplicaSelector::RackAware),
            other => Err(Error::config(
                KEY,
                format!(
                    "`{other}` is not available: odradek-broker loads no plugins and has \
                     {LEADER_SELECTOR} and {RACK_AWARE_SELECTOR}"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kafkas_two_selectors_are_accepted() {
        assert_eq!(
            ReplicaSelector::from_class(RACK_AWARE_SELECTOR).unwrap(),
            ReplicaSelector::RackAware
        );
        assert_eq!(
            ReplicaSelector::from_class(LEADER_SELECTOR).unwrap(),
            ReplicaSelector::Leader
        );
        assert_eq!(
            ReplicaSelector::from_class("").unwrap(),
            ReplicaSelector::Leader,
            "Kafka's default: no selector"
        );
        let refused = ReplicaSelector::from_class("com.example.MySelector")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("replica.selector.class"), "{refused}");
    }
}
