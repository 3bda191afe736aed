//! Fills a broker data directory for `bench/broker_restart.sh`: opens it as the broker would,
//! creates topics until the broker holds `--partitions` partitions in all (the internal topics
//! count), writes `--batches` idempotent batches of 100-byte records into each new partition,
//! and shuts down cleanly.
//!
//! `cargo run --release -p odradek-broker --example fill_data_dir -- DIR [--partitions 228]
//! [--batches 200] [--records 100] [--segment-bytes 1048576]`

use std::collections::BTreeMap;
use std::process::ExitCode;

use odradek::records::{BatchBuilder, Compression};
use odradek_broker::broker::Broker;
use odradek_broker::clock::now_ms;
use odradek_broker::config::BrokerConfig;

fn arg(args: &[String], name: &str, default: i64) -> Result<i64, String> {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a number")),
        None => Ok(default),
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args.first().ok_or("usage: fill_data_dir DIR [options]")?;
    let total = arg(&args, "--partitions", 228)?;
    let batches = arg(&args, "--batches", 200)?;
    let records = arg(&args, "--records", 100)? as usize;
    let segment_bytes = arg(&args, "--segment-bytes", 1 << 20)?;
    let overrides = vec![
        ("log.dirs".to_string(), dir.clone()),
        ("log.segment.bytes".to_string(), segment_bytes.to_string()),
    ];
    let config = BrokerConfig::load(None, &overrides).map_err(|e| e.to_string())?;
    let broker = Broker::open(config, "127.0.0.1".into(), 0).map_err(|e| e.to_string())?;
    let existing: i64 = broker
        .topics
        .list()
        .iter()
        .map(|t| i64::from(t.partition_count()))
        .sum();
    let mut left = total - existing;
    let mut n = 0;
    let value = [b'x'; 100];
    let mut pid = 1000;
    while left > 0 {
        let count = left.min(8) as i32;
        let topic = broker
            .topics
            .create(&format!("restart-{n}"), count, BTreeMap::new(), false)
            .map_err(|e| e.to_string())?;
        for p in topic.partitions() {
            pid += 1;
            for b in 0..batches {
                let mut builder = BatchBuilder::new(Compression::None).producer(
                    pid,
                    0,
                    (b as i32) * records as i32,
                );
                for _ in 0..records {
                    builder
                        .append(now_ms(), None, Some(&value), &[])
                        .map_err(|e| e.to_string())?;
                }
                let batch = builder.build().map_err(|e| e.to_string())?;
                p.append_record_set(batch, now_ms())
                    .map_err(|e| e.to_string())?;
            }
        }
        left -= i64::from(count);
        n += 1;
    }
    broker.shutdown().map_err(|e| e.to_string())?;
    println!("{total} partitions ({existing} existed before), {n} topics created");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fill_data_dir: {e}");
            ExitCode::FAILURE
        }
    }
}
