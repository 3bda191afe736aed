//! The log callback (`odk_conf_set_log_cb`, librdkafka's `rd_kafka_conf_set_log_cb`): the
//! core's warnings and errors, and the contexts the `debug` property names, handed to the
//! application on the thread that polls instead of written to stderr.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use odradek_bindings::log_router::{self, LogQueue};
use odradek_bindings::ClientError;

/// Log callback. `level` is a syslog level as librdkafka's (3 error, 4 warning, 6 info,
/// 7 debug), `fac` the core module that logged the line (librdkafka passes a facility name
/// such as `BRKMAIN`), `buf` the message with its fields; both strings are borrowed for the
/// call. Served by `odk_poll` / `odk_flush` (producer), `odk_consumer_poll` (consumer) and
/// `odk_admin_poll` (admin) on the calling thread, as librdkafka does with `log.queue=true`
/// and the log queue forwarded to the main queue: never from a library thread.
pub type odk_log_cb_t = Option<
    unsafe extern "C" fn(level: c_int, fac: *const c_char, buf: *const c_char, opaque: *mut c_void),
>;

/// A client's log sink: the callback and the queue of lines waiting for it.
#[derive(Debug, Default)]
pub(crate) struct LogSink {
    cb: odk_log_cb_t,
    queue: Option<Arc<LogQueue>>,
}

impl LogSink {
    /// The sink for a client whose configuration has `cb` and properties `entries`: the core's
    /// warnings and errors plus the `debug` contexts. Without a callback there is no queue (and
    /// `debug` goes to stderr, librdkafka's default sink).
    pub(crate) fn new(
        cb: odk_log_cb_t,
        entries: &[(String, String)],
    ) -> Result<LogSink, ClientError> {
        if cb.is_none() {
            return Ok(LogSink::default());
        }
        let mut debug = None;
        for (_, v) in entries.iter().filter(|(k, _)| k.trim() == "debug") {
            debug = odradek_bindings::config::debug_filter_of(v)?;
        }
        let filter = log_router::logger_filter(debug.as_deref());
        Ok(LogSink {
            cb,
            queue: Some(log_router::register(&filter)),
        })
    }

    /// Runs the callback for every waiting line, oldest first; returns how many ran.
    pub(crate) fn serve(&self, opaque: *mut c_void) -> usize {
        let (Some(cb), Some(queue)) = (self.cb, &self.queue) else {
            return 0;
        };
        let lines = queue.take();
        for line in &lines {
            let level: c_int = match line.level {
                tracing::Level::ERROR => 3,
                tracing::Level::WARN => 4,
                tracing::Level::INFO => 6,
                _ => 7,
            };
            let fac = crate::topic_partition::c_string(&line.target);
            let buf = crate::topic_partition::c_string(&line.message);
            // SAFETY: the application's callback; both strings outlive the call.
            unsafe { cb(level, fac.as_ptr(), buf.as_ptr(), opaque) };
        }
        lines.len()
    }
}
