//! The decompression budget of one produce request.
//!
//! Each batch is already bounded ([`DEFAULT_DECOMPRESSION_LIMIT`], 128 MiB), but a request can
//! hold tens of thousands of small compressed batches that each expand to that limit: terabytes
//! of work for one 100 MiB frame. A [`DecodeBudget`] is shared by every batch of a request, so
//! the request as a whole can make the broker decompress at most [`DecodeBudget::total`] bytes;
//! once it is spent, the remaining batches are refused without being decompressed.

use odradek::records::DEFAULT_DECOMPRESSION_LIMIT;
use odradek::ErrorCode;

use crate::Error;

/// The smallest per-request budget: two batches at the per-batch limit.
pub const MIN_REQUEST_DECODE_BUDGET: usize = 2 * DEFAULT_DECOMPRESSION_LIMIT;

/// Uncompressed bytes a request may still make the broker produce.
#[derive(Debug, Clone)]
pub struct DecodeBudget {
    total: usize,
    remaining: usize,
}

impl DecodeBudget {
    /// A budget of `total` bytes.
    pub fn new(total: usize) -> Self {
        DecodeBudget {
            total,
            remaining: total,
        }
    }

    /// No limit beyond the per-batch one (tests, and batches the broker wrote itself).
    pub fn unlimited() -> Self {
        Self::new(usize::MAX)
    }

    /// The budget of a request on a broker whose `socket.request.max.bytes` is
    /// `request_max_bytes`: twice that, and at least [`MIN_REQUEST_DECODE_BUDGET`], so a request
    /// the broker accepts is never refused for records that compress less than 2:1.
    pub fn for_request(request_max_bytes: i64) -> Self {
        let frame = usize::try_from(request_max_bytes.max(0)).unwrap_or(usize::MAX);
        Self::new(frame.saturating_mul(2).max(MIN_REQUEST_DECODE_BUDGET))
    }

    /// The budget this request started with.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The decompression limit for the next batch: the per-batch limit or what is left.
    pub fn batch_limit(&self) -> usize {
        self.remaining.min(DEFAULT_DECOMPRESSION_LIMIT)
    }

    /// Whether the budget, not the per-batch limit, is what bounds the next batch.
    pub fn is_binding(&self) -> bool {
        self.remaining < DEFAULT_DECOMPRESSION_LIMIT
    }

    /// Whether nothing is left.
    pub fn is_spent(&self) -> bool {
        self.remaining == 0
    }

    /// Records `bytes` of decompressed output.
    pub fn charge(&mut self, bytes: usize) {
        self.remaining = self.remaining.saturating_sub(bytes);
    }

    /// Marks the budget spent (a batch failed because it would have exceeded it).
    pub fn exhaust(&mut self) {
        self.remaining = 0;
    }

    /// The error a batch gets once the budget is spent. `INVALID_RECORD` rather than
    /// `CORRUPT_MESSAGE`: the latter is retriable for Kafka clients, and sending the same
    /// request again would fail the same way. Sent with its message, as Kafka sends a record validation error's (no record is listed:
    /// the batch was not decompressed), since nothing else would tell the client why.
    pub fn exceeded_error(&self) -> Error {
        Error::InvalidRecords {
            code: ErrorCode::InvalidRecord,
            message: format!(
                "the request's compressed batches expand to more than the {} bytes the broker \
                 decompresses per produce request",
                self.total
            ),
            records: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bounds_each_batch_and_runs_out() {
        let mut b = DecodeBudget::new(DEFAULT_DECOMPRESSION_LIMIT + 10);
        assert_eq!(b.batch_limit(), DEFAULT_DECOMPRESSION_LIMIT);
        assert!(!b.is_binding());
        b.charge(DEFAULT_DECOMPRESSION_LIMIT);
        assert_eq!(b.batch_limit(), 10);
        assert!(b.is_binding());
        b.charge(100);
        assert!(b.is_spent());
        assert_eq!(b.exceeded_error().code(), ErrorCode::InvalidRecord);
    }

    #[test]
    fn a_request_budget_is_twice_the_frame_limit_with_a_floor() {
        assert_eq!(
            DecodeBudget::for_request(0).total(),
            MIN_REQUEST_DECODE_BUDGET
        );
        assert_eq!(
            DecodeBudget::for_request(-5).total(),
            MIN_REQUEST_DECODE_BUDGET
        );
        assert_eq!(DecodeBudget::for_request(1 << 30).total(), 2 << 30);
    }
}
