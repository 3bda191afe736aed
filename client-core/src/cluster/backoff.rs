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

#[cfg(test)]
mod tests {
    use super::*;

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
