//! Client-level errors reported to JavaScript (what librdkafka's `error_cb` receives): an
//! authentication failure, a broker that cannot be reached any more (`_TRANSPORT`), every
//! known broker down (`_ALL_BROKERS_DOWN`, once per episode), the same code at most once a
//! second. Each client registers a callback with `onClientError`, called on the JS thread;
//! `node/lib` logs them as KafkaJS logs connection errors and emits
//! `*.network.broker_down` / `*.network.all_brokers_down`.
//!
//! Like the throttle callback, it does not keep the event loop alive.

use std::sync::Arc;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use odradek::cluster::Cluster;

/// One client-level error.
#[napi(object)]
pub struct ClientErrorInfo {
    /// The numeric code (librdkafka's `RD_KAFKA_RESP_ERR__*` numbering for client-side codes).
    pub code: i32,
    /// The code's name (`_ALL_BROKERS_DOWN`, `_TRANSPORT`, `SASL_AUTHENTICATION_FAILED`, ...).
    pub name: String,
    /// What happened (never a secret).
    pub message: String,
}

/// The JavaScript callback: called with one [`ClientErrorInfo`], its return value ignored.
pub type JsClientErrorCallback =
    ThreadsafeFunction<ClientErrorInfo, (), ClientErrorInfo, napi::Status, false, true>;

/// Sends `cluster`'s client-level errors to `callback` (replacing an earlier callback).
pub fn listen(cluster: &Cluster, callback: JsClientErrorCallback) {
    let callback = Arc::new(callback);
    cluster.set_error_listener(odradek_bindings::client_errors::listener(move |e| {
        // Non-blocking: a connect attempt never waits for the JS thread.
        let _ = callback.call(
            ClientErrorInfo {
                code: e.code(),
                name: e.name().to_string(),
                message: e.message().to_string(),
            },
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }));
}
