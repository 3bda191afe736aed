//! Per-request instrumentation reported to JavaScript: each client registers a callback with
//! `onRequest` once the application listens to KafkaJS's `network.request`,
//! `network.request_timeout` or `network.request_queue_size` events; it is called on the JS
//! thread with one [`RequestInfoJs`] per answered or timed-out request and per change of the
//! number of requests waiting for an in-flight slot (the core's
//! [`odradek::net::RequestEvent`]s). `node/lib/events.js` turns them into the events with
//! KafkaJS's payloads.
//!
//! Like the throttle callback it is weak (does not keep the event loop alive) and non-blocking
//! (a connection never waits for the JS thread).

use std::sync::Arc;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use odradek::cluster::Cluster;
use odradek::net::{RequestEvent, RequestInfo};

/// One request event.
#[napi(object)]
pub struct RequestInfoJs {
    /// `request`, `request_timeout` or `request_queue_size`.
    pub kind: String,
    /// The broker, `host:port`.
    pub broker: String,
    /// Correlation id (0 for `request_queue_size`).
    pub correlation_id: i32,
    /// Request size in bytes.
    pub size: u32,
    /// When the request was made / sent, ms since the epoch.
    pub created_at: f64,
    pub sent_at: f64,
    /// Wait before sending, ms.
    pub pending_duration: f64,
    /// Time from sending to the response, ms (`request` only).
    pub duration: f64,
    /// The API's name (Kafka's, e.g. `Produce`), key and version.
    pub api_name: String,
    pub api_key: i32,
    pub api_version: i32,
    /// Requests waiting for an in-flight slot (`request_queue_size` only).
    pub queue_size: u32,
}

/// The JavaScript callback: called with one [`RequestInfoJs`], its return value ignored.
pub type JsRequestCallback =
    ThreadsafeFunction<RequestInfoJs, (), RequestInfoJs, napi::Status, false, true>;

fn from_request(kind: &str, r: RequestInfo, duration_ms: i64) -> RequestInfoJs {
    RequestInfoJs {
        kind: kind.to_string(),
        broker: r.broker,
        correlation_id: r.correlation_id,
        size: u32::try_from(r.size).unwrap_or(u32::MAX),
        created_at: r.created_at_ms as f64,
        sent_at: r.sent_at_ms as f64,
        pending_duration: r.pending_duration_ms as f64,
        duration: duration_ms as f64,
        api_name: odradek::protocol::api_name(r.api_key).to_string(),
        api_key: i32::from(r.api_key),
        api_version: i32::from(r.api_version),
        queue_size: 0,
    }
}

/// Sends `cluster`'s request events to `callback` (replacing an earlier callback).
pub fn listen(cluster: &Cluster, callback: JsRequestCallback) {
    let callback = Arc::new(callback);
    cluster.set_request_listener(move |e: RequestEvent| {
        let info = match e {
            RequestEvent::Answered {
                request,
                duration_ms,
            } => from_request("request", request, duration_ms),
            RequestEvent::TimedOut { request } => from_request("request_timeout", request, 0),
            RequestEvent::QueueSize { broker, queue_size } => RequestInfoJs {
                kind: "request_queue_size".to_string(),
                broker,
                correlation_id: 0,
                size: 0,
                created_at: 0.0,
                sent_at: 0.0,
                pending_duration: 0.0,
                duration: 0.0,
                api_name: String::new(),
                api_key: -1,
                api_version: -1,
                queue_size: u32::try_from(queue_size).unwrap_or(u32::MAX),
            },
        };
        let _ = callback.call(info, ThreadsafeFunctionCallMode::NonBlocking);
    });
}
