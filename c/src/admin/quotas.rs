//! Client quotas (KIP-546): `odk_admin_describe_client_quotas` and
//! `odk_admin_alter_client_quotas`, with the Java client's model. An entity is a list of
//! (entity type, name) components, the name NULL for the type's default entity; the entity
//! types are `user`, `client-id` and `ip`; the keys `producer_byte_rate`, `consumer_byte_rate`,
//! `request_percentage`, `controller_mutation_rate` and `connection_creation_rate`.

use std::ffi::{c_char, CString};

use odk_core::admin::{QuotaAlteration, QuotaEntity, QuotaFilter, QuotaMatch};
use odradek_bindings::ClientError;

use super::{admin, core_err, odk_admin_t};
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg};
use crate::topic_partition::c_string;

/// Filter match type: the entity of this type named `match_name`.
pub const ODK_QUOTA_MATCH_EXACT: i32 = 0;
/// Filter match type: the type's default entity.
pub const ODK_QUOTA_MATCH_DEFAULT: i32 = 1;
/// Filter match type: any entity of the type, named or default.
pub const ODK_QUOTA_MATCH_ANY: i32 = 2;

/// One component of a quota entity.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_quota_entity_component_t {
    /// The entity type: `"user"`, `"client-id"` or `"ip"` (NUL-terminated).
    pub entity_type: *const c_char,
    /// The entity's name (NUL-terminated), or NULL for the type's default entity.
    pub entity_name: *const c_char,
}

/// One change of an alteration: set `key` to `value`, or remove `key` (`remove` true; `value`
/// is then ignored).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_quota_op_t {
    /// The quota key, e.g. `"producer_byte_rate"` (NUL-terminated).
    pub key: *const c_char,
    /// The new value (a finite number).
    pub value: f64,
    /// Remove the key instead of setting it.
    pub remove: bool,
}

/// The changes to one entity's quotas.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_quota_alteration_t {
    /// The entity: `entity_cnt` components.
    pub entity: *const odk_quota_entity_component_t,
    /// Number of components in `entity`.
    pub entity_cnt: usize,
    /// `op_cnt` changes.
    pub ops: *const odk_quota_op_t,
    /// Number of changes in `ops`.
    pub op_cnt: usize,
}

/// One component of a describe filter: which entities of `entity_type` match.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_quota_filter_component_t {
    /// The entity type (NUL-terminated).
    pub entity_type: *const c_char,
    /// `ODK_QUOTA_MATCH_EXACT`, `ODK_QUOTA_MATCH_DEFAULT` or `ODK_QUOTA_MATCH_ANY`.
    pub match_type: i32,
    /// With `ODK_QUOTA_MATCH_EXACT`, the entity's name (NUL-terminated); otherwise ignored.
    pub match_name: *const c_char,
}

/// One quota of a described entity.
#[repr(C)]
#[derive(Debug)]
pub struct odk_quota_value_t {
    /// The quota key (NUL-terminated).
    pub key: *const c_char,
    /// Its value.
    pub value: f64,
}

/// A described entity with its quotas.
#[repr(C)]
#[derive(Debug)]
pub struct odk_quota_entry_t {
    /// The entity: `entity_cnt` components (`entity_name` NULL for a default entity), sorted by
    /// entity type.
    pub entity: *const odk_quota_entity_component_t,
    /// Number of components in `entity`.
    pub entity_cnt: usize,
    /// `value_cnt` quotas, sorted by key.
    pub values: *const odk_quota_value_t,
    /// Number of quotas in `values`.
    pub value_cnt: usize,
}

/// Reads an entity.
///
/// # Safety
/// `p` NULL or `n` components with valid strings.
unsafe fn read_entity(
    p: *const odk_quota_entity_component_t,
    n: usize,
) -> Result<QuotaEntity, ClientError> {
    // SAFETY: per the contract.
    let items = unsafe { ffi::slice_arg(p, n, "entity") }?;
    let mut entity = QuotaEntity::new();
    for c in items {
        // SAFETY: per the contract.
        let entity_type = unsafe { str_arg(c.entity_type, "entity type") }?;
        let name = if c.entity_name.is_null() {
            None
        } else {
            // SAFETY: per the contract.
            Some(unsafe { str_arg(c.entity_name, "entity name") }?.to_string())
        };
        if entity.insert(entity_type.to_string(), name).is_some() {
            return Err(ClientError::invalid_arg(format!(
                "entity type {entity_type:?} appears twice in one entity"
            )));
        }
    }
    Ok(entity)
}

/// `{type=name, type=<default>}`, for error messages.
fn describe_entity(e: &QuotaEntity) -> String {
    let parts: Vec<String> = e
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Sets or removes client quotas: `alteration_cnt` alterations, one per entity, waiting up to
/// `timeout_ms` (negative: forever). With `validate_only` the broker checks them and changes
/// nothing. When `results` is not NULL, `results[i]` receives alteration i's `odk_err_t`:
/// `ODK_ERR_INVALID_REQUEST` (with Kafka's message) for an unknown key or entity type, or a
/// value that is not positive or not whole where the key needs it;
/// `ODK_ERR_CLUSTER_AUTHORIZATION_FAILED` without ALTER_CONFIGS on the cluster. Returns the
/// first failure (the call's, or the first alteration's, with its entity in `errstr`), or
/// `ODK_ERR_NO_ERROR` when every alteration was applied. A value that is not finite (NaN,
/// infinity) returns `ODK_ERR__INVALID_ARG` naming its key before anything is sent.
///
/// Ownership: `alterations` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `alterations` NULL or `alteration_cnt` valid items (their arrays of the
/// stated lengths, strings NUL-terminated); `results` NULL or `alteration_cnt` writable
/// items; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn odk_admin_alter_client_quotas(
    a: *mut odk_admin_t,
    alterations: *const odk_quota_alteration_t,
    alteration_cnt: usize,
    validate_only: bool,
    results: *mut i32,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let items = unsafe { ffi::slice_arg(alterations, alteration_cnt, "alterations") }?;
        let mut wanted = Vec::with_capacity(items.len());
        for item in items {
            // SAFETY: per the contract.
            let entity = unsafe { read_entity(item.entity, item.entity_cnt) }?;
            // SAFETY: per the contract.
            let ops = unsafe { ffi::slice_arg(item.ops, item.op_cnt, "ops") }?;
            let mut changes = Vec::with_capacity(ops.len());
            for op in ops {
                // SAFETY: per the contract.
                let key = unsafe { str_arg(op.key, "quota key") }?;
                if !op.remove && !op.value.is_finite() {
                    return Err(ClientError::invalid_arg(format!(
                        "quota {key:?} of {}: the value must be a finite number, not {}",
                        describe_entity(&entity),
                        op.value
                    )));
                }
                changes.push((key.to_string(), (!op.remove).then_some(op.value)));
            }
            wanted.push(QuotaAlteration {
                entity,
                ops: changes,
            });
        }
        let out = a.call(
            timeout_ms,
            a.admin.alter_client_quotas(&wanted, validate_only),
        )?;
        let mut first = None;
        for (i, (entity, r)) in out.into_iter().enumerate() {
            let code = match r {
                Ok(()) => 0,
                Err(e) => {
                    let e = core_err(&e);
                    let code = e.code();
                    first.get_or_insert_with(|| {
                        ClientError::new(code, Some(format!("{}: {e}", describe_entity(&entity))))
                    });
                    code
                }
            };
            if !results.is_null() && i < items.len() {
                // SAFETY: per the contract, `alteration_cnt` writable items.
                unsafe { *results.add(i) = code };
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Describes the quotas of the entities `components` select (every component must match;
/// with `strict`, only entities with no other entity type; no component: every entity), as a
/// new array in `*entries` (NULL when none) of `*entry_cnt` items, waiting up to `timeout_ms`
/// (negative: forever). Errors: `ODK_ERR_INVALID_REQUEST` for a malformed filter,
/// `ODK_ERR_UNSUPPORTED_VERSION` for an unknown entity type (Kafka's answer),
/// `ODK_ERR_CLUSTER_AUTHORIZATION_FAILED`, `ODK_ERR__INVALID_ARG` for a bad match type or an
/// exact match without a name.
///
/// Ownership: the caller frees the array with `odk_quota_entries_destroy(*entries,
/// *entry_cnt)`; `components` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `components` NULL or `component_cnt` valid items; `entries` and
/// `entry_cnt` NULL or writable; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn odk_admin_describe_client_quotas(
    a: *mut odk_admin_t,
    components: *const odk_quota_filter_component_t,
    component_cnt: usize,
    strict: bool,
    entries: *mut *mut odk_quota_entry_t,
    entry_cnt: *mut usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if entries.is_null() || entry_cnt.is_null() {
            return Err(ClientError::invalid_arg(
                "entries and entry_cnt must not be NULL",
            ));
        }
        // SAFETY: per the contract.
        let items = unsafe { ffi::slice_arg(components, component_cnt, "components") }?;
        let mut filter = QuotaFilter {
            components: Vec::with_capacity(items.len()),
            strict,
        };
        for c in items {
            // SAFETY: per the contract.
            let entity_type = unsafe { str_arg(c.entity_type, "entity type") }?;
            let m = match c.match_type {
                ODK_QUOTA_MATCH_EXACT => {
                    // SAFETY: per the contract.
                    let name = unsafe { str_arg(c.match_name, "match_name of an exact match") }?;
                    QuotaMatch::Exact(name.to_string())
                }
                ODK_QUOTA_MATCH_DEFAULT => QuotaMatch::Default,
                ODK_QUOTA_MATCH_ANY => QuotaMatch::Any,
                other => {
                    return Err(ClientError::invalid_arg(format!(
                        "filter component {entity_type:?}: unknown match type {other}"
                    )))
                }
            };
            filter.components.push((entity_type.to_string(), m));
        }
        let described = a.call(timeout_ms, a.admin.describe_client_quotas(&filter))?;
        let list: Box<[odk_quota_entry_t]> = described
            .into_iter()
            .map(|(entity, values)| {
                let entity: Box<[odk_quota_entity_component_t]> = entity
                    .into_iter()
                    .map(|(t, n)| odk_quota_entity_component_t {
                        entity_type: c_string(&t).into_raw(),
                        entity_name: n.map_or(std::ptr::null(), |n| c_string(&n).into_raw()),
                    })
                    .collect();
                let values: Box<[odk_quota_value_t]> = values
                    .into_iter()
                    .map(|(k, v)| odk_quota_value_t {
                        key: c_string(&k).into_raw(),
                        value: v,
                    })
                    .collect();
                let (entity_cnt, value_cnt) = (entity.len(), values.len());
                odk_quota_entry_t {
                    entity: leak(entity),
                    entity_cnt,
                    values: leak(values),
                    value_cnt,
                }
            })
            .collect();
        let n = list.len();
        let p = if n == 0 {
            std::ptr::null_mut()
        } else {
            Box::into_raw(list).cast::<odk_quota_entry_t>()
        };
        // SAFETY: both checked non-NULL; writable per the contract.
        unsafe {
            *entries = p;
            *entry_cnt = n;
        }
        Ok(())
    })
}

/// A boxed slice as a pointer to its first item (NULL when empty), freed by [`unleak`].
pub(super) fn leak<T>(items: Box<[T]>) -> *const T {
    if items.is_empty() {
        std::ptr::null()
    } else {
        Box::into_raw(items).cast::<T>().cast_const()
    }
}

/// Takes back a slice from [`leak`].
///
/// # Safety
/// `p` and `n` exactly as `leak` returned them (with the slice's length), not yet taken back.
pub(super) unsafe fn unleak<T>(p: *const T, n: usize) -> Option<Box<[T]>> {
    if p.is_null() || n == 0 {
        return None;
    }
    // SAFETY: per the contract, the boxed slice leaked by `leak`.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.cast_mut(), n)) })
}

/// Frees a string from `CString::into_raw` (NULL is a no-op).
///
/// # Safety
/// `p` NULL or from `CString::into_raw`, freed once.
pub(super) unsafe fn free_string(p: *const c_char) {
    if !p.is_null() {
        // SAFETY: per the contract.
        drop(unsafe { CString::from_raw(p.cast_mut()) });
    }
}

/// Frees an array from `odk_admin_describe_client_quotas` (every entity, name, key and value
/// it holds). NULL is a no-op.
///
/// Ownership: `entries` and `entry_cnt` exactly as returned, unmodified. Thread safety: any
/// thread, once.
///
/// # Safety
/// As stated.
#[no_mangle]
pub unsafe extern "C" fn odk_quota_entries_destroy(
    entries: *mut odk_quota_entry_t,
    entry_cnt: usize,
) {
    guard((), || {
        // SAFETY: per the contract, the array odk_admin_describe_client_quotas leaked.
        let Some(list) = (unsafe { unleak(entries.cast_const(), entry_cnt) }) else {
            return;
        };
        for e in list.iter() {
            // SAFETY: each entry's arrays and strings were leaked by the describe call.
            unsafe {
                if let Some(entity) = unleak(e.entity, e.entity_cnt) {
                    for c in entity.iter() {
                        free_string(c.entity_type);
                        free_string(c.entity_name);
                    }
                }
                if let Some(values) = unleak(e.values, e.value_cnt) {
                    for v in values.iter() {
                        free_string(v.key);
                    }
                }
            }
        }
    })
}
