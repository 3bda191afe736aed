//! The Kafka wire protocol: framing, headers, message codec, version negotiation, error codes.
//!
//! Message bodies (every request and response at every version) come from the `kafka-protocol`
//! crate, generated from Apache Kafka's own JSON schemas. This module adds what that crate leaves
//! to its users: length-prefixed framing with a size limit checked before allocation, the choice
//! of header version per API key and version, decoding entry points that turn any malformed input
//! into a typed [`Error`](crate::Error), and version negotiation.

mod client_apis;
mod codec;
pub mod consumer_protocol;
mod frame;
mod negotiate;
mod throttle;

pub use crate::error_code::ErrorCode;
pub use client_apis::{client_api_at, client_max_version, client_versions, CLIENT_APIS};
pub use codec::{
    api_name, codec_versions, decode_request, decode_request_header, decode_response,
    decode_response_kind, encode_request, encode_request_kind, encode_response,
    encode_response_kind, request_header_version, response_header_version, DecodedRequest,
    RequestPrefix,
};
pub use frame::{FrameCodec, DEFAULT_MAX_FRAME_SIZE};
pub use negotiate::{ApiVersionRange, NegotiatedVersions};
pub use throttle::{client_throttles, set_throttle_time, throttle_time_of, Throttled};

/// Re-export of the message bodies, so users need not depend on `kafka-protocol` directly.
pub use kafka_protocol::messages;
/// Re-export of the protocol traits and `StrBytes`.
pub use kafka_protocol::protocol as types;
