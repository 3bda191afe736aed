//! Decoding a request costs memory in proportion to its size: requests made of millions of
//! near-empty array entries (the shape that decodes to 60x its size) are refused by closing
//! the connection, and the broker's peak RSS grows by a bounded multiple of the frame.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use common::{temp_dir, BrokerProcess};
use kafka_protocol::messages::ApiVersionsRequest;

/// The broker's peak resident set (VmHWM) in bytes.
fn peak_rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A request header v2 (flexible APIs) for `api_key` at `version`.
fn header(api_key: i16, version: i16) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&api_key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&1i32.to_be_bytes());
    h.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
    h.push(0); // no tagged fields
    h
}

/// Produce v9 with `n` empty topic entries (`01 01 00` each): ~3 bytes per entry.
fn produce_of_empty_topics(n: u32) -> Vec<u8> {
    let mut f = header(0, 9);
    f.push(0); // null transactional id
    f.extend_from_slice(&1i16.to_be_bytes());
    f.extend_from_slice(&1000i32.to_be_bytes());
    uvarint(&mut f, n + 1);
    for _ in 0..n {
        f.extend_from_slice(&[1, 1, 0]);
    }
    f.push(0);
    f
}

/// DescribeConfigs v4 with `n` topic resources named "t" (5 bytes each).
fn describe_configs_of(n: u32) -> Vec<u8> {
    let mut f = header(32, 4);
    uvarint(&mut f, n + 1);
    for _ in 0..n {
        f.extend_from_slice(&[2, 2, b't', 0, 0]);
    }
    f.extend_from_slice(&[0, 0, 0]);
    f
}

/// Sends `frame`; true when the broker closed the connection without answering.
fn refused(broker: &BrokerProcess, frame: &[u8]) -> bool {
    let mut c = broker.client();
    let mut out = (frame.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(frame);
    if c.send_raw(&out).is_err() {
        return true;
    }
    c.read_frame().is_err()
}

#[test]
fn dense_requests_are_refused_with_bounded_memory() {
    let dir = temp_dir("request-memory");
    let broker = BrokerProcess::start(&dir, &[]);
    let pid = broker.child.id();
    // Warm up (runtime threads, buffers) before the baseline.
    broker.client().call(&ApiVersionsRequest::default(), 3);
    let before = peak_rss(pid);

    let produce = produce_of_empty_topics(6_000_000);
    assert!(
        refused(&broker, &produce),
        "6,000,000 empty topics were answered"
    );
    let after_produce = peak_rss(pid);

    let describe = describe_configs_of(1_000_000);
    assert!(
        refused(&broker, &describe),
        "1,000,000 resources were answered"
    );
    let after_describe = peak_rss(pid);

    // The broker still serves well-formed requests.
    let resp = broker.client().call(&ApiVersionsRequest::default(), 3);
    assert_eq!(resp.error_code, 0);

    let growth = after_describe - before;
    eprintln!(
        "produce frame {} B, describe frame {} B; peak RSS {} -> {} -> {} (growth {} B = {:.1}x the larger frame)",
        produce.len(),
        describe.len(),
        before,
        after_produce,
        after_describe,
        growth,
        growth as f64 / produce.len() as f64
    );
    // Before the bound: ~64x (1.2 GiB) for the Produce alone. Now the frame buffer and at most
    // the decode allowance (16 bytes per frame byte + 4 MiB) for a moment; allow 20x.
    assert!(
        growth < 20 * produce.len(),
        "peak RSS grew by {growth} bytes for a {} byte frame",
        produce.len()
    );
}
