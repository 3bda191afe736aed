//! Assignment and position state shared by the consumer handle and its fetcher.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::session::FetchSession;
use crate::records::{ControlRecordType, RecordBatch, RecordBatches, Records};
use crate::types::TopicPartition;
use crate::Error;

/// Why a partition needs its position looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reset {
    /// Log start offset.
    Earliest,
    /// High watermark / last stable offset.
    Latest,
    /// The group's committed offset, falling back to `auto.offset.reset`.
    Committed,
}

/// A fresh position generation, unique in the process: a partition revoked and assigned
/// again gets a new [`PartState`] whose generations never repeat the old one's, so a fetch
/// planned under the old assignment can never be taken for one of the new.
pub(crate) fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One assigned partition.
#[derive(Debug)]
pub(crate) struct PartState {
    /// Next offset to hand to the application.
    pub position: Option<i64>,
    /// Next offset to request from the broker (ahead of `position` while data is buffered).
    pub fetch_offset: Option<i64>,
    /// Bumped by seeks and resets; fetched data of an older generation is discarded.
    pub generation: u64,
    pub paused: bool,
    pub reset: Option<Reset>,
    /// An error to raise from the next `poll`.
    pub error: Option<Error>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub in_flight: bool,
    /// The last fetch returned only part of a batch: ask for this partition first next time, so
    /// the broker returns the whole batch (KIP-74) and an oversized record cannot wedge it.
    pub oversize: bool,
    /// Not fetchable before this instant (after a retriable error).
    pub backoff_until: Option<std::time::Instant>,
    /// Fetches of this partition that failed in a row (the backoff doubles with each).
    pub fetch_failures: u32,
    /// The leader epoch the partition is fetched under, from metadata (KIP-320).
    pub leader_epoch: Option<i32>,
    /// The leader epoch of the last batch consumed (the position's epoch; `None` after a seek).
    pub last_epoch: Option<i32>,
    /// The leader changed since the position was established: not fetchable until the new
    /// leader confirmed the position with OffsetForLeaderEpoch (see `validate.rs`).
    pub awaiting_validation: bool,
    /// What the application has finished with: the position as it was when the application
    /// last asked for more records (`poll`/`recv`), so every record handed out before that call
    /// counts as handled (Java's at-least-once rule). Auto-commit and commit-on-revoke send
    /// this, never `position`, which already covers records the application may still be
    /// processing. `None` until the first request for records after the assignment.
    pub processed: Option<i64>,
    /// The replica this partition is read from instead of its leader (KIP-392).
    pub read_replica: Option<super::replica::ReadReplica>,
    /// Records handed to the application, and their key and value bytes (statistics).
    pub rx_records: u64,
    pub rx_bytes: u64,
}

impl PartState {
    /// A fetch of this partition failed: not fetchable for `base` doubling per failure in a
    /// row up to `max` (`retry.backoff.ms` .. `retry.backoff.max.ms`, KIP-580), jittered.
    pub fn back_off(&mut self, base: std::time::Duration, max: std::time::Duration) {
        self.fetch_failures = self.fetch_failures.saturating_add(1);
        let wait = crate::cluster::backoff::exponential(base, max, self.fetch_failures);
        self.backoff_until = Some(std::time::Instant::now() + wait);
    }

    /// A fetch of this partition was answered without error: the backoff starts over.
    pub fn fetch_answered(&mut self) {
        self.fetch_failures = 0;
    }

    pub fn new(reset: Option<Reset>) -> Self {
        PartState {
            position: None,
            fetch_offset: None,
            generation: next_generation(),
            paused: false,
            reset,
            error: None,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            in_flight: false,
            oversize: false,
            backoff_until: None,
            fetch_failures: 0,
            leader_epoch: None,
            last_epoch: None,
            awaiting_validation: false,
            processed: None,
            read_replica: None,
            rx_records: 0,
            rx_bytes: 0,
        }
    }

    /// Moves the position (seek); buffered data of the old position is discarded lazily.
    pub fn seek(&mut self, offset: i64) {
        self.generation = next_generation();
        self.position = Some(offset);
        self.fetch_offset = Some(offset);
        self.reset = None;
        self.error = None;
        self.in_flight = false;
        self.last_epoch = None;
        self.awaiting_validation = false;
    }

    /// Asks for a position lookup.
    pub fn request_reset(&mut self, reset: Reset) {
        self.generation = next_generation();
        self.position = None;
        self.fetch_offset = None;
        self.reset = Some(reset);
        self.in_flight = false;
        self.last_epoch = None;
        self.awaiting_validation = false;
    }
}

/// Fetched data of one partition waiting to be consumed, decoded lazily.
#[derive(Debug)]
pub(crate) struct Buffered {
    pub tp: TopicPartition,
    pub generation: u64,
    pub bytes: usize,
    pub batches: RecordBatches,
    /// The batch being consumed.
    pub current: Option<CurrentBatch>,
    /// Aborted transactions of this fetch (read_committed): `(producer id, first offset)`,
    /// by first offset.
    aborted: VecDeque<(i64, i64)>,
    /// Producers whose aborted transaction is under way at the current batch: their
    /// transactional batches are skipped until their ABORT marker.
    aborting: HashSet<i64>,
}

/// The batch `poll` is in the middle of.
#[derive(Debug)]
pub(crate) struct CurrentBatch {
    pub records: Records,
    /// Offset after the batch.
    pub next_offset: i64,
    pub log_append_time: bool,
    pub leader_epoch: Option<i32>,
}

impl Buffered {
    pub fn new(
        tp: TopicPartition,
        generation: u64,
        records: Bytes,
        mut aborted: Vec<(i64, i64)>,
    ) -> Self {
        aborted.sort_by_key(|&(_, first_offset)| first_offset);
        Buffered {
            tp,
            generation,
            bytes: records.len(),
            batches: RecordBatches::new(records),
            current: None,
            aborted: aborted.into(),
            aborting: HashSet::new(),
        }
    }

    /// Whether `batch` must not reach the application: a control batch (transaction marker),
    /// or a transactional batch of a transaction the fetch response lists as aborted (from
    /// its first offset until the producer's ABORT marker). Call for every batch in order.
    pub fn skip(&mut self, batch: &RecordBatch) -> bool {
        while let Some(&(producer_id, first_offset)) = self.aborted.front() {
            if first_offset > batch.last_offset() {
                break;
            }
            self.aborting.insert(producer_id);
            self.aborted.pop_front();
        }
        if batch.is_control() {
            if self.aborting.contains(&batch.producer_id()) && is_abort_marker(batch) {
                self.aborting.remove(&batch.producer_id());
            }
            return true;
        }
        batch.is_transactional() && self.aborting.contains(&batch.producer_id())
    }
}

/// Whether a control batch holds an ABORT marker.
fn is_abort_marker(batch: &RecordBatch) -> bool {
    let Ok(mut records) = batch.records() else {
        return false;
    };
    match records.next() {
        Some(Ok(r)) => r
            .key
            .as_deref()
            .and_then(|k| ControlRecordType::parse_key(k).ok())
            .is_some_and(|t| t == ControlRecordType::Abort),
        _ => false,
    }
}

/// Everything under the consumer's lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub parts: HashMap<TopicPartition, PartState>,
    /// Assignment order; rotated between fetches so no partition always comes last.
    pub order: Vec<TopicPartition>,
    pub buffer: VecDeque<Buffered>,
    pub buffered_bytes: usize,
    /// Bytes the fetches in flight may still bring back (their `max_bytes`): counted against
    /// the buffer budget with `buffered_bytes`, so fetches started together cannot overshoot it.
    pub reserved_bytes: usize,
    pub closed: bool,
    /// Incremental fetch sessions (KIP-227) by broker node id.
    pub sessions: HashMap<i32, FetchSession>,
    /// A fetch answered with an error that means our metadata is stale (e.g. a moved leader,
    /// FENCED_LEADER_EPOCH): the fetcher refreshes it.
    pub refresh_metadata: bool,
    /// Failed offset-reset lookups (ListOffsets) in a row: the backoff before the next.
    pub reset_retry: crate::cluster::backoff::Retry,
    /// Failed committed-offset lookups (OffsetFetch) in a row: the backoff before the next.
    pub committed_retry: crate::cluster::backoff::Retry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_assigned_again_never_repeats_an_old_generation() {
        // The old assignment: a committed-offset lookup, then the seek it resolves to.
        let mut old = PartState::new(Some(Reset::Committed));
        old.seek(100);
        // Revoked and assigned again: the same steps must give a different generation, or a
        // fetch planned under the old state would be accepted by the new one.
        let mut new = PartState::new(Some(Reset::Committed));
        new.seek(40);
        assert_ne!(old.generation, new.generation);
        new.request_reset(Reset::Earliest);
        assert!(new.generation > old.generation);
    }

    #[test]
    fn fetch_backoff_doubles_per_failure_and_starts_over_after_an_answer() {
        use std::time::{Duration, Instant};
        let (base, max) = (Duration::from_millis(100), Duration::from_millis(1000));
        let mut p = PartState::new(None);
        let wait = |p: &PartState| {
            p.backoff_until.map_or(0, |t| {
                t.saturating_duration_since(Instant::now()).as_millis()
            })
        };
        p.back_off(base, max);
        assert!(
            wait(&p) <= 120,
            "first backoff is retry.backoff.ms: {}",
            wait(&p)
        );
        for _ in 0..5 {
            p.back_off(base, max);
        }
        assert_eq!(p.fetch_failures, 6);
        assert!(
            wait(&p) >= 700,
            "doubled up to retry.backoff.max.ms: {}",
            wait(&p)
        );
        assert!(wait(&p) <= 1200);
        p.fetch_answered();
        p.back_off(base, max);
        assert!(wait(&p) <= 120, "starts over after an answer: {}", wait(&p));
    }
}
