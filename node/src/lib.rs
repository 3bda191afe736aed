//! Node.js shell of Odradek: the native half of the `odradek` npm package.
//!
//! The package's public API is KafkaJS's (`new Kafka(...)`, `producer()`, `consumer()`,
//! `admin()`), written in JavaScript (`node/lib/`) on top of the three classes exported here:
//!
//! - [`producer::NativeProducer`]: `send` takes a list of `{ topic, messages }`, enqueues every
//!   record on the JS thread (values are copied once, into the record's buffer) and returns a
//!   Promise of per-partition base offsets, resolved from the shared runtime;
//! - [`consumer::NativeConsumer`]: `subscribe`, `poll` (a Promise of one columnar batch: every
//!   key, value and header of the batch in one Buffer plus offsets into it, so JavaScript slices
//!   instead of napi allocating one Buffer per field), `commit`, `seek`, `pause`, `resume`;
//! - [`admin::NativeAdmin`]: topics, metadata, offsets, consumer groups, ACLs and client
//!   quotas;
//! - [`testing::NativeTestCluster`]: the in-process Kafka test cluster behind `odradek/testing`.
//!
//! Each of the three clients takes an `onThrottle` callback ([`throttle`]): the throttle times
//! brokers report (KIP-219), behind the `*.network.request_throttle` events.
//!
//! Every call returns at once: work runs on the shared tokio runtime of `odradek-bindings` and
//! settles a Promise, so the event loop never waits. Errors reach JavaScript as `Error`s whose
//! message carries the Kafka code, name and retriability (see [`error`]); `node/lib/errors.js`
//! turns them into KafkaJS's error classes.

mod admin;
mod admin_acl;
mod admin_configs;
mod admin_quotas;
mod avro;
mod client_errors;
mod consumer;
mod error;
mod log;
mod oauth;
mod pack;
mod producer;
mod records;
mod requests;
mod rt;
mod testing;
mod throttle;
