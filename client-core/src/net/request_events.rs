//! Per-request events for instrumentation (KafkaJS's `network.request`,
//! `network.request_timeout` and `network.request_queue_size` events): a connection reports each
//! answered request, each timed-out one, and changes of the number of requests waiting for an
//! in-flight slot. Nothing is built unless a listener is attached.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One request's timings and identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// The broker's address, `host:port`.
    pub broker: String,
    /// The request's correlation id on its connection.
    pub correlation_id: i32,
    /// Request frame size in bytes.
    pub size: usize,
    /// When the client made the request, milliseconds since the epoch.
    pub created_at_ms: i64,
    /// When it was written to the connection, milliseconds since the epoch.
    pub sent_at_ms: i64,
    /// How long it waited (throttling, in-flight limit) before it was sent, milliseconds.
    pub pending_duration_ms: i64,
    /// API key.
    pub api_key: i16,
    /// API version.
    pub api_version: i16,
}

/// What a connection reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestEvent {
    /// A response arrived `duration_ms` after the request was sent.
    Answered {
        /// The request.
        request: RequestInfo,
        /// Time from sending to the response, milliseconds.
        duration_ms: i64,
    },
    /// No response arrived within `request.timeout.ms`.
    TimedOut {
        /// The request.
        request: RequestInfo,
    },
    /// The number of requests waiting for an in-flight slot on `broker` changed.
    QueueSize {
        /// The broker's address.
        broker: String,
        /// Requests waiting.
        queue_size: usize,
    },
}

type Listener = Arc<dyn Fn(RequestEvent) + Send + Sync>;

/// Where connections report request events; a listener may be attached at any time.
#[derive(Clone, Default)]
pub struct RequestSink {
    listening: Arc<AtomicBool>,
    listener: Arc<RwLock<Option<Listener>>>,
}

impl std::fmt::Debug for RequestSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestSink")
    }
}

impl RequestSink {
    /// Attaches `listener` (replacing an earlier one).
    pub fn listen(&self, listener: impl Fn(RequestEvent) + Send + Sync + 'static) {
        if let Ok(mut slot) = self.listener.write() {
            *slot = Some(Arc::new(listener));
        }
        self.listening.store(true, Ordering::Release);
    }

    /// Whether a listener is attached (callers skip building events otherwise).
    pub fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    /// Reports the event `make` builds, if a listener is attached.
    pub fn emit(&self, make: impl FnOnce() -> RequestEvent) {
        if !self.is_listening() {
            return;
        }
        let listener = self.listener.read().ok().and_then(|l| l.clone());
        if let Some(l) = listener {
            l(make());
        }
    }
}

/// `at` as milliseconds since the epoch (an `Instant` in the past, read off the wall clock now).
pub(crate) fn epoch_ms(at: Instant) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    now.saturating_sub(at.elapsed()).as_millis() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn nothing_is_built_without_a_listener_and_everything_after_one() {
        let sink = RequestSink::default();
        let built = Arc::new(Mutex::new(0));
        let b = built.clone();
        let event = move || {
            *b.lock().unwrap() += 1;
            RequestEvent::QueueSize {
                broker: "b:1".into(),
                queue_size: 2,
            }
        };
        sink.emit(event.clone());
        assert_eq!(*built.lock().unwrap(), 0);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        sink.listen(move |e| s.lock().unwrap().push(e));
        sink.emit(event);
        assert_eq!(*built.lock().unwrap(), 1);
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn epoch_ms_of_an_earlier_instant_is_earlier() {
        let then = Instant::now() - Duration::from_millis(500);
        let now = epoch_ms(Instant::now());
        let earlier = epoch_ms(then);
        assert!((450..=600).contains(&(now - earlier)), "{}", now - earlier);
    }
}
