//! Exponential backoff with jitter (KIP-580, KIP-144): `base` doubling per failed attempt up to
//! `max`, then ±20% so clients that failed together do not retry together.

use std::time::Duration;

/// A little jitter (±20%) without a random-number dependency.
pub(crate) fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let factor = 0.8 + f64::from(nanos % 400) / 1000.0;
    d.mul_f64(factor)
}

/// The wait before attempt `failures + 1`: `base` after the first failure, doubling after
/// each further one, never above `max` (nor below `base`), jittered.
pub(crate) fn exponential(base: Duration, max: Duration, failures: u32) -> Duration {
    let doubled = base.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    jitter(doubled.min(max.max(base)))
}

/// The consecutive failures of one retried operation (a group join, InitProducerId, a
/// coordinator request, an offset lookup): each failure waits `retry.backoff.ms` doubling up to
/// `retry.backoff.max.ms`, jittered (KIP-580); a success starts it over.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    failures: u32,
}

impl Retry {
    /// Records a failure and returns the wait before the next attempt.
    pub(crate) fn failed(&mut self, config: &crate::config::ClientConfig) -> Duration {
        self.failures = self.failures.saturating_add(1);
        exponential(
            config.retry_backoff,
            config.retry_backoff_max,
            self.failures,
        )
    }

    /// Records a failure and waits before the next attempt.
    pub(crate) async fn wait(&mut self, config: &crate::config::ClientConfig) {
        tokio::time::sleep(self.failed(config)).await;
    }

    /// The operation succeeded: the next failure waits `retry.backoff.ms` again.
    pub(crate) fn succeeded(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_retry_backoff_ms_to_its_max_and_start_over_after_a_success() {
        let config = crate::ClientConfig::from_map([
            ("bootstrap.servers", "127.0.0.1:9"),
            ("retry.backoff.ms", "100"),
            ("retry.backoff.max.ms", "1000"),
        ])
        .unwrap();
        let mut retry = Retry::default();
        let mut waits: Vec<u128> = (0..6).map(|_| retry.failed(&config).as_millis()).collect();
        retry.succeeded();
        waits.push(retry.failed(&config).as_millis());
        let nominal = [100, 200, 400, 800, 1000, 1000, 100];
        for (wait, nominal) in waits.iter().zip(nominal) {
            assert!(
                *wait >= nominal * 79 / 100 && *wait <= nominal * 121 / 100,
                "{waits:?}: wanted about {nominal} ms"
            );
        }
    }

    #[test]
    fn doubles_from_base_up_to_max_within_the_jitter() {
        let base = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        let within = |d: Duration, nominal: u64| {
            let ms = d.as_secs_f64() * 1000.0;
            ms >= nominal as f64 * 0.79 && ms <= nominal as f64 * 1.21
        };
        assert!(within(exponential(base, max, 1), 100));
        assert!(within(exponential(base, max, 2), 200));
        assert!(within(exponential(base, max, 3), 400));
        assert!(within(exponential(base, max, 5), 1000));
        assert!(within(exponential(base, max, 40), 1000));
        // A max below the base never shortens the base.
        assert!(within(exponential(base, Duration::from_millis(10), 3), 100));
    }
}
