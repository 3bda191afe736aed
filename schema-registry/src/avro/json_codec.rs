//! Avro binary ↔ `serde_json::Value`, the value model of the Node shell and the Rust serde
//! module: records are objects, maps are objects, arrays are arrays, enums and strings are
//! strings, unions are the branch's value (a single-key object `{"<type name>": value}` also
//! selects a branch), `bytes` and `fixed` are `{"$bytes": "<base64>"}` (a plain string is taken
//! as ISO-8859-1 code points, as in Avro's JSON encoding), and logical types are their
//! underlying value (avsc's default). Non-finite floats decode to `null`.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::binary::*;
use super::{Compiled, Node};
use crate::error::{Error, Result};

/// The object key that marks a byte string.
pub const BYTES_KEY: &str = "$bytes";

fn err(msg: String) -> Error {
    Error::Serialization(msg)
}

/// Encodes `value` as schema `c` into `out`.
pub fn encode(c: &Compiled, value: &Value, out: &mut Vec<u8>) -> Result<()> {
    enc(c, c.root, value, out, 0)
}

/// Encodes `value` as node `n` of `c` (a record field's default, for instance).
pub fn encode_at(c: &Compiled, n: usize, value: &Value, out: &mut Vec<u8>) -> Result<()> {
    enc(c, n, value, out, 0)
}

/// Decodes one value of schema `c` from the front of `buf`.
pub fn decode(c: &Compiled, buf: &mut &[u8]) -> Result<Value> {
    dec(c, c.root, buf, 0)
}

const MAX_DEPTH: usize = 512;

fn bytes_of(v: &Value) -> Result<Vec<u8>> {
    match v {
        Value::Object(m) if m.len() == 1 => match m.get(BYTES_KEY) {
            Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| err(format!("bad base64 in $bytes: {e}"))),
            _ => Err(err("expected bytes".into())),
        },
        Value::String(s) => s
            .chars()
            .map(|c| {
                u8::try_from(u32::from(c))
                    .map_err(|_| err("bytes string has a char above U+00FF".into()))
            })
            .collect(),
        other => Err(err(format!("expected bytes, got {other}"))),
    }
}

fn bytes_value(b: &[u8]) -> Value {
    let mut m = Map::new();
    m.insert(
        BYTES_KEY.into(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
    );
    Value::Object(m)
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.3e18)
            .map(|f| f as i64)
    })
}

/// The type names a single-key object may use to select a union branch.
fn branch_names(n: &Node) -> (&str, Option<&str>) {
    match n {
        Node::Record(r) => (r.name.as_str(), r.name.rsplit('.').next()),
        Node::Enum(e) => (e.name.as_str(), e.name.rsplit('.').next()),
        Node::Fixed(f) => (f.name.as_str(), f.name.rsplit('.').next()),
        Node::Null => ("null", None),
        Node::Boolean => ("boolean", None),
        Node::Int | Node::Date | Node::TimeMillis => ("int", None),
        Node::Float => ("float", None),
        Node::Double => ("double", None),
        Node::Bytes | Node::BigDecimal | Node::Decimal { fixed: None, .. } => ("bytes", None),
        Node::String | Node::Uuid => ("string", None),
        Node::Array(_) => ("array", None),
        Node::Map(_) => ("map", None),
        Node::Union(_) => ("union", None),
        _ => ("long", None),
    }
}

/// Whether `v` looks like a value of node `n` (shallow; used to pick a union branch).
fn fits(c: &Compiled, n: usize, v: &Value) -> bool {
    match (c.node(n), v) {
        (Node::Null, Value::Null) => true,
        (Node::Boolean, Value::Bool(_)) => true,
        (Node::Int | Node::Date | Node::TimeMillis, Value::Number(x)) => {
            x.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
        }
        (
            Node::Long
            | Node::TimeMicros
            | Node::TimestampMillis
            | Node::TimestampMicros
            | Node::TimestampNanos
            | Node::LocalTimestampMillis
            | Node::LocalTimestampMicros
            | Node::LocalTimestampNanos,
            Value::Number(x),
        ) => x.as_i64().is_some(),
        (Node::Float | Node::Double, Value::Number(_)) => true,
        (Node::String | Node::Uuid, Value::String(_)) => true,
        (Node::Enum(e), Value::String(s)) => e.symbols.contains(s),
        (
            Node::Bytes | Node::BigDecimal | Node::Decimal { .. } | Node::Fixed(_) | Node::Duration,
            Value::Object(m),
        ) => m.len() == 1 && m.contains_key(BYTES_KEY),
        (Node::Array(_), Value::Array(_)) => true,
        (Node::Record(r), Value::Object(m)) => {
            !(m.len() == 1 && m.contains_key(BYTES_KEY))
                && m.keys().all(|k| r.fields.iter().any(|f| &f.name == k))
                && r.fields
                    .iter()
                    .all(|f| f.default.is_some() || m.contains_key(&f.name))
        }
        (Node::Map(_), Value::Object(m)) => !(m.len() == 1 && m.contains_key(BYTES_KEY)),
        _ => false,
    }
}

fn enc(c: &Compiled, n: usize, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(err("value nested too deeply".into()));
    }
    let d = depth + 1;
    match c.node(n) {
        Node::Null => match v {
            Value::Null => Ok(()),
            _ => Err(err(format!("expected null, got {v}"))),
        },
        Node::Boolean => match v {
            Value::Bool(b) => {
                out.push(u8::from(*b));
                Ok(())
            }
            _ => Err(err(format!("expected boolean, got {v}"))),
        },
        Node::Int | Node::Date | Node::TimeMillis => {
            let i = as_i64(v)
                .filter(|i| i32::try_from(*i).is_ok())
                .ok_or_else(|| err(format!("expected int, got {v}")))?;
            write_long(out, i);
            Ok(())
        }
        Node::Long
        | Node::TimeMicros
        | Node::TimestampMillis
        | Node::TimestampMicros
        | Node::TimestampNanos
        | Node::LocalTimestampMillis
        | Node::LocalTimestampMicros
        | Node::LocalTimestampNanos => {
            let i = as_i64(v).ok_or_else(|| err(format!("expected long, got {v}")))?;
            write_long(out, i);
            Ok(())
        }
        Node::Float => {
            let f = v
                .as_f64()
                .ok_or_else(|| err(format!("expected float, got {v}")))?;
            out.extend_from_slice(&(f as f32).to_le_bytes());
            Ok(())
        }
        Node::Double => {
            let f = v
                .as_f64()
                .ok_or_else(|| err(format!("expected double, got {v}")))?;
            out.extend_from_slice(&f.to_le_bytes());
            Ok(())
        }
        Node::String | Node::Uuid => match v {
            Value::String(s) => {
                write_bytes(out, s.as_bytes());
                Ok(())
            }
            _ => Err(err(format!("expected string, got {v}"))),
        },
        Node::Bytes | Node::BigDecimal | Node::Decimal { fixed: None, .. } => {
            write_bytes(out, &bytes_of(v)?);
            Ok(())
        }
        Node::Fixed(f) | Node::Decimal { fixed: Some(f), .. } => {
            let b = bytes_of(v)?;
            if b.len() != f.size {
                return Err(err(format!(
                    "fixed {} needs {} bytes, got {}",
                    f.name,
                    f.size,
                    b.len()
                )));
            }
            out.extend_from_slice(&b);
            Ok(())
        }
        Node::Duration => {
            let b = bytes_of(v)?;
            if b.len() != 12 {
                return Err(err("duration needs 12 bytes".into()));
            }
            out.extend_from_slice(&b);
            Ok(())
        }
        Node::Enum(e) => {
            let s = v
                .as_str()
                .ok_or_else(|| err(format!("expected enum symbol, got {v}")))?;
            let i = e
                .symbols
                .iter()
                .position(|x| x == s)
                .ok_or_else(|| err(format!("{s:?} is not a symbol of enum {}", e.name)))?;
            write_long(out, i as i64);
            Ok(())
        }
        Node::Array(item) => {
            let a = v
                .as_array()
                .ok_or_else(|| err(format!("expected array, got {v}")))?;
            if !a.is_empty() {
                write_long(out, a.len() as i64);
                for x in a {
                    enc(c, *item, x, out, d)?;
                }
            }
            out.push(0);
            Ok(())
        }
        Node::Map(val) => {
            let m = v
                .as_object()
                .ok_or_else(|| err(format!("expected map, got {v}")))?;
            if !m.is_empty() {
                write_long(out, m.len() as i64);
                for (k, x) in m {
                    write_bytes(out, k.as_bytes());
                    enc(c, *val, x, out, d)?;
                }
            }
            out.push(0);
            Ok(())
        }
        Node::Record(r) => {
            let m = v
                .as_object()
                .ok_or_else(|| err(format!("expected record {}, got {v}", r.name)))?;
            for f in &r.fields {
                match m.get(&f.name).or(f.default.as_ref()) {
                    Some(x) => enc(c, f.node, x, out, d)
                        .map_err(|e| err(format!("field {}.{}: {e}", r.name, f.name)))?,
                    None => return Err(err(format!("record {} misses field {}", r.name, f.name))),
                }
            }
            Ok(())
        }
        Node::Union(branches) => {
            if let Value::Object(m) = v {
                if m.len() == 1 {
                    if let Some((k, inner)) = m.iter().next() {
                        for (i, &b) in branches.iter().enumerate() {
                            let (full, short) = branch_names(c.node(b));
                            if (k == full || Some(k.as_str()) == short) && !fits(c, b, v) {
                                write_long(out, i as i64);
                                return enc(c, b, inner, out, d);
                            }
                        }
                    }
                }
            }
            for (i, &b) in branches.iter().enumerate() {
                if fits(c, b, v) {
                    write_long(out, i as i64);
                    return enc(c, b, v, out, d);
                }
            }
            Err(err(format!("no branch of the union fits {v}")))
        }
    }
}

/// A block count larger than the bytes left can only be honest for zero-byte items (nulls):
/// bound those too, so a hostile count cannot make us loop for ever.
pub fn check_count(count: usize, buf: &[u8], so_far: usize) -> Result<()> {
    if count > buf.len() && count.saturating_add(so_far) > 1 << 20 {
        return Err(err(format!("Avro block count {count} exceeds the data")));
    }
    Ok(())
}

fn dec(c: &Compiled, n: usize, buf: &mut &[u8], depth: usize) -> Result<Value> {
    if depth > MAX_DEPTH {
        return Err(err("value nested too deeply".into()));
    }
    let d = depth + 1;
    Ok(match c.node(n) {
        Node::Null => Value::Null,
        Node::Boolean => match read_fixed(buf, 1)?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => return Err(err(format!("bad boolean byte {b}"))),
        },
        Node::Int | Node::Date | Node::TimeMillis => Value::from(read_int(buf)?),
        Node::Long
        | Node::TimeMicros
        | Node::TimestampMillis
        | Node::TimestampMicros
        | Node::TimestampNanos
        | Node::LocalTimestampMillis
        | Node::LocalTimestampMicros
        | Node::LocalTimestampNanos => Value::from(read_long(buf)?),
        Node::Float => {
            let b = read_fixed(buf, 4)?;
            let f = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            Number::from_f64(f64::from(f)).map_or(Value::Null, Value::Number)
        }
        Node::Double => {
            let b = read_fixed(buf, 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Number::from_f64(f64::from_le_bytes(a)).map_or(Value::Null, Value::Number)
        }
        Node::String | Node::Uuid => Value::String(read_str(buf)?.to_string()),
        Node::Bytes | Node::BigDecimal | Node::Decimal { fixed: None, .. } => {
            bytes_value(read_bytes(buf)?)
        }
        Node::Fixed(f) | Node::Decimal { fixed: Some(f), .. } => {
            bytes_value(read_fixed(buf, f.size)?)
        }
        Node::Duration => bytes_value(read_fixed(buf, 12)?),
        Node::Enum(e) => {
            let i = read_long(buf)?;
            let s = usize::try_from(i)
                .ok()
                .and_then(|i| e.symbols.get(i))
                .ok_or_else(|| err(format!("enum index {i} out of range")))?;
            Value::String(s.clone())
        }
        Node::Array(item) => {
            let mut a = Vec::new();
            loop {
                let count = read_block_count(buf)?;
                if count == 0 {
                    break;
                }
                check_count(count, buf, a.len())?;
                for _ in 0..count {
                    a.push(dec(c, *item, buf, d)?);
                }
            }
            Value::Array(a)
        }
        Node::Map(val) => {
            let mut m = Map::new();
            loop {
                let count = read_block_count(buf)?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    let k = read_str(buf)?.to_string();
                    m.insert(k, dec(c, *val, buf, d)?);
                }
            }
            Value::Object(m)
        }
        Node::Record(r) => {
            let mut m = Map::new();
            for f in &r.fields {
                m.insert(f.name.clone(), dec(c, f.node, buf, d)?);
            }
            Value::Object(m)
        }
        Node::Union(branches) => {
            let i = read_long(buf)?;
            let b = usize::try_from(i)
                .ok()
                .and_then(|i| branches.get(i))
                .ok_or_else(|| err(format!("union index {i} out of range")))?;
            dec(c, *b, buf, d)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::parse;
    use serde_json::json;

    #[test]
    fn round_trip() {
        let c = parse(
            r#"{"type":"record","name":"R","fields":[
                {"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"s","type":"string"},
                {"name":"b","type":"bytes"},{"name":"u","type":["null","string"]},
                {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
                {"name":"a","type":{"type":"array","items":"double"}},
                {"name":"m","type":{"type":"map","values":"boolean"}},
                {"name":"f","type":{"type":"fixed","name":"F","size":2}},
                {"name":"d","type":"int","default":7}]}"#,
            &[],
        )
        .unwrap();
        let v = json!({"i": -3, "l": 1_i64 << 40, "s": "hé", "b": {"$bytes": "AAE="}, "u": "x",
            "e": "B", "a": [1.5, 2.0], "m": {"k": true}, "f": {"$bytes": "AQI="}});
        let mut out = Vec::new();
        encode(&c, &v, &mut out).unwrap();
        let mut b = out.as_slice();
        let back = decode(&c, &mut b).unwrap();
        assert!(b.is_empty());
        let mut want = v.clone();
        want["d"] = json!(7);
        assert_eq!(back, want);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let c = parse(
            r#"{"type":"array","items":{"type":"map","values":"string"}}"#,
            &[],
        )
        .unwrap();
        for input in [&[0x7fu8, 0xff, 0xff][..], &[0x02, 0x02, 0x10], &[0x01]] {
            let mut b = input;
            assert!(decode(&c, &mut b).is_err());
        }
    }
}
