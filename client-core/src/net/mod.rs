//! Connections to brokers: one async connection per broker, pipelined requests matched to
//! responses by correlation id, per-request timeouts, ApiVersions negotiation on connect.

mod connection;

pub use connection::{Connection, ConnectionStats};
