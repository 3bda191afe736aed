//! Reading KafkaJS message objects (`{ key, value, partition, headers, timestamp }`) into core
//! records, on the JavaScript thread while the objects are alive.
//!
//! Keys, values and header values may be a `Buffer` (any `Uint8Array`), a string, or
//! null/undefined. Each is copied once into the record's `Bytes`: the JavaScript memory cannot
//! outlive the call without a napi reference per value (a reference, and its release from the
//! runtime thread, costs more than copying a small value).

use bytes::Bytes;
use napi::bindgen_prelude::{Array, BufferSlice, Either, FromNapiValue, Object};
use napi::{JsValue, Unknown, ValueType};
use odradek::records::Header;
use odradek::ProducerRecord;

use crate::error;

type Bin<'a> = Either<BufferSlice<'a>, String>;

/// Converts a value read from a message object during this call.
fn cast<'a, T: FromNapiValue>(raw: &Unknown<'a>) -> napi::Result<T> {
    // SAFETY: `raw` was read from an argument of the current napi call, so its env and handle
    // are live for the call's duration, which outlasts every use of the result here.
    unsafe { T::from_napi_value(raw.value().env, raw.raw()) }
}

fn to_bytes(v: Bin<'_>) -> Bytes {
    match v {
        Either::A(buf) => Bytes::copy_from_slice(&buf),
        Either::B(s) => Bytes::from(s),
    }
}

/// A key, value or header value: bytes, or `None` for null/undefined.
fn binary(obj: &Object<'_>, field: &str, what: &str) -> napi::Result<Option<Bytes>> {
    let Some(raw) = obj.get::<Unknown>(field)? else {
        return Ok(None);
    };
    match raw.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::String | ValueType::Object => {
            let v: Bin<'_> = cast(&raw).map_err(|_| {
                error::invalid(format!("{what} must be a Buffer, a string or null"))
            })?;
            Ok(Some(to_bytes(v)))
        }
        _ => Err(error::invalid(format!(
            "{what} must be a Buffer, a string or null"
        ))),
    }
}

fn header_value(raw: Unknown<'_>, key: &str, out: &mut Vec<Header>) -> napi::Result<()> {
    let bad = || {
        error::invalid(format!(
            "header `{key}` must be a Buffer, a string, an array of them, or null"
        ))
    };
    match raw.get_type()? {
        ValueType::Undefined => Ok(()),
        ValueType::Null => {
            out.push(Header {
                key: Bytes::copy_from_slice(key.as_bytes()),
                value: None,
            });
            Ok(())
        }
        ValueType::String | ValueType::Object => {
            if let Ok(v) = cast::<Bin<'_>>(&raw) {
                out.push(Header {
                    key: Bytes::copy_from_slice(key.as_bytes()),
                    value: Some(to_bytes(v)),
                });
                return Ok(());
            }
            let arr: Array<'_> = cast(&raw).map_err(|_| bad())?;
            for i in 0..arr.len() {
                let Some(item) = arr.get::<Unknown>(i)? else {
                    continue;
                };
                if matches!(item.get_type()?, ValueType::Object) && item.is_array()? {
                    return Err(bad());
                }
                header_value(item, key, out)?;
            }
            Ok(())
        }
        _ => Err(bad()),
    }
}

fn headers(obj: &Object<'_>) -> napi::Result<Vec<Header>> {
    let Some(raw) = obj.get::<Unknown>("headers")? else {
        return Ok(Vec::new());
    };
    match raw.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(Vec::new()),
        ValueType::Object => {
            let h: Object<'_> = cast(&raw)?;
            let mut out = Vec::new();
            for key in Object::keys(&h)? {
                if let Some(v) = h.get::<Unknown>(&key)? {
                    header_value(v, &key, &mut out)?;
                }
            }
            Ok(out)
        }
        _ => Err(error::invalid("headers must be an object")),
    }
}

fn partition(obj: &Object<'_>) -> napi::Result<Option<i32>> {
    match obj.get::<Unknown>("partition")? {
        None => Ok(None),
        Some(raw) => match raw.get_type()? {
            ValueType::Undefined | ValueType::Null => Ok(None),
            ValueType::Number => {
                let p: f64 = cast(&raw)?;
                if p.fract() != 0.0 || !(0.0..=f64::from(i32::MAX)).contains(&p) {
                    return Err(error::invalid(format!("invalid partition {p}")));
                }
                Ok(Some(p as i32))
            }
            _ => Err(error::invalid("partition must be a number")),
        },
    }
}

fn timestamp(obj: &Object<'_>) -> napi::Result<Option<i64>> {
    let Some(raw) = obj.get::<Unknown>("timestamp")? else {
        return Ok(None);
    };
    let bad = || {
        error::invalid("timestamp must be milliseconds since the epoch, as a string or a number")
    };
    match raw.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::String => {
            let s: String = cast(&raw)?;
            s.trim().parse::<i64>().map(Some).map_err(|_| bad())
        }
        ValueType::Number => {
            let n: f64 = cast(&raw)?;
            if n.is_finite() && n.fract() == 0.0 {
                Ok(Some(n as i64))
            } else {
                Err(bad())
            }
        }
        _ => Err(bad()),
    }
}

/// Reads one message object for `topic`.
pub fn record(topic: &str, msg: &Object<'_>) -> napi::Result<ProducerRecord> {
    Ok(ProducerRecord {
        topic: topic.to_string(),
        partition: partition(msg)?,
        key: binary(msg, "key", "message key")?,
        value: binary(msg, "value", "message value")?,
        headers: headers(msg)?,
        timestamp: timestamp(msg)?,
    })
}

/// Reads `[{ topic, messages: [...] }, ...]` into records, in order.
pub fn topic_messages(list: &Array<'_>) -> napi::Result<Vec<ProducerRecord>> {
    let mut out = Vec::new();
    for i in 0..list.len() {
        let entry: Object<'_> = list
            .get(i)?
            .ok_or_else(|| error::invalid("topicMessages entries must be objects"))?;
        let topic: String = entry
            .get("topic")
            .map_err(|_| error::invalid("topic must be a string"))?
            .ok_or_else(|| error::invalid("a topic is required"))?;
        if topic.is_empty() {
            return Err(error::invalid("a topic is required"));
        }
        let messages: Array<'_> = entry
            .get("messages")
            .map_err(|_| error::invalid("messages must be an array"))?
            .ok_or_else(|| error::invalid(format!("messages for topic `{topic}` are required")))?;
        out.reserve(messages.len() as usize);
        for j in 0..messages.len() {
            let msg: Object<'_> = messages
                .get(j)
                .map_err(|_| error::invalid("each message must be an object"))?
                .ok_or_else(|| error::invalid("each message must be an object"))?;
            out.push(record(&topic, &msg)?);
        }
    }
    Ok(out)
}
