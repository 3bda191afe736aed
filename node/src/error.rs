//! The one mapping from core and binding errors to the errors JavaScript sees.
//!
//! napi Promises reject with an `Error` whose `message` we control, so the structured part is
//! encoded there: `[odradek CODE TYPE R] message`, with the numeric code (Kafka's, or a negative
//! client-side one from `odradek_bindings::codes`), its name (Apache Kafka's protocol name for
//! Kafka codes, e.g. `TOPIC_ALREADY_EXISTS`; `_MSG_TIMED_OUT` style for client-side ones) and
//! `1`/`0` for retriable. `node/lib/errors.js` parses it into a `KafkaJSError`.

use odradek::ErrorCode;
use odradek_bindings::{codes, ClientError, Stage};

/// A napi error carrying `code`, its name, retriability and `message`.
pub fn encode(code: i32, retriable: bool, message: &str) -> napi::Error {
    let name = if code >= 0 {
        i16::try_from(code).map_or("UNKNOWN", |c| ErrorCode::from_code(c).name())
    } else {
        codes::name(code)
    };
    napi::Error::from_reason(format!(
        "[odradek {code} {name} {}] {message}",
        u8::from(retriable)
    ))
}

/// Maps a binding error.
pub fn from_client(e: &ClientError) -> napi::Error {
    encode(e.code(), e.is_retriable(), e.message())
}

/// Maps a core error at `stage`.
pub fn from_core(e: &odradek::Error, stage: Stage) -> napi::Error {
    from_client(&ClientError::from_core(e, stage))
}

/// Maps a core error of a request (admin, offsets, metadata).
pub fn request(e: odradek::Error) -> napi::Error {
    from_core(&e, Stage::Request)
}

/// A Kafka error code returned for one item.
pub fn kafka(code: ErrorCode, context: &str) -> napi::Error {
    let message = if context.is_empty() {
        code.name().to_string()
    } else {
        format!("{context}: {}", code.name())
    };
    encode(i32::from(code.code()), code.is_retriable(), &message)
}

/// `_INVALID_ARG`: bad input from the application.
pub fn invalid(message: impl AsRef<str>) -> napi::Error {
    encode(codes::INVALID_ARG, false, message.as_ref())
}
