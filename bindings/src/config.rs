//! Client configuration for the shells: a string-keyed map with Apache Kafka / librdkafka
//! property names. Keys the core knows go to [`odradek::ClientConfig::from_map`]; a few keys
//! belong to the binding layer (the queue and event knobs librdkafka users set) and are taken out
//! here. Callables (`on_delivery`, `error_cb`, ...) never reach this module: each shell splits
//! them from the map first, in its own idiom.

use std::time::Duration;

use odradek::ClientConfig;

use crate::ClientError;

/// Settings the binding layer implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingSettings {
    /// `statistics.interval.ms` (0 = off): how often a statistics event is queued.
    pub statistics_interval: Option<Duration>,
    /// `enable.partition.eof` (false): emit a `_PARTITION_EOF` event when a consumer reaches
    /// the end of a partition.
    pub enable_partition_eof: bool,
    /// `queue.buffering.max.messages` (100000): records produced but not yet reported (queued,
    /// in flight, or delivered but not yet served by `poll`) before `produce` fails with
    /// `_QUEUE_FULL`.
    pub queue_max_messages: usize,
    /// `delivery.report.only.error` (false): report only failed deliveries.
    pub delivery_report_only_error: bool,
    /// `enable.auto.offset.store` (true): a consumer stores the offset after each record it
    /// hands to the application, for the next commit (librdkafka semantics).
    pub enable_auto_offset_store: bool,
}

impl Default for BindingSettings {
    fn default() -> Self {
        BindingSettings {
            statistics_interval: None,
            enable_partition_eof: false,
            queue_max_messages: 100_000,
            delivery_report_only_error: false,
            enable_auto_offset_store: true,
        }
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool, ClientError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ClientError::invalid_arg(format!(
            "invalid configuration `{key}`: `{v}` is not true or false"
        ))),
    }
}

fn parse_u64(key: &str, v: &str) -> Result<u64, ClientError> {
    v.trim().parse().map_err(|_| {
        ClientError::invalid_arg(format!(
            "invalid configuration `{key}`: `{v}` is not a non-negative integer"
        ))
    })
}

/// Producer defaults of the librdkafka-compatible shells (Python, C) where librdkafka's differ
/// from the core's (Java's): the `consistent_random` partitioner (CRC-32 of the key), so a
/// program moving from confluent-kafka or librdkafka keeps every key on the partition it had,
/// and librdkafka's `queue.buffering.max.kbytes` (1 GiB; Java's `buffer.memory` is 32 MiB), so
/// `produce` answers `_QUEUE_FULL` where librdkafka would. Entries given later (the
/// application's) override these.
pub const LIBRDKAFKA_PRODUCER_DEFAULTS: &[(&str, &str)] = &[
    ("partitioner", "consistent_random"),
    ("queue.buffering.max.kbytes", "1048576"),
];

/// `entries` behind [`LIBRDKAFKA_PRODUCER_DEFAULTS`].
pub fn with_librdkafka_producer_defaults(
    entries: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    LIBRDKAFKA_PRODUCER_DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(entries)
        .collect()
}

/// Checks one property alone: its name is known and its value parses. Combinations (such as
/// `delivery.timeout.ms` against `request.timeout.ms`) are checked when a client is created
/// from the whole configuration, so the order properties are set in does not matter.
pub fn check_property(key: &str, value: &str) -> Result<(), ClientError> {
    let key = key.trim();
    if let Some(property) = odradek::rdkafka_config::property(key) {
        odradek::rdkafka_config::check_range(&property, value)
            .map_err(|e| ClientError::from_core(&e, crate::Stage::Request))?;
    }
    match key {
        "statistics.interval.ms" | "queue.buffering.max.messages" => {
            parse_u64(key, value).map(drop)
        }
        "enable.partition.eof" | "delivery.report.only.error" | "enable.auto.offset.store" => {
            parse_bool(key, value).map(drop)
        }
        _ => ClientConfig::default()
            .set(key, value)
            .map_err(|e| ClientError::from_core(&e, crate::Stage::Request)),
    }
}

/// The log filter of a `debug` value (`None` when it names no context), checked as the client
/// checks it: for shells that send the log to the application's logger instead of stderr.
pub fn debug_filter_of(value: &str) -> Result<Option<String>, ClientError> {
    let mut c = ClientConfig::default();
    c.set("debug", value)
        .map_err(|e| ClientError::from_core(&e, crate::Stage::Request))?;
    Ok(c.debug_filter())
}

/// Splits `entries` into the core's configuration and the binding's settings. Unknown keys fail
/// with `_INVALID_ARG` naming the key, like the core.
pub fn split<K: AsRef<str>, V: AsRef<str>>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> Result<(ClientConfig, BindingSettings), ClientError> {
    let mut settings = BindingSettings::default();
    let mut core = Vec::new();
    for (k, v) in entries {
        let (key, value) = (k.as_ref().trim(), v.as_ref());
        if let Some(property) = odradek::rdkafka_config::property(key) {
            odradek::rdkafka_config::check_range(&property, value)
                .map_err(|e| ClientError::from_core(&e, crate::Stage::Request))?;
        }
        match key {
            "statistics.interval.ms" => {
                let ms = parse_u64(key, value)?;
                settings.statistics_interval = (ms > 0).then(|| Duration::from_millis(ms));
            }
            "enable.partition.eof" => settings.enable_partition_eof = parse_bool(key, value)?,
            "queue.buffering.max.messages" => {
                settings.queue_max_messages = parse_u64(key, value)?.max(1) as usize
            }
            "delivery.report.only.error" => {
                settings.delivery_report_only_error = parse_bool(key, value)?
            }
            "enable.auto.offset.store" => {
                settings.enable_auto_offset_store = parse_bool(key, value)?
            }
            _ => core.push((key.to_string(), value.to_string())),
        }
    }
    let config = ClientConfig::from_map(core)
        .map_err(|e| ClientError::from_core(&e, crate::Stage::Request))?;
    if let Some(filter) = config.debug_filter() {
        crate::debug_log::install_filter(&filter);
    }
    Ok((config, settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_keys_are_split_off() {
        let (c, s) = split([
            ("bootstrap.servers", "h:1"),
            ("enable.partition.eof", "true"),
            ("statistics.interval.ms", "250"),
            ("enable.auto.offset.store", "false"),
            ("linger.ms", "7"),
        ])
        .unwrap();
        assert!(s.enable_partition_eof);
        assert_eq!(s.statistics_interval, Some(Duration::from_millis(250)));
        assert!(!s.enable_auto_offset_store);
        assert_eq!(c.producer.linger, Duration::from_millis(7));
    }

    #[test]
    fn single_properties_are_checked_alone() {
        // Valid alone although it conflicts with the default request.timeout.ms: combinations
        // are checked when the client is created.
        assert!(check_property("message.timeout.ms", "2000").is_ok());
        assert!(check_property("statistics.interval.ms", "10").is_ok());
        let e = check_property("message.timeout.ms", "soon").unwrap_err();
        assert!(e.message().contains("message.timeout.ms"), "{e}");
        let e = check_property("no.such", "1").unwrap_err();
        assert!(e.message().contains("no.such"), "{e}");
        assert!(check_property("enable.partition.eof", "maybe").is_err());
    }

    #[test]
    fn errors_name_the_key() {
        let e = split([("bootstrap.servers", "h:1"), ("no.such", "1")]).unwrap_err();
        assert_eq!(e.name(), "_INVALID_ARG");
        assert!(e.message().contains("no.such"), "{e}");
        let e = split([
            ("bootstrap.servers", "h:1"),
            ("enable.partition.eof", "maybe"),
        ])
        .unwrap_err();
        assert!(e.message().contains("enable.partition.eof"));
        let (core, _) = split([("bootstrap.servers", "h:1"), ("transactional.id", "t")]).unwrap();
        assert_eq!(core.producer.transactional_id.as_deref(), Some("t"));
    }

    /// A value librdkafka accepts for `p` (its default where it has one).
    fn sample(p: &odradek::rdkafka_config::Property) -> String {
        let first = |sep: &str| p.range.split(sep).next().unwrap_or("").trim().to_string();
        match p.kind {
            "CSV flags" => first(","),
            _ if !p.default.is_empty() => p.default.to_string(),
            "boolean" => "true".into(),
            "integer" => first(" .. "),
            k if k.starts_with("enum") => first(","),
            _ => String::new(),
        }
    }

    /// Walks librdkafka's whole property table (docs/configuration.md): every property is
    /// honoured, accepted without effect (and named for the startup log line), accepted only at
    /// the values that mean what Odradek does, or refused naming the property.
    #[test]
    fn every_librdkafka_property_is_answered_as_the_table_says() {
        use odradek::rdkafka_config::{properties, status, Status};
        let with = |key: &str, value: &str| {
            let mut entries = vec![("bootstrap.servers".to_string(), "h:1".to_string())];
            if !key.starts_with("sasl.oauthbearer.client") {
                entries.push((key.to_string(), value.to_string()));
            }
            split(entries)
        };
        let mut checked = 0;
        for p in properties() {
            let value = sample(&p);
            match status(p.name).unwrap() {
                Status::Core | Status::Binding => {
                    // Values that only work together with others are set alone here.
                    if let Err(e) = check_property(p.name, &value) {
                        panic!("{} = {value:?} refused: {e}", p.name);
                    }
                }
                Status::NotApplicable(_) => {
                    let (core, _) = with(p.name, &value)
                        .unwrap_or_else(|e| panic!("{} = {value:?} refused: {e}", p.name));
                    assert!(
                        core.not_applicable.iter().any(|k| k == p.name),
                        "{}",
                        p.name
                    );
                }
                Status::Only(values, _) => {
                    for v in values {
                        let (core, _) = with(p.name, v)
                            .unwrap_or_else(|e| panic!("{} = {v:?} refused: {e}", p.name));
                        assert!(core.not_applicable.is_empty(), "{}", p.name);
                    }
                    let e = with(p.name, "something-else").unwrap_err();
                    assert!(e.message().contains(p.name), "{e}");
                }
                Status::Api => {
                    let e = with(p.name, "x").unwrap_err();
                    assert!(
                        e.message().contains(p.name) && e.message().contains("API"),
                        "{e}"
                    );
                }
            }
            checked += 1;
        }
        assert_eq!(checked, 199);
    }

    #[test]
    fn librdkafka_ranges_aliases_and_debug_contexts() {
        let e = check_property("batch.num.messages", "0").unwrap_err();
        assert!(
            e.message().contains("outside allowed range 1..1000000"),
            "{e}"
        );
        let e = check_property("statistics.interval.ms", "86400001").unwrap_err();
        assert!(e.message().contains("statistics.interval.ms"), "{e}");
        let (c, _) = split([
            ("bootstrap.servers", "h:1"),
            ("socket.keepalive.enable", "true"),
            ("socket.nagle.disable", "false"),
            ("broker.address.family", "v4"),
            ("socket.timeout.ms", "12000"),
            ("auto.commit.enable", "false"),
            ("debug", "broker,cgrp"),
        ])
        .unwrap();
        assert!(c.socket.keepalive && !c.socket.nodelay);
        assert_eq!(c.socket.family, odradek::net::AddressFamily::V4);
        assert_eq!(c.request_timeout, Duration::from_millis(12000));
        assert!(!c.consumer.enable_auto_commit);
        assert_eq!(
            c.debug_filter().as_deref(),
            Some("odradek::net=debug,odradek::protocol=debug,odradek::consumer=debug")
        );
        let e = check_property("debug", "broker,nonsense").unwrap_err();
        assert!(e.message().contains("nonsense"), "{e}");
        let e = check_property("builtin.features", "gzip,sasl_gssapi").unwrap_err();
        assert!(e.message().contains("sasl_gssapi"), "{e}");
        assert!(check_property("group.protocol", "consumer").is_ok());
        let e = check_property("group.protocol", "modern").unwrap_err();
        assert!(e.message().contains("classic or consumer"), "{e}");
    }
}
