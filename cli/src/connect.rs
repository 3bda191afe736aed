//! Client configuration from `-b` and `-X`, and the first contact with the cluster.
//!
//! A command line tool should fail fast when the broker is not there, so two timeouts default
//! lower than Kafka's (each still overridable with `-X`): `default.api.timeout.ms` (admin
//! calls, including the first contact) and `max.block.ms` (a producer waiting for metadata or
//! buffer space) are 10 s. Connecting to each address is bounded by
//! `socket.connection.setup.timeout.ms`.

use odradek::{Admin, ClientConfig};

use crate::failure::Failure;

/// Defaults that differ from Kafka's for interactive use.
const CLI_DEFAULTS: &[(&str, &str)] = &[
    ("default.api.timeout.ms", "10000"),
    ("max.block.ms", "10000"),
];

/// Parses `KEY=VALUE`.
pub fn key_value(s: &str, flag: &str) -> Result<(String, String), Failure> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(Failure::usage(format!(
            "{flag} expects KEY=VALUE, got `{s}`"
        ))),
    }
}

/// The client configuration: our defaults, then `-b`, then the command's own settings
/// (`implied`, e.g. `group.id` from `-G`), then every `-X` in order (so `-X` wins).
pub fn config(
    brokers: Option<&str>,
    implied: &[(String, String)],
    props: &[String],
) -> Result<ClientConfig, Failure> {
    let mut entries: Vec<(String, String)> = CLI_DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(b) = brokers {
        entries.push(("bootstrap.servers".into(), b.to_string()));
    }
    entries.extend(implied.iter().cloned());
    for p in props {
        entries.push(key_value(p, "-X")?);
    }
    let has_bootstrap = entries
        .iter()
        .any(|(k, _)| k == "bootstrap.servers" || k == "metadata.broker.list");
    if !has_bootstrap {
        return Err(Failure::usage(
            "no broker given: use -b HOST:PORT (or -X bootstrap.servers=HOST:PORT)",
        ));
    }
    Ok(ClientConfig::from_map(entries)?)
}

/// An admin client that has reached the cluster once (within `default.api.timeout.ms`).
pub async fn admin(config: &ClientConfig) -> Result<Admin, Failure> {
    let admin = Admin::new(config.clone());
    if let Err(e) = admin.describe_cluster().await {
        return Err(Failure::new(format!(
            "cannot reach the cluster at {}: {e}",
            config.bootstrap_servers.join(",")
        )));
    }
    Ok(admin)
}
