//! Byte compatibility with third-party encoders: RecordBatches written by kafka-python and by
//! librdkafka (see `data/record_batches/README.md`) must decode to exactly what the manifest says,
//! and our encoder must reproduce an uncompressed batch byte for byte.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use bytes::Bytes;
use odradek::records::{BatchBuilder, Compression, Header, Record, RecordBatch, RecordBatches};
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/record_batches")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(data_dir().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn hex_bytes(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(|s| hex::decode(s).unwrap())
}

/// The expected value of a manifest record: inline hex, a named blob, or a repeated unit.
fn expected_value(record: &Value, blobs: &Value) -> Option<Vec<u8>> {
    if let Some(name) = record.get("value_blob").and_then(Value::as_str) {
        return hex_bytes(&blobs[name]["hex"]);
    }
    if let Some(rep) = record.get("value_repeat") {
        let unit = hex_bytes(&rep["unit_hex"]).unwrap();
        return Some(unit.repeat(rep["times"].as_u64().unwrap() as usize));
    }
    hex_bytes(&record["value_hex"])
}

fn expected_headers(record: &Value) -> Vec<Header> {
    record["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Header::new(h[0].as_str().unwrap().as_bytes().to_vec(), hex_bytes(&h[1])))
        .collect()
}

fn check_record(file: &str, got: &Record, want: &Value, blobs: &Value) {
    let ctx = format!("{file} offset {}", want["offset"]);
    assert_eq!(got.offset, want["offset"].as_i64().unwrap(), "{ctx}");
    assert_eq!(got.timestamp, want["timestamp"].as_i64().unwrap(), "{ctx}");
    assert_eq!(
        got.key.as_deref().map(<[u8]>::to_vec),
        hex_bytes(&want["key_hex"]),
        "{ctx} key"
    );
    assert_eq!(
        got.value.as_deref().map(<[u8]>::to_vec),
        expected_value(want, blobs),
        "{ctx} value"
    );
    assert_eq!(got.headers, expected_headers(want), "{ctx} headers");
}

fn check_batch(file: &str, got: &RecordBatch, want: &Value, blobs: &Value) {
    got.validate_crc().unwrap();
    let ctx = format!("{file} batch at {}", want["base_offset"]);
    assert_eq!(u64::from(got.crc()), want["crc"].as_u64().unwrap(), "{ctx}");
    assert_eq!(
        got.base_offset(),
        want["base_offset"].as_i64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        i64::from(got.attributes().0),
        want["attributes"].as_i64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        got.compression().name(),
        want["compression"].as_str().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        got.is_transactional(),
        want["is_transactional"].as_bool().unwrap()
    );
    assert_eq!(got.is_control(), want["is_control"].as_bool().unwrap());
    assert_eq!(
        i64::from(got.last_offset_delta()),
        want["last_offset_delta"].as_i64().unwrap(),
        "{ctx}"
    );
    assert_eq!(
        got.base_timestamp(),
        want["first_timestamp"].as_i64().unwrap()
    );
    assert_eq!(got.max_timestamp(), want["max_timestamp"].as_i64().unwrap());
    assert_eq!(got.producer_id(), want["producer_id"].as_i64().unwrap());
    assert_eq!(
        i64::from(got.producer_epoch()),
        want["producer_epoch"].as_i64().unwrap()
    );
    assert_eq!(
        i64::from(got.base_sequence()),
        want["base_sequence"].as_i64().unwrap()
    );
    assert_eq!(
        i64::from(got.record_count()),
        want["record_count"].as_i64().unwrap()
    );
    let records: Vec<Record> = got.records().unwrap().map(Result::unwrap).collect();
    let expected = want["records"].as_array().unwrap();
    assert_eq!(records.len(), expected.len(), "{ctx}");
    for (r, w) in records.iter().zip(expected) {
        check_record(file, r, w, blobs);
    }
}

#[test]
fn every_vector_decodes_to_its_manifest() {
    let m = manifest();
    let blobs = &m["blobs"];
    let mut codecs_seen = std::collections::BTreeSet::new();
    let files = m["files"].as_array().unwrap();
    assert!(files.len() >= 20, "manifest lists {} files", files.len());
    for f in files {
        let name = f["file"].as_str().unwrap();
        let data = Bytes::from(std::fs::read(data_dir().join(name)).unwrap());
        let mut batches = RecordBatches::new(data);
        let expected = f["batches"].as_array().unwrap();
        for want in expected {
            let got = batches
                .next()
                .unwrap_or_else(|| panic!("{name}: missing batch"))
                .unwrap();
            codecs_seen.insert(got.compression().name());
            check_batch(name, &got, want, blobs);
        }
        assert!(batches.next().is_none(), "{name}: extra batch");
        assert_eq!(
            batches.truncated_tail() as u64,
            f["truncated_tail_bytes"].as_u64().unwrap(),
            "{name}"
        );
    }
    assert_eq!(
        codecs_seen.len(),
        5,
        "all five codecs covered: {codecs_seen:?}"
    );
}

#[test]
fn java_style_xerial_snappy_and_raw_snappy_both_decode() {
    let framed = std::fs::read(data_dir().join("snappy.bin")).unwrap();
    let raw = std::fs::read(data_dir().join("snappy_raw.bin")).unwrap();
    let xerial_magic = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
    assert_eq!(
        &framed[61..69],
        &xerial_magic,
        "kafka-python writes xerial framing"
    );
    assert_ne!(&raw[61..69], &xerial_magic);
    let a: Vec<Record> = RecordBatch::new(Bytes::from(framed))
        .unwrap()
        .records()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let b: Vec<Record> = RecordBatch::new(Bytes::from(raw))
        .unwrap()
        .records()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(a, b);
}

/// Re-encodes the records of a third-party batch with our builder, using the same header fields.
fn reencode(source: &RecordBatch, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new(codec)
        .base_offset(source.base_offset())
        .partition_leader_epoch(source.partition_leader_epoch())
        .producer(
            source.producer_id(),
            source.producer_epoch(),
            source.base_sequence(),
        )
        .transactional(source.is_transactional());
    for r in source.records().unwrap() {
        let r = r.unwrap();
        b.append(
            r.timestamp,
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        )
        .unwrap();
    }
    b.build().unwrap()
}

#[test]
fn our_encoder_reproduces_uncompressed_batches_byte_for_byte() {
    for file in ["none.bin", "librdkafka_none.bin"] {
        let original = Bytes::from(std::fs::read(data_dir().join(file)).unwrap());
        let batch = RecordBatch::new(original.clone()).unwrap();
        assert_eq!(reencode(&batch, Compression::None), original, "{file}");
    }
}

#[test]
fn our_compressed_batches_carry_the_same_records() {
    let original = Bytes::from(std::fs::read(data_dir().join("none.bin")).unwrap());
    let batch = RecordBatch::new(original).unwrap();
    let want: Vec<Record> = batch.records().unwrap().map(Result::unwrap).collect();
    for codec in Compression::ALL {
        let ours = RecordBatch::new(reencode(&batch, codec)).unwrap();
        ours.validate_crc().unwrap();
        assert_eq!(ours.compression(), codec);
        let got: Vec<Record> = ours.records().unwrap().map(Result::unwrap).collect();
        assert_eq!(got, want, "{codec}");
    }
}
