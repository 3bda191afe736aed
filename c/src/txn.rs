//! Transactions on `odk_producer_t` (`transactional.id`): init, begin, send consumer offsets,
//! commit, abort. Each call reports the error's class in `*flags` so the application knows
//! whether to retry, abort the transaction, or give up on the producer.

use std::ffi::c_char;
use std::time::Duration;

use odradek_bindings::producer::TxnGroupMetadata;
use odradek_bindings::ClientError;

use crate::consumer::odk_consumer_t;
use crate::error::odk_err_t;
use crate::ffi::{self, guard_err};
use crate::producer::odk_producer_t;
use crate::topic_partition;

/// `*flags` bit: retrying the same call may succeed (e.g. after `ODK_ERR__TIMED_OUT`).
pub const ODK_ERR_F_RETRIABLE: u32 = 0x1;
/// `*flags` bit: the producer cannot continue (fenced by a newer instance, ...): destroy it.
pub const ODK_ERR_F_FATAL: u32 = 0x2;
/// `*flags` bit: the transaction cannot commit; call `odk_producer_abort_transaction`, then
/// begin a new one.
pub const ODK_ERR_F_TXN_REQUIRES_ABORT: u32 = 0x4;

/// "Forever" for a negative timeout: long enough for any real wait, small enough for timers.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

fn timeout(ms: i32) -> Duration {
    ffi::timeout(ms).unwrap_or(FOREVER)
}

/// Runs a transactional call: the error code is returned, its message written to `errstr`, and
/// its class to `*flags` (0 on success).
///
/// # Safety
/// `flags` NULL or writable; `errstr` NULL or `errstr_size` writable bytes.
unsafe fn txn_call(
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
    f: impl FnOnce() -> Result<(), ClientError>,
) -> odk_err_t {
    let mut class = 0u32;
    let code = guard_err(errstr, errstr_size, || {
        f().inspect_err(|e| {
            if e.is_retriable() {
                class |= ODK_ERR_F_RETRIABLE;
            }
            if e.is_fatal() {
                class |= ODK_ERR_F_FATAL;
            }
            if e.txn_requires_abort() {
                class |= ODK_ERR_F_TXN_REQUIRES_ABORT;
            }
        })
    });
    if !flags.is_null() {
        // SAFETY: per the contract.
        unsafe { *flags = class };
    }
    code
}

fn producer<'a>(p: *mut odk_producer_t) -> Result<&'a odk_producer_t, ClientError> {
    // SAFETY: every caller passes the application's pointer, NULL or live per its contract.
    unsafe { p.as_ref() }.ok_or_else(|| ffi::null_handle("producer"))
}

fn block_on<F: std::future::Future>(p: &odk_producer_t, fut: F) -> F::Output {
    odradek_bindings::runtime::block_on(p.client.handle(), fut)
}

/// Registers the producer's `transactional.id` with its transaction coordinator, fencing any
/// older producer with the same id and aborting a transaction it left open. Call once before
/// the first transaction, waiting up to `timeout_ms` (negative: forever); after
/// `ODK_ERR__TIMED_OUT` (retriable) call it again to keep waiting.
///
/// `flags` (may be NULL) receives `ODK_ERR_F_*` bits describing the error (0 on success);
/// `errstr` (may be NULL) its message. Thread safety: any thread; transactional calls of one
/// producer must not run concurrently with each other.
///
/// # Safety
/// `p` NULL or live; `flags` NULL or writable; `errstr` NULL or `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_init_transactions(
    p: *mut odk_producer_t,
    timeout_ms: i32,
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    // SAFETY: forwarded contract.
    unsafe {
        txn_call(flags, errstr, errstr_size, || {
            let p = producer(p)?;
            block_on(p, p.client.init_transactions(timeout(timeout_ms)))
        })
    }
}

/// Opens a transaction: records produced from now on are committed or aborted together.
/// Returns at once (`ODK_ERR__STATE` when not initialised or a transaction is already open).
///
/// # Safety
/// As `odk_producer_init_transactions`.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_begin_transaction(
    p: *mut odk_producer_t,
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    // SAFETY: forwarded contract.
    unsafe {
        txn_call(flags, errstr, errstr_size, || {
            producer(p)?.client.begin_transaction()
        })
    }
}

/// Adds `consumer`'s offsets to the open transaction: they are committed to the consumer's
/// group exactly when the transaction commits (consume-transform-produce). `offsets` are the
/// next offsets to consume (a processed record's offset + 1). The consumer must have
/// `group.id` (`ODK_ERR__INVALID_ARG` otherwise).
///
/// Ownership: `offsets` is read during the call; `consumer` is only read.
///
/// # Safety
/// As `odk_producer_init_transactions`; `offsets` NULL or `offset_cnt` items with valid topics;
/// `consumer` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_send_offsets_to_transaction(
    p: *mut odk_producer_t,
    offsets: *const topic_partition::odk_topic_partition_t,
    offset_cnt: usize,
    consumer: *mut odk_consumer_t,
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    // SAFETY: forwarded contract.
    unsafe {
        txn_call(flags, errstr, errstr_size, || {
            let p = producer(p)?;
            // SAFETY: NULL or live per the contract.
            let c = consumer
                .as_ref()
                .ok_or_else(|| ffi::null_handle("consumer"))?;
            let group = c.client.group_metadata().ok_or_else(|| {
                ClientError::invalid_arg("the consumer has no group.id: its offsets have no group")
            })?;
            let list = topic_partition::read_list(offsets, offset_cnt)?;
            if let Some((tp, o)) = list.iter().find(|(_, o)| *o < 0) {
                return Err(ClientError::invalid_arg(format!(
                    "invalid offset {o} for {}-{}",
                    tp.topic, tp.partition
                )));
            }
            let meta = TxnGroupMetadata {
                group_id: group.group_id,
                member_id: group.member_id,
                generation_id: group.generation,
                group_instance_id: group.group_instance_id,
            };
            block_on(p, p.client.send_offsets_to_transaction(&list, &meta))
        })
    }
}

/// Sends every record of the transaction, then commits it, waiting up to `timeout_ms`
/// (negative: forever). Delivery reports of its records are served by `odk_poll` as usual.
/// When a record failed, nothing is committed and `*flags` has `ODK_ERR_F_TXN_REQUIRES_ABORT`:
/// call `odk_producer_abort_transaction`. After `ODK_ERR__TIMED_OUT` call it again to wait.
///
/// # Safety
/// As `odk_producer_init_transactions`.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_commit_transaction(
    p: *mut odk_producer_t,
    timeout_ms: i32,
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    // SAFETY: forwarded contract.
    unsafe {
        txn_call(flags, errstr, errstr_size, || {
            let p = producer(p)?;
            block_on(p, p.client.commit_transaction(timeout(timeout_ms)))
        })
    }
}

/// Aborts the open transaction: its records are discarded (read_committed consumers never see
/// them; delivery reports of records not yet sent carry an error), waiting up to `timeout_ms`
/// (negative: forever).
///
/// # Safety
/// As `odk_producer_init_transactions`.
#[no_mangle]
pub unsafe extern "C" fn odk_producer_abort_transaction(
    p: *mut odk_producer_t,
    timeout_ms: i32,
    flags: *mut u32,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    // SAFETY: forwarded contract.
    unsafe {
        txn_call(flags, errstr, errstr_size, || {
            let p = producer(p)?;
            block_on(p, p.client.abort_transaction(timeout(timeout_ms)))
        })
    }
}
