//! A batch's `attributes` field: codec, timestamp type, transactional and control flags.

use super::compression::Compression;
use crate::Result;

/// How a batch's timestamps were assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker on append; every record takes the batch's max timestamp.
    LogAppendTime,
}

/// The `attributes` field of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchAttributes(pub i16);

impl BatchAttributes {
    const COMPRESSION_MASK: i16 = 0x07;
    const TIMESTAMP_TYPE: i16 = 0x08;
    const TRANSACTIONAL: i16 = 0x10;
    const CONTROL: i16 = 0x20;
    const DELETE_HORIZON: i16 = 0x40;

    /// Builds attributes from their parts.
    pub fn new(
        compression: Compression,
        timestamp_type: TimestampType,
        transactional: bool,
        control: bool,
    ) -> Self {
        let mut v = i16::from(compression.id());
        if timestamp_type == TimestampType::LogAppendTime {
            v |= Self::TIMESTAMP_TYPE;
        }
        if transactional {
            v |= Self::TRANSACTIONAL;
        }
        if control {
            v |= Self::CONTROL;
        }
        BatchAttributes(v)
    }

    /// The codec of the records section.
    pub fn compression(self) -> Result<Compression> {
        Compression::from_id((self.0 & Self::COMPRESSION_MASK) as u8)
    }
    /// Create time or log-append time.
    pub fn timestamp_type(self) -> TimestampType {
        if self.0 & Self::TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    /// The same attributes with the timestamp type set to `kind`.
    pub fn with_timestamp_type(self, kind: TimestampType) -> Self {
        match kind {
            TimestampType::LogAppendTime => BatchAttributes(self.0 | Self::TIMESTAMP_TYPE),
            TimestampType::CreateTime => BatchAttributes(self.0 & !Self::TIMESTAMP_TYPE),
        }
    }
    /// Part of a transaction.
    pub fn is_transactional(self) -> bool {
        self.0 & Self::TRANSACTIONAL != 0
    }
    /// Holds a control record (a transaction marker).
    pub fn is_control(self) -> bool {
        self.0 & Self::CONTROL != 0
    }
    /// `baseTimestamp` holds the delete horizon set by the log cleaner.
    pub fn has_delete_horizon(self) -> bool {
        self.0 & Self::DELETE_HORIZON != 0
    }
}
