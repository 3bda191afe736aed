//! Broker-side produce CPU: `Partition::append_record_set` for one request holding one batch of
//! 100-byte records (like ProducerPerformance's 16 KiB batches), uncompressed and lz4, into a
//! log in a temporary directory (page cache only: the flush policy is Kafka's default, no fsync).
//!
//! Run: `cargo bench -p odradek-broker --bench produce`. Time is per produced batch; throughput
//! is bytes of batch as sent.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use odradek::records::{BatchBuilder, Compression};
use odradek_broker::log::LogConfig;
use odradek_broker::partition::Partition;

/// Records per batch: ~16 KiB of 100-byte values, as the Java producer's default batch.size.
const RECORDS: usize = 140;

fn batch(codec: Compression, producer: Option<(i64, i32)>) -> bytes::Bytes {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut b = BatchBuilder::new(codec);
    if let Some((pid, seq)) = producer {
        b = b.producer(pid, 0, seq);
    }
    for i in 0..RECORDS {
        let mut v = Vec::with_capacity(100);
        while v.len() < 100 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            v.push(b'A' + (state % 26) as u8);
        }
        b.append(
            odradek_broker::clock::now_ms() + i as i64 % 3,
            None,
            Some(&v),
            &[],
        )
        .expect("append");
    }
    b.build().expect("build")
}

fn produce(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_record_set");
    for codec in [Compression::None, Compression::Lz4] {
        // tmpfs when available, so segment rolls do not wait for a disk.
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("tempdir");
        let config = LogConfig {
            segment_bytes: 16 << 20,
            retention_bytes: 32 << 20,
            ..LogConfig::default()
        };
        let partition = Partition::open(dir.path(), "bench", 0, config).expect("open");
        let sample = batch(codec, None);
        group.throughput(Throughput::Bytes(sample.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("plain", format!("{codec:?}")),
            &sample,
            |b, sample| {
                let mut n = 0u32;
                b.iter(|| {
                    n = n.wrapping_add(1);
                    if n % 1024 == 0 {
                        // Keeps the directory small; amortised over 1024 appends.
                        partition
                            .enforce_retention(odradek_broker::clock::now_ms())
                            .expect("retention");
                    }
                    partition
                        .append_record_set(sample.clone(), odradek_broker::clock::now_ms())
                        .expect("append")
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, produce);
criterion_main!(benches);
