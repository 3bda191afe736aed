//! Odradek reference broker: a single-node Kafka broker built on the `odradek` protocol and
//! record modules.
//!
//! Request path: [`server`] (listener, connections, framing) → [`handlers`] (one module per API
//! family) → [`partition`] state (log end offset, high watermark, last stable offset) → [`log`]
//! (segmented, indexed, crash-safe storage).

pub mod broker;
pub mod clock;
pub mod config;
pub mod coordinator;
pub mod dynamic_config;
mod error;
pub mod handlers;
pub mod log;
pub mod partition;
pub mod server;
pub mod session;

pub use error::{Error, Result};
