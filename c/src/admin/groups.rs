//! Consumer groups and records: list, describe and delete groups; list, alter and delete a
//! group's committed offsets; delete records (librdkafka's `rd_kafka_ListConsumerGroups`,
//! `DescribeConsumerGroups`, `DeleteGroups`, `ListConsumerGroupOffsets`,
//! `AlterConsumerGroupOffsets`, `DeleteConsumerGroupOffsets`, `DeleteRecords`).

use std::collections::HashMap;
use std::ffi::c_char;

use odk_core::admin::{GroupDescription, GroupMember};
use odk_core::producer::TopicPartition;
use odradek_bindings::ClientError;

use super::quotas::{free_string, leak, unleak};
use super::{admin, core_err, odk_admin_t, settle};
use crate::consumer::ODK_OFFSET_INVALID;
use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg};
use crate::topic_partition::{self, c_string, odk_topic_partition_t};

/// A group as `odk_admin_list_groups` reports it.
#[repr(C)]
#[derive(Debug)]
pub struct odk_group_listing_t {
    /// Group id (NUL-terminated).
    pub group_id: *const c_char,
    /// `"consumer"` for consumer groups, `""` for groups that only commit offsets.
    pub protocol_type: *const c_char,
    /// `"Stable"`, `"Empty"`, `"PreparingRebalance"`, `"CompletingRebalance"`, `"Dead"`, ...
    /// (`""` when the broker does not say).
    pub state: *const c_char,
    /// `"classic"` or `"consumer"` (KIP-848); `""` when the broker does not say.
    pub group_type: *const c_char,
}

/// A member of a described group.
#[repr(C)]
#[derive(Debug)]
pub struct odk_group_member_t {
    /// Member id.
    pub member_id: *const c_char,
    /// `group.instance.id` of a static member, NULL otherwise.
    pub group_instance_id: *const c_char,
    /// The member's `client.id`.
    pub client_id: *const c_char,
    /// The member's host as the broker saw it.
    pub client_host: *const c_char,
    /// Its assigned partitions (offsets `ODK_OFFSET_INVALID`), `assignment_cnt` items.
    pub assignment: *const odk_topic_partition_t,
    /// Number of assigned partitions.
    pub assignment_cnt: usize,
}

/// A described group.
#[repr(C)]
#[derive(Debug)]
pub struct odk_group_description_t {
    /// Group id.
    pub group_id: *const c_char,
    /// This group's `odk_err_t`; the other fields are empty strings unless it is 0.
    pub err: i32,
    /// State (`"Stable"`, `"Empty"`, ..., `"Dead"` for a group that does not exist).
    pub state: *const c_char,
    /// Protocol type (`"consumer"`, or `""` for a group with no members).
    pub protocol_type: *const c_char,
    /// The chosen protocol: the partition assignor of a consumer group.
    pub protocol: *const c_char,
    /// `"classic"` or `"consumer"` (KIP-848).
    pub group_type: *const c_char,
    /// `member_cnt` members.
    pub members: *const odk_group_member_t,
    /// Number of members.
    pub member_cnt: usize,
}

fn raw(s: &str) -> *const c_char {
    c_string(s).into_raw()
}

/// Reads `cnt` group ids.
///
/// # Safety
/// `groups` NULL or `cnt` NUL-terminated strings.
unsafe fn read_names<'a>(
    groups: *const *const c_char,
    cnt: usize,
) -> Result<Vec<&'a str>, ClientError> {
    // SAFETY: per the contract.
    let items = unsafe { ffi::slice_arg(groups, cnt, "groups") }?;
    items
        .iter()
        // SAFETY: per the contract.
        .map(|&g| unsafe { str_arg(g, "group") })
        .collect()
}

/// Writes per-partition results into the caller's array (`err`; `offset` when given).
///
/// # Safety
/// `parts` has `results.len()` writable items.
unsafe fn write_back(
    parts: *mut odk_topic_partition_t,
    results: Vec<(TopicPartition, i64, odk_core::Result<()>)>,
) -> Result<(), ClientError> {
    let mut first = None;
    for (i, (tp, offset, r)) in results.into_iter().enumerate() {
        // SAFETY: per the contract.
        let item = unsafe { &mut *parts.add(i) };
        item.offset = offset;
        item.err = 0;
        if let Err(e) = r {
            let e = core_err(&e);
            item.err = e.code();
            first.get_or_insert_with(|| {
                ClientError::new(
                    e.code(),
                    Some(format!("{}-{}: {e}", tp.topic, tp.partition)),
                )
            });
        }
    }
    first.map_or(Ok(()), Err)
}

/// Pairs each requested partition with its result, whatever order the broker answered in
/// (`ODK_ERR__BAD_MSG` for a partition the answer left out).
fn by_partition(
    list: Vec<(TopicPartition, i64)>,
    out: Vec<(TopicPartition, odk_core::Result<()>)>,
) -> Vec<(TopicPartition, i64, odk_core::Result<()>)> {
    let mut out: HashMap<TopicPartition, odk_core::Result<()>> = out.into_iter().collect();
    list.into_iter()
        .map(|(tp, o)| {
            let r = out.remove(&tp).unwrap_or_else(|| {
                Err(odk_core::Error::malformed(
                    "admin response",
                    "a partition was left out",
                ))
            });
            (tp, o, r)
        })
        .collect()
}

/// Lists the groups of every broker as a new array in `*groups` (NULL when there are none) of
/// `*group_cnt` items, sorted by group id, waiting up to `timeout_ms` (negative: forever).
/// Fails (with nothing returned) when a broker cannot list its groups.
///
/// Ownership: the caller frees the array with `odk_group_listings_destroy(*groups,
/// *group_cnt)`. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `groups` and `group_cnt` NULL or writable; `errstr` NULL or `errstr_size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_list_groups(
    a: *mut odk_admin_t,
    groups: *mut *mut odk_group_listing_t,
    group_cnt: *mut usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if groups.is_null() || group_cnt.is_null() {
            return Err(ClientError::invalid_arg(
                "groups and group_cnt must not be NULL",
            ));
        }
        let per_broker = a.call(timeout_ms, a.admin.list_groups())?;
        let mut all = Vec::new();
        for (broker, listed) in per_broker {
            let listed = listed.map_err(|e| {
                let e = core_err(&e);
                ClientError::new(e.code(), Some(format!("broker {broker}: {e}")))
            })?;
            all.extend(listed);
        }
        all.sort_by(|x, y| x.group_id.cmp(&y.group_id));
        all.dedup_by(|x, y| x.group_id == y.group_id);
        let list: Box<[odk_group_listing_t]> = all
            .into_iter()
            .map(|g| odk_group_listing_t {
                group_id: raw(&g.group_id),
                protocol_type: raw(&g.protocol_type),
                state: raw(&g.state),
                group_type: raw(&g.group_type),
            })
            .collect();
        let n = list.len();
        // SAFETY: both checked non-NULL; writable per the contract.
        unsafe {
            *groups = leak(list).cast_mut();
            *group_cnt = n;
        }
        Ok(())
    })
}

/// Frees an array from `odk_admin_list_groups`. NULL is a no-op.
///
/// Ownership: `groups` and `group_cnt` exactly as returned, unmodified. Thread safety: any
/// thread, once.
///
/// # Safety
/// As stated.
#[no_mangle]
pub unsafe extern "C" fn odk_group_listings_destroy(
    groups: *mut odk_group_listing_t,
    group_cnt: usize,
) {
    guard((), || {
        // SAFETY: per the contract, the array odk_admin_list_groups leaked.
        let Some(list) = (unsafe { unleak(groups.cast_const(), group_cnt) }) else {
            return;
        };
        for g in list.iter() {
            // SAFETY: every string was leaked by the list call.
            unsafe {
                free_string(g.group_id);
                free_string(g.protocol_type);
                free_string(g.state);
                free_string(g.group_type);
            }
        }
    })
}

fn member(m: GroupMember) -> odk_group_member_t {
    let assignment: Box<[odk_topic_partition_t]> = m
        .assignment
        .iter()
        .map(|tp| odk_topic_partition_t {
            topic: raw(&tp.topic),
            partition: tp.partition,
            offset: ODK_OFFSET_INVALID,
            err: 0,
        })
        .collect();
    let assignment_cnt = assignment.len();
    odk_group_member_t {
        member_id: raw(&m.member_id),
        group_instance_id: m.group_instance_id.as_deref().map_or(std::ptr::null(), raw),
        client_id: raw(&m.client_id),
        client_host: raw(&m.client_host),
        assignment: leak(assignment),
        assignment_cnt,
    }
}

fn description(group: &str, d: Result<GroupDescription, ClientError>) -> odk_group_description_t {
    match d {
        Ok(d) => {
            let members: Box<[odk_group_member_t]> = d.members.into_iter().map(member).collect();
            let member_cnt = members.len();
            odk_group_description_t {
                group_id: raw(&d.group_id),
                err: 0,
                state: raw(&d.state),
                protocol_type: raw(&d.protocol_type),
                protocol: raw(&d.protocol),
                group_type: raw(&d.group_type),
                members: leak(members),
                member_cnt,
            }
        }
        Err(e) => odk_group_description_t {
            group_id: raw(group),
            err: e.code(),
            state: raw(""),
            protocol_type: raw(""),
            protocol: raw(""),
            group_type: raw(""),
            members: std::ptr::null(),
            member_cnt: 0,
        },
    }
}

/// Describes `group_cnt` groups (state, protocol, members and their assignments), from their
/// coordinators, waiting up to `timeout_ms` (negative: forever). `*descriptions` receives a new
/// array of `group_cnt` items in the order of `groups`; a group that does not exist is
/// described with state `"Dead"` and no members. Returns the call's error, else the first
/// group's failure, else `ODK_ERR_NO_ERROR`; `*descriptions` is filled whenever the request
/// was answered (NULL otherwise).
///
/// Ownership: the caller frees `*descriptions` with
/// `odk_group_descriptions_destroy(*descriptions, group_cnt)`. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `groups` NULL or `group_cnt` NUL-terminated strings; `descriptions` NULL
/// or writable; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_describe_groups(
    a: *mut odk_admin_t,
    groups: *const *const c_char,
    group_cnt: usize,
    descriptions: *mut *mut odk_group_description_t,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if descriptions.is_null() {
            return Err(ClientError::invalid_arg("descriptions must not be NULL"));
        }
        // SAFETY: writable per the contract.
        unsafe { *descriptions = std::ptr::null_mut() };
        // SAFETY: per the contract.
        let names = unsafe { read_names(groups, group_cnt) }?;
        if names.is_empty() {
            return Err(ClientError::invalid_arg("no group to describe"));
        }
        let described = a.call(timeout_ms, a.admin.describe_groups(&names))?;
        let mut first = None;
        let list: Box<[odk_group_description_t]> = described
            .into_iter()
            .map(|(group, d)| {
                let d = d.map_err(|e| core_err(&e));
                if let Err(e) = &d {
                    first.get_or_insert_with(|| {
                        ClientError::new(e.code(), Some(format!("group {group}: {e}")))
                    });
                }
                description(&group, d)
            })
            .collect();
        // SAFETY: writable per the contract.
        unsafe { *descriptions = leak(list).cast_mut() };
        first.map_or(Ok(()), Err)
    })
}

/// Frees an array from `odk_admin_describe_groups` (members, assignments, strings). NULL is a
/// no-op.
///
/// Ownership: `descriptions` and `description_cnt` exactly as returned (`description_cnt` is
/// the call's `group_cnt`), unmodified. Thread safety: any thread, once.
///
/// # Safety
/// As stated.
#[no_mangle]
pub unsafe extern "C" fn odk_group_descriptions_destroy(
    descriptions: *mut odk_group_description_t,
    description_cnt: usize,
) {
    guard((), || {
        // SAFETY: per the contract, the array odk_admin_describe_groups leaked.
        let Some(list) = (unsafe { unleak(descriptions.cast_const(), description_cnt) }) else {
            return;
        };
        for d in list.iter() {
            // SAFETY: every array and string was leaked by the describe call.
            unsafe {
                for s in [
                    d.group_id,
                    d.state,
                    d.protocol_type,
                    d.protocol,
                    d.group_type,
                ] {
                    free_string(s);
                }
                let Some(members) = unleak(d.members, d.member_cnt) else {
                    continue;
                };
                for m in members.iter() {
                    for s in [m.member_id, m.group_instance_id, m.client_id, m.client_host] {
                        free_string(s);
                    }
                    if let Some(parts) = unleak(m.assignment, m.assignment_cnt) {
                        for p in parts.iter() {
                            free_string(p.topic);
                        }
                    }
                }
            }
        }
    })
}

/// Deletes `group_cnt` groups (they must have no members), like `odk_admin_delete_topics`:
/// `results[i]` (when not NULL) receives group i's `odk_err_t` (`ODK_ERR_NON_EMPTY_GROUP`,
/// `ODK_ERR_GROUP_ID_NOT_FOUND`, ...); returns the first failure or `ODK_ERR_NO_ERROR`.
///
/// Ownership: `groups` is read during the call. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `groups` NULL or `group_cnt` NUL-terminated strings; `results` NULL or
/// `group_cnt` writable items; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_delete_groups(
    a: *mut odk_admin_t,
    groups: *const *const c_char,
    group_cnt: usize,
    results: *mut i32,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let names = unsafe { read_names(groups, group_cnt) }?;
        let out = a.call(timeout_ms, a.admin.delete_groups(&names))?;
        // SAFETY: per the contract.
        unsafe { settle(results, out) }
    })
}

/// A group's committed offsets: of the `partition_cnt` given partitions, or (`partitions` NULL
/// / 0) of every partition it committed, as a new array in `*offsets` (NULL when empty) of
/// `*offset_cnt` items: `offset` is the committed offset (`ODK_OFFSET_INVALID` when none),
/// `err` the partition's error. Waits up to `timeout_ms` (negative: forever).
///
/// Ownership: the caller frees the array with `odk_topic_partitions_destroy(*offsets,
/// *offset_cnt)`. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `group` NULL or NUL-terminated; `partitions` NULL or `partition_cnt`
/// items with valid topics; `offsets`, `offset_cnt` NULL or writable; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_list_group_offsets(
    a: *mut odk_admin_t,
    group: *const c_char,
    partitions: *const odk_topic_partition_t,
    partition_cnt: usize,
    offsets: *mut *mut odk_topic_partition_t,
    offset_cnt: *mut usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        if offsets.is_null() || offset_cnt.is_null() {
            return Err(ClientError::invalid_arg(
                "offsets and offset_cnt must not be NULL",
            ));
        }
        // SAFETY: per the contract.
        let group = unsafe { str_arg(group, "group") }?;
        // SAFETY: per the contract.
        let wanted: Vec<TopicPartition> =
            unsafe { topic_partition::read_list(partitions, partition_cnt) }?
                .into_iter()
                .map(|(tp, _)| tp)
                .collect();
        let filter = (!wanted.is_empty()).then_some(wanted.as_slice());
        let found = a.call(timeout_ms, a.admin.list_group_offsets(group, filter))?;
        let items = found
            .into_iter()
            .map(|o| {
                let err = o
                    .error
                    .map_or(0, |c| core_err(&odk_core::Error::Kafka(c)).code());
                (o.partition, o.offset.unwrap_or(ODK_OFFSET_INVALID), err)
            })
            .collect();
        let (p, n) = topic_partition::into_owned(items);
        // SAFETY: both checked non-NULL; writable per the contract.
        unsafe {
            *offsets = p;
            *offset_cnt = n;
        }
        Ok(())
    })
}

/// Sets a group's committed offsets to the `offset`s of `partitions` (the group must have no
/// active member: Kafka answers `ODK_ERR_UNKNOWN_MEMBER_ID` otherwise), waiting up to
/// `timeout_ms` (negative: forever). Each item's `err` receives its partition's result; returns
/// the first failure or `ODK_ERR_NO_ERROR`.
///
/// Ownership: only `err` is written. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `group` NULL or NUL-terminated; `partitions` NULL or `partition_cnt`
/// writable items with valid topics; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_alter_group_offsets(
    a: *mut odk_admin_t,
    group: *const c_char,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let group = unsafe { str_arg(group, "group") }?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        if let Some((tp, o)) = list.iter().find(|(_, o)| *o < 0) {
            return Err(ClientError::invalid_arg(format!(
                "invalid offset {o} for {}-{}",
                tp.topic, tp.partition
            )));
        }
        let out = a.call(timeout_ms, a.admin.alter_group_offsets(group, &list))?;
        let results = by_partition(list, out);
        // SAFETY: partition_cnt writable items per the contract.
        unsafe { write_back(partitions, results) }
    })
}

/// Deletes a group's committed offsets of `partitions` (`ODK_ERR_GROUP_SUBSCRIBED_TO_TOPIC` for
/// a topic a member still consumes, `ODK_ERR_GROUP_ID_NOT_FOUND` for an unknown group),
/// waiting up to `timeout_ms` (negative: forever). Each item's `err` receives its partition's
/// result; returns the call's error, else the first failure, else `ODK_ERR_NO_ERROR`.
///
/// Ownership: only `err` is written. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `group` NULL or NUL-terminated; `partitions` NULL or `partition_cnt`
/// writable items with valid topics; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_delete_group_offsets(
    a: *mut odk_admin_t,
    group: *const c_char,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let group = unsafe { str_arg(group, "group") }?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        let tps: Vec<TopicPartition> = list.iter().map(|(tp, _)| tp.clone()).collect();
        let out = a.call(timeout_ms, a.admin.delete_group_offsets(group, &tps))?;
        let results = by_partition(list, out);
        // SAFETY: partition_cnt writable items per the contract.
        unsafe { write_back(partitions, results) }
    })
}

/// Deletes every record before each item's `offset` (`ODK_OFFSET_END`: up to the high
/// watermark) of its partition, waiting up to `timeout_ms` (negative: forever). On return each
/// item's `offset` is the partition's new low watermark (unchanged when it failed) and `err` its
/// result (`ODK_ERR_OFFSET_OUT_OF_RANGE` beyond the high watermark, ...); returns the call's
/// error, else the first failure, else `ODK_ERR_NO_ERROR`.
///
/// Ownership: `offset` and `err` are written. Thread safety: any thread.
///
/// # Safety
/// `a` NULL or live; `partitions` NULL or `partition_cnt` writable items with valid topics;
/// `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_admin_delete_records(
    a: *mut odk_admin_t,
    partitions: *mut odk_topic_partition_t,
    partition_cnt: usize,
    timeout_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let a = admin(a)?;
        // SAFETY: per the contract.
        let list = unsafe { topic_partition::read_list(partitions, partition_cnt) }?;
        if let Some((tp, o)) = list.iter().find(|(_, o)| *o < 0 && *o != -1) {
            return Err(ClientError::invalid_arg(format!(
                "invalid offset {o} for {}-{}",
                tp.topic, tp.partition
            )));
        }
        let out = a.call(timeout_ms, a.admin.delete_records(&list))?;
        let results = list
            .into_iter()
            .zip(out)
            .map(|((tp, o), (_, r))| match r {
                Ok(low) => (tp, low, Ok(())),
                Err(e) => (tp, o, Err(e)),
            })
            .collect();
        // SAFETY: partition_cnt writable items per the contract.
        unsafe { write_back(partitions, results) }
    })
}
