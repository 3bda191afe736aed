//! The one error type the shells see, and the one place core errors are mapped to it.

use odradek::{Error, ErrorCode};

use crate::codes;

/// Where a core error happened; the same core error means different things at different stages
/// (a `Timeout` while enqueueing is a message that never left the client, a `Timeout` on a
/// request is a slow broker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `Producer::send`: waiting for metadata or buffer space, validating the record.
    Enqueue,
    /// A record's delivery (the `DeliveryFuture`).
    Delivery,
    /// Any other request (metadata, offsets, fetch).
    Request,
    /// Consuming (`poll`).
    Consume,
}

/// An error with a stable numeric code (see [`crate::codes`]), a message, and its class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    code: i32,
    message: String,
    retriable: bool,
    fatal: bool,
    txn_requires_abort: bool,
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClientError {}

impl ClientError {
    /// An error with `code`; the message defaults to the code's description and the retriable
    /// flag to the code's class.
    pub fn new(code: i32, message: impl Into<Option<String>>) -> Self {
        ClientError {
            code,
            message: message.into().unwrap_or_else(|| codes::description(code)),
            retriable: codes::is_retriable(code),
            fatal: code == codes::FATAL,
            txn_requires_abort: false,
        }
    }

    /// Every field given explicitly (the shells' `KafkaError(code, reason, fatal, ...)`).
    pub fn with_flags(
        code: i32,
        message: Option<String>,
        fatal: bool,
        retriable: bool,
        txn_requires_abort: bool,
    ) -> Self {
        ClientError {
            code,
            message: message.unwrap_or_else(|| codes::description(code)),
            retriable,
            fatal,
            txn_requires_abort,
        }
    }

    /// `_NOT_IMPLEMENTED` with an explanation of what is missing.
    pub fn not_implemented(what: &str) -> Self {
        ClientError::new(codes::NOT_IMPLEMENTED, Some(what.to_string()))
    }

    /// `_INVALID_ARG`.
    pub fn invalid_arg(message: impl Into<String>) -> Self {
        ClientError::new(codes::INVALID_ARG, Some(message.into()))
    }

    /// `_STATE`.
    pub fn state(message: impl Into<String>) -> Self {
        ClientError::new(codes::STATE, Some(message.into()))
    }

    /// The numeric code.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The code's name (`_MSG_TIMED_OUT`, `MSG_SIZE_TOO_LARGE`, ...).
    pub fn name(&self) -> &'static str {
        codes::name(self.code)
    }

    /// Human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying may succeed.
    pub fn is_retriable(&self) -> bool {
        self.retriable
    }

    /// Whether the client instance cannot continue.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// Whether the current transaction must be aborted (`abort_transaction` recovers the
    /// producer).
    pub fn txn_requires_abort(&self) -> bool {
        self.txn_requires_abort
    }

    /// Maps a core error. This is the only place that knows how core errors become codes.
    pub fn from_core(error: &Error, stage: Stage) -> Self {
        let message = error.to_string();
        let code = match error {
            Error::Kafka(ErrorCode::UnknownTopicOrPartition) if stage == Stage::Enqueue => {
                // `send` checks an explicit partition against the topic's partition count.
                codes::UNKNOWN_PARTITION
            }
            Error::Kafka(code) | Error::KafkaMessage { code, .. } => i32::from(code.code()),
            Error::RecordTooLarge { .. } => i32::from(ErrorCode::MessageTooLarge.code()),
            Error::Timeout(_) => match stage {
                Stage::Enqueue | Stage::Delivery => codes::MSG_TIMED_OUT,
                Stage::Request | Stage::Consume => codes::TIMED_OUT,
            },
            Error::QueueFull(_) => codes::QUEUE_FULL,
            Error::UnknownTopic { .. } => codes::UNKNOWN_TOPIC,
            Error::SaslAuthentication { .. } => codes::AUTHENTICATION,
            Error::SslHandshake { .. } => codes::SSL,
            Error::Purged => codes::PURGE_QUEUE,
            Error::Io(_) | Error::Connection { .. } => codes::TRANSPORT,
            Error::AllBrokersDown { .. } => codes::ALL_BROKERS_DOWN,
            Error::Config { .. } => codes::INVALID_ARG,
            Error::Closed => codes::DESTROY,
            Error::FrameTooLarge { .. }
            | Error::InvalidFrameLength(_)
            | Error::Malformed { .. }
            | Error::CorruptBatch(_)
            | Error::CrcMismatch { .. }
            | Error::UnsupportedMessageFormat(_) => codes::BAD_MSG,
            Error::UnsupportedCompression(_) | Error::Compression { .. } => codes::BAD_COMPRESSION,
            Error::UnknownApiKey(_)
            | Error::UnsupportedVersion { .. }
            | Error::NoCommonVersion { .. } => codes::UNSUPPORTED_FEATURE,
            // The Kafka code behind a failed transaction (PRODUCER_FENCED, ...); its class is
            // carried by the fatal / txn_requires_abort flags below.
            Error::Transaction { code, .. } => i32::from(code.code()),
            Error::State(_) => codes::STATE,
            Error::InvalidDifferentRecord { .. } => codes::INVALID_DIFFERENT_RECORD,
            Error::LogTruncation { .. } => codes::LOG_TRUNCATION,
            _ => codes::FAIL,
        };
        let retriable = match error {
            Error::Kafka(_)
            | Error::KafkaMessage { .. }
            | Error::Timeout(_)
            | Error::QueueFull(_)
            | Error::UnknownTopic { .. }
            | Error::Purged => codes::is_retriable(code),
            other => other.is_retriable(),
        };
        ClientError {
            code,
            message,
            retriable,
            fatal: error.is_fatal() && !matches!(error, Error::Config { .. } | Error::Closed),
            txn_requires_abort: error.is_abortable(),
        }
    }

    /// A send-stage timeout becomes `_UNKNOWN_TOPIC` when the topic is not in the metadata (the
    /// record waited `max.block.ms` for a topic that does not exist), as librdkafka reports it.
    pub fn unknown_topic(topic: &str, cause: &ClientError) -> Self {
        ClientError::new(
            codes::UNKNOWN_TOPIC,
            Some(format!(
                "topic `{topic}` does not exist ({})",
                cause.message
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_stable() {
        let c = |e: Error, s| ClientError::from_core(&e, s);
        assert_eq!(
            c(
                Error::Kafka(ErrorCode::NotLeaderOrFollower),
                Stage::Delivery
            )
            .code(),
            6
        );
        assert!(c(
            Error::Kafka(ErrorCode::NotLeaderOrFollower),
            Stage::Delivery
        )
        .is_retriable());
        assert_eq!(
            c(
                Error::Kafka(ErrorCode::UnknownTopicOrPartition),
                Stage::Enqueue
            )
            .name(),
            "_UNKNOWN_PARTITION"
        );
        let too_large = Error::RecordTooLarge {
            size: 10,
            limit_name: "max.request.size",
            limit: 1,
        };
        let e = c(too_large, Stage::Enqueue);
        assert_eq!((e.code(), e.name()), (10, "MSG_SIZE_TOO_LARGE"));
        assert!(e.message().contains("max.request.size"));
        assert_eq!(
            c(Error::Timeout("x".into()), Stage::Delivery).name(),
            "_MSG_TIMED_OUT"
        );
        assert_eq!(
            c(Error::Timeout("x".into()), Stage::Request).name(),
            "_TIMED_OUT"
        );
        assert_eq!(c(Error::Closed, Stage::Request).name(), "_DESTROY");
        assert_eq!(
            c(Error::config("k", "bad"), Stage::Request).name(),
            "_INVALID_ARG"
        );
        assert!(!c(Error::config("k", "bad"), Stage::Request).is_fatal());
        assert!(c(Error::Kafka(ErrorCode::ProducerFenced), Stage::Delivery).is_fatal());
        let conn = Error::Connection {
            broker: "b".into(),
            detail: "reset".into(),
        };
        let e = c(conn, Stage::Delivery);
        assert_eq!(e.name(), "_TRANSPORT");
        assert!(e.is_retriable());
        let truncated = Error::LogTruncation {
            topic: "t".into(),
            partition: 0,
            position: 200,
            divergent_offset: Some(100),
        };
        let e = c(truncated, Stage::Consume);
        assert_eq!((e.code(), e.name()), (-139, "_LOG_TRUNCATION"));
        assert!(!e.is_retriable() && !e.is_fatal());
        assert!(e.message().contains("t-0 at offset 200"), "{}", e.message());
    }
}
