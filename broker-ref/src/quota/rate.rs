//! The two measures Kafka's quotas use, with Kafka's arithmetic: a windowed rate (`Rate` over
//! `SampledStat`: `quota.window.num` samples of `quota.window.size.seconds`) and a token bucket
//! (the controller mutation quota). Times are milliseconds on any monotonic-enough clock.

/// How samples are cut: `samples` windows of `window_ms` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowConfig {
    /// `quota.window.num` (at least 1).
    pub samples: usize,
    /// `quota.window.size.seconds`, in milliseconds (at least 1).
    pub window_ms: i64,
}

impl WindowConfig {
    /// Kafka's defaults: 11 windows of one second.
    pub const DEFAULT: WindowConfig = WindowConfig {
        samples: 11,
        window_ms: 1000,
    };

    /// A configuration from the two broker keys' values.
    pub fn new(samples: i64, window_seconds: i64) -> WindowConfig {
        WindowConfig {
            samples: usize::try_from(samples.max(1)).unwrap_or(1),
            window_ms: window_seconds.max(1).saturating_mul(1000),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now: i64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now,
            last_event_ms: now,
        }
    }
}

/// A rate per second over the last `samples` windows (Kafka's `Rate`): the sum of the samples
/// divided by the time they cover, which is never taken as less than `samples - 1` whole
/// windows (so a burst right after a quiet period is not measured as an enormous rate).
#[derive(Debug, Clone, Default)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// Adds `value` (bytes, percent-seconds, connections...) at `now`.
    pub fn record(&mut self, config: WindowConfig, value: f64, now: i64) {
        self.ensure(now);
        if now - self.samples[self.current].start_ms >= config.window_ms {
            self.advance(config, now);
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_event_ms = now;
    }

    fn ensure(&mut self, now: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
            self.current = 0;
        }
    }

    fn advance(&mut self, config: WindowConfig, now: i64) {
        // One slot more than `samples`, as Kafka keeps, for the sample overlapping the window.
        let slots = config.samples + 1;
        self.current = (self.current + 1) % slots;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(now));
            self.current = self.samples.len() - 1;
        } else {
            self.samples[self.current] = Sample::new(now);
        }
    }

    fn purge(&mut self, config: WindowConfig, now: i64) {
        let expire = config.window_ms.saturating_mul(config.samples as i64);
        for s in &mut self.samples {
            if now - s.last_event_ms >= expire {
                *s = Sample::new(now);
            }
        }
    }

    /// The time the rate is computed over at `now`, in milliseconds (Kafka's
    /// `Rate.windowSize`).
    pub fn window_ms(&mut self, config: WindowConfig, now: i64) -> i64 {
        self.ensure(now);
        self.purge(config, now);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut elapsed = now - oldest;
        let full = elapsed / config.window_ms;
        let min_full = config.samples as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * config.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now`.
    pub fn measure(&mut self, config: WindowConfig, now: i64) -> f64 {
        let window = self.window_ms(config, now);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (window as f64 / 1000.0)
    }

    /// How long the client must stay quiet for the rate to come back to `limit` (Kafka's
    /// `QuotaUtils.throttleTime`), or 0 when it is within the limit.
    pub fn throttle_ms(&mut self, config: WindowConfig, limit: f64, now: i64) -> i64 {
        let rate = self.measure(config, now);
        if rate <= limit || limit <= 0.0 {
            return 0;
        }
        let window = self.window_ms(config, now) as f64;
        ((rate - limit) / limit * window).round() as i64
    }
}

/// Kafka's `TokenBucket`: `limit` tokens a second refill a bucket of `samples × window ×
/// limit` tokens, which starts full; recording takes tokens and may drive it negative.
#[derive(Debug, Clone, Default)]
pub struct TokenBucket {
    tokens: f64,
    last_update_ms: Option<i64>,
}

impl TokenBucket {
    fn burst(config: WindowConfig, limit: f64) -> f64 {
        config.samples as f64 * (config.window_ms as f64 / 1000.0) * limit
    }

    fn refill(&mut self, config: WindowConfig, limit: f64, now: i64) {
        let burst = Self::burst(config, limit);
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last) => {
                let secs = (now - last).max(0) as f64 / 1000.0;
                (self.tokens + limit * secs).min(burst)
            }
        };
        self.last_update_ms = Some(now);
    }

    /// The tokens left at `now`.
    pub fn tokens(&mut self, config: WindowConfig, limit: f64, now: i64) -> f64 {
        self.refill(config, limit, now);
        self.tokens
    }

    /// Takes `value` tokens at `now`.
    pub fn record(&mut self, config: WindowConfig, limit: f64, value: f64, now: i64) {
        self.refill(config, limit, now);
        self.tokens = (self.tokens - value).min(Self::burst(config, limit));
    }

    /// The time until the bucket is no longer negative (Kafka's
    /// `ControllerMutationQuotaManager.throttleTimeMs`), 0 if it is not.
    pub fn throttle_ms(&mut self, config: WindowConfig, limit: f64, now: i64) -> i64 {
        let tokens = self.tokens(config, limit, now);
        if tokens >= 0.0 || limit <= 0.0 {
            0
        } else {
            (-tokens / limit * 1000.0).round() as i64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: WindowConfig = WindowConfig::DEFAULT;

    #[test]
    fn a_first_burst_is_spread_over_samples_minus_one_windows() {
        let mut r = SampledRate::default();
        r.record(CFG, 10_000.0, 0);
        // 10 windows of one second, not the 0 ms that passed.
        assert_eq!(r.window_ms(CFG, 0), 10_000);
        assert!((r.measure(CFG, 0) - 1_000.0).abs() < 1e-9);
    }

    #[test]
    fn throttle_time_brings_the_rate_back_to_the_limit() {
        let mut r = SampledRate::default();
        r.record(CFG, 20_000.0, 0);
        // 2000/s against a limit of 1000/s over a 10 s window: 10 s of quiet.
        assert_eq!(r.throttle_ms(CFG, 1_000.0, 0), 10_000);
        assert_eq!(r.throttle_ms(CFG, 2_000.0, 0), 0);
        // Kafka's estimate holds the window's size fixed: at 10 s the burst's sample still
        // counts, a whole `samples` windows later it has expired.
        assert_eq!(r.throttle_ms(CFG, 1_000.0, 10_000), 10_000);
        assert_eq!(r.throttle_ms(CFG, 1_000.0, 11_000), 0);
    }

    #[test]
    fn samples_roll_and_old_ones_expire() {
        let mut r = SampledRate::default();
        for t in 0..30 {
            r.record(CFG, 1_000.0, t * 1_000);
        }
        // A steady 1000/s measures as about 1000/s.
        let rate = r.measure(CFG, 29_500);
        assert!((900.0..=1_100.0).contains(&rate), "{rate}");
        // After `samples` windows of silence nothing is left.
        assert_eq!(r.measure(CFG, 29_000 + 11_000), 0.0);
    }

    #[test]
    fn token_bucket_starts_full_goes_negative_and_refills() {
        let mut b = TokenBucket::default();
        let limit = 2.0;
        assert_eq!(b.tokens(CFG, limit, 0), 22.0);
        b.record(CFG, limit, 30.0, 0);
        assert_eq!(b.throttle_ms(CFG, limit, 0), 4_000);
        assert_eq!(b.throttle_ms(CFG, limit, 4_000), 0);
        assert_eq!(b.tokens(CFG, limit, 1_000_000), 22.0);
    }
}
