//! Unit and property tests of the RecordBatch codec.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::Error;

fn sample_headers() -> Vec<Header> {
    vec![
        Header::new(&b"dup"[..], Some(&b"first"[..])),
        Header::new(&b"other"[..], None::<Bytes>),
        Header::new(&b"dup"[..], Some(&b"second"[..])),
    ]
}

fn sample_batch(codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new(codec)
        .base_offset(100)
        .producer(4242, 3, 17)
        .transactional(true);
    let big = vec![b'x'; 5000];
    b.append(1_000, Some(b"k1"), Some(b"v1"), &sample_headers())
        .unwrap();
    b.append(999, None, Some(b"no key"), &[]).unwrap();
    b.append(2_000, Some(b"tomb"), None, &[]).unwrap();
    b.append(1_500, Some(b""), Some(b""), &[]).unwrap();
    b.append(3_000, Some(b"big"), Some(&big), &[]).unwrap();
    b.build().unwrap()
}

#[test]
fn round_trip_every_codec() {
    for codec in Compression::ALL {
        let bytes = sample_batch(codec);
        let batch = RecordBatch::new(bytes).unwrap();
        batch.validate_crc().unwrap();
        assert_eq!(batch.compression(), codec);
        assert_eq!(batch.base_offset(), 100);
        assert_eq!(batch.last_offset(), 104);
        assert_eq!(batch.record_count(), 5);
        assert_eq!(batch.producer_id(), 4242);
        assert_eq!(batch.producer_epoch(), 3);
        assert_eq!(batch.base_sequence(), 17);
        assert_eq!(batch.last_sequence(), 21);
        assert!(batch.is_transactional());
        assert!(!batch.is_control());
        assert_eq!(batch.base_timestamp(), 1_000);
        assert_eq!(batch.max_timestamp(), 3_000);
        let records: Vec<Record> = batch.records().unwrap().map(Result::unwrap).collect();
        assert_eq!(records.len(), 5);
        assert_eq!(records[0].offset, 100);
        assert_eq!(records[0].headers, sample_headers());
        assert_eq!(records[1].timestamp, 999, "negative timestamp delta");
        assert_eq!(records[1].key, None);
        assert_eq!(records[2].value, None);
        assert_eq!(records[3].key.as_deref(), Some(&b""[..]));
        assert_eq!(records[4].value.as_ref().map(Bytes::len), Some(5000));
        assert_eq!(records[4].offset, 104);
    }
}

#[test]
fn compressed_batches_are_smaller() {
    let plain = sample_batch(Compression::None).len();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        assert!(sample_batch(codec).len() < plain / 2, "{codec}");
    }
}

#[test]
fn crc_detects_any_flipped_byte_after_the_crc() {
    let bytes = sample_batch(Compression::None);
    for i in [21usize, 30, 60, 61, bytes.len() - 1] {
        let mut m = BytesMut::from(&bytes[..]);
        m[i] ^= 0x01;
        let batch = RecordBatch::new(m.freeze()).unwrap();
        assert!(
            matches!(batch.validate_crc(), Err(Error::CrcMismatch { .. })),
            "byte {i}"
        );
    }
}

#[test]
fn a_base_offset_near_i64_max_wraps_instead_of_panicking() {
    let mut b = BatchBuilder::new(Compression::None).base_offset(i64::MAX);
    b.append(1, None, Some(b"a"), &[]).unwrap();
    b.append(1, None, Some(b"b"), &[]).unwrap();
    let batch = RecordBatch::new(b.build().unwrap()).unwrap();
    assert_eq!(batch.last_offset(), i64::MIN);
    assert_eq!(batch.next_offset(), i64::MIN + 1);
    let offsets: Vec<i64> = batch
        .records()
        .unwrap()
        .map(|r| r.unwrap().offset)
        .collect();
    assert_eq!(offsets, [i64::MAX, i64::MIN]);
}

#[test]
fn stamping_offsets_keeps_the_crc_valid() {
    let mut m = BytesMut::from(&sample_batch(Compression::Lz4)[..]);
    stamp_offsets(&mut m, 7_000, 12).unwrap();
    let batch = RecordBatch::new(m.freeze()).unwrap();
    batch.validate_crc().unwrap();
    assert_eq!(batch.base_offset(), 7_000);
    assert_eq!(batch.partition_leader_epoch(), 12);
    assert_eq!(
        batch.records().unwrap().last().unwrap().unwrap().offset,
        7_004
    );
    assert!(stamp_offsets(&mut [0u8; 10], 0, 0).is_err());
}

#[test]
fn legacy_message_formats_are_a_clear_error() {
    for magic in [0u8, 1] {
        // A v0/v1 message: offset, size, crc, magic, attributes, (timestamp,) key, value.
        let mut legacy = vec![0u8; 8];
        legacy.extend_from_slice(&30i32.to_be_bytes());
        legacy.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, magic, 0]);
        legacy.extend_from_slice(&[0xff; 24]);
        let bytes = Bytes::from(legacy);
        assert!(matches!(
            RecordBatch::new(bytes.clone()),
            Err(Error::UnsupportedMessageFormat(m)) if m == magic as i8
        ));
        let mut set = RecordBatches::new(bytes);
        assert!(matches!(
            set.next(),
            Some(Err(Error::UnsupportedMessageFormat(_)))
        ));
        assert!(set.next().is_none());
        assert_eq!(
            Error::UnsupportedMessageFormat(0).kafka_code(),
            crate::ErrorCode::UnsupportedForMessageFormat
        );
    }
}

#[test]
fn record_set_skips_a_truncated_final_batch() {
    let a = sample_batch(Compression::None);
    let b = sample_batch(Compression::Zstd);
    let mut set = BytesMut::new();
    set.extend_from_slice(&a);
    set.extend_from_slice(&b);
    set.extend_from_slice(&a[..a.len() / 2]);
    let set = set.freeze();
    let mut it = RecordBatches::new(set.clone());
    assert_eq!(it.next().unwrap().unwrap().as_bytes(), &a);
    assert_eq!(it.next().unwrap().unwrap().as_bytes(), &b);
    assert!(it.next().is_none());
    assert_eq!(it.truncated_tail(), a.len() / 2);
    // Every cut point: complete batches are yielded, the partial one is skipped, nothing fails.
    for cut in 0..set.len() {
        let batches: Vec<_> = RecordBatches::new(set.slice(..cut)).collect();
        assert!(batches.iter().all(Result::is_ok), "cut {cut}");
    }
}

#[test]
fn control_records_round_trip() {
    let marker = EndTxnMarker {
        kind: ControlRecordType::Commit,
        coordinator_epoch: 5,
    };
    let mut b = BatchBuilder::new(Compression::None)
        .producer(9, 1, -1)
        .transactional(true)
        .control(true);
    b.append(
        10,
        Some(&ControlRecordType::Commit.encode_key()),
        Some(&marker.encode_value()),
        &[],
    )
    .unwrap();
    let batch = RecordBatch::new(b.build().unwrap()).unwrap();
    assert!(batch.is_control() && batch.is_transactional());
    let record = batch.records().unwrap().next().unwrap().unwrap();
    assert_eq!(EndTxnMarker::from_record(&record).unwrap(), marker);
    assert_eq!(
        ControlRecordType::parse_key(&ControlRecordType::Abort.encode_key()).unwrap(),
        ControlRecordType::Abort
    );
    assert!(ControlRecordType::parse_key(&[0]).is_err());
}

#[test]
fn log_append_time_overrides_record_timestamps() {
    let mut m = BytesMut::from(&sample_batch(Compression::None)[..]);
    let attrs = BatchAttributes::new(Compression::None, TimestampType::LogAppendTime, true, false);
    m[21..23].copy_from_slice(&attrs.0.to_be_bytes());
    m[35..43].copy_from_slice(&42_000i64.to_be_bytes());
    let batch = RecordBatch::new(m.freeze()).unwrap();
    assert!(batch
        .records()
        .unwrap()
        .all(|r| r.unwrap().timestamp == 42_000));
}

#[test]
fn empty_batch_cannot_be_built() {
    assert!(BatchBuilder::new(Compression::None).build().is_err());
}

#[test]
fn corrupted_batches_never_panic() {
    for codec in Compression::ALL {
        let bytes = sample_batch(codec);
        for i in 0..bytes.len().min(400) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut m = BytesMut::from(&bytes[..]);
                m[i] ^= flip;
                if let Ok(batch) = RecordBatch::new(m.freeze()) {
                    if let Ok(records) = batch.records() {
                        for r in records {
                            let _ = r;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn record_count_mismatch_is_reported() {
    let mut m = BytesMut::from(&sample_batch(Compression::None)[..]);
    m[57..61].copy_from_slice(&4i32.to_be_bytes());
    let batch = RecordBatch::new(m.freeze()).unwrap();
    let results: Vec<_> = batch.records().unwrap().collect();
    assert_eq!(results.len(), 5);
    assert!(results[4].is_err());
    let mut m = BytesMut::from(&sample_batch(Compression::None)[..]);
    m[57..61].copy_from_slice(&6i32.to_be_bytes());
    let batch = RecordBatch::new(m.freeze()).unwrap();
    assert!(batch.records().unwrap().any(|r| r.is_err()));
}

#[test]
fn record_size_predicts_append() {
    let mut b = BatchBuilder::new(Compression::None);
    b.append(5, Some(b"a"), Some(b"b"), &[]).unwrap();
    let before = b.uncompressed_size();
    let predicted = b.record_size(9, Some(b"key"), Some(&[7u8; 300]), &sample_headers());
    b.append(9, Some(b"key"), Some(&[7u8; 300]), &sample_headers())
        .unwrap();
    assert_eq!(b.uncompressed_size() - before, predicted);
}

fn arb_bytes() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300))
}

type ArbHeader = (Vec<u8>, Option<Vec<u8>>);
type ArbRecord = (i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<ArbHeader>);

fn arb_record() -> impl Strategy<Value = ArbRecord> {
    (
        -1_000_000i64..1_000_000_000_000i64,
        arb_bytes(),
        arb_bytes(),
        proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..20), arb_bytes()),
            0..4,
        ),
    )
}

proptest! {
    #[test]
    fn arbitrary_batches_round_trip(
        records in proptest::collection::vec(arb_record(), 1..40),
        codec_id in 0u8..5,
        base_offset in 0i64..1 << 40,
    ) {
        let codec = Compression::from_id(codec_id).unwrap();
        let mut b = BatchBuilder::new(codec).base_offset(base_offset);
        for (ts, k, v, hs) in &records {
            let hs: Vec<Header> = hs.iter().map(|(k, v)| Header::new(k.clone(), v.clone())).collect();
            b.append(*ts, k.as_deref(), v.as_deref(), &hs).unwrap();
        }
        let batch = RecordBatch::new(b.build().unwrap()).unwrap();
        batch.validate_crc().unwrap();
        prop_assert_eq!(batch.record_count() as usize, records.len());
        let decoded: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
        for (i, (r, (ts, k, v, hs))) in decoded.iter().zip(&records).enumerate() {
            prop_assert_eq!(r.offset, base_offset + i as i64);
            prop_assert_eq!(r.timestamp, *ts);
            prop_assert_eq!(r.key.as_deref(), k.as_deref());
            prop_assert_eq!(r.value.as_deref(), v.as_deref());
            prop_assert_eq!(r.headers.len(), hs.len());
            for (h, (hk, hv)) in r.headers.iter().zip(hs) {
                prop_assert_eq!(&h.key[..], &hk[..]);
                prop_assert_eq!(h.value.as_deref(), hv.as_deref());
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        for batch in RecordBatches::new(Bytes::from(data)).flatten() {
            let _ = batch.validate_crc();
            if let Ok(records) = batch.records_with_limit(1 << 20) {
                for r in records { let _ = r; }
            }
        }
    }
}

#[test]
fn borrowed_records_match_owned_records() {
    for codec in Compression::ALL {
        let batch = RecordBatch::new(sample_batch(codec)).unwrap();
        let owned: Vec<Record> = batch.records().unwrap().map(Result::unwrap).collect();
        let mut it = batch.records().unwrap();
        let mut i = 0;
        while let Some(r) = it.next_ref() {
            let r = r.unwrap();
            let o = &owned[i];
            assert_eq!((r.offset, r.timestamp), (o.offset, o.timestamp));
            assert_eq!(r.key, o.key.as_deref());
            assert_eq!(r.value, o.value.as_deref());
            let headers: Vec<Header> = r
                .headers()
                .map(|(k, v)| Header::new(k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect();
            assert_eq!(headers, o.headers);
            assert_eq!(r.header_count(), o.headers.len());
            i += 1;
        }
        assert_eq!(i, owned.len());
    }
    let mut m = BytesMut::from(&sample_batch(Compression::None)[..]);
    m[57..61].copy_from_slice(&4i32.to_be_bytes());
    let batch = RecordBatch::new(m.freeze()).unwrap();
    let mut it = batch.records().unwrap();
    let mut results = Vec::new();
    while let Some(r) = it.next_ref() {
        results.push(r.is_ok());
    }
    assert_eq!(
        results,
        [true, true, true, true, false],
        "trailing bytes reported"
    );
}

#[test]
fn restamping_producer_fields_keeps_the_batch_valid() {
    let mut m = BytesMut::from(&sample_batch(Compression::Zstd)[..]);
    restamp_producer(&mut m, 99, 7, 1234).unwrap();
    let batch = RecordBatch::new(m.freeze()).unwrap();
    batch.validate_crc().unwrap();
    assert_eq!(
        (
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence()
        ),
        (99, 7, 1234)
    );
    assert_eq!(batch.records().unwrap().count(), 5);
}
