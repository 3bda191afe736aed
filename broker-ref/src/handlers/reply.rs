//! What every handler uses to build its response: per-item error parts, string conversion and
//! the handler result type.

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::protocol::StrBytes;

use crate::Error;

/// Converts an error to `(error_code, error_message)` for a per-item result.
pub(crate) fn error_parts(e: &Error) -> (i16, Option<StrBytes>) {
    let message = match e {
        Error::Kafka { message, .. } | Error::InvalidRecords { message, .. } => message.clone(),
        other => other.to_string(),
    };
    (e.code().code(), Some(StrBytes::from_string(message)))
}

/// A `StrBytes` from any string.
pub(crate) fn sb(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// `Ok(ResponseKind)` shorthand used by handlers.
pub(crate) type HandlerResult = crate::Result<ResponseKind>;
