//! Connections to brokers: one async connection per broker, pipelined requests matched to
//! responses by correlation id, per-request timeouts, TLS, ApiVersions negotiation and SASL
//! authentication (with re-authentication, KIP-368) on connect.

mod connect;
mod connection;
pub mod dns;
mod request_events;
mod sasl;
mod window;

pub use connect::{AddressFamily, ConnectParams, SocketOptions};
pub use connection::{
    ApiCounts, Connection, ConnectionStats, OpenedAt, ThrottleEvent, ThrottleSink,
};
pub use request_events::{RequestEvent, RequestInfo, RequestSink};
pub use window::{Window, WindowSnapshot};
