//! Configuration: a map of Kafka property names, split by `odradek_bindings::config` like in
//! every other shell (unknown keys and bad values are refused there, by name). The few
//! settings the bindings layer implements are accepted only where this package serves them:
//! a setting accepted and then ignored would be a defect.

use std::collections::HashMap;

use odradek::ClientConfig;
use odradek_bindings::config::{split, BindingSettings};
use odradek_bindings::ClientError;

/// Which client a configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Producer,
    Consumer,
    Admin,
}

/// Splits `map` into the core's configuration and the binding settings this role serves.
pub(crate) fn for_role(
    role: Role,
    map: HashMap<String, String>,
) -> Result<(ClientConfig, BindingSettings), ClientError> {
    let (config, settings) = split(map)?;
    refuse_unserved(role, &settings)?;
    Ok((config, settings))
}

fn refuse_unserved(role: Role, s: &BindingSettings) -> Result<(), ClientError> {
    let d = BindingSettings::default();
    let refuse = |key: &str, why: &str| {
        Err(ClientError::invalid_arg(format!(
            "configuration `{key}` is not supported by the Kotlin client: {why}"
        )))
    };
    if s.statistics_interval.is_some() {
        return refuse(
            "statistics.interval.ms",
            "it has no statistics callback; read metrics from the core instead",
        );
    }
    if s.delivery_report_only_error != d.delivery_report_only_error {
        return refuse(
            "delivery.report.only.error",
            "every send() future completes, so every delivery is reported",
        );
    }
    if s.enable_partition_eof != d.enable_partition_eof {
        return refuse(
            "enable.partition.eof",
            "poll() returns records only, as the Java client's does",
        );
    }
    if role != Role::Producer && s.queue_max_messages != d.queue_max_messages {
        return refuse("queue.buffering.max.messages", "it is a producer setting");
    }
    if s.enable_auto_offset_store != d.enable_auto_offset_store {
        return refuse(
            "enable.auto.offset.store",
            "commitSync() commits what poll() returned, as the Java client's does",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        [("bootstrap.servers", "h:1")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let e = for_role(Role::Producer, map(&[("lnger.ms", "5")])).unwrap_err();
        assert_eq!(e.name(), "_INVALID_ARG");
        assert!(e.message().contains("lnger.ms"), "{e}");
    }

    #[test]
    fn unserved_binding_settings_are_refused() {
        let e = for_role(Role::Consumer, map(&[("enable.partition.eof", "true")])).unwrap_err();
        assert!(e.message().contains("enable.partition.eof"), "{e}");
        let e = for_role(Role::Admin, map(&[("queue.buffering.max.messages", "5")])).unwrap_err();
        assert!(e.message().contains("queue.buffering.max.messages"), "{e}");
        let e = for_role(Role::Producer, map(&[("statistics.interval.ms", "100")])).unwrap_err();
        assert!(e.message().contains("statistics.interval.ms"), "{e}");
        let (_, s) = for_role(
            Role::Producer,
            map(&[("queue.buffering.max.messages", "5")]),
        )
        .unwrap();
        assert_eq!(s.queue_max_messages, 5);
        let (c, _) = for_role(Role::Consumer, map(&[("group.id", "g")])).unwrap();
        assert_eq!(c.consumer.group_id.as_deref(), Some("g"));
    }
}
