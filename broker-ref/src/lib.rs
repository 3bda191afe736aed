//! Odradek reference broker: a single-node Kafka broker built on the `odradek` protocol and
//! record modules.
//!
//! Request path: [`server`] (listener, TLS and SASL on the connection, framing, dispatch, the
//! interception point) → [`handlers`] (which ask [`security`]'s authorizer) (request → response, one module per API family, given a
//! [`handlers::RequestContext`]) → [`coordinator`] (groups, transactions), [`session`] (fetch
//! sessions) and [`partition`] state (log end offset, high watermark, last stable offset) →
//! [`log`] (segmented, indexed, crash-safe storage). Each layer uses only those after it in
//! this list (`scripts/check_layers.py` checks it); [`broker`] assembles the shared state.
//! [`testing`] sits above them all: an in-process test cluster of 1..N brokers over one shared
//! state, with fault injection.

pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod dynamic_config;
mod error;
pub mod group_config;
pub mod handlers;
pub mod log;
pub mod partition;
pub mod quota;
pub mod request_slots;
pub mod security;
pub mod server;
pub mod session;
pub mod testing;

pub use error::{Error, RecordError, Result};
