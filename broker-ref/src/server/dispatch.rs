//! One request frame to one reply: version check, decoding, the request context, the
//! interception point, the handler, and encoding.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use odradek::protocol::{api_name, decode_request, encode_response_kind, RequestPrefix};

use super::chunked;
use super::intercept::{Action, Interceptor};
use crate::broker::Broker;
use crate::handlers::{self, error_response, ConnectionContext, RequestContext};

/// What the connection should do after a request.
#[derive(Debug)]
pub enum Reply {
    /// Write this frame (size prefix included).
    Frame(Bytes),
    /// Write these chunks back to back: one frame whose record data was not copied.
    Chunks(Vec<Bytes>),
    /// Send nothing (Produce with acks=0, or a request an interceptor dropped).
    Nothing,
    /// Close the connection, as Kafka does for malformed or unsupported requests.
    Close(String),
    /// Wait this long (an interceptor's delay), then do what the inner reply says.
    Delayed(Duration, Box<Reply>),
}

/// Handles one request frame (without its size prefix) that arrived on `connection`.
pub async fn dispatch(
    broker: &Arc<Broker>,
    connection: &ConnectionContext,
    interceptor: &Interceptor,
    frame: Bytes,
) -> Reply {
    let prefix = match RequestPrefix::peek(&frame) {
        Ok(p) => p,
        Err(e) => return Reply::Close(e.to_string()),
    };
    if prefix.api_key == ApiKey::ApiVersions as i16 {
        if let Some(rejected) = handlers::reject_unsupported_version(&prefix) {
            return match rejected {
                Ok(frame) => Reply::Frame(frame),
                Err(e) => Reply::Close(e.to_string()),
            };
        }
    }
    match handlers::advertised_range(prefix.api_key) {
        Some(r) if (r.min..=r.max).contains(&prefix.api_version) => {}
        _ => {
            return Reply::Close(format!(
                "unsupported request {} v{} (api key {})",
                api_name(prefix.api_key),
                prefix.api_version,
                prefix.api_key
            ))
        }
    }
    let request = match decode_request(frame) {
        Ok(r) => r,
        Err(e) => return Reply::Close(e.to_string()),
    };
    let ctx = RequestContext {
        connection,
        api_key: request.api_key,
        api_version: request.header.request_api_version,
        correlation_id: request.header.correlation_id,
        client_id: request.header.client_id,
    };
    let (response, delay) = match interceptor.intercept(&ctx) {
        None => (handlers::handle(broker, &ctx, request.body).await, None),
        Some(Action::Error(code)) => (
            error_response::error_response(broker, &ctx, &request.body, code),
            None,
        ),
        Some(Action::Delay(d)) => (handlers::handle(broker, &ctx, request.body).await, Some(d)),
        Some(Action::Drop) => return Reply::Nothing,
        Some(Action::Close) => return Reply::Close("closed by a test interceptor".into()),
    };
    let reply = match response {
        Ok(Some(body)) => encode(&ctx, &body),
        Ok(None) => Reply::Nothing,
        Err(e) => Reply::Close(e.to_string()),
    };
    match delay {
        Some(d) => Reply::Delayed(d, Box::new(reply)),
        None => reply,
    }
}

/// Encodes a response; a Fetch's record sets are not copied ([`chunked`]).
fn encode(ctx: &RequestContext<'_>, body: &ResponseKind) -> Reply {
    if let ResponseKind::Fetch(fetch) = body {
        return match chunked::encode_fetch(ctx.api_version, ctx.correlation_id, fetch) {
            Ok(chunks) => Reply::Chunks(chunks),
            Err(e) => Reply::Close(format!("cannot encode response: {e}")),
        };
    }
    match encode_response_kind(ctx.api_key, ctx.api_version, ctx.correlation_id, body) {
        Ok(frame) => Reply::Frame(frame),
        Err(e) => Reply::Close(format!("cannot encode response: {e}")),
    }
}
