//! Topic and broker configuration: `odk_admin_describe_configs` and
//! `odk_admin_incremental_alter_configs` (Kafka's DescribeConfigs and IncrementalAlterConfigs,
//! librdkafka's `rd_kafka_DescribeConfigs` / `rd_kafka_IncrementalAlterConfigs`).

use std::ffi::c_char;

use odk_core::admin::{AlterConfigOp, ConfigEntry, ConfigResource};
use odradek_bindings::ClientError;

use super::quotas::{free_string, leak, unleak};
use super::{admin, core_err, odk_admin_t, settle};
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg};
use crate::topic_partition::c_string;

/// Config resource type: a topic (`name` is the topic's).
pub const ODK_RESOURCE_TOPIC: i32 = 2;
/// Config resource type: a broker (`name` is its node id in decimal, e.g. `"1"`).
pub const ODK_RESOURCE_BROKER: i32 = 4;

/// Incremental config operation: set the key to `value`.
pub const ODK_CONFIG_OP_SET: i32 = 0;
/// Incremental config operation: remove the override (back to the default).
pub const ODK_CONFIG_OP_DELETE: i32 = 1;
/// Incremental config operation: add the comma-separated items in `value` to a list value.
pub const ODK_CONFIG_OP_APPEND: i32 = 2;
/// Incremental config operation: remove the items in `value` from a list value.
pub const ODK_CONFIG_OP_SUBTRACT: i32 = 3;

/// A topic or a broker whose configuration is described or altered.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_config_resource_t {
    /// `ODK_RESOURCE_TOPIC` or `ODK_RESOURCE_BROKER`.
    pub restype: i32,
    /// The topic's name, or the broker's node id in decimal (NUL-terminated).
    pub name: *const c_char,
}

/// One change of an incremental alteration.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_config_op_t {
    /// The config key, e.g. `"retention.ms"` (NUL-terminated).
    pub name: *const c_char,
    /// `ODK_CONFIG_OP_SET`, `_DELETE`, `_APPEND` or `_SUBTRACT`.
    pub op: i32,
    /// The value (NUL-terminated); ignored (may be NULL) for `ODK_CONFIG_OP_DELETE`.
    pub value: *const c_char,
}

/// The changes to one resource's configuration.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_config_alteration_t {
    /// The resource.
    pub resource: odk_config_resource_t,
    /// `op_cnt` changes.
    pub ops: *const odk_config_op_t,
    /// Number of changes in `ops`.
    pub op_cnt: usize,
}

/// One config entry of a described resource.
#[repr(C)]
#[derive(Debug)]
pub struct odk_config_entry_t {
    /// The key (NUL-terminated).
    pub name: *const c_char,
    /// The value, NULL for a sensitive value or a key without one.
    pub value: *const c_char,
    /// Where the value comes from: Kafka's ConfigSource number (1 `DYNAMIC_TOPIC_CONFIG`, 2
    /// `DYNAMIC_BROKER_CONFIG`, 3 `DYNAMIC_DEFAULT_BROKER_CONFIG`, 4 `STATIC_BROKER_CONFIG`, 5
    /// `DEFAULT_CONFIG`, ...), librdkafka's `rd_kafka_ConfigSource_t` values.
    pub source: i32,
    /// Whether the value cannot be altered.
    pub read_only: bool,
    /// Whether the value is sensitive (and so not returned).
    pub sensitive: bool,
}

/// One resource's described configuration.
#[repr(C)]
#[derive(Debug)]
pub struct odk_resource_config_t {
    /// This resource's `odk_err_t` (`ODK_ERR_UNKNOWN_TOPIC_OR_PART` for a topic that does
    /// not exist, ...); `entries` is empty unless it is 0.
    pub err: i32,
    /// `entry_cnt` entries, in the broker's order.
    pub entries: *const odk_config_entry_t,
    /// Number of entries.
    pub entry_cnt: usize,
}

/// Reads a resource.
///
/// # Safety
/// `r.name` NULL or NUL-terminated.
unsafe fn read_resource(r: &odk_config_resource_t) -> Result<ConfigResource, ClientError> {
    // SAFETY: per the contract.
    let name = unsafe { str_arg(r.name, "resource name") }?;
    match r.restype {
        ODK_RESOURCE_TOPIC if !name.is_empty() => Ok(ConfigResource::Topic(name.to_string())),
        ODK_RESOURCE_BROKER => name.parse().map(ConfigResource::Broker).map_err(|_| {
            ClientError::invalid_arg(format!("broker resource name {name:?} is not a node id"))
        }),
        t => Err(ClientError::invalid_arg(format!(
            "invalid resource type {t} (name {name:?})"
        ))),
    }
}

fn entry(e: ConfigEntry) -> odk_config_entry_t {
    odk_config_entry_t {
        name: c_string(&e.name).into_raw(),
        value: e
            .value
            .map_or(std::ptr::null(), |v| c_string(&v).into_raw().cast_const()),
        source: i32::from(e.source.wire()),
        read_only: e.read_only,
        sensitive: e.sensitive,
    }
}

/// Describes the configuration of `resource_cnt` resources (every key, with its value, source
/// and flags), waiting up to `timeout_ms` (negative: forever). `*results` receives a new array
/// of `resource_cnt` items, in the order of `resources`, each with its own `err`. Returns the
/// call's error, else the first resource's failure (message in `errstr`), else
/// `ODK_ERR_NO_ERROR`; `*results` is filled whenever the request was answered (NULL otherwise).
///
/// Ownership: the caller frees `*results` with `odk_resource_configs_destroy(*results,
/// resource_cnt)`. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `resources` NULL or `resource_cnt` valid items; `results` NULL or
/// writable; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_describe_configs(
    a: *mut odk_admin_t,
    resources: *const odk_config_resource_t,
    resource_cnt: usize,
    results: *mut *mut odk_resource_config_t,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if results.is_null() {
            return Err(ClientError::invalid_arg("results must not be NULL"));
        }
        // SAFETY: writable per the contract.
        unsafe { *results = std::ptr::null_mut() };
        // SAFETY: per the contract.
        let items = unsafe { ffi::slice_arg(resources, resource_cnt, "resources") }?;
        let wanted = items
            .iter()
            // SAFETY: per the contract.
            .map(|r| unsafe { read_resource(r) })
            .collect::<Result<Vec<_>, _>>()?;
        if wanted.is_empty() {
            return Err(ClientError::invalid_arg("no resource to describe"));
        }
        let described = a.call(timeout_ms, a.admin.describe_configs(&wanted))?;
        let mut first = None;
        let list: Box<[odk_resource_config_t]> = described
            .into_iter()
            .map(|(resource, r)| match r {
                Ok(entries) => {
                    let entries: Box<[odk_config_entry_t]> =
                        entries.into_iter().map(entry).collect();
                    let entry_cnt = entries.len();
                    odk_resource_config_t {
                        err: 0,
                        entries: leak(entries),
                        entry_cnt,
                    }
                }
                Err(e) => {
                    let e = core_err(&e);
                    let code = e.code();
                    first.get_or_insert_with(|| {
                        ClientError::new(code, Some(format!("{resource}: {e}")))
                    });
                    odk_resource_config_t {
                        err: code,
                        entries: std::ptr::null(),
                        entry_cnt: 0,
                    }
                }
            })
            .collect();
        // SAFETY: writable per the contract; the array has resource_cnt items.
        unsafe { *results = leak(list).cast_mut() };
        first.map_or(Ok(()), Err)
    })
}

/// Frees an array from `odk_admin_describe_configs` (every entry and string it holds). NULL is
/// a no-op.
///
/// Ownership: `results` and `result_cnt` exactly as returned (`result_cnt` is the
/// `resource_cnt` of the call), unmodified. Thread safety: any thread, once.
///
/// # Safety
/// As stated.
#[no_mangle]
pub unsafe extern "C" fn odk_resource_configs_destroy(
    results: *mut odk_resource_config_t,
    result_cnt: usize,
) {
    guard((), || {
        // SAFETY: per the contract, the array odk_admin_describe_configs leaked.
        let Some(list) = (unsafe { unleak(results.cast_const(), result_cnt) }) else {
            return;
        };
        for r in list.iter() {
            // SAFETY: each entry array and string was leaked by the describe call.
            unsafe {
                if let Some(entries) = unleak(r.entries, r.entry_cnt) {
                    for e in entries.iter() {
                        free_string(e.name);
                        free_string(e.value);
                    }
                }
            }
        }
    })
}

/// Changes individual config keys of `alteration_cnt` resources (IncrementalAlterConfigs: keys
/// not named keep their values), waiting up to `timeout_ms` (negative: forever); with
/// `validate_only` the broker only checks the changes. When `results` is not NULL,
/// `results[i]` receives alteration i's `odk_err_t` (`ODK_ERR_INVALID_CONFIG`,
/// `ODK_ERR_UNKNOWN_TOPIC_OR_PART`, ...). Returns the first failure (message in `errstr`) or
/// `ODK_ERR_NO_ERROR`.
///
/// Ownership: `alterations` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `alterations` NULL or `alteration_cnt` valid items; `results` NULL or
/// `alteration_cnt` writable items; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_incremental_alter_configs(
    a: *mut odk_admin_t,
    alterations: *const odk_config_alteration_t,
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
        let mut changes = Vec::with_capacity(items.len());
        for alt in items {
            // SAFETY: per the contract.
            let resource = unsafe { read_resource(&alt.resource) }?;
            // SAFETY: per the contract.
            let ops = unsafe { ffi::slice_arg(alt.ops, alt.op_cnt, "ops") }?;
            let mut list = Vec::with_capacity(ops.len());
            for o in ops {
                // SAFETY: per the contract.
                let name = unsafe { str_arg(o.name, "config name") }?;
                let value = || {
                    // SAFETY: per the contract.
                    unsafe { str_arg(o.value, "config value") }
                };
                list.push(match o.op {
                    ODK_CONFIG_OP_SET => AlterConfigOp::set(name, value()?),
                    ODK_CONFIG_OP_DELETE => AlterConfigOp::delete(name),
                    ODK_CONFIG_OP_APPEND => AlterConfigOp::append(name, value()?),
                    ODK_CONFIG_OP_SUBTRACT => AlterConfigOp::subtract(name, value()?),
                    op => {
                        return Err(ClientError::invalid_arg(format!(
                            "invalid config operation {op} for {name:?}"
                        )))
                    }
                });
            }
            changes.push((resource, list));
        }
        let out = a.call(
            timeout_ms,
            a.admin.incremental_alter_configs(&changes, validate_only),
        )?;
        let outcomes = out.into_iter().map(|(r, o)| (r.to_string(), o)).collect();
        // SAFETY: per the contract.
        unsafe { settle(results, outcomes) }
    })
}
