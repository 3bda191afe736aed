//! The metadata log's entries as Kafka record batches, the form they take on the wire (the
//! records of a Fetch response on `__cluster_metadata`) and on disk: consecutive data entries
//! of one epoch share a batch whose partition leader epoch is that epoch; a new leader's
//! LeaderChange entry is a control batch of its own (control type 2, as KRaft writes it).

use bytes::{BufMut, Bytes, BytesMut};
use odradek::records::{BatchBuilder, Compression, RecordBatches};
use odradek_quorum::{Entry, Payload};

use crate::{Error, Result};

fn corrupt(message: String) -> Error {
    Error::Codec(odradek::Error::CorruptBatch(message))
}

/// Control record type of KRaft's LeaderChangeMessage.
const LEADER_CHANGE: i16 = 2;

/// Encodes `entries`, the first at `base_offset`, as record batches back to back.
pub fn encode(base_offset: i64, entries: &[Entry]) -> Result<Bytes> {
    let mut out = BytesMut::new();
    let mut i = 0;
    while i < entries.len() {
        let first = &entries[i];
        let offset = base_offset + i as i64;
        let mut b = BatchBuilder::new(Compression::None)
            .base_offset(offset)
            .partition_leader_epoch(first.epoch);
        match &first.payload {
            Payload::LeaderChange { leader, voters } => {
                let mut key = BytesMut::with_capacity(4);
                key.put_i16(0);
                key.put_i16(LEADER_CHANGE);
                let mut value = BytesMut::with_capacity(8 + 4 * voters.len());
                value.put_i16(0);
                value.put_i32(*leader);
                value.put_i32(voters.len() as i32);
                for v in voters {
                    value.put_i32(*v);
                }
                b = b.control(true);
                b.append(0, Some(&key), Some(&value), &[])?;
                i += 1;
            }
            Payload::Data(_) => {
                while let Some(Entry {
                    epoch,
                    payload: Payload::Data(bytes),
                }) = entries.get(i)
                {
                    if *epoch != first.epoch {
                        break;
                    }
                    b.append(0, None, Some(bytes), &[])?;
                    i += 1;
                }
            }
        }
        out.extend_from_slice(&b.build()?);
    }
    Ok(out.freeze())
}

/// Decodes record batches into entries: the offset of the first and the entries, which must
/// be contiguous. A batch cut short at the end (a fetch's byte limit) is left out.
pub fn decode(records: Bytes) -> Result<Option<(i64, Vec<Entry>)>> {
    let mut first = None;
    let mut entries = Vec::new();
    for batch in RecordBatches::new(records) {
        let batch = batch?;
        batch.validate_crc()?;
        let epoch = batch.partition_leader_epoch();
        let control = batch.is_control();
        let mut records = batch.records()?;
        while let Some(r) = records.next_ref() {
            let r = r?;
            let expected = first.map_or(r.offset, |f: i64| f + entries.len() as i64);
            if r.offset != expected {
                return Err(corrupt(format!(
                    "metadata record at offset {} where {expected} was due",
                    r.offset
                )));
            }
            first.get_or_insert(r.offset);
            let payload = if control {
                decode_leader_change(r.key, r.value)?
            } else {
                Payload::Data(Bytes::copy_from_slice(r.value.unwrap_or_default()))
            };
            entries.push(Entry { epoch, payload });
        }
    }
    Ok(first.map(|f| (f, entries)))
}

fn decode_leader_change(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Payload> {
    let bad = |what: &str| corrupt(format!("metadata control record: {what}"));
    let key = key.ok_or_else(|| bad("no key"))?;
    if key.len() < 4 || i16::from_be_bytes([key[2], key[3]]) != LEADER_CHANGE {
        return Err(bad("not a LeaderChange record"));
    }
    let v = value.ok_or_else(|| bad("no value"))?;
    let int = |at: usize| -> Result<i32> {
        v.get(at..at + 4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| bad("value cut short"))
    };
    let leader = int(2)?;
    let count = usize::try_from(int(6)?).map_err(|_| bad("negative voter count"))?;
    if count > (v.len().saturating_sub(10)) / 4 {
        return Err(bad("voter count beyond the value"));
    }
    let voters = (0..count)
        .map(|i| int(10 + 4 * i))
        .collect::<Result<Vec<i32>>>()?;
    Ok(Payload::LeaderChange { leader, voters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_batches() {
        let entries = vec![
            Entry {
                epoch: 1,
                payload: Payload::LeaderChange {
                    leader: 2,
                    voters: vec![1, 2, 3],
                },
            },
            Entry::data(1, Bytes::from_static(b"a")),
            Entry::data(1, Bytes::from_static(b"b")),
            Entry::data(3, Bytes::from_static(b"")),
        ];
        let bytes = encode(7, &entries).unwrap();
        assert_eq!(decode(bytes.clone()).unwrap(), Some((7, entries)));
        // Three batches: the control batch, epoch 1, epoch 3.
        assert_eq!(RecordBatches::new(bytes).count(), 3);
        assert_eq!(decode(Bytes::new()).unwrap(), None);
    }

    #[test]
    fn damaged_batches_are_errors() {
        let bytes = encode(0, &[Entry::data(1, Bytes::from_static(b"abc"))]).unwrap();
        let mut damaged = bytes.to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        assert!(decode(Bytes::from(damaged)).is_err());
    }
}
