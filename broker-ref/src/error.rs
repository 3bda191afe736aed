//! The broker crate's single error type.

use odradek::ErrorCode;

/// Shorthand for results carrying [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong inside the broker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure the protocol has an error code for; answered to the client with that code.
    #[error("{code}: {message}")]
    Kafka {
        /// The protocol error code.
        code: ErrorCode,
        /// A human-readable explanation (sent as the error message where the API has one).
        message: String,
    },
    /// Records of a batch failed validation (Kafka's `RecordValidationException`): the
    /// partition is answered with `code`, `message` as its error message, and the failed
    /// records by their index in the batch (Produce v8+ `record_errors`).
    #[error("{code}: {message}")]
    InvalidRecords {
        /// INVALID_RECORD, or INVALID_TIMESTAMP when any record's timestamp was refused.
        code: ErrorCode,
        /// The partition-level message (Kafka's wording).
        message: String,
        /// Every failed record of the batch, in batch order.
        records: Vec<RecordError>,
    },
    /// A configuration key or value was rejected.
    #[error("invalid configuration `{key}`: {message}")]
    Config {
        /// The property name.
        key: String,
        /// Why it was rejected.
        message: String,
    },
    /// A file-system error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A wire or record codec error.
    #[error(transparent)]
    Codec(#[from] odradek::Error),
    /// An interception rule the broker cannot apply (see `server::intercept`).
    #[error("cannot intercept: {0}")]
    Intercept(String),
    /// A test-cluster operation that cannot be done (see `testing`): no such broker, topic or
    /// partition, or the cluster has stopped.
    #[error("test cluster: {0}")]
    Testing(String),
}

/// One refused record of a batch: its index in the batch and why (Produce's `RecordError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// Index of the record in its batch (0-based).
    pub batch_index: i32,
    /// Why the record was refused.
    pub message: String,
}

impl Error {
    /// A Kafka-coded error with a message.
    pub fn kafka(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::Kafka {
            code,
            message: message.into(),
        }
    }

    /// A configuration error for `key`.
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config {
            key: key.into(),
            message: message.into(),
        }
    }

    /// The error code a client should see for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Kafka { code, .. } | Error::InvalidRecords { code, .. } => *code,
            Error::Config { .. } => ErrorCode::InvalidConfig,
            Error::Io(_) => ErrorCode::KafkaStorageError,
            Error::Codec(e) => e.kafka_code(),
            Error::Intercept(_) | Error::Testing(_) => ErrorCode::InvalidRequest,
        }
    }
}
