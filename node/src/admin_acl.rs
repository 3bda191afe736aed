//! ACL calls of `NativeAdmin` (KafkaJS's `createAcls`, `describeAcls`, `deleteAcls`), with
//! KafkaJS's numeric enum values (the same as Kafka's wire: `AclResourceTypes`,
//! `ResourcePatternTypes`, `AclOperationTypes`, `AclPermissionTypes`).

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use odradek::admin::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType,
};

use crate::admin::{reason, NativeAdmin};
use crate::{error, rt};

/// An ACL as KafkaJS spells it (an `AclEntry`), or a filter when the names are absent.
#[napi(object)]
pub struct AclSpec {
    /// `AclResourceTypes` value.
    pub resource_type: i32,
    /// Resource name (absent in a filter: any).
    pub resource_name: Option<String>,
    /// `ResourcePatternTypes` value.
    pub resource_pattern_type: i32,
    /// Principal, e.g. `User:alice` (absent in a filter: any).
    pub principal: Option<String>,
    /// Host, `*` for any (absent in a filter: any).
    pub host: Option<String>,
    /// `AclOperationTypes` value.
    pub operation: i32,
    /// `AclPermissionTypes` value.
    pub permission_type: i32,
}

/// One ACL a delete filter matched.
#[napi(object)]
pub struct MatchingAcl {
    /// Encoded error, null when it was deleted.
    pub error: Option<String>,
    /// The ACL.
    pub acl: AclSpec,
}

/// One delete filter's outcome.
#[napi(object)]
pub struct DeleteAclsResult {
    /// Encoded error of the filter, null on success.
    pub error: Option<String>,
    /// The ACLs it matched.
    pub matching_acls: Vec<MatchingAcl>,
}

/// A wire enum value from JavaScript; out-of-range numbers are refused.
fn wire(value: i32, what: &str) -> napi::Result<i8> {
    i8::try_from(value).map_err(|_| error::invalid(format!("invalid {what} {value}")))
}

fn required(value: Option<String>, what: &str) -> napi::Result<String> {
    value.ok_or_else(|| error::invalid(format!("Invalid ACL, the {what} has to be a valid string")))
}

fn binding(a: AclSpec) -> napi::Result<AclBinding> {
    Ok(AclBinding {
        resource_type: ResourceType::from_wire(wire(a.resource_type, "resource type")?),
        name: required(a.resource_name, "resourceName")?,
        pattern_type: PatternType::from_wire(wire(a.resource_pattern_type, "pattern type")?),
        principal: required(a.principal, "principal")?,
        host: required(a.host, "host")?,
        operation: AclOperation::from_wire(wire(a.operation, "operation")?),
        permission: AclPermission::from_wire(wire(a.permission_type, "permission type")?),
    })
}

fn filter(a: AclSpec) -> napi::Result<AclBindingFilter> {
    Ok(AclBindingFilter {
        resource_type: ResourceType::from_wire(wire(a.resource_type, "resource type")?),
        name: a.resource_name,
        pattern_type: PatternType::from_wire(wire(a.resource_pattern_type, "pattern type")?),
        principal: a.principal,
        host: a.host,
        operation: AclOperation::from_wire(wire(a.operation, "operation")?),
        permission: AclPermission::from_wire(wire(a.permission_type, "permission type")?),
    })
}

fn spec(b: AclBinding) -> AclSpec {
    AclSpec {
        resource_type: i32::from(b.resource_type.wire()),
        resource_name: Some(b.name),
        resource_pattern_type: i32::from(b.pattern_type.wire()),
        principal: Some(b.principal),
        host: Some(b.host),
        operation: i32::from(b.operation.wire()),
        permission_type: i32::from(b.permission.wire()),
    }
}

#[napi]
impl NativeAdmin {
    /// CreateAcls: per ACL, null or its encoded error.
    #[napi(ts_return_type = "Promise<Array<string | null>>")]
    pub fn create_acls<'env>(
        &self,
        env: &'env Env,
        acls: Vec<AclSpec>,
    ) -> napi::Result<PromiseRaw<'env, Vec<Option<String>>>> {
        let acls = acls
            .into_iter()
            .map(binding)
            .collect::<napi::Result<Vec<_>>>()?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core.create_acls(&acls).await.map_err(error::request)?;
            Ok(results
                .into_iter()
                .map(|(_, r)| r.err().map(reason))
                .collect())
        })
    }

    /// DescribeAcls: the ACLs `filter` selects (its error rejects the promise).
    #[napi(ts_return_type = "Promise<Array<AclSpec>>")]
    pub fn describe_acls<'env>(
        &self,
        env: &'env Env,
        wanted: AclSpec,
    ) -> napi::Result<PromiseRaw<'env, Vec<AclSpec>>> {
        let wanted = filter(wanted)?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let acls = core.describe_acls(&wanted).await.map_err(error::request)?;
            Ok(acls.into_iter().map(spec).collect())
        })
    }

    /// DeleteAcls: per filter, its error or the ACLs it matched.
    #[napi(ts_return_type = "Promise<Array<DeleteAclsResult>>")]
    pub fn delete_acls<'env>(
        &self,
        env: &'env Env,
        filters: Vec<AclSpec>,
    ) -> napi::Result<PromiseRaw<'env, Vec<DeleteAclsResult>>> {
        let filters = filters
            .into_iter()
            .map(filter)
            .collect::<napi::Result<Vec<_>>>()?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core.delete_acls(&filters).await.map_err(error::request)?;
            Ok(results
                .into_iter()
                .map(|(_, r)| match r {
                    Ok(matched) => DeleteAclsResult {
                        error: None,
                        matching_acls: matched
                            .into_iter()
                            .map(|(acl, r)| MatchingAcl {
                                error: r.err().map(reason),
                                acl: spec(acl),
                            })
                            .collect(),
                    },
                    Err(e) => DeleteAclsResult {
                        error: Some(reason(e)),
                        matching_acls: Vec::new(),
                    },
                })
                .collect())
        })
    }
}
