//! The uniffi component of Odradek: one interface over the shared bindings layer
//! (`odradek-bindings`), from which uniffi generates foreign bindings. Kotlin is the first
//! language (`kotlin/`, built with Maven); the same component is what a Swift package would
//! wrap.
//!
//! Everything here adapts, nothing re-implements: the producer is the bindings'
//! [`odradek_bindings::producer::ProducerClient`] in push mode (delivery reports handed to a
//! foreign [`DeliveryListener`] in batches), the consumer is the bindings'
//! [`odradek_bindings::consumer::ConsumerClient`] (rebalance events served inside `poll`, on the
//! caller's thread, through a foreign [`RebalanceListener`]), the admin client is the core's
//! [`odradek::Admin`], and configuration goes through `odradek_bindings::config`, so unknown
//! keys are refused by name exactly as in the Python, Node.js and C shells.
//!
//! Calls that wait are `async` (Kotlin `suspend` functions): the work runs on the bindings'
//! shared tokio runtime ([`spawn::on_runtime`]) and the foreign side awaits its completion.

mod admin;
mod config;
mod consumer;
mod error;
mod producer;
mod spawn;
mod types;

pub use admin::*;
pub use consumer::{NativeConsumer, RebalanceListener};
pub use error::{ClientErrorListener, ErrorInfo, NativeError};
pub use producer::{DeliveryListener, DeliveryReport, NativeProducer, SendRefusal};
pub use types::*;

uniffi::setup_scaffolding!();
