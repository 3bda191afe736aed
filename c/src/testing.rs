//! `odk_test_cluster_*`: a Kafka cluster inside the test's own process (the reference broker,
//! compiled into libodradek), started in milliseconds on ephemeral loopback ports, with fault
//! injection modelled on librdkafka's mock cluster. Any client can use it: libodradek's, or
//! librdkafka's through `odk_test_cluster_bootstrap`.
//!
//! The brokers run on a thread of their own; every function here returns quickly (start, stop
//! and a broker going down or up wait for the brokers, a few milliseconds). API keys are given
//! by name (`"Produce"`, `"OffsetCommit"`) or number as text; error codes are `odk_err_t`
//! values (Kafka's positive codes, e.g. `ODK_ERR_NOT_LEADER_FOR_PARTITION`).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CString};
use std::time::Duration;

use odradek_bindings::ClientError;
use odradek_broker::testing::spec::{self, RequestRecord, RuleSpec};
use odradek_broker::testing::{names, Cluster, RuleId};

use crate::error::odk_err_t;
use crate::ffi::{self, guard, guard_err, str_arg};

/// An in-process test cluster (opaque).
pub struct odk_test_cluster_t {
    cluster: Cluster,
    bootstrap: CString,
}

fn invalid(e: odradek_broker::Error) -> ClientError {
    ClientError::invalid_arg(e.to_string())
}

/// Reads an optional C string.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn opt_str(p: *const c_char, what: &str) -> Result<Option<String>, ClientError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: per the caller.
    Ok(Some(unsafe { str_arg(p, what) }?.to_string()))
}

/// The cluster behind a handle, or `_INVALID_ARG`.
///
/// # Safety
/// `c` is NULL or a live handle.
unsafe fn cluster<'a>(c: *const odk_test_cluster_t) -> Result<&'a odk_test_cluster_t, ClientError> {
    // SAFETY: NULL or live per the caller's contract.
    unsafe { c.as_ref() }.ok_or_else(|| ffi::null_handle("cluster"))
}

/// Starts a cluster of `brokers` brokers (node ids 1..N) and returns once every broker accepts
/// connections; NULL on failure (the reason in `errstr`).
///
/// `config` is NULL or a NULL-terminated array of name/value pairs with Apache Kafka's broker
/// property names (`{"num.partitions", "3", NULL}`); the log is kept in a RAM-backed temporary
/// directory removed by `odk_test_cluster_destroy`.
///
/// Ownership: the caller owns the cluster (`odk_test_cluster_destroy`). Thread safety: every
/// `odk_test_cluster_*` function may be called from any thread, concurrently.
///
/// # Safety
/// `config` is NULL or a NULL-terminated array of NUL-terminated strings with an even count;
/// `errstr` is NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_new(
    brokers: i32,
    config: *const *const c_char,
    errstr: *mut c_char,
    errstr_size: usize,
) -> *mut odk_test_cluster_t {
    let mut out = std::ptr::null_mut();
    guard_err(errstr, errstr_size, || {
        let n = usize::try_from(brokers)
            .map_err(|_| ClientError::invalid_arg("brokers must be positive"))?;
        let mut builder = Cluster::builder().brokers(n);
        if !config.is_null() {
            let mut i = 0;
            loop {
                // SAFETY: a NULL-terminated array per the contract.
                let key = unsafe { *config.add(i) };
                if key.is_null() {
                    break;
                }
                // SAFETY: as above; the value follows its key.
                let value = unsafe { *config.add(i + 1) };
                // SAFETY: NUL-terminated strings per the contract.
                let (k, v) = unsafe {
                    (
                        str_arg(key, "config name")?,
                        str_arg(value, "config value")?,
                    )
                };
                builder = builder.config(k, v);
                i += 2;
            }
        }
        let cluster = builder.start().map_err(invalid)?;
        let bootstrap = CString::new(cluster.bootstrap())
            .map_err(|_| ClientError::invalid_arg("bootstrap address"))?;
        out = Box::into_raw(Box::new(odk_test_cluster_t { cluster, bootstrap }));
        Ok(())
    });
    out
}

/// Stops the cluster (listeners closed, connections cut) and removes its data. NULL is a
/// no-op. Clients still connected see their connections close.
///
/// # Safety
/// `c` is NULL or a cluster from `odk_test_cluster_new` not yet destroyed, and no other call on
/// it runs concurrently.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_destroy(c: *mut odk_test_cluster_t) {
    guard((), || {
        if !c.is_null() {
            // SAFETY: per the contract, c came from Box::into_raw and is destroyed once.
            let owned = unsafe { Box::from_raw(c) };
            owned.cluster.stop();
        }
    })
}

/// `bootstrap.servers` for clients: `host:port` of every broker, comma-separated. The string
/// belongs to the cluster and lives until `odk_test_cluster_destroy`. NULL for a NULL cluster.
///
/// # Safety
/// `c` is NULL or a live cluster.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_bootstrap(c: *const odk_test_cluster_t) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: per the contract.
        unsafe { c.as_ref() }.map_or(std::ptr::null(), |c| c.bootstrap.as_ptr())
    })
}

/// Creates a topic of `partitions` partitions (partition p is led by broker `p % N + 1`).
///
/// # Safety
/// `c` is NULL or a live cluster; `topic` a NUL-terminated string; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_create_topic(
    c: *const odk_test_cluster_t,
    topic: *const c_char,
    partitions: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let (c, topic) = unsafe { (cluster(c)?, str_arg(topic, "topic")?) };
        c.cluster.create_topic(topic, partitions).map_err(invalid)
    })
}

/// Adds one rule for requests of `api` and returns its id (>= 0), or -1 with the reason in
/// `errstr`.
///
/// `action` is `"error"` (answer with `error` instead of handling the request), `"delay"`
/// (handle, answer `delay_ms` later), `"drop"` (never answer) or `"close"` (close the
/// connection); for the others `delay_ms` holds the answer back first. `times`: how many
/// matching requests (-1: every one until removed). Filters: `broker` (-1: any), `topic`
/// (NULL: any), `partition` (-1: any; needs `topic`: only that partition of a Produce, Fetch,
/// ListOffsets or OffsetForLeaderEpoch fails, the rest is answered), `client_id` (NULL: any).
///
/// # Safety
/// `c` is NULL or a live cluster; strings are NULL (where allowed) or NUL-terminated;
/// `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_add_rule(
    c: *const odk_test_cluster_t,
    api: *const c_char,
    action: *const c_char,
    error: i32,
    delay_ms: i32,
    times: i32,
    broker: i32,
    topic: *const c_char,
    partition: i32,
    client_id: *const c_char,
    errstr: *mut c_char,
    errstr_size: usize,
) -> i64 {
    let mut id = -1;
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let c = unsafe { cluster(c) }?;
        // SAFETY: per the contract.
        let spec = unsafe {
            RuleSpec {
                api: str_arg(api, "api")?.to_string(),
                action: str_arg(action, "action")?.to_string(),
                error: Some(error.to_string()),
                delay_ms: u64::try_from(delay_ms).unwrap_or(0),
                times: u64::try_from(times).ok(),
                broker: (broker >= 0).then_some(broker),
                topic: opt_str(topic, "topic")?,
                partition: (partition >= 0).then_some(partition),
                client_id: opt_str(client_id, "client_id")?,
            }
        };
        let rule = spec.to_rule().map_err(invalid)?;
        id = c.cluster.add_rule(rule).map_err(invalid)?.get() as i64;
        Ok(())
    });
    id
}

/// The next `cnt` requests of `api` fail with `errors[i]`, one per request, in order
/// (librdkafka's `rd_kafka_mock_push_request_errors`), the i-th answered `delays_ms[i]` late
/// when `delays_ms` is not NULL (`..._push_request_error_rtts`). Narrowed to one `broker`
/// (-1: any) and one `topic` / `partition` (NULL / -1: any) as in `odk_test_cluster_add_rule`.
///
/// # Safety
/// `c` is NULL or a live cluster; `errors` (and `delays_ms` unless NULL) point to `cnt`
/// values; `topic` NULL or NUL-terminated; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_push_request_errors(
    c: *const odk_test_cluster_t,
    api: *const c_char,
    cnt: usize,
    errors: *const i32,
    delays_ms: *const i32,
    broker: i32,
    topic: *const c_char,
    partition: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let c = unsafe { cluster(c) }?;
        if errors.is_null() && cnt > 0 {
            return Err(ClientError::invalid_arg("errors must not be NULL"));
        }
        // SAFETY: per the contract.
        let (api, topic) = unsafe { (str_arg(api, "api")?, opt_str(topic, "topic")?) };
        let mut rules = Vec::with_capacity(cnt);
        for i in 0..cnt {
            // SAFETY: cnt values per the contract.
            let error = unsafe { *errors.add(i) };
            let delay = if delays_ms.is_null() {
                0
            } else {
                // SAFETY: as above.
                unsafe { *delays_ms.add(i) }
            };
            let spec = RuleSpec {
                api: api.to_string(),
                action: "error".into(),
                error: Some(error.to_string()),
                delay_ms: u64::try_from(delay).unwrap_or(0),
                times: Some(1),
                broker: (broker >= 0).then_some(broker),
                topic: topic.clone(),
                partition: (partition >= 0).then_some(partition),
                client_id: None,
            };
            rules.push(spec.to_rule().map_err(invalid)?);
        }
        for rule in rules {
            c.cluster.add_rule(rule).map_err(invalid)?;
        }
        Ok(())
    })
}

/// Removes a rule; 1 if it was still there, 0 otherwise (used up, or a NULL cluster).
///
/// # Safety
/// `c` is NULL or a live cluster.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_remove_rule(
    c: *const odk_test_cluster_t,
    id: i64,
) -> i32 {
    guard(0, || {
        // SAFETY: per the contract.
        match (unsafe { c.as_ref() }, u64::try_from(id)) {
            (Some(c), Ok(id)) => i32::from(c.cluster.remove_rule(RuleId::from_raw(id))),
            _ => 0,
        }
    })
}

/// Removes every rule.
///
/// # Safety
/// `c` is NULL or a live cluster.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_clear_rules(c: *const odk_test_cluster_t) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { c.as_ref() } {
            c.cluster.clear_rules();
        }
    })
}

/// Rules (pushed errors included) not used up yet; 0 for a NULL cluster.
///
/// # Safety
/// `c` is NULL or a live cluster.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_pending_rules(c: *const odk_test_cluster_t) -> usize {
    guard(0, || {
        // SAFETY: per the contract.
        unsafe { c.as_ref() }.map_or(0, |c| c.cluster.pending_rules())
    })
}

/// Cuts open connections of one broker (-1: every broker) and one client id (NULL: every
/// client); returns how many, or -1 for bad arguments.
///
/// # Safety
/// `c` is NULL or a live cluster; `client_id` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_close_connections(
    c: *const odk_test_cluster_t,
    broker: i32,
    client_id: *const c_char,
) -> i32 {
    guard(-1, || {
        // SAFETY: per the contract.
        let (Ok(c), Ok(client)) = (unsafe { cluster(c) }, unsafe {
            opt_str(client_id, "client_id")
        }) else {
            return -1;
        };
        let broker = (broker >= 0).then_some(broker);
        c.cluster
            .close_connections(broker, client.as_deref())
            .map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX))
    })
}

/// Takes a broker down: its listener closes (connections are refused), its connections are
/// cut, it leaves Metadata, and its partitions have no leader until it comes back
/// (`rd_kafka_mock_broker_set_down`).
///
/// # Safety
/// `c` is NULL or a live cluster; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_broker_set_down(
    c: *const odk_test_cluster_t,
    broker: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        unsafe { cluster(c) }?
            .cluster
            .set_broker_down(broker)
            .map_err(invalid)
    })
}

/// Brings a broker back on the same port; its partitions get a new leader epoch.
///
/// # Safety
/// `c` is NULL or a live cluster; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_broker_set_up(
    c: *const odk_test_cluster_t,
    broker: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        unsafe { cluster(c) }?
            .cluster
            .set_broker_up(broker)
            .map_err(invalid)
    })
}

/// Adds `rtt_ms` before every response of a broker (0 removes it;
/// `rd_kafka_mock_broker_set_rtt`).
///
/// # Safety
/// `c` is NULL or a live cluster; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_broker_set_rtt(
    c: *const odk_test_cluster_t,
    broker: i32,
    rtt_ms: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        let rtt = Duration::from_millis(u64::try_from(rtt_ms).unwrap_or(0));
        // SAFETY: per the contract.
        unsafe { cluster(c) }?
            .cluster
            .set_broker_rtt(broker, rtt)
            .map_err(invalid)
    })
}

/// Moves a partition's leader to `broker` (-1: no leader) and returns the new leader epoch,
/// or -1 with the reason in `errstr` (`rd_kafka_mock_partition_set_leader`). The old leader
/// answers NOT_LEADER_OR_FOLLOWER for the partition from now on; the data stays.
///
/// # Safety
/// `c` is NULL or a live cluster; `topic` NUL-terminated; `errstr` NULL or `errstr_size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_partition_set_leader(
    c: *const odk_test_cluster_t,
    topic: *const c_char,
    partition: i32,
    broker: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> i32 {
    let mut epoch = -1;
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let (c, topic) = unsafe { (cluster(c)?, str_arg(topic, "topic")?) };
        epoch = c
            .cluster
            .set_partition_leader(topic, partition, broker)
            .map_err(invalid)?;
        Ok(())
    });
    epoch
}

/// Makes `broker` a read replica of a partition (-1 clears it): it serves Fetch for the
/// partition and the leader names it in Fetch v11+ responses (KIP-392;
/// `rd_kafka_mock_partition_set_follower`).
///
/// # Safety
/// `c` is NULL or a live cluster; `topic` NUL-terminated; `errstr` NULL or `errstr_size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_partition_set_follower(
    c: *const odk_test_cluster_t,
    topic: *const c_char,
    partition: i32,
    broker: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let (c, topic) = unsafe { (cluster(c)?, str_arg(topic, "topic")?) };
        c.cluster
            .set_partition_follower(topic, partition, (broker >= 0).then_some(broker))
            .map_err(invalid)
    })
}

/// The broker leading a partition (-1: none or bad arguments); its leader epoch in `*epoch`
/// unless `epoch` is NULL.
///
/// # Safety
/// `c` is NULL or a live cluster; `topic` NUL-terminated; `epoch` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_partition_leader(
    c: *const odk_test_cluster_t,
    topic: *const c_char,
    partition: i32,
    epoch: *mut i32,
) -> i32 {
    guard(-1, || {
        // SAFETY: per the contract.
        let (Ok(c), Ok(topic)) = (unsafe { cluster(c) }, unsafe { str_arg(topic, "topic") }) else {
            return -1;
        };
        match c.cluster.partition_leader(topic, partition) {
            Ok(role) => {
                if !epoch.is_null() {
                    // SAFETY: writable per the contract.
                    unsafe { *epoch = role.epoch };
                }
                role.leader
            }
            Err(_) => -1,
        }
    })
}

/// Pins the coordinator of a group (`kind` `"group"`) or transactional id (`"transaction"`) to
/// `broker` (-1 removes the pin; `rd_kafka_mock_coordinator_set`). The previous coordinator
/// answers NOT_COORDINATOR.
///
/// # Safety
/// `c` is NULL or a live cluster; `kind`, `key` NUL-terminated; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_coordinator_set(
    c: *const odk_test_cluster_t,
    kind: *const c_char,
    key: *const c_char,
    broker: i32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let (c, kind, key) = unsafe { (cluster(c)?, str_arg(kind, "kind")?, str_arg(key, "key")?) };
        let kind = spec::coordinator_kind(kind).map_err(invalid)?;
        c.cluster
            .set_coordinator(kind, key, (broker >= 0).then_some(broker))
            .map_err(invalid)
    })
}

/// Serves only versions `min..=max` of `api`: ApiVersions advertises that range and other
/// versions close the connection, as Kafka does (`rd_kafka_mock_set_apiversion`). `max` -1
/// removes the clamp.
///
/// # Safety
/// `c` is NULL or a live cluster; `api` NUL-terminated; `errstr` NULL or `errstr_size`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_set_apiversion(
    c: *const odk_test_cluster_t,
    api: *const c_char,
    min: i16,
    max: i16,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let (c, api) = unsafe { (cluster(c)?, str_arg(api, "api")?) };
        let key = names::api_key(api).map_err(invalid)?;
        if max < 0 {
            c.cluster.clear_api_version(key);
            return Ok(());
        }
        c.cluster.set_api_version(key, min, max).map_err(invalid)
    })
}

/// Turns the request log on or off (`rd_kafka_mock_start_request_tracking`).
///
/// # Safety
/// `c` is NULL or a live cluster.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_record_requests(c: *const odk_test_cluster_t, on: bool) {
    guard((), || {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { c.as_ref() } {
            c.cluster.record_requests(on);
        }
    })
}

/// One request a broker received.
#[repr(C)]
pub struct odk_test_request_t {
    /// API key (0 Produce, 1 Fetch, ...).
    pub api_key: i16,
    /// Request version.
    pub api_version: i16,
    /// The broker that received it.
    pub broker: i32,
    /// Header correlation id.
    pub correlation_id: i32,
    /// The injected error (`action` "error"), else 0.
    pub error: i32,
    /// API name (`"Produce"`).
    pub api_name: *const c_char,
    /// Header client id, NULL when the client sent none.
    pub client_id: *const c_char,
    /// What was done to the whole request: "error", "delay", "drop", "close", or NULL.
    pub action: *const c_char,
    /// Topic-partitions the request named.
    pub partition_cnt: usize,
    /// Partitions of the request that got an injected error.
    pub item_error_cnt: usize,
}

fn leak(s: &str) -> *const c_char {
    CString::new(s).map_or(std::ptr::null(), |c| c.into_raw().cast_const())
}

/// The logged requests, oldest first, as an array of `*cnt` entries (NULL and 0 when there are
/// none); `clear` empties the log (`rd_kafka_mock_get_requests`).
///
/// Ownership: the caller frees the array with `odk_test_requests_destroy(array, cnt)`.
///
/// # Safety
/// `c` is NULL or a live cluster; `cnt` writable.
#[no_mangle]
pub unsafe extern "C" fn odk_test_cluster_requests(
    c: *const odk_test_cluster_t,
    clear: bool,
    cnt: *mut usize,
) -> *mut odk_test_request_t {
    guard(std::ptr::null_mut(), || {
        if cnt.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: writable per the contract.
        unsafe { *cnt = 0 };
        // SAFETY: per the contract.
        let Some(c) = (unsafe { c.as_ref() }) else {
            return std::ptr::null_mut();
        };
        let log = if clear {
            c.cluster.take_requests()
        } else {
            c.cluster.requests()
        };
        if log.is_empty() {
            return std::ptr::null_mut();
        }
        let entries: Vec<odk_test_request_t> = log
            .iter()
            .map(|r| {
                let r = RequestRecord::from(r);
                odk_test_request_t {
                    api_key: r.api_key,
                    api_version: r.api_version,
                    broker: r.broker,
                    correlation_id: r.correlation_id,
                    error: r
                        .error
                        .and_then(odk_core::ErrorCode::from_name)
                        .map_or(0, |e| i32::from(e.code())),
                    api_name: leak(r.api_name),
                    client_id: r.client_id.as_deref().map_or(std::ptr::null(), leak),
                    action: r.action.map_or(std::ptr::null(), leak),
                    partition_cnt: r.partitions.len(),
                    item_error_cnt: r.item_errors.len(),
                }
            })
            .collect();
        let boxed = entries.into_boxed_slice();
        // SAFETY: writable per the contract.
        unsafe { *cnt = boxed.len() };
        Box::into_raw(boxed).cast::<odk_test_request_t>()
    })
}

/// Frees an array from `odk_test_cluster_requests`. NULL is a no-op.
///
/// # Safety
/// `requests` is NULL or an array from `odk_test_cluster_requests` with its `cnt`, freed once.
#[no_mangle]
pub unsafe extern "C" fn odk_test_requests_destroy(requests: *mut odk_test_request_t, cnt: usize) {
    guard((), || {
        if requests.is_null() {
            return;
        }
        // SAFETY: per the contract, the array is the boxed slice of `cnt` entries built above.
        let entries = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(requests, cnt)) };
        for e in entries.iter() {
            for p in [e.api_name, e.client_id, e.action] {
                if !p.is_null() {
                    // SAFETY: each string came from CString::into_raw and is freed once.
                    drop(unsafe { CString::from_raw(p.cast_mut()) });
                }
            }
        }
    })
}
