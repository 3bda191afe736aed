//! Property test: random appends interleaved with rolls, flushes, clean and unclean reopens and
//! torn tails; every record that is still in the log reads back with its offset and value.

use std::fs::{self, OpenOptions};

use bytes::BytesMut;
use odradek::records::{BatchBuilder, Compression};
use proptest::prelude::*;

use super::test_util::*;
use super::{Log, LogConfig};

#[derive(Debug, Clone)]
enum Op {
    Append { values: Vec<Vec<u8>>, codec: usize },
    Roll,
    Flush,
    Reopen { clean: bool },
    TornTail { cut: u16 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (prop::collection::vec(prop::collection::vec(any::<u8>(), 0..120), 1..8), 0..5usize)
            .prop_map(|(values, codec)| Op::Append { values, codec }),
        1 => Just(Op::Roll),
        1 => Just(Op::Flush),
        2 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        1 => any::<u16>().prop_map(|cut| Op::TornTail { cut }),
    ]
}

fn append(log: &mut Log, values: &[Vec<u8>], codec: usize) -> i64 {
    let mut b = BatchBuilder::new(Compression::ALL[codec]);
    for v in values {
        b.append(NOW, Some(b"k"), Some(v), &[]).unwrap();
    }
    let bytes = BytesMut::from(&b.build().unwrap()[..]);
    log.append(bytes, 0, NOW).unwrap().base_offset
}

fn check(log: &Log, expected: &[Vec<u8>]) -> Result<(), TestCaseError> {
    prop_assert_eq!(log.log_end_offset(), expected.len() as i64);
    let records = read_all(log);
    prop_assert_eq!(records.len(), expected.len());
    for (i, r) in records.iter().enumerate() {
        prop_assert_eq!(r.offset, i as i64);
        prop_assert_eq!(r.value.as_deref(), Some(expected[i].as_slice()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn every_appended_record_reads_back(
        ops in prop::collection::vec(op(), 1..50),
        segment_bytes in 300i32..4000,
        interval in 0i32..800,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes,
            index_interval_bytes: interval,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), config.clone());
        let mut expected: Vec<Vec<u8>> = Vec::new();
        for op in ops {
            match op {
                Op::Append { values, codec } => {
                    let base = append(&mut log, &values, codec);
                    prop_assert_eq!(base, expected.len() as i64);
                    expected.extend(values);
                }
                Op::Roll => log.roll().unwrap(),
                Op::Flush => log.flush().unwrap(),
                Op::Reopen { clean } => {
                    if clean {
                        log.close().unwrap();
                    }
                    drop(log);
                    log = open(dir.path(), config.clone());
                }
                Op::TornTail { cut } => {
                    let last_base = *log.segments.keys().next_back().unwrap();
                    drop(log);
                    let path = log_files(dir.path()).pop().unwrap();
                    let len = fs::metadata(&path).unwrap().len();
                    let keep = len.saturating_sub(u64::from(cut) % 300);
                    OpenOptions::new().write(true).open(&path).unwrap().set_len(keep).unwrap();
                    log = open(dir.path(), config.clone());
                    let leo = log.log_end_offset();
                    prop_assert!(leo >= last_base && leo <= expected.len() as i64);
                    expected.truncate(leo as usize);
                }
            }
            check(&log, &expected)?;
        }
        drop(log);
        let log = open(dir.path(), config);
        check(&log, &expected)?;
    }
}
