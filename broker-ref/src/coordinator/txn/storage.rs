//! The records the transaction coordinator keeps in `__transaction_state`, in Apache Kafka's
//! layouts: key `TransactionLogKey` v0 (`version: i16 = 0, transactional_id: string`), value
//! `TransactionLogValue` v0 (`version: i16 = 0, producer_id: i64, producer_epoch: i16,
//! transaction_timeout_ms: i32, transaction_status: i8, transaction_partitions: nullable
//! [topic: string, partition_ids: [i32]], last_update_timestamp_ms: i64,
//! start_timestamp_ms: i64`). A null value is a tombstone (the id expired). Version 1 values
//! (flexible, written by Kafka for KIP-890 clients) are not read: this broker never writes them.

use bytes::{BufMut, Bytes, BytesMut};

use super::metadata::{TxnMetadata, TxnState};
use crate::coordinator::storage::{put_str, Reader};

/// Encodes `(key, value)` for `txn_id`; `None` writes a tombstone.
pub fn txn_record(txn_id: &str, meta: Option<&TxnMetadata>) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    k.put_i16(0);
    put_str(&mut k, txn_id);
    let v = meta.map(|m| {
        let mut v = BytesMut::new();
        v.put_i16(0);
        v.put_i64(m.producer_id);
        v.put_i16(m.epoch);
        v.put_i32(m.timeout_ms);
        v.put_i8(m.state.id());
        if m.state == TxnState::Empty {
            v.put_i32(-1);
        } else {
            let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
            for (t, p) in &m.partitions {
                match topics.last_mut() {
                    Some((last, ps)) if *last == t.as_str() => ps.push(*p),
                    _ => topics.push((t.as_str(), vec![*p])),
                }
            }
            v.put_i32(topics.len() as i32);
            for (t, ps) in topics {
                put_str(&mut v, t);
                v.put_i32(ps.len() as i32);
                for p in ps {
                    v.put_i32(p);
                }
            }
        }
        v.put_i64(m.last_update_ms);
        v.put_i64(m.start_ms);
        v.freeze()
    });
    (k.freeze(), v)
}

/// Decodes a `__transaction_state` record: the transactional id and its state (`None` for a
/// tombstone). `None` overall for keys or values this broker does not read.
pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Option<(String, Option<TxnMetadata>)> {
    let mut k = Reader(key.clone());
    if k.i16()? != 0 {
        return None;
    }
    let txn_id = k.str()?;
    let Some(value) = value else {
        return Some((txn_id, None));
    };
    let mut v = Reader(value.clone());
    if v.i16()? != 0 {
        return None;
    }
    let producer_id = v.i64()?;
    let epoch = v.i16()?;
    let timeout_ms = v.i32()?;
    let state = TxnState::from_id(v.i8()?)?;
    let mut partitions = std::collections::BTreeSet::new();
    let topics = v.i32()?;
    for _ in 0..topics.max(0) {
        let topic = v.str()?;
        let n = v.i32()?;
        for _ in 0..n.max(0) {
            partitions.insert((topic.clone(), v.i32()?));
        }
    }
    let last_update_ms = v.i64()?;
    let start_ms = v.i64()?;
    Some((
        txn_id,
        Some(TxnMetadata {
            producer_id,
            last_producer_id: -1,
            epoch,
            last_epoch: -1,
            timeout_ms,
            state,
            partitions,
            start_ms,
            last_update_ms,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut m = TxnMetadata::new(42, 60_000, 5);
        m.init_session(60_000, 6, None);
        let (k, v) = txn_record("tx", Some(&m));
        assert_eq!(&k[..], b"\x00\x00\x00\x02tx");
        let (id, back) = decode(&k, v.as_ref()).unwrap();
        assert_eq!((id.as_str(), back.as_ref()), ("tx", Some(&m)));
        assert_eq!(
            &v.unwrap()[17..21],
            &(-1i32).to_be_bytes(),
            "Empty: null partitions"
        );

        m.add_partitions(&[("a".into(), 1), ("a".into(), 0), ("b".into(), 3)], 7);
        let (k, v) = txn_record("tx", Some(&m));
        assert_eq!(decode(&k, v.as_ref()).unwrap().1, Some(m));
        let (k, v) = txn_record("tx", None);
        assert_eq!(decode(&k, v.as_ref()), Some(("tx".into(), None)));
        assert_eq!(decode(&Bytes::from_static(b"\x00\x01"), None), None);
        assert_eq!(
            decode(&k, Some(&Bytes::from_static(b"\x00\x00\x01"))),
            None,
            "truncated value"
        );
    }
}
