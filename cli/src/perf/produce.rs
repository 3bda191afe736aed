//! `perf produce`: sends `--count` records of `--size` bytes (optionally at `--rate`) and
//! reports throughput and send-to-acknowledgement latency percentiles.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use odradek::{ClientConfig, Producer, ProducerRecord, RecordMetadata};

use super::histogram::Histogram;
use super::progress::Progress;
use super::{mb_per_s, per_s};
use crate::args::PerfProduceArgs;
use crate::failure::Failure;
use crate::out;

/// A value of `size` pseudo-random uppercase letters (like Kafka's ProducerPerformance), so
/// compression codecs have realistic, not trivially repetitive, input.
fn payload(size: usize) -> Bytes {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b'A' + (state % 26) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

type Ack = Pin<Box<dyn Future<Output = (odradek::Result<RecordMetadata>, Duration)> + Send>>;

/// Counters of one run.
#[derive(Debug, Default)]
struct Stats {
    acked: u64,
    failed: u64,
    first_error: Option<String>,
    latency: Histogram,
}

impl Stats {
    fn record(&mut self, (outcome, latency): (odradek::Result<RecordMetadata>, Duration)) {
        match outcome {
            Ok(_) => {
                self.acked += 1;
                self.latency
                    .record(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
            }
            Err(e) => {
                self.failed += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e.to_string());
                }
            }
        }
    }

    fn latency_ms(&self, q: f64) -> f64 {
        self.latency.quantile(q) as f64 / 1000.0
    }
}

/// Runs the produce perf test.
pub async fn run(mut config: ClientConfig, args: &PerfProduceArgs) -> Result<(), Failure> {
    config.set("acks", &args.acks)?;
    config.set("compression.type", &args.codec)?;
    if args.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
        return Err(Failure::usage("--rate must be a positive number"));
    }
    let producer = Producer::new(config)?;
    let value = payload(args.size);
    let mut stats = Stats::default();
    let mut pending: FuturesUnordered<Ack> = FuturesUnordered::new();
    let mut progress = Progress::new("perf produce");
    let started = Instant::now();
    let mut sent = 0u64;
    let mut fatal = None;
    while sent < args.count {
        if let Some(rate) = args.rate {
            let due = started + Duration::from_secs_f64(sent as f64 / rate);
            // Keep collecting acknowledgements while waiting for the next send slot.
            while Instant::now() < due {
                let wait = due.saturating_duration_since(Instant::now());
                match tokio::time::timeout(wait, pending.next()).await {
                    Ok(Some(ack)) => stats.record(ack),
                    Ok(None) => tokio::time::sleep(wait).await,
                    Err(_) => break,
                }
            }
        }
        let record = ProducerRecord::new(args.topic.clone(), value.clone());
        let sent_at = Instant::now();
        match producer.send(record).await {
            Ok(delivery) => {
                pending.push(Box::pin(delivery.map(move |r| (r, sent_at.elapsed()))));
            }
            Err(e) => {
                fatal = Some(e);
                break;
            }
        }
        sent += 1;
        while let Some(Some(ack)) = pending.next().now_or_never() {
            stats.record(ack);
        }
        progress.tick(
            stats.acked,
            stats.acked * args.size as u64,
            &latency_note(&stats),
        );
    }
    producer.flush().await;
    loop {
        match tokio::time::timeout(progress.until_next(), pending.next()).await {
            Ok(Some(ack)) => stats.record(ack),
            Ok(None) => break,
            Err(_) => {}
        }
        progress.tick(
            stats.acked,
            stats.acked * args.size as u64,
            &latency_note(&stats),
        );
    }
    let elapsed = started.elapsed().as_secs_f64();
    producer.close().await;
    progress.finish();
    out::say!(
        "perf produce: {} msgs of {} B in {elapsed:.2} s: {:.1} msgs/s, {:.2} MB/s; \
         latency ms p50 {:.2} p95 {:.2} p99 {:.2} max {:.2}; {} failed",
        stats.acked,
        args.size,
        per_s(stats.acked, elapsed),
        mb_per_s(stats.acked * args.size as u64, elapsed),
        stats.latency_ms(0.50),
        stats.latency_ms(0.95),
        stats.latency_ms(0.99),
        stats.latency.max() as f64 / 1000.0,
        stats.failed
    )?;
    if let Some(e) = fatal {
        return Err(Failure::new(format!("stopped after {sent} msgs: {e}")));
    }
    if let Some(first) = stats.first_error {
        return Err(Failure::new(format!(
            "{} of {sent} msgs failed; first error: {first}",
            stats.failed
        )));
    }
    Ok(())
}

fn latency_note(stats: &Stats) -> String {
    format!(
        ", p50 {:.2} ms, p99 {:.2} ms",
        stats.latency_ms(0.50),
        stats.latency_ms(0.99)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_letters_of_the_right_size() {
        let p = payload(1000);
        assert_eq!(p.len(), 1000);
        assert!(p.iter().all(u8::is_ascii_uppercase));
        assert!(p.iter().collect::<std::collections::HashSet<_>>().len() > 20);
        assert!(payload(0).is_empty());
    }
}
