//! `ODRADEK_CLIENT_LOG`: the core's own log on stderr, for diagnosing a client from any
//! language without code changes (librdkafka's `debug` property plays this part there, and
//! does here too: [`install_filter`]). Both go through [`crate::log_router`].
//!
//! Unset (the default), nothing is installed. Set to `1` (or any value that is not a filter),
//! the `odradek` crates log at debug level; any other value is a filter
//! (`odradek=trace`, `odradek::consumer=debug,odradek=info`, ...). The first filter a process
//! sets stays; `ODRADEK_CLIENT_LOG` wins over `debug`.

/// Logs to stderr when `ODRADEK_CLIENT_LOG` asks for it.
pub fn install_from_env() {
    let Some(value) = std::env::var_os("ODRADEK_CLIENT_LOG") else {
        return;
    };
    let value = value.to_string_lossy();
    let filter = match value.trim() {
        "" | "1" | "true" | "yes" => "odradek=debug".to_string(),
        other => other.to_string(),
    };
    crate::log_router::log_to_stderr(&filter);
}

/// Logs `filter` (the `debug` property's, `odradek::ClientConfig::debug_filter`) to stderr,
/// librdkafka's default log sink, unless `ODRADEK_CLIENT_LOG` says otherwise.
pub fn install_filter(filter: &str) {
    if std::env::var_os("ODRADEK_CLIENT_LOG").is_some() {
        install_from_env();
        return;
    }
    crate::log_router::log_to_stderr(filter);
}
