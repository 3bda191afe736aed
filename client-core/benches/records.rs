//! RecordBatch encode and decode+iterate throughput for every codec, next to a plain memcpy of
//! the same bytes measured in the same run.
//!
//! Run: `cargo bench -p odradek --bench records`. Throughput is reported per byte of
//! *uncompressed* record data, so codecs are comparable with each other and with memcpy.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use odradek::records::{BatchBuilder, Compression, Header, RecordBatch};

const RECORDS: usize = 1000;

/// Deterministic, moderately compressible values (like typical JSON-ish payloads).
fn values(size: usize) -> Vec<Vec<u8>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..RECORDS)
        .map(|i| {
            let mut v = format!("{{\"id\":{i},\"payload\":\"").into_bytes();
            while v.len() < size {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                v.push(b'a' + (state % 16) as u8);
            }
            v.truncate(size);
            v
        })
        .collect()
}

fn build(values: &[Vec<u8>], codec: Compression) -> bytes::Bytes {
    let headers = [Header::new(&b"trace"[..], Some(&b"abc"[..]))];
    let mut b = BatchBuilder::with_capacity(codec, values.len() * (values[0].len() + 32));
    for (i, v) in values.iter().enumerate() {
        let key = (i as u32).to_be_bytes();
        b.append(1_700_000_000_000 + i as i64, Some(&key), Some(v), &headers)
            .expect("append");
    }
    b.build().expect("build")
}

fn bench(c: &mut Criterion) {
    for size in [100usize, 1024] {
        let vals = values(size);
        let raw_bytes: usize = vals.iter().map(Vec::len).sum();
        let flat: Vec<u8> = vals.concat();

        let mut group = c.benchmark_group(format!("records_{size}B"));
        group.throughput(Throughput::Bytes(raw_bytes as u64));
        group.bench_function("memcpy", |b| {
            let mut dst = vec![0u8; flat.len()];
            b.iter(|| {
                dst.copy_from_slice(black_box(&flat));
                black_box(&dst);
            })
        });
        // The CRC-32C every encode and decode pays, over the same bytes.
        group.bench_function("crc32c", |b| {
            b.iter(|| black_box(crc32c::crc32c(black_box(&flat))))
        });
        for codec in Compression::ALL {
            group.bench_with_input(BenchmarkId::new("encode", codec), &codec, |b, &codec| {
                b.iter(|| black_box(build(black_box(&vals), codec)))
            });
            let encoded = build(&vals, codec);
            group.bench_with_input(BenchmarkId::new("decode", codec), &encoded, |b, encoded| {
                b.iter(|| {
                    let batch = RecordBatch::new(black_box(encoded.clone())).expect("batch");
                    batch.validate_crc().expect("crc");
                    let mut total = 0usize;
                    for r in batch.records().expect("records") {
                        let r = r.expect("record");
                        total += r.value.map_or(0, |v| v.len());
                    }
                    assert_eq!(total, raw_bytes);
                })
            });
            let encoded = build(&vals, codec);
            group.bench_with_input(
                BenchmarkId::new("decode_borrowed", codec),
                &encoded,
                |b, encoded| {
                    b.iter(|| {
                        let batch = RecordBatch::new(black_box(encoded.clone())).expect("batch");
                        batch.validate_crc().expect("crc");
                        let mut records = batch.records().expect("records");
                        let mut total = 0usize;
                        while let Some(r) = records.next_ref() {
                            let r = r.expect("record");
                            total += r.value.map_or(0, <[u8]>::len) + r.header_count();
                        }
                        assert_eq!(total, raw_bytes + RECORDS);
                    })
                },
            );
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
