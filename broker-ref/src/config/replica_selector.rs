//! `replica.selector.class` (KIP-392): the replica selectors odradek-broker has, by Kafka's
//! class names. Any other class is refused at startup naming the key: this broker loads no
//! plugins.

use super::BrokerConfig;
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
    /// The selector `replica.selector.class` names; any class but Kafka's two is refused,
    /// naming the key.
    pub fn from_config(config: &BrokerConfig) -> Result<ReplicaSelector> {
        match config.get(KEY).trim() {
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
        let with = |v: &str| {
            BrokerConfig::from_entries([("replica.selector.class", v)])
                .and_then(|c| ReplicaSelector::from_config(&c))
        };
        assert_eq!(
            with(RACK_AWARE_SELECTOR).unwrap(),
            ReplicaSelector::RackAware
        );
        assert_eq!(with(LEADER_SELECTOR).unwrap(), ReplicaSelector::Leader);
        assert_eq!(
            ReplicaSelector::from_config(
                &BrokerConfig::from_entries(Vec::<(&str, &str)>::new()).unwrap()
            )
            .unwrap(),
            ReplicaSelector::Leader,
            "Kafka's default: no selector"
        );
        let refused = with("com.example.MySelector").unwrap_err().to_string();
        assert!(
            refused.contains("replica.selector.class"),
            "refused at startup: {refused}"
        );
    }
}
