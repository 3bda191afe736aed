//! The hook through which one listener of an in-process test cluster presents itself as one
//! broker of a multi-broker cluster (`crate::testing` implements it; a broker started with
//! [`super::start`] has none and pays nothing).
//!
//! Every broker of such a cluster shares one [`Broker`] state (one log store, one set of
//! coordinators); the view says which broker this listener is, which partitions it leads,
//! which coordinators it hosts and which API versions it serves, and rewrites the responses
//! that describe the cluster (Metadata, DescribeCluster, FindCoordinator, ApiVersions).

use std::fmt;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use odradek::ErrorCode;

use super::items::Item;
use crate::broker::Broker;
use crate::handlers::kafka4_api_versions::ApiRange;
use crate::handlers::RequestContext;

/// One broker's view of an in-process cluster, consulted by the dispatcher for every request
/// that arrives on its listener.
pub trait ClusterView: Send + Sync + fmt::Debug {
    /// This broker's node id.
    fn node_id(&self) -> i32;

    /// The versions of an API this broker serves, given what the broker implements; `None`
    /// refuses every version (the request closes the connection, as Kafka does).
    fn version_range(&self, advertised: ApiRange) -> Option<ApiRange> {
        Some(advertised)
    }

    /// Sees every decoded request first (the view tracks client ids per connection).
    fn observe(&self, _ctx: &RequestContext<'_>) {}

    /// A refusal of the whole request (NOT_COORDINATOR for a group this broker does not
    /// coordinate), answered in the API's error shape.
    fn refuse(&self, _ctx: &RequestContext<'_>, _request: &RequestKind) -> Option<ErrorCode> {
        None
    }

    /// A refusal of one item (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...); only asked
    /// for the APIs [`super::items::splittable`] lists. The items' current leader epochs are
    /// cleared after this check, since the handlers know only the single-node epoch.
    fn refuse_item(&self, _api_key: ApiKey, _item: &Item) -> Option<ErrorCode> {
        None
    }

    /// Rewrites a response before it is encoded (the cluster's brokers, leaders, epochs and
    /// coordinators; clamped API versions). `request` is a copy of a FindCoordinator request
    /// (whose response does not repeat a v0-3 key); `None` for other APIs.
    fn rewrite(
        &self,
        _broker: &Broker,
        _ctx: &RequestContext<'_>,
        _request: Option<&RequestKind>,
        _response: &mut ResponseKind,
    ) {
    }

    /// Time added before every response of this broker (librdkafka's `broker_set_rtt`).
    fn response_delay(&self) -> Option<Duration> {
        None
    }
}
