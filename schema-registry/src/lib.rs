//! Odradek's Schema Registry: a Confluent-compatible registry whose store is a compacted Kafka
//! topic (`_schemas`), and the schema-aware wire format the serializers share.
//!
//! - [`avro`]: Avro schemas compiled for the codecs, the JSON-value codec, and compatibility by
//!   the specification's resolution rules (always built: the Python and Node shells use it);
//! - [`wire`]: Confluent's framing (magic byte 0, 4-byte schema id, Protobuf message indexes);
//! - with feature `server`: [`schema`] (parsing, identity and compatibility for AVRO, JSON and
//!   PROTOBUF), [`state`] and [`store`] (the `_schemas` topic), [`routes`] (the REST API) and
//!   [`server`] (start / stop);
//! - with feature `client`: [`client`] (the REST client: caches, retries, timeouts) and
//!   [`serde`] (serializers and deserializers for Rust programs).

pub mod avro;
mod error;
pub mod wire;

#[cfg(feature = "server")]
pub mod records;
#[cfg(feature = "server")]
pub mod registry;
#[cfg(feature = "server")]
pub mod routes;
#[cfg(feature = "server")]
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod state;
#[cfg(feature = "server")]
pub mod store;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
pub mod serde;

pub use error::{Error, Result};
