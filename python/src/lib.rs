//! The `odradek._odradek` extension module: the classes of the `odradek` package.
//!
//! Layout: one file per concept: `errors` (the exception tree and the one mapping from
//! `ClientError`), `types` (`TopicPartition`, payload conversions), `message`, `conf`
//! (confluent-kafka style configuration), `wait` (blocking with the GIL released and Ctrl-C
//! checks), `producer`, `consumer`, `group` (consumer-group callbacks and conversions), `metadata`, `aio` (asyncio futures), `admin` (the admin client's futures), `testing`
//! (the in-process test cluster behind `odradek.testing`).

use pyo3::prelude::*;

mod admin;
mod admin_security;
mod aio;
mod avro;
mod conf;
mod consumer;
mod errors;
mod group;
mod message;
mod metadata;
mod oauth;
mod producer;
mod testing;
mod throttle;
mod types;
mod wait;

/// `(version string, version int)` of odradek, like `confluent_kafka.version()`.
#[pyfunction]
fn version() -> (&'static str, u32) {
    (env!("CARGO_PKG_VERSION"), version_int())
}

/// `(version string, version int)` of the client core (confluent-kafka's `libversion()` names
/// librdkafka's).
#[pyfunction]
fn libversion() -> (&'static str, u32) {
    (env!("CARGO_PKG_VERSION"), version_int())
}

fn version_int() -> u32 {
    let mut parts = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 24) | (b << 16) | (c << 8) | 0xff
}

/// Every error code as `(name, number)`; the package publishes them as `KafkaError` constants.
#[pyfunction]
fn _error_codes() -> Vec<(&'static str, i32)> {
    odradek_bindings::codes::all()
}

#[pymodule]
fn _odradek(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KafkaException", py.get_type::<errors::KafkaException>())?;
    m.add_class::<errors::KafkaError>()?;
    m.add_class::<types::TopicPartition>()?;
    m.add_class::<throttle::ThrottleEvent>()?;
    m.add_class::<message::Message>()?;
    m.add_class::<producer::Producer>()?;
    m.add_class::<consumer::Consumer>()?;
    m.add_class::<group::ConsumerGroupMetadata>()?;
    m.add_class::<metadata::ClusterMetadata>()?;
    m.add_class::<metadata::BrokerMetadata>()?;
    m.add_class::<metadata::TopicMetadata>()?;
    m.add_class::<metadata::PartitionMetadata>()?;
    aio::register(m)?;
    avro::register(m)?;
    testing::register(m)?;
    m.add_class::<admin::AdminCore>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(libversion, m)?)?;
    m.add_function(wrap_pyfunction!(_error_codes, m)?)?;
    m.add("TIMESTAMP_NOT_AVAILABLE", message::TIMESTAMP_NOT_AVAILABLE)?;
    m.add("TIMESTAMP_CREATE_TIME", message::TIMESTAMP_CREATE_TIME)?;
    m.add(
        "TIMESTAMP_LOG_APPEND_TIME",
        message::TIMESTAMP_LOG_APPEND_TIME,
    )?;
    m.add(
        "OFFSET_BEGINNING",
        odradek_bindings::consumer::OFFSET_BEGINNING,
    )?;
    m.add("OFFSET_END", odradek_bindings::consumer::OFFSET_END)?;
    m.add("OFFSET_STORED", odradek_bindings::consumer::OFFSET_STORED)?;
    m.add("OFFSET_INVALID", odradek_bindings::consumer::OFFSET_INVALID)?;
    let cls = py.get_type::<errors::KafkaError>();
    for (name, code) in odradek_bindings::codes::all() {
        cls.setattr(name, code)?;
    }
    Ok(())
}
