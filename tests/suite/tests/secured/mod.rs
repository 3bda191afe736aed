//! The secured broker the security tiers run against: listener addresses from
//! `ODRADEK_SECURITY_LISTENERS` (a file of `NAME=host:port` lines) and certificates from
//! `ODRADEK_SECURITY_PKI`, both set by `tests/security/client.sh`.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;

use odradek::ClientConfig;

/// The secured broker's listeners and certificate directory.
pub struct Env {
    /// Listener name to `host:port`.
    pub listeners: HashMap<String, String>,
    /// The certificate directory.
    pub pki: String,
}

/// The secured broker, or `None` (with a note on stderr) when the tier is not set up.
pub fn env() -> Option<Env> {
    let (Ok(file), Ok(pki)) = (
        std::env::var("ODRADEK_SECURITY_LISTENERS"),
        std::env::var("ODRADEK_SECURITY_PKI"),
    ) else {
        eprintln!("skipped: ODRADEK_SECURITY_LISTENERS / ODRADEK_SECURITY_PKI not set (tests/security/run.sh sets them)");
        return None;
    };
    let text = std::fs::read_to_string(&file).unwrap();
    let listeners = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Some(Env { listeners, pki })
}

impl Env {
    /// The address of listener `name` (panics when it is missing).
    pub fn addr(&self, name: &str) -> &str {
        self.listeners
            .get(name)
            .unwrap_or_else(|| panic!("no {name} listener"))
    }

    /// A file of the certificate directory.
    pub fn file(&self, name: &str) -> String {
        format!("{}/{name}", self.pki)
    }

    /// A client config for `listener` with short timeouts and `extra` properties.
    pub fn config(
        &self,
        listener: &str,
        extra: &[(&str, String)],
    ) -> odradek::Result<ClientConfig> {
        let mut entries: Vec<(String, String)> = vec![
            ("bootstrap.servers".into(), self.addr(listener).to_string()),
            ("socket.connection.setup.timeout.ms".into(), "5000".into()),
            ("request.timeout.ms".into(), "10000".into()),
            ("max.block.ms".into(), "10000".into()),
            ("linger.ms".into(), "2".into()),
        ];
        entries.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        ClientConfig::from_map(entries)
    }
}
