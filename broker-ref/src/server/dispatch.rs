//! One request frame to one reply: version check, decoding, the request context, the
//! interception point (whole-request actions, per-item errors), the test cluster's view (if
//! the listener is one broker of an in-process cluster), the handler, and encoding.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use odradek::protocol::{api_name, encode_response_kind, throttle_time_of, RequestPrefix};

use super::bounded_decode::decode_request_bounded;
use super::chunked;
use super::intercept::{Action, Interceptor};
use super::items::{self, Item};
use super::throttle::{self, BusyTimed};
use super::view::ClusterView;
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
    /// Do what the inner reply says, then read nothing more from the connection for this long
    /// (a quota's throttle, KIP-219).
    Throttled(Duration, Box<Reply>),
}

/// Handles one request frame (without its size prefix) that arrived on `connection`.
pub async fn dispatch(
    broker: &Arc<Broker>,
    connection: &ConnectionContext,
    interceptor: &Interceptor,
    frame: Bytes,
) -> Reply {
    dispatch_with(broker, connection, interceptor, None, frame).await
}

/// [`dispatch`] for a listener that is one broker of an in-process test cluster (`view`).
pub async fn dispatch_with(
    broker: &Arc<Broker>,
    connection: &ConnectionContext,
    interceptor: &Interceptor,
    view: Option<&dyn ClusterView>,
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
    let range = handlers::listener_range(broker, &connection.listener, prefix.api_key)
        .and_then(|r| view.map_or(Some(r), |v| v.version_range(r)));
    match range {
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
    let request_bytes = frame.len();
    let request = match decode_request_bounded(frame) {
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
    let mut body = request.body;
    let metering = throttle::prepare(broker, &ctx, &mut body);
    if view.is_none() && !interceptor.is_active() {
        // The production path: nothing to consult.
        let (response, busy) = BusyTimed::new(handlers::handle(broker, &ctx, body)).await;
        return finish_metered(
            broker,
            &ctx,
            (metering, busy, request_bytes),
            response,
            None,
        );
    }
    let node_id = view.map_or(broker.node_id, |v| v.node_id());
    if let Some(v) = view {
        v.observe(&ctx);
    }
    let verdict = interceptor.intercept(&ctx, node_id, || items::items(broker, &body));
    let mut delay = verdict.delay;
    let copy = match (&body, view) {
        (RequestKind::FindCoordinator(_), Some(_)) => Some(body.clone()),
        _ => None,
    };
    let response = match verdict.whole {
        Some(Action::Drop) => return Reply::Nothing,
        Some(Action::Close) => {
            let close = Reply::Close("closed by a test interceptor".into());
            return match delay {
                Some(d) => Reply::Delayed(d, Box::new(close)),
                None => close,
            };
        }
        Some(Action::Error(code)) => (whole_error(broker, &ctx, &body, code), Duration::ZERO),
        Some(Action::Delay(d)) => {
            delay = delay.max(Some(d));
            BusyTimed::new(handle_items(broker, &ctx, view, body, verdict.item_errors)).await
        }
        None => BusyTimed::new(handle_items(broker, &ctx, view, body, verdict.item_errors)).await,
    };
    let (mut response, busy) = response;
    if let (Some(v), Ok(Some(r))) = (view, response.as_mut()) {
        v.rewrite(broker, &ctx, copy.as_ref(), r);
    }
    if let Some(d) = view.and_then(|v| v.response_delay()) {
        delay = Some(delay.unwrap_or_default() + d);
    }
    finish_metered(
        broker,
        &ctx,
        (metering, busy, request_bytes),
        response,
        delay,
    )
}

/// [`finish`] after the quotas: the request is recorded against the client's quotas and the
/// reply throttled if one is exceeded (or a handler set a throttle time, as the controller
/// mutation quota does).
fn finish_metered(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    (metering, busy, request_bytes): (throttle::Metering, Duration, usize),
    mut response: crate::Result<Option<ResponseKind>>,
    delay: Option<Duration>,
) -> Reply {
    let handler_throttled = matches!(&response, Ok(Some(r)) if throttle_time_of(r) > 0);
    if metering.is_off() && !handler_throttled {
        return finish(ctx, response, delay);
    }
    let ms = match &mut response {
        Ok(r) => throttle::settle(
            broker,
            ctx,
            metering,
            busy,
            request_bytes,
            |r| encoded_len(ctx, r),
            r.as_mut(),
        ),
        Err(_) => 0,
    };
    let reply = finish(ctx, response, delay);
    if ms > 0 && !matches!(reply, Reply::Close(_)) {
        Reply::Throttled(Duration::from_millis(ms as u64), Box::new(reply))
    } else {
        reply
    }
}

/// The size of a response once encoded (what the fetch quota counts).
fn encoded_len(ctx: &RequestContext<'_>, body: &ResponseKind) -> usize {
    match encode(ctx, body) {
        Reply::Frame(f) => f.len(),
        Reply::Chunks(c) => c.iter().map(Bytes::len).sum(),
        _ => 0,
    }
}

/// Encodes the handler's outcome, after `delay` if any.
fn finish(
    ctx: &RequestContext<'_>,
    response: crate::Result<Option<ResponseKind>>,
    delay: Option<Duration>,
) -> Reply {
    let reply = match response {
        Ok(Some(body)) => encode(ctx, &body),
        Ok(None) => Reply::Nothing,
        Err(e) => Reply::Close(e.to_string()),
    };
    match delay {
        Some(d) if !matches!(reply, Reply::Close(_)) => Reply::Delayed(d, Box::new(reply)),
        _ => reply,
    }
}

/// An injected error for the whole request: the API's error response, or every item refused
/// for a splittable API without one (OffsetForLeaderEpoch).
fn whole_error(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: &RequestKind,
    code: odradek::ErrorCode,
) -> crate::Result<Option<ResponseKind>> {
    if error_response::supports(ctx.api_key) {
        return error_response::error_response(broker, ctx, body, code);
    }
    let refused: Vec<_> = items::items(broker, body)
        .into_iter()
        .map(|i| (i, code))
        .collect();
    let mut response = items::empty_response(ctx.api_key).ok_or_else(|| {
        crate::Error::Intercept(format!("no error response for {:?}", ctx.api_key))
    })?;
    items::merge_errors(&mut response, &refused);
    Ok(Some(response))
}

/// Handles a request some of whose items are refused (by the interceptor, or by the view for
/// partitions this broker does not lead): the rest is handled, the refusals merged in.
async fn handle_items(
    broker: &Arc<Broker>,
    ctx: &RequestContext<'_>,
    view: Option<&dyn ClusterView>,
    mut body: RequestKind,
    mut refused: Vec<(Item, odradek::ErrorCode)>,
) -> crate::Result<Option<ResponseKind>> {
    let splittable = items::splittable(ctx.api_key);
    if let Some(v) = view {
        if let Some(code) = v.refuse(ctx, &body) {
            return error_response::error_response(broker, ctx, &body, code);
        }
        if splittable {
            for item in items::items(broker, &body) {
                if refused.iter().any(|(r, _)| *r == item) {
                    continue;
                }
                if let Some(code) = v.refuse_item(ctx.api_key, &item) {
                    refused.push((item, code));
                }
            }
            items::clear_leader_epochs(&mut body);
        }
    }
    if !splittable || (refused.is_empty() && view.is_none()) {
        return handlers::handle(broker, ctx, body).await;
    }
    if let RequestKind::Produce(p) = &body {
        if p.acks == 0 && !refused.is_empty() {
            // Kafka closes an acks=0 producer's connection on an error: its only signal.
            return Err(crate::Error::Intercept(
                "refused a Produce with acks=0".into(),
            ));
        }
    }
    let is_fetch = ctx.api_key == ApiKey::Fetch;
    if !is_fetch {
        items::remove(&mut body, &refused);
    }
    let mut response = match handlers::handle(broker, ctx, body).await? {
        Some(r) => r,
        None => return Ok(None),
    };
    if let (true, Some(v)) = (is_fetch, view) {
        // Partitions an incremental fetch session returned without the request naming them.
        for item in items::fetch_response_items(broker, &response) {
            if refused
                .iter()
                .any(|(r, _)| r.topic == item.topic && r.partition == item.partition)
            {
                continue;
            }
            if let Some(code) = v.refuse_item(ctx.api_key, &item) {
                refused.push((item, code));
            }
        }
    }
    items::merge_errors(&mut response, &refused);
    Ok(Some(response))
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
