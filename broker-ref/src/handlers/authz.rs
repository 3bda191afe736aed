//! Who is asking and what they may do: the request's view of the authorizer, used by the
//! per-API checks ([`super::authorize`]) and by the handlers that report
//! `authorized_operations` (Metadata, DescribeCluster, DescribeGroups) or check the cluster
//! themselves (the ACL and SCRAM APIs).

use super::context::RequestContext;
use crate::broker::Broker;
use crate::security::acl::{AclOperation as Op, ResourceType as Rt, CLUSTER_NAME};
use crate::security::{Authorizer, Subject};

/// The authorizer and who is asking.
#[derive(Debug, Clone, Copy)]
pub struct Authz<'a> {
    authorizer: &'a Authorizer,
    who: Subject<'a>,
}

impl<'a> Authz<'a> {
    /// The request's check, or `None` when no authorizer is configured.
    pub fn of(broker: &'a Broker, ctx: &'a RequestContext<'_>) -> Option<Authz<'a>> {
        let authorizer = broker.security.authorizer.as_ref()?;
        Some(Authz {
            authorizer,
            who: Subject {
                principal: &ctx.connection.principal,
                host: ctx.connection.peer.ip(),
            },
        })
    }

    /// May the principal do `op` on `(rt, name)`?
    pub fn allowed(&self, op: Op, rt: Rt, name: &str) -> bool {
        let ok = self.authorizer.authorize(self.who, op, rt, name);
        if !ok {
            tracing::debug!(principal = %self.who.principal, host = %self.who.host, operation = op.name(), resource = rt.name(), name, "denied");
        }
        ok
    }

    /// May the principal do `op` on the cluster?
    pub fn cluster(&self, op: Op) -> bool {
        self.allowed(op, Rt::Cluster, CLUSTER_NAME)
    }

    /// The `authorized_operations` bitmask of a resource.
    pub fn operations(&self, rt: Rt, name: &str) -> i32 {
        self.authorizer.authorized_operations(self.who, rt, name)
    }

    /// Kafka's `authorizeByResourceType`.
    pub fn by_type(&self, op: Op, rt: Rt) -> bool {
        self.authorizer.authorize_by_resource_type(self.who, op, rt)
    }
}

/// The `authorized_operations` of a resource for this request: Kafka's full mask without an
/// authorizer.
pub fn operations(broker: &Broker, ctx: &RequestContext<'_>, rt: Rt, name: &str) -> i32 {
    match Authz::of(broker, ctx) {
        Some(a) => a.operations(rt, name),
        None => rt
            .supported_operations()
            .iter()
            .fold(0, |m, o| m | 1 << o.code()),
    }
}
