//! `perf consume`: reads `--count` records from the beginning of every partition and reports
//! throughput. Gives up when no record arrives for `--timeout` ms.

use std::time::{Duration, Instant};

use odradek::{Admin, ClientConfig, Consumer};

use super::progress::Progress;
use super::{mb_per_s, per_s};
use crate::args::PerfConsumeArgs;
use crate::failure::Failure;
use crate::out;
use crate::partitions;

/// Runs the consume perf test.
pub async fn run(
    config: ClientConfig,
    admin: &Admin,
    args: &PerfConsumeArgs,
) -> Result<(), Failure> {
    let tps = partitions::of_topic(admin, &args.topic, None).await?;
    let consumer = Consumer::new(config)?;
    let started = Instant::now();
    consumer.assign(&tps);
    consumer.seek_to_beginning(&tps)?;
    let idle_limit = Duration::from_millis(args.timeout_ms);
    let mut progress = Progress::new("perf consume");
    let (mut count, mut bytes) = (0u64, 0u64);
    let mut last_record = Instant::now();
    let mut outcome = Ok(());
    while count < args.count {
        let records = match consumer.poll(Duration::from_millis(200)).await {
            Ok(r) => r,
            Err(e) => {
                outcome = Err(Failure::from(e));
                break;
            }
        };
        if records.is_empty() {
            if last_record.elapsed() >= idle_limit {
                outcome = Err(Failure::new(format!(
                    "only {count} of {} msgs arrived; none for {} ms (--timeout)",
                    args.count, args.timeout_ms
                )));
                break;
            }
        } else {
            last_record = Instant::now();
        }
        for r in records {
            if count >= args.count {
                break;
            }
            count += 1;
            bytes += r.key.as_ref().map_or(0, |k| k.len() as u64)
                + r.value.as_ref().map_or(0, |v| v.len() as u64);
        }
        progress.tick(count, bytes, "");
    }
    let elapsed = started.elapsed().as_secs_f64();
    consumer.close().await;
    progress.finish();
    out::say!(
        "perf consume: {count} msgs ({:.2} MB) in {elapsed:.2} s: {:.1} msgs/s, {:.2} MB/s",
        bytes as f64 / 1e6,
        per_s(count, elapsed),
        mb_per_s(bytes, elapsed)
    )?;
    outcome
}
