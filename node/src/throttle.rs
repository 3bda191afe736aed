//! Broker throttling (KIP-219) reported to JavaScript: each client registers a callback with
//! `onThrottle`, called on the JS thread for every response that carried a non-zero
//! `throttle_time_ms` and once more when it drops back to 0 (the core's
//! [`odradek::net::ThrottleEvent`]s). `node/lib` turns them into the
//! `*.network.request_throttle` instrumentation events.
//!
//! The callback is a weak thread-safe function: it does not keep the event loop alive, and
//! events after the environment is torn down are dropped.

use std::sync::Arc;

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use odradek::cluster::Cluster;
use odradek::net::{ThrottleEvent, ThrottleSink};

/// A throttle time a broker reported.
#[napi(object)]
pub struct ThrottleInfo {
    /// The broker, `host:port`.
    pub broker: String,
    /// The broker's node id (-1 for a bootstrap connection).
    pub node_id: i32,
    /// The throttle time, ms (0: no longer throttled).
    pub throttle_time: i32,
}

/// The JavaScript callback: called with one [`ThrottleInfo`], its return value ignored.
pub type JsThrottleCallback =
    ThreadsafeFunction<ThrottleInfo, (), ThrottleInfo, napi::Status, false, true>;

/// Sends `cluster`'s throttle events to `callback` (replacing an earlier callback).
pub fn listen(cluster: &Cluster, callback: JsThrottleCallback) {
    let callback = Arc::new(callback);
    cluster.set_throttle_listener(ThrottleSink(Arc::new(move |e: ThrottleEvent| {
        // Non-blocking: a connection's reader never waits for the JS thread.
        let _ = callback.call(
            ThrottleInfo {
                broker: e.broker,
                node_id: e.node_id,
                throttle_time: e.throttle_time_ms,
            },
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    })));
}
