//! ACLs and SCRAM credentials in cluster mode: they live in the metadata log (KRaft's
//! AccessControlEntry / UserScramCredential records), so every broker authorizes and
//! authenticates with the same ones. A broker checks CreateAcls, DeleteAcls and
//! AlterUserScramCredentials as on a single node (authorizer configured, ALTER on the cluster),
//! forwards them to the active controller, and answers once its own image has the change. The
//! controller runs the single node's logic against a copy of the image's ACLs or credentials
//! and writes the difference. Every broker applies the image's ACLs and credentials as they
//! change (`server/mod.rs`); the local `acls.json` / SCRAM file is not used in cluster mode.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, CreateAclsRequest, DeleteAclsRequest, ResponseKind,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::HandlerResult;
use super::security_admin as local;
use crate::broker::Broker;
use crate::cluster::image::MetadataImage;
use crate::cluster::records::{MetadataRecord, ScramCredentialRecord};
use crate::cluster::ClusterNode;
use crate::security::acl::AclBinding;
use crate::security::scram::ScramMechanism;
use crate::security::{Authorizer, CredentialStore};

/// How long a broker waits for its image to show a change the controller made.
const SETTLE: Duration = Duration::from_secs(10);
/// Who the controller's logs name for a forwarded change.
const FORWARDED: &str = "forwarded by a broker";

/// Waits (bounded) until `done` holds.
async fn settle(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + SETTLE;
    while !done() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The ACLs of `image` in a scratch authorizer.
fn acl_copy(image: &MetadataImage) -> Authorizer {
    let scratch = Authorizer::in_memory(&[], false);
    scratch.replace_all(image.acls.clone());
    scratch
}

/// The records that turn `before` into `after`.
fn acl_changes(before: &[AclBinding], after: Vec<AclBinding>) -> Vec<MetadataRecord> {
    let mut records: Vec<MetadataRecord> = before
        .iter()
        .filter(|b| !after.contains(b))
        .map(|b| MetadataRecord::RemoveAcl { binding: b.clone() })
        .collect();
    records.extend(
        after
            .into_iter()
            .filter(|b| !before.contains(b))
            .map(|binding| MetadataRecord::Acl { binding }),
    );
    records
}

/// The image's credentials as (user, mechanism, credential).
fn image_credentials(
    image: &MetadataImage,
) -> Vec<(
    String,
    ScramMechanism,
    crate::security::scram::ScramCredential,
)> {
    let mut out = Vec::new();
    for (user, creds) in &image.scram {
        for (mechanism, record) in creds {
            match (ScramMechanism::from_name(mechanism), record.credential()) {
                (Some(m), Some(c)) => out.push((user.clone(), m, c)),
                _ => {
                    tracing::warn!(user = %user, mechanism = %mechanism, "unreadable SCRAM credential in the metadata log")
                }
            }
        }
    }
    out
}

/// Applies the image's ACLs and SCRAM credentials to this broker's stores.
pub fn apply_image(broker: &Broker, image: &MetadataImage) {
    if let Some(authorizer) = broker.security.authorizer.as_ref() {
        if authorizer.bindings() != image.acls {
            authorizer.replace_all(image.acls.clone());
        }
    }
    let wanted = image_credentials(image);
    if broker.security.credentials.entries() != wanted {
        broker.security.credentials.replace_all(wanted);
    }
}

/// CreateAcls on a broker in cluster mode.
pub async fn create_acls(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: CreateAclsRequest,
) -> HandlerResult {
    if let Some(refused) = local::create_acls_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    let wanted: Vec<Option<AclBinding>> = r
        .creations
        .iter()
        .map(|c| local::binding_of(c, ctx.api_version).ok())
        .collect();
    let timeout = super::cluster_admin::timeout_of(30_000);
    let answer = super::cluster_admin::forward(
        node,
        &r,
        timeout,
        |a: &kafka_protocol::messages::CreateAclsResponse| {
            a.results
                .iter()
                .any(|x| x.error_code == ErrorCode::NotController.code())
        },
    )
    .await?;
    let created: Vec<AclBinding> = answer
        .results
        .iter()
        .zip(wanted)
        .filter(|(x, _)| x.error_code == 0)
        .filter_map(|(_, b)| b)
        .collect();
    for b in &created {
        tracing::info!(principal = %ctx.principal(), acl = ?b, "ACL created");
    }
    if let Some(authorizer) = broker.security.authorizer.as_ref() {
        settle(|| {
            let now = authorizer.bindings();
            created.iter().all(|b| now.contains(b))
        })
        .await;
    }
    Ok(ResponseKind::CreateAcls(answer))
}

/// Runs `change` (the single node's logic) on a copy of the image's ACLs, under the
/// controller's write lock, and writes what it changed.
async fn change_acls(
    node: &ClusterNode,
    change: impl FnOnce(&Authorizer) -> ResponseKind,
) -> crate::Result<ResponseKind> {
    super::controller_ops::controller(node)?
        .write_records(|image| {
            let scratch = acl_copy(image);
            let answer = change(&scratch);
            Ok((acl_changes(&image.acls, scratch.bindings()), answer))
        })
        .await
}

/// CreateAcls on the controller.
pub async fn create_acls_on_controller(
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: CreateAclsRequest,
) -> ResponseKind {
    let version = ctx.api_version;
    change_acls(node, |a| local::create_acls_with(a, &r, version, FORWARDED))
        .await
        .unwrap_or_else(|e| local::all_creations(&r, e.code(), &e.to_string()))
}

/// DeleteAcls on a broker in cluster mode.
pub async fn delete_acls(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: DeleteAclsRequest,
) -> HandlerResult {
    if let Some(refused) = local::delete_acls_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    let timeout = super::cluster_admin::timeout_of(30_000);
    let answer = super::cluster_admin::forward(
        node,
        &r,
        timeout,
        |a: &kafka_protocol::messages::DeleteAclsResponse| {
            a.filter_results
                .iter()
                .any(|x| x.error_code == ErrorCode::NotController.code())
        },
    )
    .await?;
    let removed: Vec<(i8, String, i8, String, String, i8, i8)> = answer
        .filter_results
        .iter()
        .flat_map(|f| f.matching_acls.iter())
        .map(|m| {
            (
                m.resource_type,
                m.resource_name.to_string(),
                m.pattern_type,
                m.principal.to_string(),
                m.host.to_string(),
                m.operation,
                m.permission_type,
            )
        })
        .collect();
    tracing::info!(principal = %ctx.principal(), deleted = removed.len(), "ACLs deleted");
    if let Some(authorizer) = broker.security.authorizer.as_ref() {
        settle(|| {
            authorizer.bindings().iter().all(|b| {
                !removed.contains(&(
                    b.resource_type.code(),
                    b.name.clone(),
                    b.pattern_type.code(),
                    b.principal.clone(),
                    b.host.clone(),
                    b.operation.code(),
                    b.permission.code(),
                ))
            })
        })
        .await;
    }
    Ok(ResponseKind::DeleteAcls(answer))
}

/// DeleteAcls on the controller.
pub async fn delete_acls_on_controller(
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: DeleteAclsRequest,
) -> ResponseKind {
    let version = ctx.api_version;
    change_acls(node, |a| local::delete_acls_with(a, &r, version, FORWARDED))
        .await
        .unwrap_or_else(|e| local::all_filters(&r, e.code(), &e.to_string()))
}

/// AlterUserScramCredentials on a broker in cluster mode.
pub async fn alter_scram(
    broker: &Broker,
    node: &ClusterNode,
    ctx: &RequestContext<'_>,
    r: AlterUserScramCredentialsRequest,
) -> HandlerResult {
    if let Some(refused) = local::alter_scram_refused(broker, ctx, &r) {
        return Ok(refused);
    }
    let timeout = super::cluster_admin::timeout_of(30_000);
    let answer = super::cluster_admin::forward(
        node,
        &r,
        timeout,
        |a: &kafka_protocol::messages::AlterUserScramCredentialsResponse| {
            a.results
                .iter()
                .any(|x| x.error_code == ErrorCode::NotController.code())
        },
    )
    .await?;
    let accepted: BTreeSet<String> = answer
        .results
        .iter()
        .filter(|x| x.error_code == 0)
        .map(|x| x.user.to_string())
        .collect();
    // What the credentials must look like here once the change arrived.
    let mut expected: BTreeMap<(String, i8), Option<i32>> = BTreeMap::new();
    for d in r
        .deletions
        .iter()
        .filter(|d| accepted.contains(d.name.as_str()))
    {
        expected.insert((d.name.to_string(), d.mechanism), None);
    }
    for u in r
        .upsertions
        .iter()
        .filter(|u| accepted.contains(u.name.as_str()))
    {
        expected.insert((u.name.to_string(), u.mechanism), Some(u.iterations));
    }
    for user in &accepted {
        tracing::info!(principal = %ctx.principal(), user = %user, "SCRAM credential altered");
    }
    let store = &broker.security.credentials;
    settle(|| {
        expected.iter().all(|((user, mechanism), iterations)| {
            let found = ScramMechanism::from_code(*mechanism)
                .and_then(|m| store.get(user, m))
                .map(|c| c.iterations);
            found == *iterations
        })
    })
    .await;
    Ok(ResponseKind::AlterUserScramCredentials(answer))
}

/// AlterUserScramCredentials on the controller.
pub async fn alter_scram_on_controller(
    node: &ClusterNode,
    r: AlterUserScramCredentialsRequest,
) -> ResponseKind {
    use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
    let outcome = match super::controller_ops::controller(node) {
        Ok(c) => {
            c.write_records(|image| {
                let scratch = CredentialStore::in_memory();
                let before = image_credentials(image);
                scratch.replace_all(before.clone());
                let answer = local::alter_scram_with(&scratch, &r, FORWARDED);
                Ok((scram_changes(&before, scratch.entries()), answer))
            })
            .await
        }
        Err(e) => Err(e),
    };
    outcome.unwrap_or_else(|e| {
        let mut seen = BTreeSet::new();
        let results = r
            .deletions
            .iter()
            .map(|d| d.name.clone())
            .chain(r.upsertions.iter().map(|u| u.name.clone()))
            .filter(|u| seen.insert(u.to_string()))
            .map(|u| {
                AlterUserScramCredentialsResult::default()
                    .with_user(u)
                    .with_error_code(e.code().code())
            })
            .collect();
        ResponseKind::AlterUserScramCredentials(
            kafka_protocol::messages::AlterUserScramCredentialsResponse::default()
                .with_results(results),
        )
    })
}

type Credentials = Vec<(
    String,
    ScramMechanism,
    crate::security::scram::ScramCredential,
)>;

/// The records that turn the credentials `before` into `after`.
fn scram_changes(before: &Credentials, after: Credentials) -> Vec<MetadataRecord> {
    let mut records: Vec<MetadataRecord> = before
        .iter()
        .filter(|(u, m, _)| !after.iter().any(|(u2, m2, _)| u2 == u && m2 == m))
        .map(|(u, m, _)| MetadataRecord::RemoveScramCredential {
            user: u.clone(),
            mechanism: m.name().to_string(),
        })
        .collect();
    records.extend(
        after
            .into_iter()
            .filter(|entry| !before.contains(entry))
            .map(|(user, m, c)| MetadataRecord::ScramCredential {
                user,
                mechanism: m.name().to_string(),
                credential: ScramCredentialRecord::of(&c),
            }),
    );
    records
}
