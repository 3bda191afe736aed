//! What every Odradek language shell (Python, Node.js, C) shares, with no dependency on any of
//! those languages:
//!
//! - [`runtime`]: one multi-threaded tokio runtime per process, created lazily and recreated in
//!   a child after `fork()`; fast-path polling, blocking waits in slices with a check between
//!   them (Ctrl-C in Python, a [`runtime::CancelToken`] in C), and the [`runtime::Signal`] that
//!   wakes waiting callers;
//! - [`config`]: the string-keyed configuration map split into the core's [`odradek::ClientConfig`]
//!   and the few settings this layer implements (`enable.partition.eof`, `enable.auto.offset.store`,
//!   `queue.buffering.max.messages`, `statistics.interval.ms`, `delivery.report.only.error`);
//! - [`producer::ProducerClient`]: non-blocking produce with an ordered backlog, delivery
//!   reports carrying the shell's opaque, served by `poll` on the caller's thread or pushed to
//!   a sink on the runtime;
//! - [`consumer::ConsumerClient`]: a consumer with a local queue of records, errors and
//!   partition-EOF events, and consumer groups with librdkafka's semantics: rebalance and
//!   commit events served on the caller's thread, the offset store, auto-commit;
//! - [`throttle`]: the brokers' throttle reports (`throttle_cb`), kept for the shell's `poll`;
//! - [`codes`] and [`ClientError`]: stable numeric error codes (Kafka's as they are, client-side
//!   ones negative like librdkafka's) and the single mapping from [`odradek::Error`].

pub mod client_errors;
pub mod codes;
pub mod config;
pub mod consumer;
pub mod debug_log;
mod error;
pub mod log_router;
pub mod metadata;
pub mod producer;
pub mod runtime;
pub mod stats;
pub mod throttle;

pub use error::{ClientError, Stage};
