//! `perf produce` / `perf consume`: throughput and latency measurements.
//!
//! Progress goes to stderr about once a second (rewritten in place on a terminal, one line per
//! update otherwise); the final summary is one line on stdout. MB are 10^6 bytes.

pub mod consume;
mod histogram;
pub mod produce;
mod progress;

/// Megabytes (10^6 bytes) per second.
fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds.max(1e-9)
}

/// Records per second.
fn per_s(count: u64, seconds: f64) -> f64 {
    count as f64 / seconds.max(1e-9)
}
