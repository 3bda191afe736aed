//! The crate's single error type.

use crate::error_code::ErrorCode;

/// Shorthand for results carrying [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the Odradek core.
///
/// Each variant knows whether it is worth retrying ([`Error::is_retriable`]) and which Kafka
/// error code describes it on the wire ([`Error::kafka_code`]), so a broker can answer with the
/// protocol's error and a client can classify a failure the same way.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A frame declared a size above the configured maximum; nothing was allocated for it.
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge {
        /// Declared size.
        size: usize,
        /// Configured limit.
        max: usize,
    },
    /// A frame declared a negative size.
    #[error("invalid frame length {0}")]
    InvalidFrameLength(i32),
    /// A request or response body could not be decoded.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was being decoded.
        what: &'static str,
        /// Why it failed.
        detail: String,
    },
    /// An API key this library does not know.
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    /// A version of an API outside the range we can encode or decode.
    #[error("unsupported version {version} of {api} (supported {min}..={max})")]
    UnsupportedVersion {
        /// API name.
        api: &'static str,
        /// Requested version.
        version: i16,
        /// Lowest supported version.
        min: i16,
        /// Highest supported version.
        max: i16,
    },
    /// Client and broker share no version of an API.
    #[error("no common version of {api}: ours {ours_min}..={ours_max}, broker's {broker}")]
    NoCommonVersion {
        /// API name.
        api: &'static str,
        /// Our lowest version.
        ours_min: i16,
        /// Our highest version.
        ours_max: i16,
        /// The broker's range, or "not offered".
        broker: String,
    },
    /// A record batch failed validation (size, structure, record count).
    #[error("corrupt record batch: {0}")]
    CorruptBatch(String),
    /// A record batch's CRC-32C does not match its contents.
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// CRC in the batch header.
        stored: u32,
        /// CRC computed over the batch.
        computed: u32,
    },
    /// A v0/v1 message set: Kafka 4 removed these formats and so do we.
    #[error("unsupported message format: magic {0} (only RecordBatch v2 is supported)")]
    UnsupportedMessageFormat(i8),
    /// A compression codec id outside 0..=4.
    #[error("unsupported compression type id {0}")]
    UnsupportedCompression(u8),
    /// Compressing or decompressing failed, or the output exceeded its limit.
    #[error("{codec} compression error: {detail}")]
    Compression {
        /// Codec name.
        codec: &'static str,
        /// Why it failed.
        detail: String,
    },
    /// The peer answered with a Kafka error code.
    #[error("broker error {0}")]
    Kafka(ErrorCode),
    /// The peer answered with a Kafka error code and an explanation (admin APIs such as
    /// CreateAcls and AlterUserScramCredentials carry one).
    #[error("broker error {code}: {message}")]
    KafkaMessage {
        /// The code.
        code: ErrorCode,
        /// The broker's explanation.
        message: String,
    },
    /// A record the broker refused only because other records of its batch were invalid: the
    /// broker listed those (Produce `record_errors`, KIP-467) and refused the batch with
    /// `code`; this record itself was fine (librdkafka's `_INVALID_DIFFERENT_RECORD`).
    #[error("record refused because a different record in its batch was invalid ({code})")]
    InvalidDifferentRecord {
        /// The batch's error code (INVALID_RECORD or INVALID_TIMESTAMP).
        code: ErrorCode,
    },
    /// An I/O error on a socket or file.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A configuration key or value was rejected.
    #[error("invalid configuration `{key}`: {message}")]
    Config {
        /// The property name.
        key: String,
        /// Why it was rejected.
        message: String,
    },
    /// The connection to a broker failed or was closed before a response arrived.
    #[error("connection to {broker} failed: {detail}")]
    Connection {
        /// Broker address.
        broker: String,
        /// What happened.
        detail: String,
    },
    /// No broker the client knows (from metadata, or the bootstrap servers before the first
    /// metadata) can be reached: librdkafka's `_ALL_BROKERS_DOWN`, told to error callbacks once
    /// each time it happens. The client keeps retrying.
    #[error("{down}/{total} brokers are down")]
    AllBrokersDown {
        /// Brokers whose last connection attempt failed.
        down: usize,
        /// Brokers known.
        total: usize,
    },
    /// An operation did not complete in time (`request.timeout.ms`, `delivery.timeout.ms`,
    /// `max.block.ms`).
    #[error("timed out: {0}")]
    Timeout(String),
    /// The producer's buffer stayed full for `max.block.ms`.
    #[error("producer queue full: {0}")]
    QueueFull(String),
    /// A record's topic did not appear in the cluster's metadata before the record's deadline
    /// (`max.block.ms` / `delivery.timeout.ms`): the cluster reported no such topic.
    #[error("unknown topic `{topic}`: {detail}")]
    UnknownTopic {
        /// The topic.
        topic: String,
        /// How long it was waited for.
        detail: String,
    },
    /// The broker refused the client's SASL credentials (SASL_AUTHENTICATION_FAILED), or a SASL
    /// exchange failed on the client's side (a server message that does not check out, no
    /// token). Not retried: the same credentials would fail again.
    #[error("SASL authentication with {broker} failed: {detail}")]
    SaslAuthentication {
        /// Broker address (or the token endpoint).
        broker: String,
        /// What the broker or the check said (never a secret).
        detail: String,
    },
    /// The TLS handshake with a broker failed: an untrusted, expired or wrongly named
    /// certificate, no common protocol or cipher suite, or a peer that does not speak TLS.
    /// Not retried.
    #[error("SSL handshake with {broker} failed: {detail}")]
    SslHandshake {
        /// Broker address.
        broker: String,
        /// Why it failed.
        detail: String,
    },
    /// The record was purged from the producer's queue before it was sent.
    #[error("record purged from the producer queue before it was sent")]
    Purged,
    /// A record larger than the producer may send (`max.request.size` or `buffer.memory`).
    #[error("record of {size} bytes exceeds {limit_name} ({limit} bytes)")]
    RecordTooLarge {
        /// Serialized size.
        size: usize,
        /// The limit's property name.
        limit_name: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// A transactional operation failed. `abortable`: the current transaction can no longer
    /// commit, but `abort_transaction` recovers the producer (e.g. a failed send inside the
    /// transaction); otherwise the producer is unusable and must be closed (e.g. fenced by a
    /// newer instance with the same `transactional.id`). `code` is the Kafka error behind it.
    #[error("transaction {}: {detail} ({code})", if *abortable { "must be aborted" } else { "failed fatally" })]
    Transaction {
        /// Whether `abort_transaction` recovers the producer.
        abortable: bool,
        /// The Kafka error that caused it.
        code: ErrorCode,
        /// What happened.
        detail: String,
    },
    /// The call is not valid in the client's current state (e.g. `send` on a transactional
    /// producer before `begin_transaction`); nothing was changed.
    #[error("invalid state: {0}")]
    State(String),
    /// After a leader change the consumer found the partition's log truncated below its
    /// position (KIP-320: an unclean election, records the old leader never replicated) and
    /// `auto.offset.reset` is `none`, so it reports instead of moving: Java's
    /// `LogTruncationException` (an OFFSET_OUT_OF_RANGE, its [`Error::kafka_code`]),
    /// librdkafka's `_LOG_TRUNCATION`. The position is left where it was; seek to go on.
    #[error("log truncation detected for {topic}-{partition} at offset {position}: {}", match divergent_offset {
        Some(o) => format!("the new leader's log diverges from offset {o}"),
        None => "the new leader does not know the last consumed leader epoch".to_string(),
    })]
    LogTruncation {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The consumer's position when the truncation was found.
        position: i64,
        /// The first offset known to diverge (the end of the last consumed epoch on the new
        /// leader); `None` when the new leader does not know that epoch.
        divergent_offset: Option<i64>,
    },
}

impl Error {
    /// Builds a [`Error::Malformed`].
    pub fn malformed(what: &'static str, detail: impl std::fmt::Display) -> Self {
        Error::Malformed {
            what,
            detail: detail.to_string(),
        }
    }

    /// Whether retrying the operation later may succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Kafka(code) | Error::KafkaMessage { code, .. } => code.is_retriable(),
            Error::Io(_) | Error::Connection { .. } | Error::Timeout(_) => true,
            Error::AllBrokersDown { .. } => true,
            Error::CrcMismatch { .. } | Error::UnknownTopic { .. } => true,
            _ => false,
        }
    }

    /// The Kafka error code that describes this error on the wire.
    pub fn kafka_code(&self) -> ErrorCode {
        match self {
            Error::Kafka(code) | Error::KafkaMessage { code, .. } => *code,
            Error::FrameTooLarge { .. }
            | Error::InvalidFrameLength(_)
            | Error::Malformed { .. } => ErrorCode::InvalidRequest,
            Error::UnknownApiKey(_)
            | Error::UnsupportedVersion { .. }
            | Error::NoCommonVersion { .. } => ErrorCode::UnsupportedVersion,
            Error::CorruptBatch(_) | Error::CrcMismatch { .. } => ErrorCode::CorruptMessage,
            Error::UnsupportedMessageFormat(_) => ErrorCode::UnsupportedForMessageFormat,
            Error::UnsupportedCompression(_) => ErrorCode::UnsupportedCompressionType,
            Error::Compression { .. } => ErrorCode::CorruptMessage,
            Error::Io(_) | Error::Connection { .. } | Error::AllBrokersDown { .. } => {
                ErrorCode::NetworkException
            }
            Error::Timeout(_) => ErrorCode::RequestTimedOut,
            Error::QueueFull(_) | Error::Purged => ErrorCode::UnknownServerError,
            Error::UnknownTopic { .. } => ErrorCode::UnknownTopicOrPartition,
            Error::SaslAuthentication { .. } => ErrorCode::SaslAuthenticationFailed,
            Error::SslHandshake { .. } => ErrorCode::NetworkException,
            Error::RecordTooLarge { .. } => ErrorCode::MessageTooLarge,
            Error::Config { .. } => ErrorCode::InvalidConfig,
            Error::Closed => ErrorCode::UnknownServerError,
            Error::Transaction { code, .. } => *code,
            Error::State(_) => ErrorCode::InvalidTxnState,
            Error::InvalidDifferentRecord { code } => *code,
            Error::LogTruncation { .. } => ErrorCode::OffsetOutOfRange,
        }
    }
}

impl Error {
    /// Builds an [`Error::Config`].
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config {
            key: key.into(),
            message: message.into(),
        }
    }

    /// Whether the error is an authentication failure (SASL or TLS): retrying with the same
    /// settings fails the same way, so callers report it instead of waiting.
    pub fn is_authentication(&self) -> bool {
        matches!(
            self,
            Error::SaslAuthentication { .. } | Error::SslHandshake { .. }
        ) || matches!(
            self,
            Error::Kafka(
                ErrorCode::SaslAuthenticationFailed
                    | ErrorCode::IllegalSaslState
                    | ErrorCode::UnsupportedSaslMechanism
            )
        )
    }

    /// Whether the error is fatal for the client instance (it cannot continue and should be
    /// closed): a closed client, a bad configuration, a fatal transactional error, or one of
    /// a Kafka code listed by [`is_fatal_code`].
    pub fn is_fatal(&self) -> bool {
        match self {
            Error::Closed | Error::Config { .. } => true,
            Error::Transaction { abortable, .. } => !abortable,
            Error::Kafka(code) | Error::KafkaMessage { code, .. } => is_fatal_code(*code),
            _ => false,
        }
    }

    /// Whether the error ended the current transaction but `abort_transaction` recovers the
    /// producer (Java's `TransactionAbortableException` family). Never true together with
    /// [`Error::is_fatal`].
    pub fn is_abortable(&self) -> bool {
        matches!(
            self,
            Error::Transaction {
                abortable: true,
                ..
            }
        )
    }
}

/// Kafka error codes after which a producer cannot continue: it was fenced by a newer instance
/// with the same `transactional.id` (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
/// TRANSACTION_COORDINATOR_FENCED), is not authorized (TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
/// CLUSTER_AUTHORIZATION_FAILED), or the broker cannot serve the protocol it needs
/// (UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_TXN_STATE,
/// INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT). Java and librdkafka treat the same
/// codes as fatal.
pub fn is_fatal_code(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::ProducerFenced
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::TransactionCoordinatorFenced
            | ErrorCode::TransactionalIdAuthorizationFailed
            | ErrorCode::ClusterAuthorizationFailed
            | ErrorCode::UnsupportedVersion
            | ErrorCode::UnsupportedForMessageFormat
            | ErrorCode::InvalidTxnState
            | ErrorCode::InvalidProducerIdMapping
            | ErrorCode::InvalidTransactionTimeout
    )
}

impl Error {
    /// A per-item or whole-response error code with the broker's optional message: `Ok` for
    /// NONE, [`Error::KafkaMessage`] when the broker explained itself, else [`Error::Kafka`].
    pub fn from_response(code: i16, message: Option<&str>) -> Result<(), Error> {
        let code = ErrorCode::from_code(code);
        if code.is_ok() {
            return Ok(());
        }
        Err(match message.filter(|m| !m.is_empty()) {
            Some(m) => Error::KafkaMessage {
                code,
                message: m.to_string(),
            },
            None => Error::Kafka(code),
        })
    }
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Self {
        Error::Kafka(code)
    }
}

impl Error {
    /// A copy of this error, for another record or item that failed the same way (a request-level
    /// failure fails every item the request carried). `Error` is not `Clone` because it can hold
    /// an `io::Error`; an I/O error is copied by kind and message.
    pub fn duplicate(&self) -> Error {
        match self {
            Error::FrameTooLarge { size, max } => Error::FrameTooLarge {
                size: *size,
                max: *max,
            },
            Error::InvalidFrameLength(n) => Error::InvalidFrameLength(*n),
            Error::Malformed { what, detail } => Error::Malformed {
                what,
                detail: detail.clone(),
            },
            Error::UnknownApiKey(k) => Error::UnknownApiKey(*k),
            Error::UnsupportedVersion {
                api,
                version,
                min,
                max,
            } => Error::UnsupportedVersion {
                api,
                version: *version,
                min: *min,
                max: *max,
            },
            Error::NoCommonVersion {
                api,
                ours_min,
                ours_max,
                broker,
            } => Error::NoCommonVersion {
                api,
                ours_min: *ours_min,
                ours_max: *ours_max,
                broker: broker.clone(),
            },
            Error::CorruptBatch(s) => Error::CorruptBatch(s.clone()),
            Error::CrcMismatch { stored, computed } => Error::CrcMismatch {
                stored: *stored,
                computed: *computed,
            },
            Error::UnsupportedMessageFormat(m) => Error::UnsupportedMessageFormat(*m),
            Error::UnsupportedCompression(c) => Error::UnsupportedCompression(*c),
            Error::Compression { codec, detail } => Error::Compression {
                codec,
                detail: detail.clone(),
            },
            Error::Kafka(code) => Error::Kafka(*code),
            Error::InvalidDifferentRecord { code } => Error::InvalidDifferentRecord { code: *code },
            Error::KafkaMessage { code, message } => Error::KafkaMessage {
                code: *code,
                message: message.clone(),
            },
            Error::Io(io) => Error::Io(std::io::Error::new(io.kind(), io.to_string())),
            Error::Config { key, message } => Error::Config {
                key: key.clone(),
                message: message.clone(),
            },
            Error::Connection { broker, detail } => Error::Connection {
                broker: broker.clone(),
                detail: detail.clone(),
            },
            Error::AllBrokersDown { down, total } => Error::AllBrokersDown {
                down: *down,
                total: *total,
            },
            Error::Timeout(s) => Error::Timeout(s.clone()),
            Error::QueueFull(s) => Error::QueueFull(s.clone()),
            Error::UnknownTopic { topic, detail } => Error::UnknownTopic {
                topic: topic.clone(),
                detail: detail.clone(),
            },
            Error::Purged => Error::Purged,
            Error::SaslAuthentication { broker, detail } => Error::SaslAuthentication {
                broker: broker.clone(),
                detail: detail.clone(),
            },
            Error::SslHandshake { broker, detail } => Error::SslHandshake {
                broker: broker.clone(),
                detail: detail.clone(),
            },
            Error::RecordTooLarge {
                size,
                limit_name,
                limit,
            } => Error::RecordTooLarge {
                size: *size,
                limit_name,
                limit: *limit,
            },
            Error::Closed => Error::Closed,
            Error::Transaction {
                abortable,
                code,
                detail,
            } => Error::Transaction {
                abortable: *abortable,
                code: *code,
                detail: detail.clone(),
            },
            Error::State(s) => Error::State(s.clone()),
            Error::LogTruncation {
                topic,
                partition,
                position,
                divergent_offset,
            } => Error::LogTruncation {
                topic: topic.clone(),
                partition: *partition,
                position: *position,
                divergent_offset: *divergent_offset,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_keep_message_and_class() {
        let errors = [
            Error::Kafka(ErrorCode::NotController),
            Error::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "refused",
            )),
            Error::Connection {
                broker: "h:1".into(),
                detail: "gone".into(),
            },
            Error::Timeout("slow".into()),
            Error::LogTruncation {
                topic: "t".into(),
                partition: 1,
                position: 100,
                divergent_offset: Some(80),
            },
        ];
        for e in &errors {
            let d = e.duplicate();
            assert_eq!(d.to_string(), e.to_string());
            assert_eq!(d.is_retriable(), e.is_retriable());
            assert_eq!(d.kafka_code(), e.kafka_code());
        }
    }
}
