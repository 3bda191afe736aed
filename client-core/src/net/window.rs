//! Rolling window statistics (librdkafka's "window stats": min, max, avg, sum, cnt, stddev and
//! percentiles of the values sampled since the previous statistics emission).
//!
//! Count, sum, min, max and the standard deviation are exact. Percentiles come from a bounded
//! reservoir of [`RESERVOIR`] samples (uniform reservoir sampling once the window holds more),
//! so a window costs at most a few kilobytes whatever the sample rate.

use std::sync::Mutex;

/// Samples kept per window for the percentiles.
pub const RESERVOIR: usize = 1024;

/// One window of samples; [`Window::take`] reads it and starts the next.
#[derive(Debug, Default)]
pub struct Window {
    inner: Mutex<Samples>,
}

#[derive(Debug, Default)]
struct Samples {
    count: u64,
    sum: u64,
    sum_squares: f64,
    min: u64,
    max: u64,
    reservoir: Vec<u64>,
    /// xorshift state for the reservoir's replacement choice (0: not seeded yet).
    rng: u64,
}

/// What one window held (librdkafka's field names; values in the window's unit).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WindowSnapshot {
    /// Smallest value (0: none).
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Mean value (0: none).
    pub avg: u64,
    /// Sum of the values.
    pub sum: u64,
    /// Values sampled.
    pub cnt: u64,
    /// Standard deviation (population).
    pub stddev: u64,
    /// Bytes the window's sample store occupies (librdkafka's `hdrsize`).
    pub hdrsize: u64,
    /// 50th percentile.
    pub p50: u64,
    /// 75th percentile.
    pub p75: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
    /// Values left out of the window (always 0: every value is counted).
    pub outofrange: u64,
}

impl Window {
    /// Adds one value.
    pub fn record(&self, value: u64) {
        if let Ok(mut s) = self.inner.lock() {
            s.record(value);
        }
    }

    /// Moves `other`'s samples into this window (a reconnect carries over what the closed
    /// connection sampled and no snapshot took yet).
    pub fn absorb(&self, other: &Window) {
        let taken = other
            .inner
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        if taken.count == 0 {
            return;
        }
        if let Ok(mut s) = self.inner.lock() {
            s.absorb(taken);
        }
    }

    /// Reads the window and starts an empty one.
    pub fn take(&self) -> WindowSnapshot {
        self.inner
            .lock()
            .map(|mut s| std::mem::take(&mut *s).snapshot())
            .unwrap_or_default()
    }
}

impl Samples {
    fn record(&mut self, value: u64) {
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        self.sum_squares += (value as f64) * (value as f64);
        if self.reservoir.len() < RESERVOIR {
            self.reservoir.push(value);
            return;
        }
        // Keep each of the `count` values with probability RESERVOIR / count.
        let slot = self.next_random() % self.count;
        if let Some(kept) = self.reservoir.get_mut(slot as usize) {
            *kept = value;
        }
    }

    fn absorb(&mut self, other: Samples) {
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_squares += other.sum_squares;
        let room = RESERVOIR.saturating_sub(self.reservoir.len());
        self.reservoir
            .extend(other.reservoir.into_iter().take(room));
    }

    fn next_random(&mut self) -> u64 {
        if self.rng == 0 {
            self.rng = 0x9E37_79B9_7F4A_7C15 ^ self.count;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn snapshot(mut self) -> WindowSnapshot {
        if self.count == 0 {
            return WindowSnapshot::default();
        }
        self.reservoir.sort_unstable();
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let variance = (self.sum_squares / n - mean * mean).max(0.0);
        let sorted = &self.reservoir;
        let percentile = |p: f64| -> u64 {
            let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
            sorted
                .get(rank.saturating_sub(1).min(sorted.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0)
        };
        WindowSnapshot {
            min: self.min,
            max: self.max,
            avg: self.sum / self.count,
            sum: self.sum,
            cnt: self.count,
            stddev: variance.sqrt().round() as u64,
            hdrsize: (sorted.capacity() * std::mem::size_of::<u64>()) as u64,
            p50: percentile(50.0),
            p75: percentile(75.0),
            p90: percentile(90.0),
            p95: percentile(95.0),
            p99: percentile(99.0),
            p99_99: percentile(99.99),
            outofrange: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_window_reads_all_zero() {
        assert_eq!(Window::default().take(), WindowSnapshot::default());
    }

    #[test]
    fn exact_fields_and_percentiles_of_a_small_window() {
        let w = Window::default();
        for v in 1..=100 {
            w.record(v);
        }
        let s = w.take();
        assert_eq!((s.min, s.max, s.sum, s.cnt, s.avg), (1, 100, 5050, 100, 50));
        assert_eq!(
            (s.p50, s.p75, s.p90, s.p95, s.p99, s.p99_99),
            (50, 75, 90, 95, 99, 100)
        );
        // Population standard deviation of 1..=100 is 28.87.
        assert_eq!(s.stddev, 29);
        assert_eq!(
            w.take(),
            WindowSnapshot::default(),
            "take starts a new window"
        );
    }

    #[test]
    fn an_absorbed_window_moves_its_samples() {
        let (a, b) = (Window::default(), Window::default());
        a.record(10);
        b.record(2);
        b.record(30);
        a.absorb(&b);
        let s = a.take();
        assert_eq!((s.cnt, s.sum, s.min, s.max), (3, 42, 2, 30));
        assert_eq!(b.take(), WindowSnapshot::default());
    }

    #[test]
    fn a_large_window_stays_bounded_and_close() {
        let w = Window::default();
        for v in 0..100_000u64 {
            w.record(v % 1000);
        }
        let s = w.take();
        assert_eq!(s.cnt, 100_000);
        assert_eq!((s.min, s.max), (0, 999));
        assert!(s.hdrsize <= (RESERVOIR * 8) as u64 * 2, "{}", s.hdrsize);
        assert!(
            (400..600).contains(&s.p50),
            "median of a uniform 0..1000: {}",
            s.p50
        );
        assert!(s.p99 >= 950, "{}", s.p99);
    }
}
