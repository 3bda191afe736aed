//! Group membership for `subscribe`: joining, the leader's assignment, heartbeats, rebalance
//! callbacks, and committing offsets (auto-commit of delivered records, on revoke, on close).
//!
//! Eager protocols (range, roundrobin, sticky) revoke every partition before rejoining;
//! cooperative-sticky revokes only the partitions that move and rejoins once more to receive
//! them on the other side (KIP-429). Static members (`group.instance.id`) do not leave on close,
//! so a restart within `session.timeout.ms` gets the same partitions without a rebalance.

mod assignors;
mod classic;
pub(crate) mod client;
mod kip848;
mod membership;

use std::sync::Arc;

pub use crate::protocol::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription, Subscription,
};
pub use assignors::{Assignment, Assignor};
pub use client::GroupClient;
pub(crate) use membership::{commit_positions, positions, Membership, Progress};
pub use membership::{Handled, JoinInfo, RebalanceHistory, RebalanceListener, Topics};

use super::shared::Shared;

/// The membership task of `group.protocol`: runs until the consumer unsubscribes or closes.
pub(crate) async fn run(shared: Arc<Shared>, m: Arc<Membership>) {
    match shared.cluster.config().consumer.group_protocol {
        crate::config::GroupProtocol::Consumer => kip848::run(shared, m).await,
        crate::config::GroupProtocol::Classic => classic::run(shared, m).await,
    }
}
