//! Odradek reference broker.
//!
//! A single-node Kafka broker built on the `odradek` protocol and record modules.
