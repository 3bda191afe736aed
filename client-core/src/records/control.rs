//! Control records: the commit and abort markers a transaction coordinator writes.
//!
//! A control record's key is `version: int16, type: int16` (0 = abort, 1 = commit); its value is
//! `version: int16, coordinatorEpoch: int32`.

use bytes::{BufMut, Bytes, BytesMut};

use super::record::Record;
use crate::{Error, Result};

/// The kind of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecordType {
    /// Transaction aborted.
    Abort,
    /// Transaction committed.
    Commit,
    /// A type this library does not know (kept, never an error).
    Unknown(i16),
}

impl ControlRecordType {
    /// Decodes a control record's key.
    pub fn parse_key(key: &[u8]) -> Result<ControlRecordType> {
        if key.len() < 4 {
            return Err(Error::CorruptBatch(format!(
                "control record key of {} bytes (expected at least 4)",
                key.len()
            )));
        }
        Ok(match i16::from_be_bytes([key[2], key[3]]) {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            other => ControlRecordType::Unknown(other),
        })
    }

    /// The type id written in the key.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// Encodes a control record key (version 0).
    pub fn encode_key(self) -> Bytes {
        let mut b = BytesMut::with_capacity(4);
        b.put_i16(0);
        b.put_i16(self.id());
        b.freeze()
    }
}

/// An end-of-transaction marker: a control record's type and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// Commit or abort.
    pub kind: ControlRecordType,
    /// Epoch of the coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTxnMarker {
    /// Decodes a marker from a control record.
    pub fn from_record(record: &Record) -> Result<EndTxnMarker> {
        let key = record
            .key
            .as_deref()
            .ok_or_else(|| Error::CorruptBatch("control record without key".into()))?;
        let kind = ControlRecordType::parse_key(key)?;
        let value = record
            .value
            .as_deref()
            .ok_or_else(|| Error::CorruptBatch("control record without value".into()))?;
        if value.len() < 6 {
            return Err(Error::CorruptBatch(
                "end transaction marker value too short".into(),
            ));
        }
        Ok(EndTxnMarker {
            kind,
            coordinator_epoch: i32::from_be_bytes([value[2], value[3], value[4], value[5]]),
        })
    }

    /// Encodes the marker's value (version 0).
    pub fn encode_value(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(6);
        b.put_i16(0);
        b.put_i32(self.coordinator_epoch);
        b.freeze()
    }
}
