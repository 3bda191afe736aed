//! Errors as the foreign side sees them: the bindings' [`ClientError`] (stable code, name,
//! message, retriable / fatal / abortable class) carried unchanged.

use odradek_bindings::{ClientError, Stage};

/// An error's code and class, as a plain value (also used where one item of a call failed:
/// a delivery report, one topic of an admin call).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ErrorInfo {
    /// Kafka's error code as is (e.g. 3 UNKNOWN_TOPIC_OR_PARTITION), or a negative client-side
    /// code like librdkafka's (e.g. -186 `_INVALID_ARG`).
    pub code: i32,
    /// The code's name (`UNKNOWN_TOPIC_OR_PARTITION`, `_INVALID_ARG`, ...).
    pub name: String,
    /// Human-readable detail (names the configuration key for configuration errors).
    pub detail: String,
    /// Whether retrying the operation may succeed.
    pub retriable: bool,
    /// Whether the client instance cannot continue (e.g. a fenced transactional producer).
    pub fatal: bool,
    /// Whether the current transaction must be aborted.
    pub txn_requires_abort: bool,
}

impl From<&ClientError> for ErrorInfo {
    fn from(e: &ClientError) -> Self {
        ErrorInfo {
            code: e.code(),
            name: e.name().to_string(),
            detail: e.message().to_string(),
            retriable: e.is_retriable(),
            fatal: e.is_fatal(),
            txn_requires_abort: e.txn_requires_abort(),
        }
    }
}

/// Receives client-level errors (librdkafka's `error_cb`): a broker that cannot be reached any
/// more (`_TRANSPORT`, once until it answers again), every known broker down
/// (`_ALL_BROKERS_DOWN`, once each time), an authentication failure; the same code at most
/// once a second. Where it is called is the client's to say (a producer's and an admin
/// client's on a client thread, a consumer's inside `poll`); it must return quickly and must
/// not throw.
#[uniffi::export(with_foreign)]
pub trait ClientErrorListener: Send + Sync {
    /// One error.
    fn on_error(&self, error: ErrorInfo);
}

/// The error every fallible call throws (Kotlin: `NativeException.Kafka`).
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum NativeError {
    /// A client error with its code and class.
    #[error("{}: {}", info.name, info.detail)]
    Kafka {
        /// What went wrong.
        info: ErrorInfo,
    },
}

impl From<ClientError> for NativeError {
    fn from(e: ClientError) -> Self {
        NativeError::Kafka {
            info: ErrorInfo::from(&e),
        }
    }
}

impl NativeError {
    /// A core error from a request (admin calls, lookups).
    pub(crate) fn core(e: &odradek::Error) -> Self {
        ClientError::from_core(e, Stage::Request).into()
    }
}

/// The item-level form of a core error.
pub(crate) fn info_of(e: &odradek::Error) -> ErrorInfo {
    ErrorInfo::from(&ClientError::from_core(e, Stage::Request))
}

/// The item-level form of a broker's error code.
pub(crate) fn info_of_code(code: odradek::ErrorCode) -> ErrorInfo {
    info_of(&odradek::Error::Kafka(code))
}
