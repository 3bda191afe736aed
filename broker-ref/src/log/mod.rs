//! Segmented, indexed, crash-safe partition storage.
//!
//! A [`Log`] is one partition's directory, `<log.dir>/<topic>-<partition>/`, holding segments
//! (`<base offset>.log` + `.index` + `.timeindex`) and checkpoint files. The code is synchronous
//! `std::fs`; the async server calls it under a per-partition mutex. The on-disk format, the
//! invariants and the recovery procedure are specified in `docs/storage.md`.
//!
//! Module map: [`config`] (topic settings), `validate` / `prepare` (what a client batch must
//! satisfy and how it is turned into stored bytes), `segment` with `index`, `time_index`,
//! `index_file` and `scan` (files and lookups), `checkpoint` and `epoch_cache` (small durable
//! state), `recovery` ([`Log::open`]), `read` (Fetch and ListOffsets), `retention`
//! (time/size retention, DeleteRecords), `cleaner` (compaction of `cleanup.policy=compact`
//! topics).

pub mod budget;
pub mod config;
pub mod dir_health;
pub mod faults;

mod checkpoint;
pub mod cleaner;
mod cleaner_checkpoint;
mod epoch_cache;
mod index;
mod index_file;
mod prepare;
mod read;
mod recovery;
mod retention;
mod scan;
mod segment;
mod time_index;
mod txn_index;
mod validate;
mod validator;

#[cfg(test)]
mod open_tests;
#[cfg(test)]
mod prop_tests;
#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use odradek::records::{stamp_offsets, RecordBatch};
use odradek::ErrorCode;

pub use budget::DecodeBudget;
pub use config::{CleanupPolicy, LogConfig, TopicCompression, TOPIC_CONFIG_KEYS};
pub use epoch_cache::EpochEntry;
pub use txn_index::AbortedTxn;
pub use validate::{
    validate_batch, validate_batch_for, validate_batch_from, AppendOrigin, PartitionName,
    ValidatedBatch,
};
pub use validator::{ValidBatch, Validator};

use checkpoint::{LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE};
use epoch_cache::LeaderEpochCache;
use scan::BatchHeader;
use segment::Segment;

use crate::{Error, Result};

/// The result of appending one batch (what a Produce response and the idempotence layer need).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset assigned to the first record.
    pub base_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// The broker time written into the batch for LogAppendTime topics, else -1.
    pub log_append_time: i64,
    /// The log start offset after the append.
    pub log_start_offset: i64,
    /// The batch's max timestamp as stored.
    pub max_timestamp: i64,
    /// Records in the batch.
    pub record_count: i32,
    /// Stored size of the batch in bytes.
    pub size_bytes: usize,
    /// Producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Whether the batch is part of a transaction.
    pub is_transactional: bool,
    /// Whether the broker re-encoded the batch (topic codec differs, or inner offsets were
    /// not 0, 1, 2, ...).
    pub recompressed: bool,
    /// Whether a new segment was rolled for this batch (it then starts at `base_offset`), the
    /// moment the partition layer snapshots its producer state.
    pub rolled: bool,
}

/// The result of a read: whole batches as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadInfo {
    /// Batches back to back, exactly as stored (empty when nothing is readable).
    pub records: Bytes,
    /// Base offset of the first batch returned.
    pub first_batch_offset: Option<i64>,
}

/// What a retention pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    /// Segments removed because all their records were below the log start offset.
    pub deleted_below_start_offset: usize,
    /// Segments removed by `retention.ms`.
    pub deleted_by_time: usize,
    /// Segments removed by `retention.bytes`.
    pub deleted_by_size: usize,
    /// Log bytes removed in total.
    pub deleted_bytes: u64,
    /// The log start offset after the pass.
    pub log_start_offset: i64,
}

impl RetentionOutcome {
    /// Segments removed for any reason.
    pub fn deleted_segments(&self) -> usize {
        self.deleted_below_start_offset + self.deleted_by_time + self.deleted_by_size
    }
}

/// One partition's log.
#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    topic: String,
    partition: i32,
    config: LogConfig,
    /// Segments by base offset; never empty (the last one is the active segment).
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    log_end_offset: i64,
    recovery_point: i64,
    epochs: LeaderEpochCache,
    unflushed_messages: i64,
    last_flush_ms: Option<i64>,
    /// The clean-shutdown marker is on disk (set by [`Log::close`]); removed before any change.
    clean_marker: bool,
    /// [`Log::delete`] removed the directory; every later operation fails.
    deleted: bool,
    /// First offset of the earliest open transaction (set by the partition layer): the cleaner
    /// never cleans at or past it.
    first_unstable_offset: Option<i64>,
    /// Bumped by [`Log::set_config`], so a [`ValidBatch`] is never trusted across a change.
    config_generation: u64,
    /// The log directory's health: a storage error on any log's write path takes it offline.
    health: std::sync::Arc<dir_health::DirHealth>,
    /// Bytes appended since the log was opened (never decreases): waiting fetches compare it
    /// with what they saw instead of re-reading.
    appended_bytes: u64,
}

impl Log {
    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The topic name.
    pub fn topic(&self) -> &str {
        &self.topic
    }
    /// The partition index.
    pub fn partition(&self) -> i32 {
        self.partition
    }
    /// The current settings.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    /// Replaces the settings (AlterConfigs). Takes effect from the next operation: size and
    /// time limits apply to the next append and retention pass, validation to the next batch
    /// (a [`ValidBatch`] checked against the old settings is checked again on append).
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
        self.config_generation = self.config_generation.wrapping_add(1);
    }

    /// First offset a consumer may read.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    /// Offset the next appended record gets.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }
    /// Offset below which every record is known durable (fsynced).
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }
    /// Bytes appended since the log was opened; only grows.
    pub fn appended_bytes(&self) -> u64 {
        self.appended_bytes
    }
    /// Bytes of all segment files.
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(Segment::size).sum()
    }
    /// Number of segments (at least one).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    /// The newest leader epoch that appended to the log.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }
    /// The leader epoch cache, oldest first.
    pub fn epoch_entries(&self) -> &[EpochEntry] {
        self.epochs.entries()
    }
    /// OffsetForLeaderEpoch: the largest epoch ≤ `epoch` and its end offset; `None` where Kafka
    /// answers UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.epochs.end_offset_for(epoch, self.log_end_offset)
    }

    /// Fails once the log was deleted.
    fn check_usable(&self) -> Result<()> {
        if let Some(reason) = self.health.failure() {
            return Err(Error::kafka(
                ErrorCode::KafkaStorageError,
                format!(
                    "the log directory of {}-{} failed ({reason}); the broker must be restarted",
                    self.topic, self.partition
                ),
            ));
        }
        if self.deleted {
            return Err(Error::kafka(
                ErrorCode::KafkaStorageError,
                format!("log of {}-{} was deleted", self.topic, self.partition),
            ));
        }
        Ok(())
    }

    /// Called before anything changes on disk: after [`Log::close`] the clean-shutdown marker
    /// must go (durably) before the files diverge from what it vouches for.
    fn begin_change(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.clean_marker {
            checkpoint::remove_clean_marker(&self.dir)?;
            self.clean_marker = false;
        }
        Ok(())
    }

    /// Validates one client batch against this topic's settings without appending it (the
    /// produce path checks every batch of a request before appending any, then appends them
    /// with [`Log::append_validated`], which does not validate again). See `validate`.
    /// The produce path uses [`Log::validator`] instead, so the work runs without the lock.
    pub fn validate(&self, batch: &RecordBatch, now_ms: i64) -> Result<ValidBatch> {
        self.validator()
            .validate(batch, now_ms, &mut DecodeBudget::unlimited())
    }

    /// A snapshot of the settings to validate batches against away from this log (and its
    /// lock); [`Log::append_validated`] notices a change made since.
    pub fn validator(&self) -> Validator {
        Validator {
            config: self.config.clone(),
            generation: self.config_generation,
            topic: self.topic.clone(),
            partition: self.partition,
        }
    }

    fn active(&self) -> Result<&Segment> {
        self.segments
            .values()
            .next_back()
            .ok_or_else(|| segment::storage_error("log has no segment"))
    }

    fn active_mut(&mut self) -> Result<&mut Segment> {
        self.segments
            .values_mut()
            .next_back()
            .ok_or_else(|| segment::storage_error("log has no segment"))
    }

    /// Validates one client batch (see `validate`), assigns it offsets from the log end offset,
    /// stamps `leader_epoch`, applies the topic's timestamp type and compression, and writes it
    /// to the active segment with one write, rolling first when needed. Flushes per
    /// `flush.messages` / `flush.ms`.
    ///
    /// A `leader_epoch` older than the latest epoch in the log is refused with
    /// `FENCED_LEADER_EPOCH` (the partition layer should have fenced the request already).
    pub fn append(
        &mut self,
        batch: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.append_from(batch, leader_epoch, now_ms, AppendOrigin::Client)
    }

    /// [`Log::append`] for a batch from `origin` (coordinators append transaction markers and
    /// transactional offset commits, which clients may not send).
    pub fn append_from(
        &mut self,
        batch: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<AppendInfo> {
        self.check_leader_epoch(leader_epoch)?;
        self.begin_change()?;
        let prepared = prepare::prepare(batch, &self.config, now_ms, origin)?;
        self.write_prepared(prepared, leader_epoch, now_ms)
    }

    /// [`Log::append`] for a batch [`Log::validate`] checked: it is not validated again, unless
    /// the settings changed since (then it is, against the new ones).
    pub fn append_validated(
        &mut self,
        batch: ValidBatch,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        if batch.config_generation != self.config_generation {
            return self.append(
                BytesMut::from(batch.original.as_ref()),
                leader_epoch,
                now_ms,
            );
        }
        self.check_leader_epoch(leader_epoch)?;
        self.begin_change()?;
        self.write_prepared(batch.prepared, leader_epoch, now_ms)
    }

    /// A follower's append (replication): `batch`, one batch exactly as the leader stored it,
    /// keeps its offsets and leader epoch. Its base offset must be the log end offset and its
    /// CRC must hold; the leader epoch cache learns the batch's epoch. Returns the offset after
    /// the batch.
    pub fn append_as_follower(&mut self, batch: Bytes, now_ms: i64) -> Result<i64> {
        let parsed = RecordBatch::new(batch.clone())?;
        parsed.validate_crc()?;
        if parsed.base_offset() != self.log_end_offset {
            return Err(Error::kafka(
                ErrorCode::OffsetOutOfRange,
                format!(
                    "replicated batch at {} does not follow the log end offset {}",
                    parsed.base_offset(),
                    self.log_end_offset
                ),
            ));
        }
        self.begin_change()?;
        self.append_as_follower_unguarded(&batch, &parsed, now_ms)
            .map_err(|e| self.on_write_error(e))
    }

    fn append_as_follower_unguarded(
        &mut self,
        bytes: &[u8],
        batch: &RecordBatch,
        now_ms: i64,
    ) -> Result<i64> {
        let header = BatchHeader::parse(bytes)
            .ok_or_else(|| segment::storage_error("replicated batch has an invalid header"))?;
        if self.active()?.should_roll(&header, now_ms, &self.config) {
            self.roll()?;
        }
        if self
            .epochs
            .assign(batch.partition_leader_epoch(), batch.base_offset())
        {
            self.epochs.persist(&self.dir)?;
        }
        let active = self
            .segments
            .values_mut()
            .next_back()
            .ok_or_else(|| segment::storage_error("log has no segment"))?;
        active.append(bytes, &header, now_ms, &self.config)?;
        self.log_end_offset = header.last_offset + 1;
        self.appended_bytes = self.appended_bytes.saturating_add(bytes.len() as u64);
        self.unflushed_messages = self
            .unflushed_messages
            .saturating_add(i64::from(batch.record_count()));
        self.flush_if_due(now_ms)?;
        Ok(self.log_end_offset)
    }

    /// A new leader's epoch starts at the log end offset (Kafka's `makeLeader` assigns it
    /// before any append, so divergence checks and OFFSET_NOT_AVAILABLE see it at once).
    pub fn start_leader_epoch(&mut self, epoch: i32) -> Result<()> {
        if self.latest_epoch().is_some_and(|l| l >= epoch) {
            return Ok(());
        }
        self.begin_change()?;
        if self.epochs.assign(epoch, self.log_end_offset) {
            self.epochs.persist(&self.dir)?;
        }
        Ok(())
    }

    /// Refuses a leader epoch older than the latest one in the log.
    fn check_leader_epoch(&self, leader_epoch: i32) -> Result<()> {
        if leader_epoch >= 0 && self.latest_epoch().is_some_and(|l| l > leader_epoch) {
            return Err(Error::kafka(
                ErrorCode::FencedLeaderEpoch,
                format!(
                    "leader epoch {leader_epoch} is older than the log's latest epoch {:?}",
                    self.latest_epoch()
                ),
            ));
        }
        Ok(())
    }

    /// A storage error on the write path (write, fsync, roll, checkpoint) takes the log
    /// directory offline (`dir_health`): the log's end may already have moved past what is
    /// durable, so nothing may be appended (a retry would be a duplicate) or read after it.
    fn on_write_error(&self, e: Error) -> Error {
        if e.code() == ErrorCode::KafkaStorageError && !self.deleted {
            self.health
                .fail(format!("{} of {}-{}", e, self.topic, self.partition));
        }
        e
    }

    /// Assigns offsets to a prepared batch and writes it (rolling first when needed).
    fn write_prepared(
        &mut self,
        prepared: prepare::Prepared,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.write_prepared_unguarded(prepared, leader_epoch, now_ms)
            .map_err(|e| self.on_write_error(e))
    }

    fn write_prepared_unguarded(
        &mut self,
        prepared: prepare::Prepared,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let mut bytes = prepared.bytes;
        let base_offset = self.log_end_offset;
        stamp_offsets(&mut bytes, base_offset, leader_epoch)?;
        let header = BatchHeader::parse(&bytes)
            .ok_or_else(|| segment::storage_error("prepared batch has an invalid header"))?;
        let rolled = self.active()?.should_roll(&header, now_ms, &self.config);
        if rolled {
            self.roll()?;
        }
        if self.epochs.assign(leader_epoch, base_offset) {
            self.epochs.persist(&self.dir)?;
        }
        let active = self
            .segments
            .values_mut()
            .next_back()
            .ok_or_else(|| segment::storage_error("log has no segment"))?;
        active.append(&bytes, &header, now_ms, &self.config)?;
        self.log_end_offset = header.last_offset + 1;
        self.appended_bytes = self.appended_bytes.saturating_add(bytes.len() as u64);
        self.unflushed_messages = self
            .unflushed_messages
            .saturating_add(i64::from(prepared.validated.record_count));
        self.flush_if_due(now_ms)?;
        let v = prepared.validated;
        Ok(AppendInfo {
            base_offset,
            last_offset: header.last_offset,
            log_append_time: prepared.log_append_time,
            log_start_offset: self.log_start_offset,
            max_timestamp: header.max_timestamp,
            record_count: v.record_count,
            size_bytes: bytes.len(),
            producer_id: v.producer_id,
            producer_epoch: v.producer_epoch,
            base_sequence: v.base_sequence,
            is_transactional: v.is_transactional,
            recompressed: prepared.rebuilt,
            rolled,
        })
    }

    /// Records an aborted transaction in the index of the segment holding its marker
    /// (`entry.last_offset`, which must be below the log end offset).
    pub fn add_aborted_txn(&mut self, entry: AbortedTxn) -> Result<()> {
        self.begin_change()?;
        if entry.last_offset >= self.log_end_offset {
            return Err(segment::storage_error(format!(
                "abort marker {} is past the log end offset {}",
                entry.last_offset, self.log_end_offset
            )));
        }
        match self.segments.range_mut(..=entry.last_offset).next_back() {
            Some((_, segment)) => segment.add_aborted_txn(entry),
            // Below the log start: nothing can fetch it any more.
            None => Ok(()),
        }
    }

    /// Whether the abort marker at `last_offset` has its index entry.
    pub fn has_aborted_txn(&self, last_offset: i64) -> bool {
        self.segments
            .range(..=last_offset)
            .next_back()
            .is_some_and(|(_, s)| s.has_aborted_txn(last_offset))
    }

    /// The aborted transactions a read_committed fetch of `[from, upper)` must report: those
    /// whose marker is at or after `from` and whose first offset is below `upper`. The search
    /// stops at the first entry whose last stable offset is ≥ `upper`: every transaction
    /// starting below `upper` had completed by then.
    pub fn aborted_txns(&self, from: i64, upper: i64) -> Vec<AbortedTxn> {
        let first_key = self
            .segments
            .range(..=from)
            .next_back()
            .map_or(i64::MIN, |(&k, _)| k);
        let mut out = Vec::new();
        for segment in self.segments.range(first_key..).map(|(_, s)| s) {
            for e in segment.aborted_txns() {
                if e.last_offset < from {
                    continue;
                }
                if e.first_offset < upper {
                    out.push(*e);
                }
                if e.last_stable_offset >= upper {
                    return out;
                }
            }
        }
        out
    }

    /// Every aborted transaction still indexed, in marker order.
    pub fn all_aborted_txns(&self) -> Vec<AbortedTxn> {
        self.segments
            .values()
            .flat_map(|s| s.aborted_txns().iter().copied())
            .collect()
    }

    /// Tells the cleaner where the earliest open transaction starts (`None`: none is open).
    pub fn set_first_unstable_offset(&mut self, offset: Option<i64>) {
        self.first_unstable_offset = offset;
    }

    /// Flushes if `flush.messages` records were appended since the last flush or `flush.ms`
    /// passed since it. Returns whether it flushed. The server may call it from a timer.
    pub fn flush_if_due(&mut self, now_ms: i64) -> Result<bool> {
        let last = *self.last_flush_ms.get_or_insert(now_ms);
        let due = self.unflushed_messages >= self.config.flush_messages
            || (self.unflushed_messages > 0 && now_ms.saturating_sub(last) >= self.config.flush_ms);
        if due {
            self.flush()?;
            self.last_flush_ms = Some(now_ms);
        }
        Ok(due)
    }

    /// When `flush.ms` makes this log due for a flush (ms since the epoch): `None` when nothing
    /// is unflushed or `flush.ms` is unset. The broker's flush timer sleeps until the earliest.
    pub fn flush_due_at(&self) -> Option<i64> {
        if self.unflushed_messages == 0 || self.config.flush_ms == i64::MAX {
            return None;
        }
        self.last_flush_ms
            .map(|last| last.saturating_add(self.config.flush_ms))
    }

    /// Makes everything appended so far durable: writes pending index entries, fsyncs the
    /// active segment (older segments were fsynced when they rolled), then moves the recovery
    /// point to the log end offset and checkpoints it.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_unguarded().map_err(|e| self.on_write_error(e))
    }

    fn flush_unguarded(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.recovery_point < self.log_end_offset {
            self.active_mut()?.flush()?;
            self.recovery_point = self.log_end_offset;
            checkpoint::write_offset(&self.dir, RECOVERY_POINT_FILE, self.recovery_point)?;
        }
        self.unflushed_messages = 0;
        Ok(())
    }

    /// Starts a new active segment at the log end offset. The old active segment is sealed
    /// (indexes written, all three files fsynced) and the recovery point moves to the new base.
    /// A no-op when the active segment is empty.
    pub fn roll(&mut self) -> Result<()> {
        self.roll_unguarded().map_err(|e| self.on_write_error(e))
    }

    fn roll_unguarded(&mut self) -> Result<()> {
        if self.active()?.size() == 0 {
            return Ok(());
        }
        self.begin_change()?;
        self.active_mut()?.seal()?;
        let base = self.log_end_offset;
        let segment = Segment::create(&self.dir, base)?;
        checkpoint::sync_dir(&self.dir)?;
        self.segments.insert(base, segment);
        self.recovery_point = base;
        checkpoint::write_offset(&self.dir, RECOVERY_POINT_FILE, base)?;
        self.unflushed_messages = 0;
        Ok(())
    }

    /// Whether the clean-shutdown marker is on disk: nothing changed since the last
    /// [`Log::close`] (or since a clean open), so closing again has nothing to do.
    pub fn is_closed_clean(&self) -> bool {
        self.clean_marker
    }

    /// fsyncs the partition directory (makes renames and deletions of files that other layers
    /// keep there, such as producer snapshots, durable).
    pub fn sync_dir(&self) -> Result<()> {
        self.check_usable()?;
        Ok(checkpoint::sync_dir(&self.dir)?)
    }

    /// Flushes everything, writes every checkpoint and the clean-shutdown marker, so the next
    /// [`Log::open`] trusts the files without a recovery scan. The log stays usable; the next
    /// change removes the marker first.
    pub fn close(&mut self) -> Result<()> {
        if self.deleted || self.clean_marker {
            return Ok(());
        }
        self.active_mut()?.seal()?;
        self.recovery_point = self.log_end_offset;
        checkpoint::write_offset(&self.dir, RECOVERY_POINT_FILE, self.recovery_point)?;
        checkpoint::write_offset(&self.dir, LOG_START_OFFSET_FILE, self.log_start_offset)?;
        self.epochs.persist(&self.dir)?;
        checkpoint::write_clean_marker(&self.dir)?;
        self.clean_marker = true;
        Ok(())
    }

    /// Removes the partition directory and everything in it (DeleteTopics). Every later
    /// operation on this log fails with `KAFKA_STORAGE_ERROR`.
    pub fn delete(&mut self) -> Result<()> {
        self.check_usable()?;
        self.deleted = true;
        drop(std::mem::take(&mut self.segments));
        fs::remove_dir_all(&self.dir)?;
        if let Some(parent) = self.dir.parent() {
            checkpoint::sync_dir(parent)?;
        }
        Ok(())
    }

    /// Removes every batch at or after `offset` (whole batches: a batch that contains `offset`
    /// goes entirely, so the new log end offset may be below `offset`). Below the first segment
    /// the log is emptied and restarted at `offset`. The leader epoch cache and recovery point
    /// follow. For replication and recovery; at or past the log end offset only a leader epoch
    /// begun at the log end (with no record) is dropped.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if offset >= self.log_end_offset {
            // Nothing to cut, but an epoch that started at the log end without a record (this
            // broker led briefly and appended nothing) conflicts with the new leader's
            // history: a follower that kept it would report it as its last fetched epoch and
            // be told to truncate again, forever (Kafka's truncateTo does the same).
            if self.epochs.truncate_from_end(self.log_end_offset) {
                self.begin_change()?;
                self.epochs.persist(&self.dir)?;
            }
            return Ok(());
        }
        self.begin_change()?;
        let first_base = self.segments.keys().next().copied().unwrap_or(offset);
        if offset < first_base {
            return self.truncate_fully_and_start_at(offset);
        }
        let later: Vec<i64> = self
            .segments
            .range(offset.saturating_add(1)..)
            .map(|(&b, _)| b)
            .collect();
        for base in later {
            if let Some(segment) = self.segments.remove(&base) {
                segment.delete()?;
            }
        }
        let end = self.active_mut()?.truncate_to(offset)?;
        checkpoint::sync_dir(&self.dir)?;
        self.after_truncation(end)
    }

    /// Deletes every segment and starts an empty log at `offset`.
    pub(crate) fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        let segments = std::mem::take(&mut self.segments);
        for (_, segment) in segments {
            segment.delete()?;
        }
        self.segments
            .insert(offset, Segment::create(&self.dir, offset)?);
        checkpoint::sync_dir(&self.dir)?;
        self.log_start_offset = offset;
        checkpoint::write_offset(&self.dir, LOG_START_OFFSET_FILE, offset)?;
        self.after_truncation(offset)
    }

    fn after_truncation(&mut self, end: i64) -> Result<()> {
        self.log_end_offset = end;
        if self.log_start_offset > end {
            self.log_start_offset = end;
            checkpoint::write_offset(&self.dir, LOG_START_OFFSET_FILE, end)?;
        }
        if self.epochs.truncate_from_end(end) {
            self.epochs.persist(&self.dir)?;
        }
        self.recovery_point = self.recovery_point.min(end);
        checkpoint::write_offset(&self.dir, RECOVERY_POINT_FILE, self.recovery_point)?;
        cleaner_checkpoint::truncate_to(&self.dir, end)?;
        Ok(())
    }
}
