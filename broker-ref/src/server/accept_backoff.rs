//! What the accept loop does when `accept` fails.
//!
//! Running out of file descriptors (EMFILE, ENFILE) or kernel memory makes every `accept` fail
//! at once while the pending connection stays queued, so retrying at once spins a core and
//! writes a warning per attempt. The loop instead waits, doubling from 10 ms up to 1 s while the
//! failures last, and logs at most one warning per second with the number of failures since the
//! last one. Other errors (a connection reset before it was accepted) are retried at once.

use std::io;
use std::time::{Duration, Instant};

const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);
const WARN_EVERY: Duration = Duration::from_secs(1);

/// The accept loop's memory of recent failures.
#[derive(Debug, Default)]
pub(crate) struct AcceptBackoff {
    pause: Option<Duration>,
    unreported: u64,
    last_warning: Option<Instant>,
}

impl AcceptBackoff {
    /// Records a successful accept: the next failure starts from the shortest pause.
    pub(crate) fn succeeded(&mut self) {
        self.pause = None;
    }

    /// Records a failed accept; returns how long to wait before accepting again (zero for an
    /// error that concerns only the one connection).
    pub(crate) fn failed(&mut self, error: &io::Error) -> Duration {
        self.unreported += 1;
        let now = Instant::now();
        if self
            .last_warning
            .is_none_or(|at| now.duration_since(at) >= WARN_EVERY)
        {
            tracing::warn!(
                error = %error,
                failures = self.unreported,
                "accept failed (pausing while out of resources)"
            );
            self.unreported = 0;
            self.last_warning = Some(now);
        }
        if !is_resource_exhaustion(error) {
            return Duration::ZERO;
        }
        let pause = self
            .pause
            .map_or(FIRST_PAUSE, |p| (p * 2).min(LONGEST_PAUSE));
        self.pause = Some(pause);
        pause
    }
}

/// Whether `error` says the process or system ran out of descriptors or memory.
fn is_resource_exhaustion(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_backs_off_doubling_up_to_a_second() {
        let mut b = AcceptBackoff::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let pauses: Vec<Duration> = (0..10).map(|_| b.failed(&emfile)).collect();
        assert_eq!(pauses[0], Duration::from_millis(10));
        assert_eq!(pauses[1], Duration::from_millis(20));
        assert_eq!(pauses[9], Duration::from_secs(1));
        b.succeeded();
        assert_eq!(b.failed(&emfile), Duration::from_millis(10));
    }

    #[test]
    fn a_failure_of_one_connection_is_retried_at_once() {
        let mut b = AcceptBackoff::default();
        let reset = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(b.failed(&reset), Duration::ZERO);
    }

    #[test]
    fn warnings_are_rate_limited() {
        let mut b = AcceptBackoff::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        b.failed(&emfile);
        for _ in 0..100 {
            b.failed(&emfile);
        }
        // The first failure was reported; the next hundred wait for the next warning.
        assert_eq!(b.unreported, 100);
    }
}
