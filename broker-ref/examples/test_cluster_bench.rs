//! Per-test cost of the in-process test cluster from Rust: start + stop of an empty cluster, and
//! start + one produce/consume round trip (the odradek client) + stop, for 1 and 3 brokers.
//! Prints one JSON object per measurement (milliseconds). Run by `bench/test_cluster.sh`.
//!
//!   cargo run --release -p odradek-broker --example test_cluster_bench -- [rounds]

// A failed round trip aborts the benchmark.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use odradek::producer::TopicPartition;
use odradek::{Consumer, Producer, ProducerRecord};
use odradek_broker::testing::Cluster;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn round_trip(cluster: &Cluster) {
    let producer = Producer::from_map([
        ("bootstrap.servers", cluster.bootstrap()),
        ("linger.ms", "0"),
    ])
    .unwrap();
    let delivery = producer
        .send(ProducerRecord::new("t", "hello").partition(0))
        .await
        .unwrap();
    delivery.await.unwrap();
    producer.close().await;
    let consumer = Consumer::from_map([
        ("bootstrap.servers", cluster.bootstrap()),
        ("auto.offset.reset", "earliest"),
    ])
    .unwrap();
    consumer.assign(&[TopicPartition {
        topic: "t".into(),
        partition: 0,
    }]);
    loop {
        if !consumer
            .poll(Duration::from_millis(100))
            .await
            .unwrap()
            .is_empty()
        {
            break;
        }
    }
    consumer.close().await;
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for brokers in [1usize, 3] {
        // Warm-up.
        Cluster::builder().brokers(brokers).start().unwrap().stop();
        for _ in 0..rounds {
            let t0 = Instant::now();
            let c = Cluster::builder().brokers(brokers).start().unwrap();
            let started = t0.elapsed();
            let t1 = Instant::now();
            c.stop();
            let stopped = t1.elapsed();
            println!(
                "{{\"lang\":\"rust\",\"client\":\"none\",\"scenario\":\"empty\",\"brokers\":{brokers},\"start_ms\":{:.3},\"stop_ms\":{:.3},\"total_ms\":{:.3}}}",
                ms(started),
                ms(stopped),
                ms(started + stopped)
            );
        }
        for _ in 0..rounds {
            let t0 = Instant::now();
            let c = Cluster::builder()
                .brokers(brokers)
                .topic("t", 1)
                .start()
                .unwrap();
            let started = t0.elapsed();
            let t1 = Instant::now();
            runtime.block_on(round_trip(&c));
            let trip = t1.elapsed();
            let t2 = Instant::now();
            c.stop();
            let stopped = t2.elapsed();
            println!(
                "{{\"lang\":\"rust\",\"client\":\"odradek\",\"scenario\":\"round_trip\",\"brokers\":{brokers},\"start_ms\":{:.3},\"round_trip_ms\":{:.3},\"stop_ms\":{:.3},\"total_ms\":{:.3}}}",
                ms(started),
                ms(trip),
                ms(stopped),
                ms(t0.elapsed())
            );
        }
    }
}
