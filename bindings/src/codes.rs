//! Stable numeric error codes shared by every language shell.
//!
//! Two ranges, never overlapping:
//!
//! - **Kafka protocol codes** (`-1..=133`), kept as the broker sends them. Their names are the
//!   ones librdkafka and confluent-kafka use (`UNKNOWN_TOPIC_OR_PART`, `MSG_SIZE_TOO_LARGE`,
//!   `NOT_LEADER_FOR_PARTITION`, ...) so code written against those clients keeps working; codes
//!   librdkafka has no name for keep Apache Kafka's protocol name.
//! - **Client-side codes** (`-199..=-137`), negative and prefixed with `_`, numbered exactly like
//!   librdkafka's `RD_KAFKA_RESP_ERR__*` (`_MSG_TIMED_OUT` = -192, `_PARTITION_EOF` = -191,
//!   `_QUEUE_FULL` = -184, ...). Odradek raises only a subset of them (see [`LOCAL`]), but every
//!   number is reserved so an application's `if err.code() == KafkaError._FOO` keeps compiling.
//!
//! The table is documented for users in `bindings/README.md`.

use odradek::ErrorCode;

/// One client-side code: number, name, description, whether retrying may help.
#[derive(Debug, Clone, Copy)]
pub struct LocalCode {
    /// The number (negative).
    pub code: i32,
    /// The name, with its leading underscore.
    pub name: &'static str,
    /// A one-line description.
    pub description: &'static str,
    /// Whether a later retry of the same operation may succeed.
    pub retriable: bool,
}

macro_rules! local_codes {
    ($( $konst:ident = $code:literal, $name:literal, $retriable:literal, $desc:literal; )*) => {
        $(
            #[doc = concat!("`", $name, "`: ", $desc)]
            pub const $konst: i32 = $code;
        )*
        /// Every client-side code, in numeric order.
        pub const LOCAL: &[LocalCode] = &[
            $( LocalCode { code: $code, name: $name, description: $desc, retriable: $retriable }, )*
        ];
    };
}

local_codes! {
    BAD_MSG = -199, "_BAD_MSG", false, "Local: bad message format (corrupt or undecodable data)";
    BAD_COMPRESSION = -198, "_BAD_COMPRESSION", false, "Local: invalid compressed data or unsupported codec";
    DESTROY = -197, "_DESTROY", false, "Local: client closed";
    FAIL = -196, "_FAIL", false, "Local: communication failure with broker";
    TRANSPORT = -195, "_TRANSPORT", true, "Local: broker transport failure";
    CRIT_SYS_RESOURCE = -194, "_CRIT_SYS_RESOURCE", false, "Local: critical system resource failure";
    RESOLVE = -193, "_RESOLVE", true, "Local: host resolution failure";
    MSG_TIMED_OUT = -192, "_MSG_TIMED_OUT", true, "Local: message timed out";
    PARTITION_EOF = -191, "_PARTITION_EOF", false, "Broker: no more messages";
    UNKNOWN_PARTITION = -190, "_UNKNOWN_PARTITION", false, "Local: unknown partition";
    FS = -189, "_FS", false, "Local: file or filesystem error";
    UNKNOWN_TOPIC = -188, "_UNKNOWN_TOPIC", false, "Local: unknown topic";
    ALL_BROKERS_DOWN = -187, "_ALL_BROKERS_DOWN", true, "Local: all broker connections are down";
    INVALID_ARG = -186, "_INVALID_ARG", false, "Local: invalid argument or configuration";
    TIMED_OUT = -185, "_TIMED_OUT", true, "Local: timed out";
    QUEUE_FULL = -184, "_QUEUE_FULL", true, "Local: queue full";
    ISR_INSUFF = -183, "_ISR_INSUFF", true, "Local: ISR count insufficient";
    NODE_UPDATE = -182, "_NODE_UPDATE", false, "Local: broker node update";
    SSL = -181, "_SSL", false, "Local: SSL error";
    WAIT_COORD = -180, "_WAIT_COORD", true, "Local: waiting for coordinator";
    UNKNOWN_GROUP = -179, "_UNKNOWN_GROUP", false, "Local: unknown group";
    IN_PROGRESS = -178, "_IN_PROGRESS", false, "Local: operation in progress";
    PREV_IN_PROGRESS = -177, "_PREV_IN_PROGRESS", false, "Local: previous operation in progress";
    EXISTING_SUBSCRIPTION = -176, "_EXISTING_SUBSCRIPTION", false, "Local: existing subscription";
    ASSIGN_PARTITIONS = -175, "_ASSIGN_PARTITIONS", false, "Local: assign partitions";
    REVOKE_PARTITIONS = -174, "_REVOKE_PARTITIONS", false, "Local: revoke partitions";
    CONFLICT = -173, "_CONFLICT", false, "Local: conflicting use";
    STATE = -172, "_STATE", false, "Local: erroneous state";
    UNKNOWN_PROTOCOL = -171, "_UNKNOWN_PROTOCOL", false, "Local: unknown protocol";
    NOT_IMPLEMENTED = -170, "_NOT_IMPLEMENTED", false, "Local: not implemented in this release";
    AUTHENTICATION = -169, "_AUTHENTICATION", false, "Local: authentication failure";
    NO_OFFSET = -168, "_NO_OFFSET", false, "Local: no offset to reset to (auto.offset.reset is none)";
    OUTDATED = -167, "_OUTDATED", false, "Local: outdated";
    TIMED_OUT_QUEUE = -166, "_TIMED_OUT_QUEUE", true, "Local: timed out in queue";
    UNSUPPORTED_FEATURE = -165, "_UNSUPPORTED_FEATURE", false, "Local: required feature not supported by broker";
    WAIT_CACHE = -164, "_WAIT_CACHE", true, "Local: awaiting cache update";
    INTR = -163, "_INTR", false, "Local: operation interrupted";
    KEY_SERIALIZATION = -162, "_KEY_SERIALIZATION", false, "Local: key serialization error";
    VALUE_SERIALIZATION = -161, "_VALUE_SERIALIZATION", false, "Local: value serialization error";
    KEY_DESERIALIZATION = -160, "_KEY_DESERIALIZATION", false, "Local: key deserialization error";
    VALUE_DESERIALIZATION = -159, "_VALUE_DESERIALIZATION", false, "Local: value deserialization error";
    PARTIAL = -158, "_PARTIAL", false, "Local: partial response";
    READ_ONLY = -157, "_READ_ONLY", false, "Local: read-only object";
    NOENT = -156, "_NOENT", false, "Local: no such entry";
    UNDERFLOW = -155, "_UNDERFLOW", false, "Local: read underflow";
    INVALID_TYPE = -154, "_INVALID_TYPE", false, "Local: invalid type";
    RETRY = -153, "_RETRY", true, "Local: retry operation";
    PURGE_QUEUE = -152, "_PURGE_QUEUE", false, "Local: purged in queue";
    PURGE_INFLIGHT = -151, "_PURGE_INFLIGHT", false, "Local: purged in flight";
    FATAL = -150, "_FATAL", false, "Local: fatal error";
    INCONSISTENT = -149, "_INCONSISTENT", false, "Local: inconsistent state";
    GAPLESS_GUARANTEE = -148, "_GAPLESS_GUARANTEE", false, "Local: gap-less ordering would not be guaranteed";
    MAX_POLL_EXCEEDED = -147, "_MAX_POLL_EXCEEDED", false, "Local: maximum application poll interval exceeded";
    UNKNOWN_BROKER = -146, "_UNKNOWN_BROKER", false, "Local: unknown broker";
    NOT_CONFIGURED = -145, "_NOT_CONFIGURED", false, "Local: functionality not configured";
    FENCED = -144, "_FENCED", false, "Local: this instance has been fenced by a newer instance";
    APPLICATION = -143, "_APPLICATION", false, "Local: application generated error";
    ASSIGNMENT_LOST = -142, "_ASSIGNMENT_LOST", false, "Local: group partition assignment lost";
    NOOP = -141, "_NOOP", false, "Local: no operation performed";
    AUTO_OFFSET_RESET = -140, "_AUTO_OFFSET_RESET", false, "Local: offset reset by auto.offset.reset";
    LOG_TRUNCATION = -139, "_LOG_TRUNCATION", false, "Local: partition log truncation detected";
    INVALID_DIFFERENT_RECORD = -138, "_INVALID_DIFFERENT_RECORD", false, "Local: a different record in the batch was invalid";
    DESTROY_BROKER = -137, "_DESTROY_BROKER", false, "Local: broker handle destroyed";
}

/// `NO_ERROR` (0).
pub const NO_ERROR: i32 = 0;

/// Kafka codes whose librdkafka / confluent-kafka name differs from Apache Kafka's protocol name.
const KAFKA_RENAMES: &[(i16, &str)] = &[
    (-1, "UNKNOWN"),
    (0, "NO_ERROR"),
    (2, "INVALID_MSG"),
    (3, "UNKNOWN_TOPIC_OR_PART"),
    (4, "INVALID_MSG_SIZE"),
    (6, "NOT_LEADER_FOR_PARTITION"),
    (10, "MSG_SIZE_TOO_LARGE"),
    (11, "STALE_CTRL_EPOCH"),
    (17, "TOPIC_EXCEPTION"),
];

/// The name of a code: `_MSG_TIMED_OUT`, `UNKNOWN_TOPIC_OR_PART`, ... (`"UNKNOWN"` for numbers
/// that are neither).
pub fn name(code: i32) -> &'static str {
    if let Some(l) = local(code) {
        return l.name;
    }
    let Ok(k) = i16::try_from(code) else {
        return "UNKNOWN";
    };
    if let Some((_, n)) = KAFKA_RENAMES.iter().find(|(c, _)| *c == k) {
        return n;
    }
    match ErrorCode::from_code(k) {
        ErrorCode::Unknown(_) => "UNKNOWN",
        known => known.name(),
    }
}

/// The client-side code entry for `code`, if it is one.
pub fn local(code: i32) -> Option<&'static LocalCode> {
    if !(-199..=-137).contains(&code) {
        return None;
    }
    LOCAL.get((code + 199) as usize).filter(|l| l.code == code)
}

/// Looks a name up (either range).
pub fn from_name(name: &str) -> Option<i32> {
    if let Some(l) = LOCAL.iter().find(|l| l.name == name) {
        return Some(l.code);
    }
    if let Some((c, _)) = KAFKA_RENAMES.iter().find(|(_, n)| *n == name) {
        return Some(i32::from(*c));
    }
    ErrorCode::from_name(name)
        .filter(|c| !KAFKA_RENAMES.iter().any(|(k, _)| *k == c.code()))
        .map(|c| i32::from(c.code()))
}

/// Whether an error with this code is worth retrying, by default.
pub fn is_retriable(code: i32) -> bool {
    match local(code) {
        Some(l) => l.retriable,
        None => i16::try_from(code).is_ok_and(|k| ErrorCode::from_code(k).is_retriable()),
    }
}

/// A one-line description: the table's for client-side codes, `Broker: <name in words>` for
/// Kafka codes.
pub fn description(code: i32) -> String {
    if let Some(l) = local(code) {
        return l.description.to_string();
    }
    if code == NO_ERROR {
        return "Success".to_string();
    }
    let protocol_name = i16::try_from(code)
        .ok()
        .map(ErrorCode::from_code)
        .filter(|c| !matches!(c, ErrorCode::Unknown(_)))
        .map_or("unknown error", |c| c.name());
    let mut words = protocol_name.replace('_', " ").to_ascii_lowercase();
    if let Some(first) = words.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    format!("Broker: {words}")
}

/// Every named code `(name, number)`: the client-side ones, then every Kafka code. The shells
/// publish these as constants (`KafkaError._MSG_TIMED_OUT`, `KafkaError.MSG_SIZE_TOO_LARGE`).
pub fn all() -> Vec<(&'static str, i32)> {
    let mut out: Vec<(&'static str, i32)> = LOCAL.iter().map(|l| (l.name, l.code)).collect();
    for c in ErrorCode::ALL {
        let code = i32::from(c.code());
        out.push((name(code), code));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_table_is_dense_and_matches_constants() {
        for (i, l) in LOCAL.iter().enumerate() {
            assert_eq!(l.code, -199 + i as i32, "{}", l.name);
            assert_eq!(local(l.code).map(|x| x.name), Some(l.name));
            assert_eq!(from_name(l.name), Some(l.code));
        }
        assert_eq!(MSG_TIMED_OUT, -192);
        assert_eq!(PARTITION_EOF, -191);
        assert_eq!(QUEUE_FULL, -184);
        assert_eq!(NOT_IMPLEMENTED, -170);
        assert_eq!(DESTROY_BROKER, -137);
    }

    #[test]
    fn kafka_names_follow_librdkafka() {
        assert_eq!(name(3), "UNKNOWN_TOPIC_OR_PART");
        assert_eq!(name(10), "MSG_SIZE_TOO_LARGE");
        assert_eq!(name(6), "NOT_LEADER_FOR_PARTITION");
        assert_eq!(name(1), "OFFSET_OUT_OF_RANGE");
        assert_eq!(name(98), "SNAPSHOT_NOT_FOUND");
        assert_eq!(name(0), "NO_ERROR");
        assert_eq!(name(-1), "UNKNOWN");
        assert_eq!(name(5000), "UNKNOWN");
        assert_eq!(from_name("UNKNOWN_TOPIC_OR_PART"), Some(3));
        assert_eq!(from_name("UNKNOWN_TOPIC_OR_PARTITION"), None);
        assert_eq!(from_name("REQUEST_TIMED_OUT"), Some(7));
        assert_eq!(description(3), "Broker: Unknown topic or partition");
        assert!(is_retriable(6) && !is_retriable(10) && is_retriable(MSG_TIMED_OUT));
    }

    #[test]
    fn every_name_is_unique() {
        let all = all();
        let mut names: Vec<_> = all.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }
}
