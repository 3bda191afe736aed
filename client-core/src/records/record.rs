//! One decoded record and its headers.

use bytes::Bytes;

/// A record header: a key and an optional value. Headers form an ordered list in which a key may
/// appear more than once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header key (UTF-8 by convention; kept as bytes so decoding never fails on it).
    pub key: Bytes,
    /// Header value; `None` is a null value.
    pub value: Option<Bytes>,
}

impl Header {
    /// Builds a header from anything convertible to `Bytes`.
    pub fn new(key: impl Into<Bytes>, value: Option<impl Into<Bytes>>) -> Self {
        Header {
            key: key.into(),
            value: value.map(Into::into),
        }
    }

    /// The key as UTF-8, if it is valid UTF-8.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

/// One record of a batch, with its absolute offset and timestamp. Key, value and header bytes are
/// slices of the batch's (decompressed) buffer, not copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Absolute offset (batch base offset + offset delta).
    pub offset: i64,
    /// Timestamp in ms: create time, or the batch's log-append time.
    pub timestamp: i64,
    /// Key; `None` is a null key.
    pub key: Option<Bytes>,
    /// Value; `None` is a null value (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers in wire order.
    pub headers: Vec<Header>,
}
