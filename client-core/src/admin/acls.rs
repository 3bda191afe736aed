//! CreateAcls, DescribeAcls and DeleteAcls (KIP-140), sent to any broker as Kafka's clients do
//! (in KRaft a broker forwards ACL changes to the controller).
//!
//! Creations and deletions are mutations: only "wrong broker" and throttling answers are
//! retried, so a retry never reports a misleading outcome. Bindings and filters the broker would
//! refuse (ANY or unknown values in a binding, a principal that is not `Type:name`) fail
//! locally with INVALID_REQUEST, as Java's `AdminClient` refuses them.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;

use super::acl_types::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType,
};
use super::client::Admin;
use super::driver::{self, retry_mutation, retry_read, Call, Outcome, Route};
use crate::net::Connection;
use crate::{Error, ErrorCode, Result};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn opt(s: &Option<String>) -> Option<StrBytes> {
    s.as_deref().map(sb)
}

/// One answer code (and message) as an outcome, retried when `retry` says so.
fn outcome<T>(
    code: i16,
    message: Option<&StrBytes>,
    value: T,
    retry: fn(ErrorCode) -> bool,
) -> Outcome<T> {
    match Error::from_response(code, message.map(|m| m.as_str())) {
        Ok(()) => Outcome::Done(Ok(value)),
        Err(e) if retry(e.kafka_code()) => Outcome::Retry(e),
        Err(e) => Outcome::Done(Err(e)),
    }
}

/// Routes every item to one broker, except those `check` refuses.
async fn route_checked(
    admin: &Admin,
    pending: &[usize],
    check: impl Fn(usize) -> Result<()>,
) -> Result<Vec<(usize, Route)>> {
    let node = admin.any_node().await?;
    Ok(pending
        .iter()
        .map(|&i| match check(i) {
            Ok(()) => (i, Route::Node(node)),
            Err(e) => (i, Route::Done(e)),
        })
        .collect())
}

/// Items answered positionally: a response with fewer answers than items is malformed for the
/// ones left over.
fn positional<T>(
    items: &[usize],
    answers: impl IntoIterator<Item = Outcome<T>>,
) -> Vec<(usize, Outcome<T>)> {
    let mut answers = answers.into_iter();
    items
        .iter()
        .map(|&i| {
            let answer = answers.next().unwrap_or_else(|| {
                Outcome::Done(Err(Error::malformed(
                    "ACL response",
                    "fewer results than requests",
                )))
            });
            (i, answer)
        })
        .collect()
}

/// CreateAcls for a list of bindings.
pub(crate) struct CreateAcls<'a> {
    pub(crate) acls: &'a [AclBinding],
}

impl Call for CreateAcls<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_checked(admin, pending, |i| self.acls[i].check_creatable()).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let request = CreateAclsRequest::default().with_creations(
            items
                .iter()
                .map(|&i| {
                    let b = &self.acls[i];
                    AclCreation::default()
                        .with_resource_type(b.resource_type.wire())
                        .with_resource_name(sb(&b.name))
                        .with_resource_pattern_type(b.pattern_type.wire())
                        .with_principal(sb(&b.principal))
                        .with_host(sb(&b.host))
                        .with_operation(b.operation.wire())
                        .with_permission_type(b.permission.wire())
                })
                .collect(),
        );
        let response = connection.send(&request).await?;
        let answers = response
            .results
            .iter()
            .map(|r| outcome(r.error_code, r.error_message.as_ref(), (), retry_mutation));
        Ok(positional(items, answers))
    }
}

/// Builds a binding from a described or deleted ACL's wire fields.
#[allow(clippy::too_many_arguments)]
fn binding(
    resource_type: i8,
    name: &StrBytes,
    pattern_type: i8,
    principal: &StrBytes,
    host: &StrBytes,
    operation: i8,
    permission: i8,
) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_wire(resource_type),
        name: name.to_string(),
        pattern_type: PatternType::from_wire(pattern_type),
        principal: principal.to_string(),
        host: host.to_string(),
        operation: AclOperation::from_wire(operation),
        permission: AclPermission::from_wire(permission),
    }
}

/// DescribeAcls for one filter.
pub(crate) struct DescribeAcls<'a> {
    pub(crate) filter: &'a AclBindingFilter,
}

impl Call for DescribeAcls<'_> {
    type Output = Vec<AclBinding>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_checked(admin, pending, |_| self.filter.check()).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<AclBinding>>)>> {
        let f = self.filter;
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(f.resource_type.wire())
            .with_resource_name_filter(opt(&f.name))
            .with_pattern_type_filter(f.pattern_type.wire())
            .with_principal_filter(opt(&f.principal))
            .with_host_filter(opt(&f.host))
            .with_operation(f.operation.wire())
            .with_permission_type(f.permission.wire());
        let response = connection.send(&request).await?;
        let mut acls = Vec::new();
        for resource in &response.resources {
            for acl in &resource.acls {
                acls.push(binding(
                    resource.resource_type,
                    &resource.resource_name,
                    resource.pattern_type,
                    &acl.principal,
                    &acl.host,
                    acl.operation,
                    acl.permission_type,
                ));
            }
        }
        let answer = outcome(
            response.error_code,
            response.error_message.as_ref(),
            acls,
            retry_read,
        );
        Ok(positional(items, [answer]))
    }
}

/// One deleted (or not deleted) ACL and its own outcome.
pub type DeletedAcl = (AclBinding, Result<()>);

/// DeleteAcls for a list of filters.
pub(crate) struct DeleteAcls<'a> {
    pub(crate) filters: &'a [AclBindingFilter],
}

impl Call for DeleteAcls<'_> {
    type Output = Vec<DeletedAcl>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        route_checked(admin, pending, |i| self.filters[i].check()).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<DeletedAcl>>)>> {
        let request = DeleteAclsRequest::default().with_filters(
            items
                .iter()
                .map(|&i| {
                    let f = &self.filters[i];
                    DeleteAclsFilter::default()
                        .with_resource_type_filter(f.resource_type.wire())
                        .with_resource_name_filter(opt(&f.name))
                        .with_pattern_type_filter(f.pattern_type.wire())
                        .with_principal_filter(opt(&f.principal))
                        .with_host_filter(opt(&f.host))
                        .with_operation(f.operation.wire())
                        .with_permission_type(f.permission.wire())
                })
                .collect(),
        );
        let response = connection.send(&request).await?;
        let answers = response.filter_results.iter().map(|r| {
            let deleted = r
                .matching_acls
                .iter()
                .map(|m| {
                    let acl = binding(
                        m.resource_type,
                        &m.resource_name,
                        m.pattern_type,
                        &m.principal,
                        &m.host,
                        m.operation,
                        m.permission_type,
                    );
                    let result = Error::from_response(m.error_code, m.error_message.as_deref());
                    (acl, result)
                })
                .collect();
            outcome(
                r.error_code,
                r.error_message.as_ref(),
                deleted,
                retry_mutation,
            )
        });
        Ok(positional(items, answers.collect::<Vec<_>>()))
    }
}

impl Admin {
    /// Creates ACLs. Per binding: `Ok`, or the broker's refusal (SECURITY_DISABLED without an
    /// authorizer, CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster,
    /// INVALID_REQUEST for a binding with ANY/MATCH/unknown values or a malformed principal).
    pub async fn create_acls(&self, acls: &[AclBinding]) -> Result<Vec<(AclBinding, Result<()>)>> {
        let results = driver::run(self, &CreateAcls { acls }, acls.len()).await?;
        Ok(acls.iter().cloned().zip(results).collect())
    }

    /// The ACLs `filter` selects.
    pub async fn describe_acls(&self, filter: &AclBindingFilter) -> Result<Vec<AclBinding>> {
        let results = driver::run(self, &DescribeAcls { filter }, 1).await?;
        results
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(Error::malformed("admin call", "no result")))
    }

    /// Deletes every ACL each filter selects. Per filter: the ACLs it matched, each with its
    /// own outcome, or the filter's error.
    pub async fn delete_acls(
        &self,
        filters: &[AclBindingFilter],
    ) -> Result<Vec<(AclBindingFilter, Result<Vec<DeletedAcl>>)>> {
        let results = driver::run(self, &DeleteAcls { filters }, filters.len()).await?;
        Ok(filters.iter().cloned().zip(results).collect())
    }
}
