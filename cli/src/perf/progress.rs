//! The live progress line on stderr.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Prints at most one progress update per second.
#[derive(Debug)]
pub struct Progress {
    label: &'static str,
    started: Instant,
    last: Instant,
    last_count: u64,
    last_bytes: u64,
    terminal: bool,
    printed: bool,
}

impl Progress {
    /// Starts the clock.
    pub fn new(label: &'static str) -> Self {
        let now = Instant::now();
        Progress {
            label,
            started: now,
            last: now,
            last_count: 0,
            last_bytes: 0,
            terminal: std::io::stderr().is_terminal(),
            printed: false,
        }
    }

    /// Time until the next update is due.
    pub fn until_next(&self) -> Duration {
        Duration::from_secs(1).saturating_sub(self.last.elapsed())
    }

    /// Prints an update if a second has passed: the rate over the last interval, the running
    /// totals, and `extra` (e.g. latency so far).
    pub fn tick(&mut self, count: u64, bytes: u64, extra: &str) {
        let elapsed = self.last.elapsed();
        if elapsed < Duration::from_secs(1) {
            return;
        }
        let secs = elapsed.as_secs_f64();
        let line = format!(
            "{} {:.0}s: {count} msgs, {:.1} msgs/s, {:.2} MB/s{extra}",
            self.label,
            self.started.elapsed().as_secs_f64(),
            super::per_s(count - self.last_count.min(count), secs),
            super::mb_per_s(bytes - self.last_bytes.min(bytes), secs),
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
        self.printed = true;
        self.last = Instant::now();
        self.last_count = count;
        self.last_bytes = bytes;
    }

    /// Ends an in-place progress line so the summary starts on a fresh line.
    pub fn finish(&self) {
        if self.terminal && self.printed {
            crate::out::tell!("");
        }
    }
}
