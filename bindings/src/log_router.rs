//! Where the core's log (its `tracing` events) goes in the shells: to stderr (librdkafka's
//! default sink: the `debug` property, `ODRADEK_CLIENT_LOG`) and to the clients that were
//! given a logger (confluent-kafka's `logger=`), each with its own filter. A client with a
//! logger gets a [`LogQueue`] its shell drains on the application's thread (from `poll`,
//! `flush`, `consume`), as librdkafka serves its log callback.
//!
//! One `tracing` subscriber is installed for the process the first time anything asks for a
//! log; when the process already has one, it keeps it and nothing is routed here. Events are
//! attributed to nobody: every client's filter sees every client's events (librdkafka's log
//! lines name their client instance; ours name the module).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Lines a queue keeps while its shell does not drain it; the oldest are dropped beyond this.
pub const MAX_QUEUED: usize = 1_000;

/// One log line for a shell's logger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// The module that logged it (`odradek::net::connection`, ...).
    pub target: String,
    /// The message and its fields (`key=value`).
    pub message: String,
}

/// The log lines waiting for one client's logger.
#[derive(Debug)]
pub struct LogQueue {
    filter: Targets,
    lines: Mutex<VecDeque<LogLine>>,
}

impl LogQueue {
    /// Takes every waiting line, oldest first.
    pub fn take(&self) -> Vec<LogLine> {
        self.lines
            .lock()
            .map(|mut l| l.drain(..).collect())
            .unwrap_or_default()
    }

    fn push(&self, line: LogLine) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() >= MAX_QUEUED {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }
}

#[derive(Default)]
struct Router {
    stderr: RwLock<Option<Targets>>,
    queues: RwLock<Vec<Weak<LogQueue>>>,
    /// The most verbose level any filter asks for (tracing's `LevelFilter` as a number:
    /// 0 off .. 5 trace), so that callsites no sink wants stay disabled at tracing's own cost.
    max_level: std::sync::atomic::AtomicU8,
}

/// `LevelFilter` as a number (0 off, 1 error .. 5 trace).
fn level_rank(l: LevelFilter) -> u8 {
    match l.into_level() {
        None => 0,
        Some(Level::ERROR) => 1,
        Some(Level::WARN) => 2,
        Some(Level::INFO) => 3,
        Some(Level::DEBUG) => 4,
        Some(_) => 5,
    }
}

fn rank_level(r: u8) -> LevelFilter {
    match r {
        0 => LevelFilter::OFF,
        1 => LevelFilter::ERROR,
        2 => LevelFilter::WARN,
        3 => LevelFilter::INFO,
        4 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// The most verbose level `t` enables for any target.
fn most_verbose(t: &Targets) -> u8 {
    let mut max = t.default_level().map_or(0, level_rank);
    for (_, l) in t.iter() {
        max = max.max(level_rank(l));
    }
    max
}

impl Router {
    /// Raises the level hint to `t`'s and has tracing recompute which callsites are enabled.
    fn widen(&self, t: &Targets) {
        let wanted = most_verbose(t);
        let before = self
            .max_level
            .fetch_max(wanted, std::sync::atomic::Ordering::AcqRel);
        if wanted > before {
            tracing::callsite::rebuild_interest_cache();
        }
    }
}

static ROUTER: OnceLock<Router> = OnceLock::new();

fn router() -> &'static Router {
    ROUTER.get_or_init(|| {
        let _ = tracing_subscriber::registry().with(RouterLayer).try_init();
        Router::default()
    })
}

/// Parses a filter such as `odradek=warn,odradek::net=debug` (a bare level applies to every
/// target).
fn targets(filter: &str) -> Option<Targets> {
    Targets::from_str(filter).ok()
}

/// Sends the events `filter` selects to stderr (once per process: a later call only widens
/// nothing; the first filter stays).
pub fn log_to_stderr(filter: &str) {
    let Some(t) = targets(filter) else {
        return;
    };
    let router = router();
    if let Ok(mut stderr) = router.stderr.write() {
        if stderr.is_none() {
            router.widen(&t);
            *stderr = Some(t);
        }
    }
}

/// A queue that receives the events `filter` selects, for one client's logger; it stops
/// receiving when dropped.
pub fn register(filter: &str) -> Arc<LogQueue> {
    let queue = Arc::new(LogQueue {
        filter: targets(filter).unwrap_or_else(|| Targets::new().with_default(Level::WARN)),
        lines: Mutex::new(VecDeque::new()),
    });
    let router = router();
    router.widen(&queue.filter);
    if let Ok(mut queues) = router.queues.write() {
        queues.retain(|q| q.strong_count() > 0);
        queues.push(Arc::downgrade(&queue));
    }
    queue
}

/// The filter of a client's logger: the core's warnings and errors (what librdkafka logs
/// without `debug`), plus `debug_filter` (`odradek::ClientConfig::debug_filter`).
pub fn logger_filter(debug_filter: Option<&str>) -> String {
    match debug_filter {
        Some(d) => format!("odradek=warn,{d}"),
        None => "odradek=warn".to_string(),
    }
}

/// Collects an event's message and fields as one line.
#[derive(Default)]
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(
                self.0,
                "{}{value:?}",
                if self.0.is_empty() { "" } else { " " }
            );
        } else {
            let _ = write!(
                self.0,
                "{}{}={value:?}",
                if self.0.is_empty() { "" } else { " " },
                field.name()
            );
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(
                self.0,
                "{}{value}",
                if self.0.is_empty() { "" } else { " " }
            );
        } else {
            self.record_debug(field, &value);
        }
    }
}

struct RouterLayer;

impl<S: Subscriber> Layer<S> for RouterLayer {
    fn register_callsite(
        &self,
        _metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        // Filters come and go with clients: ask `enabled` every time.
        tracing::subscriber::Interest::sometimes()
    }

    /// The most verbose level any sink has asked for (never narrowed: a dropped client's
    /// level stays until the process ends, which costs checks, not output).
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(ROUTER.get().map_or(LevelFilter::OFF, |r| {
            rank_level(r.max_level.load(std::sync::atomic::Ordering::Acquire))
        }))
    }

    /// Only events some sink wants are built (the hot paths' trace events cost a check).
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        let Some(router) = ROUTER.get() else {
            return false;
        };
        if !metadata.is_event() {
            return true;
        }
        let (target, level) = (metadata.target(), metadata.level());
        router
            .stderr
            .read()
            .ok()
            .and_then(|s| s.as_ref().map(|t| t.would_enable(target, level)))
            .unwrap_or(false)
            || router.queues.read().is_ok_and(|q| {
                q.iter()
                    .filter_map(Weak::upgrade)
                    .any(|q| q.filter.would_enable(target, level))
            })
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(router) = ROUTER.get() else {
            return;
        };
        let meta = event.metadata();
        let (level, target) = (*meta.level(), meta.target());
        let to_stderr = router
            .stderr
            .read()
            .ok()
            .and_then(|s| s.as_ref().map(|t| t.would_enable(target, &level)))
            .unwrap_or(false);
        let queues: Vec<Arc<LogQueue>> = router
            .queues
            .read()
            .map(|q| {
                q.iter()
                    .filter_map(Weak::upgrade)
                    .filter(|q| q.filter.would_enable(target, &level))
                    .collect()
            })
            .unwrap_or_default();
        if !to_stderr && queues.is_empty() {
            return;
        }
        let mut line = Line::default();
        event.record(&mut line);
        if to_stderr {
            eprintln!("{} {level:>5} {target}: {}", humantime_now(), line.0);
        }
        for q in queues {
            q.push(LogLine {
                level,
                target: target.to_string(),
                message: line.0.clone(),
            });
        }
    }
}

/// Seconds since the epoch with milliseconds, for stderr lines.
fn humantime_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:03}", now.as_secs(), now.subsec_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logger_gets_warnings_and_its_debug_targets_only() {
        let q = register(&logger_filter(Some("odradek::net=debug")));
        let other = register(&logger_filter(None));
        tracing::warn!(target: "odradek::producer", reason = "x", "a warning");
        tracing::debug!(target: "odradek::net::connection", "a connect");
        tracing::debug!(target: "odradek::consumer", "not asked for");
        tracing::info!(target: "elsewhere", "not ours");
        let lines = q.take();
        assert_eq!(
            lines.iter().map(|l| l.message.as_str()).collect::<Vec<_>>(),
            ["a warning reason=\"x\"", "a connect"],
            "{lines:?}"
        );
        assert_eq!(lines[0].level, Level::WARN);
        assert_eq!(other.take().len(), 1);
        assert!(q.take().is_empty(), "taken once");
        drop(other);
        tracing::warn!(target: "odradek::producer", "after the drop");
        assert_eq!(q.take().len(), 1);
    }
}
