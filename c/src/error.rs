//! The error codes: one C enum with Kafka's codes as they are and the client's codes negative,
//! numbered exactly like `odradek_bindings::codes` (and librdkafka's `RD_KAFKA_RESP_ERR_*`), with
//! their names, descriptions and classes.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use odradek_bindings::codes;

use crate::ffi::guard;

/// An error code. `ODK_ERR_NO_ERROR` (0) is success; Kafka's protocol codes keep their numbers
/// (`ODK_ERR_UNKNOWN_TOPIC_OR_PART` = 3); client-side codes are negative with a double
/// underscore (`ODK_ERR__MSG_TIMED_OUT` = -192), numbered like librdkafka's. Functions that take
/// a code accept any `int32_t`; numbers outside the table are reported as unknown.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum odk_err_t {
    /// Local: bad message format (corrupt or undecodable data).
    ODK_ERR__BAD_MSG = -199,
    /// Local: invalid compressed data or unsupported codec.
    ODK_ERR__BAD_COMPRESSION = -198,
    /// Local: client closed.
    ODK_ERR__DESTROY = -197,
    /// Local: communication failure with broker.
    ODK_ERR__FAIL = -196,
    /// Local: broker transport failure.
    ODK_ERR__TRANSPORT = -195,
    /// Local: critical system resource failure.
    ODK_ERR__CRIT_SYS_RESOURCE = -194,
    /// Local: host resolution failure.
    ODK_ERR__RESOLVE = -193,
    /// Local: message timed out.
    ODK_ERR__MSG_TIMED_OUT = -192,
    /// Broker: no more messages.
    ODK_ERR__PARTITION_EOF = -191,
    /// Local: unknown partition.
    ODK_ERR__UNKNOWN_PARTITION = -190,
    /// Local: file or filesystem error.
    ODK_ERR__FS = -189,
    /// Local: unknown topic.
    ODK_ERR__UNKNOWN_TOPIC = -188,
    /// Local: all broker connections are down.
    ODK_ERR__ALL_BROKERS_DOWN = -187,
    /// Local: invalid argument or configuration.
    ODK_ERR__INVALID_ARG = -186,
    /// Local: timed out.
    ODK_ERR__TIMED_OUT = -185,
    /// Local: queue full.
    ODK_ERR__QUEUE_FULL = -184,
    /// Local: ISR count insufficient.
    ODK_ERR__ISR_INSUFF = -183,
    /// Local: broker node update.
    ODK_ERR__NODE_UPDATE = -182,
    /// Local: SSL error.
    ODK_ERR__SSL = -181,
    /// Local: waiting for coordinator.
    ODK_ERR__WAIT_COORD = -180,
    /// Local: unknown group.
    ODK_ERR__UNKNOWN_GROUP = -179,
    /// Local: operation in progress.
    ODK_ERR__IN_PROGRESS = -178,
    /// Local: previous operation in progress.
    ODK_ERR__PREV_IN_PROGRESS = -177,
    /// Local: existing subscription.
    ODK_ERR__EXISTING_SUBSCRIPTION = -176,
    /// Local: assign partitions.
    ODK_ERR__ASSIGN_PARTITIONS = -175,
    /// Local: revoke partitions.
    ODK_ERR__REVOKE_PARTITIONS = -174,
    /// Local: conflicting use.
    ODK_ERR__CONFLICT = -173,
    /// Local: erroneous state.
    ODK_ERR__STATE = -172,
    /// Local: unknown protocol.
    ODK_ERR__UNKNOWN_PROTOCOL = -171,
    /// Local: not implemented in this release.
    ODK_ERR__NOT_IMPLEMENTED = -170,
    /// Local: authentication failure.
    ODK_ERR__AUTHENTICATION = -169,
    /// Local: no offset to reset to (auto.offset.reset is none).
    ODK_ERR__NO_OFFSET = -168,
    /// Local: outdated.
    ODK_ERR__OUTDATED = -167,
    /// Local: timed out in queue.
    ODK_ERR__TIMED_OUT_QUEUE = -166,
    /// Local: required feature not supported by broker.
    ODK_ERR__UNSUPPORTED_FEATURE = -165,
    /// Local: awaiting cache update.
    ODK_ERR__WAIT_CACHE = -164,
    /// Local: operation interrupted.
    ODK_ERR__INTR = -163,
    /// Local: key serialization error.
    ODK_ERR__KEY_SERIALIZATION = -162,
    /// Local: value serialization error.
    ODK_ERR__VALUE_SERIALIZATION = -161,
    /// Local: key deserialization error.
    ODK_ERR__KEY_DESERIALIZATION = -160,
    /// Local: value deserialization error.
    ODK_ERR__VALUE_DESERIALIZATION = -159,
    /// Local: partial response.
    ODK_ERR__PARTIAL = -158,
    /// Local: read-only object.
    ODK_ERR__READ_ONLY = -157,
    /// Local: no such entry.
    ODK_ERR__NOENT = -156,
    /// Local: read underflow.
    ODK_ERR__UNDERFLOW = -155,
    /// Local: invalid type.
    ODK_ERR__INVALID_TYPE = -154,
    /// Local: retry operation.
    ODK_ERR__RETRY = -153,
    /// Local: purged in queue.
    ODK_ERR__PURGE_QUEUE = -152,
    /// Local: purged in flight.
    ODK_ERR__PURGE_INFLIGHT = -151,
    /// Local: fatal error.
    ODK_ERR__FATAL = -150,
    /// Local: inconsistent state.
    ODK_ERR__INCONSISTENT = -149,
    /// Local: gap-less ordering would not be guaranteed.
    ODK_ERR__GAPLESS_GUARANTEE = -148,
    /// Local: maximum application poll interval exceeded.
    ODK_ERR__MAX_POLL_EXCEEDED = -147,
    /// Local: unknown broker.
    ODK_ERR__UNKNOWN_BROKER = -146,
    /// Local: functionality not configured.
    ODK_ERR__NOT_CONFIGURED = -145,
    /// Local: this instance has been fenced by a newer instance.
    ODK_ERR__FENCED = -144,
    /// Local: application generated error.
    ODK_ERR__APPLICATION = -143,
    /// Local: group partition assignment lost.
    ODK_ERR__ASSIGNMENT_LOST = -142,
    /// Local: no operation performed.
    ODK_ERR__NOOP = -141,
    /// Local: offset reset by auto.offset.reset.
    ODK_ERR__AUTO_OFFSET_RESET = -140,
    /// Local: partition log truncation detected.
    ODK_ERR__LOG_TRUNCATION = -139,
    /// Local: a different record in the batch was invalid.
    ODK_ERR__INVALID_DIFFERENT_RECORD = -138,
    /// Local: broker handle destroyed.
    ODK_ERR__DESTROY_BROKER = -137,
    /// Broker: Unknown server error.
    ODK_ERR_UNKNOWN = -1,
    /// Success.
    ODK_ERR_NO_ERROR = 0,
    /// Broker: Offset out of range.
    ODK_ERR_OFFSET_OUT_OF_RANGE = 1,
    /// Broker: Corrupt message (retriable).
    ODK_ERR_INVALID_MSG = 2,
    /// Broker: Unknown topic or partition (retriable).
    ODK_ERR_UNKNOWN_TOPIC_OR_PART = 3,
    /// Broker: Invalid fetch size.
    ODK_ERR_INVALID_MSG_SIZE = 4,
    /// Broker: Leader not available (retriable).
    ODK_ERR_LEADER_NOT_AVAILABLE = 5,
    /// Broker: Not leader or follower (retriable).
    ODK_ERR_NOT_LEADER_FOR_PARTITION = 6,
    /// Broker: Request timed out (retriable).
    ODK_ERR_REQUEST_TIMED_OUT = 7,
    /// Broker: Broker not available.
    ODK_ERR_BROKER_NOT_AVAILABLE = 8,
    /// Broker: Replica not available (retriable).
    ODK_ERR_REPLICA_NOT_AVAILABLE = 9,
    /// Broker: Message too large.
    ODK_ERR_MSG_SIZE_TOO_LARGE = 10,
    /// Broker: Stale controller epoch.
    ODK_ERR_STALE_CTRL_EPOCH = 11,
    /// Broker: Offset metadata too large.
    ODK_ERR_OFFSET_METADATA_TOO_LARGE = 12,
    /// Broker: Network exception (retriable).
    ODK_ERR_NETWORK_EXCEPTION = 13,
    /// Broker: Coordinator load in progress (retriable).
    ODK_ERR_COORDINATOR_LOAD_IN_PROGRESS = 14,
    /// Broker: Coordinator not available (retriable).
    ODK_ERR_COORDINATOR_NOT_AVAILABLE = 15,
    /// Broker: Not coordinator (retriable).
    ODK_ERR_NOT_COORDINATOR = 16,
    /// Broker: Invalid topic exception.
    ODK_ERR_TOPIC_EXCEPTION = 17,
    /// Broker: Record list too large.
    ODK_ERR_RECORD_LIST_TOO_LARGE = 18,
    /// Broker: Not enough replicas (retriable).
    ODK_ERR_NOT_ENOUGH_REPLICAS = 19,
    /// Broker: Not enough replicas after append (retriable).
    ODK_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
    /// Broker: Invalid required acks.
    ODK_ERR_INVALID_REQUIRED_ACKS = 21,
    /// Broker: Illegal generation.
    ODK_ERR_ILLEGAL_GENERATION = 22,
    /// Broker: Inconsistent group protocol.
    ODK_ERR_INCONSISTENT_GROUP_PROTOCOL = 23,
    /// Broker: Invalid group id.
    ODK_ERR_INVALID_GROUP_ID = 24,
    /// Broker: Unknown member id.
    ODK_ERR_UNKNOWN_MEMBER_ID = 25,
    /// Broker: Invalid session timeout.
    ODK_ERR_INVALID_SESSION_TIMEOUT = 26,
    /// Broker: Rebalance in progress.
    ODK_ERR_REBALANCE_IN_PROGRESS = 27,
    /// Broker: Invalid commit offset size.
    ODK_ERR_INVALID_COMMIT_OFFSET_SIZE = 28,
    /// Broker: Topic authorization failed.
    ODK_ERR_TOPIC_AUTHORIZATION_FAILED = 29,
    /// Broker: Group authorization failed.
    ODK_ERR_GROUP_AUTHORIZATION_FAILED = 30,
    /// Broker: Cluster authorization failed.
    ODK_ERR_CLUSTER_AUTHORIZATION_FAILED = 31,
    /// Broker: Invalid timestamp.
    ODK_ERR_INVALID_TIMESTAMP = 32,
    /// Broker: Unsupported sasl mechanism.
    ODK_ERR_UNSUPPORTED_SASL_MECHANISM = 33,
    /// Broker: Illegal sasl state.
    ODK_ERR_ILLEGAL_SASL_STATE = 34,
    /// Broker: Unsupported version.
    ODK_ERR_UNSUPPORTED_VERSION = 35,
    /// Broker: Topic already exists.
    ODK_ERR_TOPIC_ALREADY_EXISTS = 36,
    /// Broker: Invalid partitions.
    ODK_ERR_INVALID_PARTITIONS = 37,
    /// Broker: Invalid replication factor.
    ODK_ERR_INVALID_REPLICATION_FACTOR = 38,
    /// Broker: Invalid replica assignment.
    ODK_ERR_INVALID_REPLICA_ASSIGNMENT = 39,
    /// Broker: Invalid config.
    ODK_ERR_INVALID_CONFIG = 40,
    /// Broker: Not controller (retriable).
    ODK_ERR_NOT_CONTROLLER = 41,
    /// Broker: Invalid request.
    ODK_ERR_INVALID_REQUEST = 42,
    /// Broker: Unsupported for message format.
    ODK_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43,
    /// Broker: Policy violation.
    ODK_ERR_POLICY_VIOLATION = 44,
    /// Broker: Out of order sequence number.
    ODK_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
    /// Broker: Duplicate sequence number.
    ODK_ERR_DUPLICATE_SEQUENCE_NUMBER = 46,
    /// Broker: Invalid producer epoch.
    ODK_ERR_INVALID_PRODUCER_EPOCH = 47,
    /// Broker: Invalid txn state.
    ODK_ERR_INVALID_TXN_STATE = 48,
    /// Broker: Invalid producer id mapping.
    ODK_ERR_INVALID_PRODUCER_ID_MAPPING = 49,
    /// Broker: Invalid transaction timeout.
    ODK_ERR_INVALID_TRANSACTION_TIMEOUT = 50,
    /// Broker: Concurrent transactions (retriable).
    ODK_ERR_CONCURRENT_TRANSACTIONS = 51,
    /// Broker: Transaction coordinator fenced.
    ODK_ERR_TRANSACTION_COORDINATOR_FENCED = 52,
    /// Broker: Transactional id authorization failed.
    ODK_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
    /// Broker: Security disabled.
    ODK_ERR_SECURITY_DISABLED = 54,
    /// Broker: Operation not attempted.
    ODK_ERR_OPERATION_NOT_ATTEMPTED = 55,
    /// Broker: Kafka storage error (retriable).
    ODK_ERR_KAFKA_STORAGE_ERROR = 56,
    /// Broker: Log dir not found.
    ODK_ERR_LOG_DIR_NOT_FOUND = 57,
    /// Broker: Sasl authentication failed.
    ODK_ERR_SASL_AUTHENTICATION_FAILED = 58,
    /// Broker: Unknown producer id.
    ODK_ERR_UNKNOWN_PRODUCER_ID = 59,
    /// Broker: Reassignment in progress.
    ODK_ERR_REASSIGNMENT_IN_PROGRESS = 60,
    /// Broker: Delegation token auth disabled.
    ODK_ERR_DELEGATION_TOKEN_AUTH_DISABLED = 61,
    /// Broker: Delegation token not found.
    ODK_ERR_DELEGATION_TOKEN_NOT_FOUND = 62,
    /// Broker: Delegation token owner mismatch.
    ODK_ERR_DELEGATION_TOKEN_OWNER_MISMATCH = 63,
    /// Broker: Delegation token request not allowed.
    ODK_ERR_DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64,
    /// Broker: Delegation token authorization failed.
    ODK_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65,
    /// Broker: Delegation token expired.
    ODK_ERR_DELEGATION_TOKEN_EXPIRED = 66,
    /// Broker: Invalid principal type.
    ODK_ERR_INVALID_PRINCIPAL_TYPE = 67,
    /// Broker: Non empty group.
    ODK_ERR_NON_EMPTY_GROUP = 68,
    /// Broker: Group id not found.
    ODK_ERR_GROUP_ID_NOT_FOUND = 69,
    /// Broker: Fetch session id not found (retriable).
    ODK_ERR_FETCH_SESSION_ID_NOT_FOUND = 70,
    /// Broker: Invalid fetch session epoch (retriable).
    ODK_ERR_INVALID_FETCH_SESSION_EPOCH = 71,
    /// Broker: Listener not found (retriable).
    ODK_ERR_LISTENER_NOT_FOUND = 72,
    /// Broker: Topic deletion disabled.
    ODK_ERR_TOPIC_DELETION_DISABLED = 73,
    /// Broker: Fenced leader epoch (retriable).
    ODK_ERR_FENCED_LEADER_EPOCH = 74,
    /// Broker: Unknown leader epoch (retriable).
    ODK_ERR_UNKNOWN_LEADER_EPOCH = 75,
    /// Broker: Unsupported compression type.
    ODK_ERR_UNSUPPORTED_COMPRESSION_TYPE = 76,
    /// Broker: Stale broker epoch.
    ODK_ERR_STALE_BROKER_EPOCH = 77,
    /// Broker: Offset not available (retriable).
    ODK_ERR_OFFSET_NOT_AVAILABLE = 78,
    /// Broker: Member id required.
    ODK_ERR_MEMBER_ID_REQUIRED = 79,
    /// Broker: Preferred leader not available (retriable).
    ODK_ERR_PREFERRED_LEADER_NOT_AVAILABLE = 80,
    /// Broker: Group max size reached.
    ODK_ERR_GROUP_MAX_SIZE_REACHED = 81,
    /// Broker: Fenced instance id.
    ODK_ERR_FENCED_INSTANCE_ID = 82,
    /// Broker: Eligible leaders not available (retriable).
    ODK_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE = 83,
    /// Broker: Election not needed (retriable).
    ODK_ERR_ELECTION_NOT_NEEDED = 84,
    /// Broker: No reassignment in progress.
    ODK_ERR_NO_REASSIGNMENT_IN_PROGRESS = 85,
    /// Broker: Group subscribed to topic.
    ODK_ERR_GROUP_SUBSCRIBED_TO_TOPIC = 86,
    /// Broker: Invalid record.
    ODK_ERR_INVALID_RECORD = 87,
    /// Broker: Unstable offset commit (retriable).
    ODK_ERR_UNSTABLE_OFFSET_COMMIT = 88,
    /// Broker: Throttling quota exceeded (retriable).
    ODK_ERR_THROTTLING_QUOTA_EXCEEDED = 89,
    /// Broker: Producer fenced.
    ODK_ERR_PRODUCER_FENCED = 90,
    /// Broker: Resource not found.
    ODK_ERR_RESOURCE_NOT_FOUND = 91,
    /// Broker: Duplicate resource.
    ODK_ERR_DUPLICATE_RESOURCE = 92,
    /// Broker: Unacceptable credential.
    ODK_ERR_UNACCEPTABLE_CREDENTIAL = 93,
    /// Broker: Inconsistent voter set.
    ODK_ERR_INCONSISTENT_VOTER_SET = 94,
    /// Broker: Invalid update version.
    ODK_ERR_INVALID_UPDATE_VERSION = 95,
    /// Broker: Feature update failed.
    ODK_ERR_FEATURE_UPDATE_FAILED = 96,
    /// Broker: Principal deserialization failure.
    ODK_ERR_PRINCIPAL_DESERIALIZATION_FAILURE = 97,
    /// Broker: Snapshot not found.
    ODK_ERR_SNAPSHOT_NOT_FOUND = 98,
    /// Broker: Position out of range.
    ODK_ERR_POSITION_OUT_OF_RANGE = 99,
    /// Broker: Unknown topic id (retriable).
    ODK_ERR_UNKNOWN_TOPIC_ID = 100,
    /// Broker: Duplicate broker registration.
    ODK_ERR_DUPLICATE_BROKER_REGISTRATION = 101,
    /// Broker: Broker id not registered.
    ODK_ERR_BROKER_ID_NOT_REGISTERED = 102,
    /// Broker: Inconsistent topic id (retriable).
    ODK_ERR_INCONSISTENT_TOPIC_ID = 103,
    /// Broker: Inconsistent cluster id.
    ODK_ERR_INCONSISTENT_CLUSTER_ID = 104,
    /// Broker: Transactional id not found.
    ODK_ERR_TRANSACTIONAL_ID_NOT_FOUND = 105,
    /// Broker: Fetch session topic id error (retriable).
    ODK_ERR_FETCH_SESSION_TOPIC_ID_ERROR = 106,
    /// Broker: Ineligible replica.
    ODK_ERR_INELIGIBLE_REPLICA = 107,
    /// Broker: New leader elected.
    ODK_ERR_NEW_LEADER_ELECTED = 108,
    /// Broker: Offset moved to tiered storage.
    ODK_ERR_OFFSET_MOVED_TO_TIERED_STORAGE = 109,
    /// Broker: Fenced member epoch.
    ODK_ERR_FENCED_MEMBER_EPOCH = 110,
    /// Broker: Unreleased instance id.
    ODK_ERR_UNRELEASED_INSTANCE_ID = 111,
    /// Broker: Unsupported assignor.
    ODK_ERR_UNSUPPORTED_ASSIGNOR = 112,
    /// Broker: Stale member epoch.
    ODK_ERR_STALE_MEMBER_EPOCH = 113,
    /// Broker: Mismatched endpoint type.
    ODK_ERR_MISMATCHED_ENDPOINT_TYPE = 114,
    /// Broker: Unsupported endpoint type.
    ODK_ERR_UNSUPPORTED_ENDPOINT_TYPE = 115,
    /// Broker: Unknown controller id.
    ODK_ERR_UNKNOWN_CONTROLLER_ID = 116,
    /// Broker: Unknown subscription id.
    ODK_ERR_UNKNOWN_SUBSCRIPTION_ID = 117,
    /// Broker: Telemetry too large.
    ODK_ERR_TELEMETRY_TOO_LARGE = 118,
    /// Broker: Invalid registration.
    ODK_ERR_INVALID_REGISTRATION = 119,
    /// Broker: Transaction abortable.
    ODK_ERR_TRANSACTION_ABORTABLE = 120,
    /// Broker: Invalid record state.
    ODK_ERR_INVALID_RECORD_STATE = 121,
    /// Broker: Share session not found (retriable).
    ODK_ERR_SHARE_SESSION_NOT_FOUND = 122,
    /// Broker: Invalid share session epoch (retriable).
    ODK_ERR_INVALID_SHARE_SESSION_EPOCH = 123,
    /// Broker: Fenced state epoch.
    ODK_ERR_FENCED_STATE_EPOCH = 124,
    /// Broker: Invalid voter key.
    ODK_ERR_INVALID_VOTER_KEY = 125,
    /// Broker: Duplicate voter.
    ODK_ERR_DUPLICATE_VOTER = 126,
    /// Broker: Voter not found.
    ODK_ERR_VOTER_NOT_FOUND = 127,
    /// Broker: Invalid regular expression.
    ODK_ERR_INVALID_REGULAR_EXPRESSION = 128,
    /// Broker: Rebootstrap required.
    ODK_ERR_REBOOTSTRAP_REQUIRED = 129,
    /// Broker: Streams invalid topology.
    ODK_ERR_STREAMS_INVALID_TOPOLOGY = 130,
    /// Broker: Streams invalid topology epoch.
    ODK_ERR_STREAMS_INVALID_TOPOLOGY_EPOCH = 131,
    /// Broker: Streams topology fenced.
    ODK_ERR_STREAMS_TOPOLOGY_FENCED = 132,
    /// Broker: Share session limit reached (retriable).
    ODK_ERR_SHARE_SESSION_LIMIT_REACHED = 133,
}

/// The first and last client-side codes, and the last Kafka code: both ranges are dense.
const LOCAL_FIRST: i32 = -199;
const LOCAL_LAST: i32 = -137;
const KAFKA_LAST: i32 = 133;

impl odk_err_t {
    /// The variant for `code`; codes outside the table become `ODK_ERR_UNKNOWN`.
    pub fn from_code(code: i32) -> odk_err_t {
        if (LOCAL_FIRST..=LOCAL_LAST).contains(&code) || (-1..=KAFKA_LAST).contains(&code) {
            // SAFETY: the enum is repr(i32) and has a variant for every number of both ranges
            // (checked by the `enum_matches_the_code_table` test).
            unsafe { std::mem::transmute::<i32, odk_err_t>(code) }
        } else {
            odk_err_t::ODK_ERR_UNKNOWN
        }
    }
}

/// NUL-terminated names and descriptions of every code, sorted by code, built once. (A sorted
/// vector rather than a hash map: valgrind sees its blocks as reachable from their start.)
fn texts() -> &'static [(i32, CString, CString)] {
    static TEXTS: OnceLock<Vec<(i32, CString, CString)>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let mut all: Vec<(i32, CString, CString)> = codes::all()
            .into_iter()
            .filter_map(|(name, code)| {
                let name = CString::new(name).ok()?;
                let desc = CString::new(codes::description(code)).ok()?;
                Some((code, name, desc))
            })
            .collect();
        all.sort_by_key(|(code, _, _)| *code);
        all
    })
}

/// The texts of `code`, if it is one.
fn text(code: i32) -> Option<&'static (i32, CString, CString)> {
    let all = texts();
    all.binary_search_by_key(&code, |(c, _, _)| *c)
        .ok()
        .and_then(|i| all.get(i))
}

const UNKNOWN_NAME: &std::ffi::CStr = c"UNKNOWN";
const UNKNOWN_DESC: &std::ffi::CStr = c"Unknown error code";

/// The code's name without prefix: `"_MSG_TIMED_OUT"`, `"UNKNOWN_TOPIC_OR_PART"`,
/// `"NO_ERROR"`; `"UNKNOWN"` for a number that is not a code.
///
/// Ownership: returns a static string (never NULL, never freed). Thread safety: any thread.
#[no_mangle]
pub extern "C" fn odk_err_name(err: i32) -> *const c_char {
    guard(UNKNOWN_NAME.as_ptr(), || {
        text(err).map_or(UNKNOWN_NAME.as_ptr(), |(_, n, _)| n.as_ptr())
    })
}

/// A one-line description: `"Local: message timed out"`, `"Broker: Unknown topic or
/// partition"`, `"Success"`.
///
/// Ownership: returns a static string (never NULL, never freed). Thread safety: any thread.
#[no_mangle]
pub extern "C" fn odk_err_string(err: i32) -> *const c_char {
    guard(UNKNOWN_DESC.as_ptr(), || {
        text(err).map_or(UNKNOWN_DESC.as_ptr(), |(_, _, d)| d.as_ptr())
    })
}

/// Whether an operation that failed with `err` may succeed if retried (`_TRANSPORT`,
/// `_MSG_TIMED_OUT`, `_QUEUE_FULL`, `NOT_LEADER_FOR_PARTITION`, ...).
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn odk_err_is_retriable(err: i32) -> bool {
    guard(false, || codes::is_retriable(err))
}

/// Whether `err` means the client instance cannot continue and must be destroyed
/// (`_FATAL`, `_FENCED`, `PRODUCER_FENCED`, `INVALID_PRODUCER_EPOCH`, ...).
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn odk_err_is_fatal(err: i32) -> bool {
    guard(false, || is_fatal(err))
}

/// The fatal classification behind [`odk_err_is_fatal`].
pub fn is_fatal(err: i32) -> bool {
    if err == codes::FATAL || err == codes::FENCED {
        return true;
    }
    i16::try_from(err)
        .ok()
        .filter(|c| *c > 0)
        .is_some_and(|c| odk_core::is_fatal_code(odk_core::ErrorCode::from_code(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn variant_name(e: odk_err_t) -> String {
        format!("{e:?}")
    }

    #[test]
    fn enum_matches_the_code_table() {
        let all = codes::all();
        for (name, code) in &all {
            let v = odk_err_t::from_code(*code);
            assert_eq!(v as i32, *code, "{name}");
            assert_eq!(variant_name(v), format!("ODK_ERR_{name}"));
        }
        let covered = |c: i32| all.iter().any(|(_, k)| *k == c);
        assert!((LOCAL_FIRST..=LOCAL_LAST).all(covered));
        assert!((-1..=KAFKA_LAST).all(covered));
        assert_eq!(
            all.len() as i32,
            (LOCAL_LAST - LOCAL_FIRST + 1) + (KAFKA_LAST + 2)
        );
        assert_eq!(odk_err_t::from_code(5000), odk_err_t::ODK_ERR_UNKNOWN);
        assert_eq!(odk_err_t::from_code(-136), odk_err_t::ODK_ERR_UNKNOWN);
    }

    #[test]
    fn names_strings_and_classes() {
        let name = |c| unsafe { CStr::from_ptr(odk_err_name(c)) }.to_str().unwrap();
        let desc = |c| {
            unsafe { CStr::from_ptr(odk_err_string(c)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(-192), "_MSG_TIMED_OUT");
        assert_eq!(name(3), "UNKNOWN_TOPIC_OR_PART");
        assert_eq!(name(0), "NO_ERROR");
        assert_eq!(name(9999), "UNKNOWN");
        assert_eq!(desc(3), "Broker: Unknown topic or partition");
        assert_eq!(desc(9999), "Unknown error code");
        assert!(odk_err_is_retriable(-195) && !odk_err_is_retriable(-186));
        assert!(odk_err_is_fatal(90) && odk_err_is_fatal(-150) && !odk_err_is_fatal(-195));
    }
}
