//! ACL and SCRAM credential calls of `odradek.admin.AdminClient`, in plain tuples for the
//! Python half (`odradek/_acl.py`, `odradek/_scram.py`).
//!
//! ACL bindings travel as `(restype, name, pattern, principal, host, operation, permission)`
//! with confluent-kafka's enum values (the same numbers as Kafka's wire, BROKER = CLUSTER = 4);
//! filters have `None` for names that match anything.

use std::sync::Arc;

use odradek::admin::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType,
    ScramAlteration, ScramCredentialInfo, ScramMechanism,
};
use odradek::security::Secret;
use odradek::Admin;
use odradek_bindings::runtime;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::admin::{bounded, core_error, settle, settle_with};

/// An ACL binding as the Python half passes it.
pub type BindingArgs = (i8, String, i8, String, String, i8, i8);
/// An ACL filter as the Python half passes it.
pub type FilterArgs = (
    i8,
    Option<String>,
    i8,
    Option<String>,
    Option<String>,
    i8,
    i8,
);
/// One SCRAM alteration: `(user, mechanism, iterations, password, salt)`; no password means
/// a deletion.
pub type AlterationArgs = (String, i8, i32, Option<Vec<u8>>, Option<Vec<u8>>);

fn binding((t, name, p, principal, host, op, perm): BindingArgs) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_wire(t),
        name,
        pattern_type: PatternType::from_wire(p),
        principal,
        host,
        operation: AclOperation::from_wire(op),
        permission: AclPermission::from_wire(perm),
    }
}

fn filter((t, name, p, principal, host, op, perm): FilterArgs) -> AclBindingFilter {
    AclBindingFilter {
        resource_type: ResourceType::from_wire(t),
        name,
        pattern_type: PatternType::from_wire(p),
        principal,
        host,
        operation: AclOperation::from_wire(op),
        permission: AclPermission::from_wire(perm),
    }
}

fn binding_tuple(b: AclBinding) -> BindingArgs {
    (
        b.resource_type.wire(),
        b.name,
        b.pattern_type.wire(),
        b.principal,
        b.host,
        b.operation.wire(),
        b.permission.wire(),
    )
}

fn alteration(
    (user, mechanism, iterations, password, salt): AlterationArgs,
) -> PyResult<ScramAlteration> {
    let mechanism = ScramMechanism::from_wire(mechanism);
    Ok(match password {
        None => ScramAlteration::Delete { user, mechanism },
        Some(bytes) => {
            let password = String::from_utf8(bytes)
                .map_err(|_| PyValueError::new_err("'password' must be UTF-8 encoded"))?;
            ScramAlteration::Upsert {
                user,
                info: ScramCredentialInfo {
                    mechanism,
                    iterations,
                },
                password: Secret::new(password),
                salt,
            }
        }
    })
}

/// CreateAcls: each future gets None or its binding's error.
pub fn create_acls(
    admin: Arc<Admin>,
    handle: &Handle,
    acls: Vec<BindingArgs>,
    timeout: Option<f64>,
    futures: Vec<Py<PyAny>>,
) {
    let acls: Vec<AclBinding> = acls.into_iter().map(binding).collect();
    runtime::spawn_then(
        handle,
        async move {
            bounded(timeout, admin.create_acls(&acls))
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
        },
        move |results| settle(futures, results),
    );
}

/// DescribeAcls: `future` gets the list of matching binding tuples.
pub fn describe_acls(
    admin: Arc<Admin>,
    handle: &Handle,
    wanted: FilterArgs,
    timeout: Option<f64>,
    future: Py<PyAny>,
) {
    let wanted = filter(wanted);
    runtime::spawn_then(
        handle,
        async move {
            bounded(timeout, admin.describe_acls(&wanted))
                .await
                .map(|acls| vec![Ok(acls)])
        },
        move |results| {
            settle_with(vec![future], results, |py, acls| {
                let acls: Vec<BindingArgs> = acls.into_iter().map(binding_tuple).collect();
                Ok(acls.into_pyobject(py)?.into_any().unbind())
            })
        },
    );
}

/// DeleteAcls: each future gets `[(binding tuple, KafkaError or None)]`, the ACLs its filter
/// matched.
pub fn delete_acls(
    admin: Arc<Admin>,
    handle: &Handle,
    filters: Vec<FilterArgs>,
    timeout: Option<f64>,
    futures: Vec<Py<PyAny>>,
) {
    let filters: Vec<AclBindingFilter> = filters.into_iter().map(filter).collect();
    runtime::spawn_then(
        handle,
        async move {
            bounded(timeout, admin.delete_acls(&filters))
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
        },
        move |results| {
            settle_with(futures, results, |py, matched| {
                let mut out = Vec::with_capacity(matched.len());
                for (acl, result) in matched {
                    let error = match result {
                        Ok(()) => None,
                        Err(e) => Some(core_error(py, &e)?),
                    };
                    out.push((binding_tuple(acl), error));
                }
                Ok(out.into_pyobject(py)?.into_any().unbind())
            })
        },
    );
}

/// DescribeUserScramCredentials (`users`: None for every user): `future` gets
/// `[(user, KafkaError or None, [(mechanism, iterations)])]`.
pub fn describe_user_scram_credentials(
    admin: Arc<Admin>,
    handle: &Handle,
    users: Option<Vec<String>>,
    timeout: Option<f64>,
    future: Py<PyAny>,
) {
    runtime::spawn_then(
        handle,
        async move {
            let names: Option<Vec<&str>> = users
                .as_ref()
                .map(|u| u.iter().map(String::as_str).collect());
            bounded(
                timeout,
                admin.describe_user_scram_credentials(names.as_deref()),
            )
            .await
            .map(|r| vec![Ok(r)])
        },
        move |results| {
            settle_with(vec![future], results, |py, users| {
                let mut out = Vec::with_capacity(users.len());
                for (user, result) in users {
                    let (error, infos) = match result {
                        Ok(infos) => (
                            None,
                            infos
                                .into_iter()
                                .map(|i| (i.mechanism.wire(), i.iterations))
                                .collect(),
                        ),
                        Err(e) => (Some(core_error(py, &e)?), Vec::new()),
                    };
                    out.push((user, error, infos));
                }
                Ok(out.into_pyobject(py)?.into_any().unbind())
            })
        },
    );
}

/// AlterUserScramCredentials: one future per distinct user in first-seen order, None or the
/// user's error.
pub fn alter_user_scram_credentials(
    admin: Arc<Admin>,
    handle: &Handle,
    alterations: Vec<AlterationArgs>,
    timeout: Option<f64>,
    futures: Vec<Py<PyAny>>,
) -> PyResult<()> {
    let alterations = alterations
        .into_iter()
        .map(alteration)
        .collect::<PyResult<Vec<_>>>()?;
    runtime::spawn_then(
        handle,
        async move {
            bounded(timeout, admin.alter_user_scram_credentials(&alterations))
                .await
                .map(|r| r.into_iter().map(|(_, x)| x).collect())
        },
        move |results| settle(futures, results),
    );
    Ok(())
}
