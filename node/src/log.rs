//! `NativeLog`: the core's log for the KafkaJS logger (`logLevel` / `logCreator`). The
//! JavaScript side drains it on a timer (`lib/kafka.js`); see `odradek_bindings::log_router`.

use std::sync::Arc;

use napi_derive::napi;
use odradek_bindings::log_router::{self, LogQueue};

/// One log line of the core.
#[napi(object)]
pub struct CoreLogLine {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The module that logged it.
    pub target: String,
    /// The message and its fields.
    pub message: String,
}

/// The core's log lines a filter selects, waiting for JavaScript.
#[napi]
pub struct NativeLog {
    queue: Arc<LogQueue>,
}

#[napi]
impl NativeLog {
    /// Starts receiving the lines `filter` selects (`odradek=info`, `odradek=debug`, ...).
    #[napi(constructor)]
    pub fn new(filter: String) -> Self {
        NativeLog {
            queue: log_router::register(&filter),
        }
    }

    /// Takes every waiting line, oldest first.
    #[napi]
    pub fn take(&self) -> Vec<CoreLogLine> {
        self.queue
            .take()
            .into_iter()
            .map(|l| CoreLogLine {
                level: l.level.to_string(),
                target: l.target,
                message: l.message,
            })
            .collect()
    }
}
