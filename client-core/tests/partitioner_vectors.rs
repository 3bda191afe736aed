//! Our default partitioner picks the same partition as librdkafka's `murmur2_random` (and so the
//! Java client's default partitioner) for every key and partition count in a vector recorded from
//! librdkafka's own delivery reports (`data/partitioner/generate.py`).

#![allow(clippy::unwrap_used)]

use odradek::producer::partition_for_key;

#[test]
fn same_partition_as_librdkafka() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/partitioner/librdkafka_murmur2_random.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 1000);
    for case in cases {
        let key = hex::decode(case["key_hex"].as_str().unwrap()).unwrap();
        let partitions = case["partitions"].as_i64().unwrap() as i32;
        let want = case["partition"].as_i64().unwrap() as i32;
        assert_eq!(
            partition_for_key(&key, partitions),
            want,
            "key {} of {partitions}",
            case["key_hex"]
        );
    }
}
