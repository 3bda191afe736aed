//! `ODRADEK_CLIENT_LOG`: the core's own log on stderr, for diagnosing a client from any
//! language without code changes (librdkafka's `debug` property plays this part there).
//!
//! The `debug` property does the same for its contexts ([`install_filter`]);
//! `ODRADEK_CLIENT_LOG` wins when both are set.
//!
//! Unset (the default), nothing is installed. Set to `1` (or any value that is not a filter),
//! the `odradek` crates log at debug level; any other value is a `tracing` filter
//! (`odradek=trace`, `odradek::consumer=debug,odradek=info`, ...). Installed once per process,
//! when the first client starts the runtime; a subscriber the process already installed wins.

use std::sync::Once;

static INSTALL: Once = Once::new();

/// Installs the stderr log when `ODRADEK_CLIENT_LOG` asks for it (once per process).
pub fn install_from_env() {
    INSTALL.call_once(|| {
        let Some(value) = std::env::var_os("ODRADEK_CLIENT_LOG") else {
            return;
        };
        let value = value.to_string_lossy();
        let filter = match value.trim() {
            "" | "1" | "true" | "yes" => "odradek=debug".to_string(),
            other => other.to_string(),
        };
        let filter = tracing_subscriber::EnvFilter::try_new(&filter)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("odradek=debug"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
    });
}

/// Installs the stderr log with `filter` (the `debug` property's, see
/// `odradek::ClientConfig::debug_filter`), unless `ODRADEK_CLIENT_LOG` or an earlier client
/// installed one: like librdkafka's default log sink, once per process.
pub fn install_filter(filter: &str) {
    if std::env::var_os("ODRADEK_CLIENT_LOG").is_some() {
        install_from_env();
        return;
    }
    INSTALL.call_once(|| {
        if let Ok(filter) = tracing_subscriber::EnvFilter::try_new(filter) {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .try_init();
        }
    });
}
