//! The record the consumer hands to the application.

use std::sync::Arc;

use bytes::Bytes;

use crate::records::{Header, TimestampType};

/// A record handed to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// Topic.
    pub topic: Arc<str>,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Timestamp in ms.
    pub timestamp: i64,
    /// Create time or log-append time.
    pub timestamp_type: TimestampType,
    /// Key; `None` is null.
    pub key: Option<Bytes>,
    /// Value; `None` is null.
    pub value: Option<Bytes>,
    /// Headers in wire order.
    pub headers: Vec<Header>,
    /// Leader epoch of the batch (`None` when not stamped).
    pub leader_epoch: Option<i32>,
}
