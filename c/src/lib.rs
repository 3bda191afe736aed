//! `libodradek`: Odradek's C library, in librdkafka's poll model with a smaller, safer surface.
//!
//! Opaque handles (`odk_conf_t`, `odk_producer_t`, `odk_consumer_t`, `odk_admin_t`,
//! `odk_message_t`), configuration by Kafka property names, delivery reports and rebalance
//! events served on the caller's thread by `odk_poll` / `odk_consumer_poll`, and one error
//! enum (`odk_err_t`) numbered like `odradek_bindings::codes`. Every exported function catches
//! panics and checks its pointers: NULL and bad arguments give error codes, never crashes.
//! The header `odradek.h` is generated from this crate by cbindgen (`c/gen-header.sh`).
//! `odk_test_cluster_*` ([`testing`]) is a Kafka test cluster inside the process, with fault
//! injection.

pub mod admin;
pub mod conf;
pub mod consumer;
pub mod error;
mod ffi;
mod lifecycle;
pub mod log;
mod malloc;
pub mod message;
pub mod oauth;
pub mod producer;
pub mod testing;
pub mod topic_partition;
pub mod txn;
