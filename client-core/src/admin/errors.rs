//! Error helpers for per-item results.

use crate::Error;

/// A copy of `e` for another item that failed the same way (a request-level failure fails every
/// item the request carried). [`Error`] is not `Clone` because it can hold an `io::Error`; an
/// I/O error is copied by kind and message.
pub(crate) fn duplicate(e: &Error) -> Error {
    match e {
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
        Error::Io(io) => Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        Error::Config { key, message } => Error::Config {
            key: key.clone(),
            message: message.clone(),
        },
        Error::Connection { broker, detail } => Error::Connection {
            broker: broker.clone(),
            detail: detail.clone(),
        },
        Error::Timeout(s) => Error::Timeout(s.clone()),
        Error::QueueFull(s) => Error::QueueFull(s.clone()),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

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
        ];
        for e in &errors {
            let d = duplicate(e);
            assert_eq!(d.to_string(), e.to_string());
            assert_eq!(d.is_retriable(), e.is_retriable());
            assert_eq!(d.kafka_code(), e.kafka_code());
        }
    }
}
