//! The security APIs: CreateAcls, DescribeAcls, DeleteAcls (ALTER / DESCRIBE on the cluster;
//! SECURITY_DISABLED without an authorizer), DescribeUserScramCredentials and
//! AlterUserScramCredentials (DESCRIBE / ALTER on the cluster; Kafka's per-user errors), and
//! SaslHandshake / SaslAuthenticate on a connection that is not in a SASL exchange
//! (ILLEGAL_SASL_STATE, as Kafka answers on PLAINTEXT / SSL listeners).

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::*;
use odradek::ErrorCode;

use super::authz::Authz;
use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;
use crate::security::acl::*;
use crate::security::scram::{ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::security::Principal;

fn cluster_allowed(broker: &Broker, ctx: &RequestContext<'_>, op: AclOperation) -> bool {
    Authz::of(broker, ctx).is_none_or(|a| a.cluster(op))
}

pub(super) fn binding_of(
    c: &create_acls_request::AclCreation,
    version: i16,
) -> Result<AclBinding, String> {
    let rtype = ResourceType::from_code(c.resource_type);
    let pattern = if version == 0 {
        PatternType::Literal
    } else {
        PatternType::from_code(c.resource_pattern_type)
    };
    let op = AclOperation::from_code(c.operation);
    let perm = PermissionType::from_code(c.permission_type);
    if matches!(rtype, ResourceType::Unknown | ResourceType::Any) {
        return Err(format!("Invalid resourceType {}", rtype.name()));
    }
    if !matches!(pattern, PatternType::Literal | PatternType::Prefixed) {
        return Err(format!("Invalid patternType {}", pattern.name()));
    }
    if matches!(op, AclOperation::Unknown | AclOperation::Any) {
        return Err(format!("Invalid operation {}", op.name()));
    }
    if !matches!(perm, PermissionType::Allow | PermissionType::Deny) {
        return Err(format!("Invalid permissionType {}", perm.name()));
    }
    if c.resource_name.is_empty() {
        return Err("Invalid empty resource name".into());
    }
    if rtype == ResourceType::Cluster && c.resource_name.as_str() != CLUSTER_NAME {
        return Err(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        ));
    }
    if Principal::parse(&c.principal).is_none() {
        return Err(format!("Invalid principal {}", c.principal));
    }
    if c.host.is_empty() {
        return Err("Invalid empty host".into());
    }
    Ok(AclBinding {
        resource_type: rtype,
        name: c.resource_name.to_string(),
        pattern_type: pattern,
        principal: c.principal.to_string(),
        host: c.host.to_string(),
        operation: op,
        permission: perm,
    })
}

/// CreateAcls.
pub fn create_acls(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: CreateAclsRequest,
) -> HandlerResult {
    if let Some(refused) = create_acls_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    let Some(authorizer) = broker.security.authorizer.as_ref() else {
        return Ok(all_creations(
            &r,
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured.",
        ));
    };
    Ok(create_acls_with(
        authorizer,
        &r,
        ctx.api_version,
        &ctx.principal().to_string(),
    ))
}

/// One result per creation, all `code`.
pub(super) fn all_creations(r: &CreateAclsRequest, code: ErrorCode, msg: &str) -> ResponseKind {
    ResponseKind::CreateAcls(
        CreateAclsResponse::default().with_results(
            r.creations
                .iter()
                .map(|_| {
                    AclCreationResult::default()
                        .with_error_code(code.code())
                        .with_error_message(Some(sb(msg)))
                })
                .collect(),
        ),
    )
}

/// CreateAcls' refusal before anything is parsed (no authorizer, no ALTER on the cluster).
pub(super) fn create_acls_refused(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: &CreateAclsRequest,
) -> Option<ResponseKind> {
    if broker.security.authorizer.is_none() {
        return Some(all_creations(
            r,
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured.",
        ));
    }
    if !cluster_allowed(broker, ctx, AclOperation::Alter) {
        return Some(all_creations(
            r,
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        ));
    }
    None
}

/// CreateAcls against `authorizer` (the broker's, or the controller's copy of the cluster's).
pub(super) fn create_acls_with(
    authorizer: &crate::security::Authorizer,
    r: &CreateAclsRequest,
    version: i16,
    principal: &str,
) -> ResponseKind {
    let parsed: Vec<Result<AclBinding, String>> =
        r.creations.iter().map(|c| binding_of(c, version)).collect();
    let valid: Vec<AclBinding> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().cloned())
        .collect();
    let stored = authorizer.create(&valid);
    let results = parsed
        .into_iter()
        .map(|p| match (p, &stored) {
            (Err(msg), _) => AclCreationResult::default()
                .with_error_code(ErrorCode::InvalidRequest.code())
                .with_error_message(Some(sb(msg))),
            (Ok(_), Err(e)) => AclCreationResult::default()
                .with_error_code(ErrorCode::UnknownServerError.code())
                .with_error_message(Some(sb(e.to_string()))),
            (Ok(b), Ok(())) => {
                tracing::info!(principal, acl = ?b, "ACL created");
                AclCreationResult::default()
            }
        })
        .collect();
    ResponseKind::CreateAcls(CreateAclsResponse::default().with_results(results))
}

/// A filter's wire fields (DescribeAcls' request and DeleteAcls' filters carry the same ones).
struct WireFilter<'a> {
    rtype: i8,
    name: Option<&'a str>,
    pattern: i8,
    principal: Option<&'a str>,
    host: Option<&'a str>,
    op: i8,
    perm: i8,
}

fn filter_of(f: WireFilter<'_>, version: i16) -> AclFilter {
    AclFilter {
        resource_type: ResourceType::from_code(f.rtype),
        name: f.name.map(str::to_string),
        pattern_type: if version == 0 {
            PatternType::Literal
        } else {
            PatternType::from_code(f.pattern)
        },
        principal: f.principal.map(str::to_string),
        host: f.host.map(str::to_string),
        operation: AclOperation::from_code(f.op),
        permission: PermissionType::from_code(f.perm),
    }
}

/// DescribeAcls.
pub fn describe_acls(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: DescribeAclsRequest,
) -> HandlerResult {
    let error = |code: ErrorCode, msg: &str| {
        ResponseKind::DescribeAcls(
            DescribeAclsResponse::default()
                .with_error_code(code.code())
                .with_error_message(Some(sb(msg))),
        )
    };
    if !cluster_allowed(broker, ctx, AclOperation::Describe) {
        return Ok(error(
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        ));
    }
    let Some(authorizer) = broker.security.authorizer.as_ref() else {
        return Ok(error(
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured on the broker",
        ));
    };
    let filter = filter_of(
        WireFilter {
            rtype: r.resource_type_filter,
            name: r.resource_name_filter.as_deref(),
            pattern: r.pattern_type_filter,
            principal: r.principal_filter.as_deref(),
            host: r.host_filter.as_deref(),
            op: r.operation,
            perm: r.permission_type,
        },
        ctx.api_version,
    );
    if filter.is_unknown() {
        return Ok(error(
            ErrorCode::InvalidRequest,
            "The filter contains UNKNOWN elements",
        ));
    }
    let mut grouped: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for b in authorizer.describe(&filter) {
        grouped
            .entry((
                b.resource_type.code(),
                b.name.clone(),
                b.pattern_type.code(),
            ))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(sb(b.principal))
                    .with_host(sb(b.host))
                    .with_operation(b.operation.code())
                    .with_permission_type(b.permission.code()),
            );
    }
    let resources = grouped
        .into_iter()
        .map(|((t, n, p), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(t)
                .with_resource_name(sb(n))
                .with_pattern_type(p)
                .with_acls(acls)
        })
        .collect();
    Ok(ResponseKind::DescribeAcls(
        DescribeAclsResponse::default().with_resources(resources),
    ))
}

/// DeleteAcls.
pub fn delete_acls(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: DeleteAclsRequest,
) -> HandlerResult {
    if let Some(refused) = delete_acls_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    let Some(authorizer) = broker.security.authorizer.as_ref() else {
        return Ok(all_filters(
            &r,
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured.",
        ));
    };
    Ok(delete_acls_with(
        authorizer,
        &r,
        ctx.api_version,
        &ctx.principal().to_string(),
    ))
}

/// One result per filter, all `code`.
pub(super) fn all_filters(r: &DeleteAclsRequest, code: ErrorCode, msg: &str) -> ResponseKind {
    ResponseKind::DeleteAcls(
        DeleteAclsResponse::default().with_filter_results(
            r.filters
                .iter()
                .map(|_| {
                    DeleteAclsFilterResult::default()
                        .with_error_code(code.code())
                        .with_error_message(Some(sb(msg)))
                })
                .collect(),
        ),
    )
}

/// DeleteAcls' refusal before anything is parsed (no authorizer, no ALTER on the cluster).
pub(super) fn delete_acls_refused(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: &DeleteAclsRequest,
) -> Option<ResponseKind> {
    if broker.security.authorizer.is_none() {
        return Some(all_filters(
            r,
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured.",
        ));
    }
    if !cluster_allowed(broker, ctx, AclOperation::Alter) {
        return Some(all_filters(
            r,
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        ));
    }
    None
}

/// DeleteAcls against `authorizer` (the broker's, or the controller's copy of the cluster's).
pub(super) fn delete_acls_with(
    authorizer: &crate::security::Authorizer,
    r: &DeleteAclsRequest,
    version: i16,
    principal: &str,
) -> ResponseKind {
    let all = |code: ErrorCode, msg: &str| all_filters(r, code, msg);
    let filters: Vec<AclFilter> = r
        .filters
        .iter()
        .map(|f| {
            filter_of(
                WireFilter {
                    rtype: f.resource_type_filter,
                    name: f.resource_name_filter.as_deref(),
                    pattern: f.pattern_type_filter,
                    principal: f.principal_filter.as_deref(),
                    host: f.host_filter.as_deref(),
                    op: f.operation,
                    perm: f.permission_type,
                },
                version,
            )
        })
        .collect();
    let valid: Vec<AclFilter> = filters
        .iter()
        .filter(|f| !f.is_unknown())
        .cloned()
        .collect();
    let removed = match authorizer.delete(&valid) {
        Ok(r) => r,
        Err(e) => return all(ErrorCode::UnknownServerError, &e.to_string()),
    };
    let mut removed = removed.into_iter();
    let results = filters
        .iter()
        .map(|f| {
            if f.is_unknown() {
                return DeleteAclsFilterResult::default()
                    .with_error_code(ErrorCode::InvalidRequest.code())
                    .with_error_message(Some(sb("Unknown patternFilter or entryFilter.")));
            }
            let matching = removed
                .next()
                .unwrap_or_default()
                .into_iter()
                .map(|b| {
                    tracing::info!(principal, acl = ?b, "ACL deleted");
                    DeleteAclsMatchingAcl::default()
                        .with_resource_type(b.resource_type.code())
                        .with_resource_name(sb(b.name))
                        .with_pattern_type(b.pattern_type.code())
                        .with_principal(sb(b.principal))
                        .with_host(sb(b.host))
                        .with_operation(b.operation.code())
                        .with_permission_type(b.permission.code())
                })
                .collect();
            DeleteAclsFilterResult::default().with_matching_acls(matching)
        })
        .collect();
    ResponseKind::DeleteAcls(DeleteAclsResponse::default().with_filter_results(results))
}

/// DescribeUserScramCredentials.
pub fn describe_scram(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: DescribeUserScramCredentialsRequest,
) -> HandlerResult {
    if !cluster_allowed(broker, ctx, AclOperation::Describe) {
        return Ok(ResponseKind::DescribeUserScramCredentials(
            DescribeUserScramCredentialsResponse::default()
                .with_error_code(ErrorCode::ClusterAuthorizationFailed.code())
                .with_error_message(Some(sb("Cluster authorization failed."))),
        ));
    }
    let all = broker.security.credentials.describe();
    let info = |creds: &[(ScramMechanism, i32)]| -> Vec<CredentialInfo> {
        creds
            .iter()
            .map(|(m, i)| {
                CredentialInfo::default()
                    .with_mechanism(m.code())
                    .with_iterations(*i)
            })
            .collect()
    };
    let results = match r.users.filter(|u| !u.is_empty()) {
        None => all
            .iter()
            .map(|(u, c)| {
                DescribeUserScramCredentialsResult::default()
                    .with_user(sb(u.clone()))
                    .with_credential_infos(info(c))
            })
            .collect(),
        Some(users) => {
            let mut counts: HashMap<String, usize> = HashMap::new();
            for u in &users {
                *counts.entry(u.name.to_string()).or_default() += 1;
            }
            let mut seen = std::collections::HashSet::new();
            users
                .iter()
                .filter(|u| seen.insert(u.name.to_string()))
                .map(|u| {
                    let name = u.name.to_string();
                    let result = DescribeUserScramCredentialsResult::default().with_user(u.name.clone());
                    if counts[&name] > 1 {
                        return result
                            .with_error_code(ErrorCode::DuplicateResource.code())
                            .with_error_message(Some(sb(format!(
                                "Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                            ))));
                    }
                    match all.iter().find(|(n, _)| *n == name) {
                        Some((_, c)) => result.with_credential_infos(info(c)),
                        None => result
                            .with_error_code(ErrorCode::ResourceNotFound.code())
                            .with_error_message(Some(sb(format!(
                                "Attempt to describe a user credential that does not exist: {name}"
                            )))),
                    }
                })
                .collect()
        }
    };
    Ok(ResponseKind::DescribeUserScramCredentials(
        DescribeUserScramCredentialsResponse::default().with_results(results),
    ))
}

/// AlterUserScramCredentials: the client sends salted passwords; StoredKey and ServerKey are
/// derived here and only they are stored.
pub fn alter_scram(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: AlterUserScramCredentialsRequest,
) -> HandlerResult {
    if let Some(refused) = alter_scram_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    Ok(alter_scram_with(
        &broker.security.credentials,
        &r,
        &ctx.principal().to_string(),
    ))
}

/// The users an AlterUserScramCredentials names, in order, each once.
fn scram_users(r: &AlterUserScramCredentialsRequest) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    r.deletions
        .iter()
        .map(|d| d.name.to_string())
        .chain(r.upsertions.iter().map(|u| u.name.to_string()))
        .filter(|u| seen.insert(u.clone()))
        .collect()
}

/// AlterUserScramCredentials' refusal (no ALTER on the cluster).
pub(super) fn alter_scram_refused(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: &AlterUserScramCredentialsRequest,
) -> Option<ResponseKind> {
    if cluster_allowed(broker, ctx, AclOperation::Alter) {
        return None;
    }
    let results = scram_users(r)
        .into_iter()
        .map(|u| {
            AlterUserScramCredentialsResult::default()
                .with_user(sb(u))
                .with_error_code(ErrorCode::ClusterAuthorizationFailed.code())
        })
        .collect();
    Some(ResponseKind::AlterUserScramCredentials(
        AlterUserScramCredentialsResponse::default().with_results(results),
    ))
}

/// AlterUserScramCredentials against `store` (the broker's, or the controller's copy of the
/// cluster's).
pub(super) fn alter_scram_with(
    store: &crate::security::CredentialStore,
    r: &AlterUserScramCredentialsRequest,
    principal: &str,
) -> ResponseKind {
    let users = scram_users(r);
    let mut errors: BTreeMap<String, (ErrorCode, String)> = BTreeMap::new();
    let mut deletions: BTreeMap<String, ScramMechanism> = BTreeMap::new();
    let mut upserts: BTreeMap<String, (ScramMechanism, ScramCredential)> = BTreeMap::new();
    let dup = || {
        (
            ErrorCode::DuplicateResource,
            "A user credential cannot be altered twice in the same request".to_string(),
        )
    };
    for d in &r.deletions {
        let name = d.name.to_string();
        if errors.contains_key(&name) {
            continue;
        }
        if deletions.remove(&name).is_some() {
            errors.insert(name, dup());
            continue;
        }
        let m = ScramMechanism::from_code(d.mechanism);
        let e = if name.is_empty() {
            Some((
                ErrorCode::UnacceptableCredential,
                "Username must not be empty".into(),
            ))
        } else if m.is_none() {
            Some((
                ErrorCode::UnsupportedSaslMechanism,
                "Unknown SCRAM mechanism".into(),
            ))
        } else if m.is_some_and(|m| store.get(&name, m).is_none()) {
            Some((
                ErrorCode::ResourceNotFound,
                "Attempt to delete a user credential that does not exist".into(),
            ))
        } else {
            None
        };
        match (e, m) {
            (Some(e), _) => {
                errors.insert(name, e);
            }
            (None, Some(m)) => {
                deletions.insert(name, m);
            }
            (None, None) => {}
        }
    }
    for u in &r.upsertions {
        let name = u.name.to_string();
        if errors.contains_key(&name) {
            continue;
        }
        if deletions.remove(&name).is_some() || upserts.remove(&name).is_some() {
            errors.insert(name, dup());
            continue;
        }
        let m = ScramMechanism::from_code(u.mechanism);
        let e = if name.is_empty() {
            Some((
                ErrorCode::UnacceptableCredential,
                "Username must not be empty".into(),
            ))
        } else if m.is_none() {
            Some((
                ErrorCode::UnsupportedSaslMechanism,
                "Unknown SCRAM mechanism".into(),
            ))
        } else if u.iterations < MIN_ITERATIONS {
            Some((
                ErrorCode::UnacceptableCredential,
                "Too few iterations".into(),
            ))
        } else if u.iterations > MAX_ITERATIONS {
            Some((
                ErrorCode::UnacceptableCredential,
                "Too many iterations".into(),
            ))
        } else {
            None
        };
        match (e, m) {
            (Some(e), _) => {
                errors.insert(name, e);
            }
            (None, Some(m)) => {
                let cred = ScramCredential::from_salted(
                    m,
                    u.salt.to_vec(),
                    &u.salted_password,
                    u.iterations,
                );
                upserts.insert(name, (m, cred));
            }
            (None, None) => {}
        }
    }
    let del: Vec<(String, ScramMechanism)> =
        deletions.iter().map(|(u, m)| (u.clone(), *m)).collect();
    let ups: Vec<(String, ScramMechanism, ScramCredential)> = upserts
        .iter()
        .map(|(u, (m, c))| (u.clone(), *m, c.clone()))
        .collect();
    let applied = store.apply(&del, ups);
    let results = users
        .into_iter()
        .map(|u| {
            let result = AlterUserScramCredentialsResult::default().with_user(sb(u.clone()));
            if let Some((code, msg)) = errors.get(&u) {
                return result
                    .with_error_code(code.code())
                    .with_error_message(Some(sb(msg.clone())));
            }
            match &applied {
                Ok(_) => {
                    tracing::info!(principal, user = %u, "SCRAM credential altered");
                    result
                }
                Err(e) => result
                    .with_error_code(ErrorCode::UnknownServerError.code())
                    .with_error_message(Some(sb(e.to_string()))),
            }
        })
        .collect();
    ResponseKind::AlterUserScramCredentials(
        AlterUserScramCredentialsResponse::default().with_results(results),
    )
}

/// SaslHandshake outside a SASL exchange.
pub fn sasl_handshake(_ctx: &RequestContext<'_>, _r: SaslHandshakeRequest) -> ResponseKind {
    ResponseKind::SaslHandshake(
        SaslHandshakeResponse::default().with_error_code(ErrorCode::IllegalSaslState.code()),
    )
}

/// SaslAuthenticate outside a SASL exchange.
pub fn sasl_authenticate(_ctx: &RequestContext<'_>, _r: SaslAuthenticateRequest) -> ResponseKind {
    ResponseKind::SaslAuthenticate(
        SaslAuthenticateResponse::default()
            .with_error_code(ErrorCode::IllegalSaslState.code())
            .with_error_message(Some(sb(
                "SaslAuthenticate request received after successful authentication",
            ))),
    )
}
