//! Packing a poll's records for JavaScript in a few objects instead of several per record.
//!
//! Every key, value and header of the batch is copied once into one byte buffer, which becomes
//! a `Buffer` without a further copy (napi wraps the `Vec`); JavaScript takes `subarray`s of it,
//! which share its memory. The numbers per record and per header travel in two `Float64Array`s
//! (offsets and timestamps are below 2^53). Building one object per record through napi costs
//! several calls per field; building them in JavaScript from these arrays is much cheaper.

use napi::bindgen_prelude::{Buffer, Float64Array};
use napi_derive::napi;
use odradek::records::TimestampType;
use odradek::ConsumerRecord;

/// Numbers per record in [`Polled::records`]: topic index, partition, offset, timestamp,
/// timestamp type (0 create, 1 log append), key start, key length (-1: null), value start,
/// value length (-1: null), header count, leader epoch (-1: unknown).
pub const RECORD_FIELDS: usize = 11;
/// Numbers per header in [`Polled::headers`]: key start, key length, value start, value length
/// (-1: null).
pub const HEADER_FIELDS: usize = 4;

/// One poll's records, columnar.
#[napi(object)]
pub struct Polled {
    /// Topic names the records refer to by index.
    pub topics: Vec<String>,
    /// `RECORD_FIELDS` numbers per record, in delivery order.
    pub records: Float64Array,
    /// `HEADER_FIELDS` numbers per header, records' headers back to back.
    pub headers: Float64Array,
    /// Keys, values and headers' bytes.
    pub data: Buffer,
}

fn span(data: &mut Vec<u8>, bytes: Option<&[u8]>) -> (f64, f64) {
    match bytes {
        None => (data.len() as f64, -1.0),
        Some(b) => {
            let start = data.len() as f64;
            data.extend_from_slice(b);
            (start, b.len() as f64)
        }
    }
}

/// Packs `records` in order.
pub fn pack(records: &[ConsumerRecord]) -> Polled {
    let mut size = 0usize;
    let mut header_count = 0usize;
    for r in records {
        size += r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
        for h in &r.headers {
            size += h.key.len() + h.value.as_ref().map_or(0, |v| v.len());
        }
        header_count += r.headers.len();
    }
    let mut data = Vec::with_capacity(size);
    let mut nums = Vec::with_capacity(records.len() * RECORD_FIELDS);
    let mut hnums = Vec::with_capacity(header_count * HEADER_FIELDS);
    let mut topics: Vec<String> = Vec::new();
    let mut last_topic: Option<(&str, usize)> = None;
    for r in records {
        let topic_index = match last_topic {
            Some((t, i)) if t == &*r.topic => i,
            _ => {
                let i = match topics.iter().position(|t| t.as_str() == &*r.topic) {
                    Some(i) => i,
                    None => {
                        topics.push(r.topic.to_string());
                        topics.len() - 1
                    }
                };
                last_topic = Some((&r.topic, i));
                i
            }
        };
        let (ks, kl) = span(&mut data, r.key.as_deref());
        let (vs, vl) = span(&mut data, r.value.as_deref());
        nums.extend_from_slice(&[
            topic_index as f64,
            f64::from(r.partition),
            r.offset as f64,
            r.timestamp as f64,
            if r.timestamp_type == TimestampType::LogAppendTime {
                1.0
            } else {
                0.0
            },
            ks,
            kl,
            vs,
            vl,
            r.headers.len() as f64,
            r.leader_epoch.map_or(-1.0, f64::from),
        ]);
        for h in &r.headers {
            let (hks, hkl) = span(&mut data, Some(&h.key));
            let (hvs, hvl) = span(&mut data, h.value.as_deref());
            hnums.extend_from_slice(&[hks, hkl, hvs, hvl]);
        }
    }
    Polled {
        topics,
        records: Float64Array::new(nums),
        headers: Float64Array::new(hnums),
        data: Buffer::from(data),
    }
}
