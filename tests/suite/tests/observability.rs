//! Every request a client sends is visible in `tracing`: a `request` span naming the API,
//! version, correlation id, broker and size, with a `trace` event for its latency.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use odradek::{Producer, ProducerRecord};
use odradek_suite::{topic_name, Target};

/// Collects everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn requests_are_traced_with_api_broker_and_latency() {
    let target = Target::start(&[]);
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("odradek::net=trace"))
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing_subscriber::util::SubscriberInitExt::set_default(subscriber);
    // A runtime on this thread only, so every task logs to the subscriber set above.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let topic = topic_name("traced");
    rt.block_on(async {
        let p = Producer::new(target.config(&[])).unwrap();
        p.send(ProducerRecord::new(&topic, "v"))
            .await
            .unwrap()
            .await
            .unwrap();
        p.close().await;
    });
    let out = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let produce_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("request{") && l.contains("Produce"))
        .collect();
    assert!(
        !produce_lines.is_empty(),
        "no Produce request span in:\n{out}"
    );
    let line = produce_lines[0];
    for field in [
        "version=",
        "correlation_id=",
        "broker=",
        "bytes=",
        "latency_us=",
    ] {
        assert!(line.contains(field), "{field} missing in {line}");
    }
    assert!(
        out.lines()
            .any(|l| l.contains("request{") && l.contains("Metadata")),
        "metadata requests are traced too:\n{out}"
    );
}
