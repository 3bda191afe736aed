//! Request handlers: request → response translation, one module per API family, and
//! [`handle`], which routes a decoded request body to its handler. Framing, decoding, encoding
//! and the interception point live in [`crate::server`]; state lives in `partition`, `session`
//! and `coordinator`.

mod admin_configs;
mod admin_topics;
pub(crate) mod api_versions;
pub mod authorize;
pub mod authz;
mod broker_configs;
mod client_quotas;
mod cluster;
mod cluster_admin;
mod cluster_groups;
pub mod cluster_security;
pub mod cluster_txn;
mod config_entry;
mod consumer_groups;
pub mod context;
pub mod controller_api;
mod controller_ops;
mod describe_topic_partitions;
pub mod error_response;
mod fetch;
mod group_configs;
mod groups;
mod init_producer_id;
pub mod kafka4_api_versions;
mod list_offsets;
mod metadata;
mod produce;
mod produce_validation;
mod read_replica;
mod reassignments;
mod records_admin;
mod replica_fetch;
mod reply;
mod route;
mod security_admin;
mod txn;
mod write_txn_markers;

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::broker::Broker;

pub use api_versions::{advertised_range, reject_unsupported_version, ADVERTISED_APIS};

/// The advertised range of `api_key` on `listener`: a controller listener serves the
/// controller APIs ([`controller_api::CONTROLLER_APIS`]), every other listener the client
/// APIs.
pub fn listener_range(
    broker: &Broker,
    listener: &str,
    api_key: i16,
) -> Option<kafka4_api_versions::ApiRange> {
    if broker.is_controller_listener(listener) {
        controller_api::controller_range(api_key)
    } else {
        api_versions::broker_range(broker, api_key)
    }
}
pub use context::{ConnectionContext, Principal, RequestContext, SecurityProtocol};

/// Handles one decoded request: `Ok(None)` means no response is sent (Produce with acks=0);
/// `Err` closes the connection (an API this broker does not serve). With an authorizer, the
/// request is first checked as Kafka checks it ([`authorize`]).
pub async fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: RequestKind,
) -> crate::Result<Option<ResponseKind>> {
    if let Some(node) = broker.cluster_node() {
        if node.settings.is_controller_listener(ctx.listener()) {
            let denied = authz::Authz::of(broker, ctx).is_some_and(|az| {
                controller_api::required_operation(&body).is_some_and(|op| !az.cluster(op))
            });
            if denied {
                return controller_api::refused(broker, ctx, &body);
            }
            return controller_api::handle(node, ctx, body).await;
        }
        if !matches!(body, RequestKind::ApiVersions(_)) {
            node.wait_ready(std::time::Duration::from_secs(30)).await;
        }
    }
    match authz::Authz::of(broker, ctx) {
        Some(az) => authorize::handle(broker, ctx, &az, body).await,
        None => route::handle_unchecked(broker, ctx, body).await,
    }
}
