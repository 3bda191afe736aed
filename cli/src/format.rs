//! Record output: kcat-style `-f` format strings, and `--json`.
//!
//! Tokens: `%t` topic, `%p` partition, `%o` offset, `%k` key, `%K` key length (-1 for null),
//! `%s` value, `%S` value length (-1 for null), `%T` timestamp (ms), `%h` headers as
//! `k=v,k2=v2`, `%%` a percent sign. Escapes: `\n`, `\t`, `\r`, `\0`, `\\`. Null keys and
//! values print as nothing. Keys and values are written as raw bytes.

use std::io::{self, Write};

use odradek::records::TimestampType;
use odradek::ConsumerRecord;
use serde_json::{json, Value};

/// Replaces `\n`, `\t`, `\r`, `\0` and `\\` with the bytes they name; other backslashes stay.
pub fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('r') => out.push(b'\r'),
            Some('0') => out.push(0),
            Some('\\') => out.push(b'\\'),
            Some(other) => {
                out.push(b'\\');
                let mut buf = [0u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
            }
            None => out.push(b'\\'),
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    KeyLen,
    Value,
    ValueLen,
    Timestamp,
    Headers,
}

/// A parsed `-f` format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format(Vec<Token>);

impl Format {
    /// Parses a format string; an unknown `%` token is an error naming it.
    pub fn parse(spec: &str) -> Result<Format, String> {
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut chars = spec.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            let token = match chars.next() {
                Some('%') => {
                    literal.push('%');
                    continue;
                }
                Some('t') => Token::Topic,
                Some('p') => Token::Partition,
                Some('o') => Token::Offset,
                Some('k') => Token::Key,
                Some('K') => Token::KeyLen,
                Some('s') => Token::Value,
                Some('S') => Token::ValueLen,
                Some('T') => Token::Timestamp,
                Some('h') => Token::Headers,
                Some(other) => return Err(format!("unknown format token %{other} in `{spec}`")),
                None => return Err(format!("format `{spec}` ends with a lone %")),
            };
            if !literal.is_empty() {
                tokens.push(Token::Literal(unescape(&std::mem::take(&mut literal))));
            }
            tokens.push(token);
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(unescape(&literal)));
        }
        Ok(Format(tokens))
    }

    /// Writes one record.
    pub fn write(&self, r: &ConsumerRecord, out: &mut impl Write) -> io::Result<()> {
        let len = |b: &Option<bytes::Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
        for token in &self.0 {
            match token {
                Token::Literal(bytes) => out.write_all(bytes)?,
                Token::Topic => out.write_all(r.topic.as_bytes())?,
                Token::Partition => write!(out, "{}", r.partition)?,
                Token::Offset => write!(out, "{}", r.offset)?,
                Token::Key => out.write_all(r.key.as_deref().unwrap_or_default())?,
                Token::KeyLen => write!(out, "{}", len(&r.key))?,
                Token::Value => out.write_all(r.value.as_deref().unwrap_or_default())?,
                Token::ValueLen => write!(out, "{}", len(&r.value))?,
                Token::Timestamp => write!(out, "{}", r.timestamp)?,
                Token::Headers => {
                    for (i, h) in r.headers.iter().enumerate() {
                        if i > 0 {
                            out.write_all(b",")?;
                        }
                        out.write_all(&h.key)?;
                        if let Some(v) = &h.value {
                            out.write_all(b"=")?;
                            out.write_all(v)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn text(b: &Option<bytes::Bytes>) -> Value {
    b.as_ref().map_or(Value::Null, |b| {
        Value::String(String::from_utf8_lossy(b).into_owned())
    })
}

/// One record as a JSON object (kcat's field names; bytes that are not UTF-8 are replaced):
/// `{"topic","partition","offset","tstype","ts","headers":[k,v,...],"key","payload"}`.
pub fn json(r: &ConsumerRecord) -> Value {
    let headers: Vec<Value> = r
        .headers
        .iter()
        .flat_map(|h| {
            [
                Value::String(String::from_utf8_lossy(&h.key).into_owned()),
                text(&h.value),
            ]
        })
        .collect();
    json!({
        "topic": &*r.topic,
        "partition": r.partition,
        "offset": r.offset,
        "tstype": match r.timestamp_type {
            TimestampType::CreateTime => "create",
            TimestampType::LogAppendTime => "logappend",
        },
        "ts": r.timestamp,
        "headers": headers,
        "key": text(&r.key),
        "payload": text(&r.value),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use bytes::Bytes;
    use odradek::records::Header;

    fn record() -> ConsumerRecord {
        ConsumerRecord {
            topic: "t".into(),
            partition: 2,
            offset: 41,
            timestamp: 1_700_000_000_000,
            timestamp_type: TimestampType::CreateTime,
            key: Some(Bytes::from_static(b"k")),
            value: Some(Bytes::from_static(b"hello")),
            headers: vec![Header::new("a", Some("1")), Header::new("b", None::<Bytes>)],
            leader_epoch: None,
        }
    }

    fn render(spec: &str, r: &ConsumerRecord) -> String {
        let mut out = Vec::new();
        Format::parse(spec).unwrap().write(r, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_token_and_escape() {
        let r = record();
        assert_eq!(
            render("%t|%p|%o|%k|%K|%s|%S|%T|%h|%%\\t\\n", &r),
            "t|2|41|k|1|hello|5|1700000000000|a=1,b|%\t\n"
        );
        assert_eq!(render("%s\\n", &r), "hello\n");
        let null = ConsumerRecord {
            key: None,
            value: None,
            ..record()
        };
        assert_eq!(render("[%k][%K][%s][%S]", &null), "[][-1][][-1]");
    }

    #[test]
    fn bad_tokens_are_errors() {
        assert!(Format::parse("%x").unwrap_err().contains("%x"));
        assert!(Format::parse("50%").is_err());
    }

    #[test]
    fn unescape_leaves_unknown_escapes() {
        assert_eq!(unescape("a\\tb\\q\\\\"), b"a\tb\\q\\".to_vec());
        assert_eq!(unescape("\\"), b"\\".to_vec());
    }

    #[test]
    fn json_has_kcat_fields() {
        let v = json(&record());
        assert_eq!(v["topic"], "t");
        assert_eq!(v["partition"], 2);
        assert_eq!(v["offset"], 41);
        assert_eq!(v["tstype"], "create");
        assert_eq!(v["key"], "k");
        assert_eq!(v["payload"], "hello");
        assert_eq!(v["headers"], json!(["a", "1", "b", null]));
    }
}
