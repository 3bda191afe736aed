//! Validation of a produce request's record sets, off the async workers when it can be costly.
//!
//! Uncompressed records cost time in proportion to the request, which the frame limit bounds;
//! compressed ones can cost far more (a few KiB of zstd expand to the 128 MiB batch limit). A
//! request holding a compressed batch, or more than [`INLINE_BYTES`] of records, is validated on
//! tokio's blocking pool, so the workers that serve every other connection keep running; small
//! uncompressed requests (the common case without compression) stay inline and pay no thread
//! hand-off. Every set shares the request's [`DecodeBudget`].

use std::sync::Arc;

use bytes::Bytes;
use odradek::records::{Compression, RecordBatches};
use odradek::ErrorCode;

use crate::log::DecodeBudget;
use crate::partition::{Partition, ValidRecordSet};
use crate::Result;

/// Requests with at most this many record bytes and no compressed batch are validated inline.
pub const INLINE_BYTES: usize = 64 << 10;

/// A record set waiting for validation, with the partition it is for.
pub type Pending = (Arc<Partition>, Bytes);

/// Whether validating `sets` may cost more than a few microseconds per KiB of request.
fn is_costly(sets: &[Pending]) -> bool {
    let total: usize = sets.iter().map(|(_, r)| r.len()).sum();
    total > INLINE_BYTES
        || sets.iter().any(|(_, records)| {
            RecordBatches::new(records.clone())
                .any(|b| b.is_ok_and(|b| b.compression() != Compression::None))
        })
}

/// Validates every set in order against one `budget`; one result per set, in order.
fn validate_sets(
    sets: Vec<Pending>,
    now_ms: i64,
    mut budget: DecodeBudget,
) -> Vec<Result<ValidRecordSet>> {
    sets.into_iter()
        .map(|(partition, records)| partition.validate_record_set(records, now_ms, &mut budget))
        .collect()
}

/// Validates `sets` (on the blocking pool when costly); one result per set, in order.
pub async fn validate_all(
    sets: Vec<Pending>,
    now_ms: i64,
    budget: DecodeBudget,
) -> Vec<Result<ValidRecordSet>> {
    if !is_costly(&sets) {
        return validate_sets(sets, now_ms, budget);
    }
    let count = sets.len();
    match tokio::task::spawn_blocking(move || validate_sets(sets, now_ms, budget)).await {
        Ok(results) => results,
        Err(e) => {
            tracing::error!("produce validation task failed: {e}");
            (0..count)
                .map(|_| {
                    Err(crate::Error::kafka(
                        ErrorCode::UnknownServerError,
                        "record validation failed",
                    ))
                })
                .collect()
        }
    }
}
