//! A partition's state: the log plus the offsets the protocol exposes (log start offset, high
//! watermark, last stable offset, leader epoch), and the idempotent producers' state.

use crate::log::{AbortedTxn, AppendInfo, Log, LogConfig, ReadInfo};
use crate::{Error, Result};
use bytes::Bytes;
use odradek::ErrorCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::markers;
use super::parallel;
use super::producer_state::ProducerState;
use super::snapshot;
use super::waiters::Waiters;

/// The leader epoch of every partition on this single-node broker.
pub const LEADER_EPOCH: i32 = 0;

/// One partition of a topic.
#[derive(Debug)]
pub struct Partition {
    pub(super) topic: String,
    pub(super) index: i32,
    pub(super) log: Mutex<Log>,
    /// Idempotent producers' recent batches; locked after `log` when both are needed.
    pub(super) producers: Mutex<ProducerState>,
    pub(super) high_watermark: AtomicI64,
    /// First offset of the earliest open transaction, or the high watermark.
    pub(super) last_stable_offset: AtomicI64,
    pub(super) log_start_offset: AtomicI64,
    /// The log's [`Log::appended_bytes`] as last published.
    appended_bytes: AtomicU64,
    /// The log end offset and the high watermark as last published: waiting fetches are
    /// woken only when a publish moves something.
    published_end: AtomicI64,
    published_hw: AtomicI64,
    /// Bumped when something other than an append changes what a fetch reads: the log start
    /// offset moved, the partition was deleted, or its leadership moved (test cluster).
    other_changes: AtomicU64,
    /// Fetches long-polling this partition.
    waiters: Waiters,
    /// Cluster mode: the high watermark is moved by replication, not by every append.
    pub(super) replicated: AtomicBool,
    /// The leader epoch stamped on appended batches (0 on a single node).
    pub(super) leader_epoch: AtomicI32,
    /// Leader / follower state in cluster mode (`replication.rs`); locked after `log`.
    pub(super) replication: Mutex<super::replica_state::Replication>,
}

/// What a waiting fetch compares to decide whether to read again: see
/// [`Partition::progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes appended since the partition was opened.
    pub appended_bytes: u64,
    /// Changes other than appends (log start offset moved, partition deleted).
    pub other_changes: u64,
}

/// Result of appending a produce request's record set to a partition.
#[derive(Debug, Clone, Copy)]
pub struct ProduceOutcome {
    /// Offset of the first record appended.
    pub base_offset: i64,
    /// Broker time stamped on the batches, or -1 for CreateTime topics.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
    /// Offset of the last record appended (or of the original, for a duplicate): acks=all
    /// waits for the high watermark to pass it.
    pub last_offset: i64,
}

/// What a fetch of one partition returns.
#[derive(Debug, Clone)]
pub struct FetchOutcome {
    /// Stored batches, possibly ending in a partial batch.
    pub records: Bytes,
    /// High watermark at the time of the read.
    pub high_watermark: i64,
    /// Last stable offset at the time of the read.
    pub last_stable_offset: i64,
    /// Log start offset at the time of the read.
    pub log_start_offset: i64,
    /// read_committed: the aborted transactions overlapping the records returned.
    pub aborted: Option<Vec<AbortedTxn>>,
}

impl Partition {
    /// Opens (recovering if needed) the partition's log and restores its producer state: the
    /// newest producer snapshot, then the log after it (all of it without a usable snapshot).
    pub fn open(dir: &std::path::Path, topic: &str, index: i32, config: LogConfig) -> Result<Self> {
        let mut log = Log::open(&dir.join(format!("{topic}-{index}")), topic, index, config)?;
        let (from, state) = match snapshot::load_latest(log.dir(), log.log_end_offset())? {
            Some((offset, state)) => (offset, state),
            None => (log.log_start_offset(), ProducerState::default()),
        };
        let producers = markers::rebuild_producer_state(&mut log, state, from)?;
        let partition = Partition {
            topic: topic.to_string(),
            index,
            high_watermark: AtomicI64::new(0),
            last_stable_offset: AtomicI64::new(0),
            log_start_offset: AtomicI64::new(0),
            appended_bytes: AtomicU64::new(0),
            published_end: AtomicI64::new(-1),
            published_hw: AtomicI64::new(-1),
            other_changes: AtomicU64::new(0),
            waiters: Waiters::default(),
            replicated: AtomicBool::new(false),
            leader_epoch: AtomicI32::new(LEADER_EPOCH),
            replication: Mutex::new(super::replica_state::Replication::default()),
            log: Mutex::new(log),
            producers: Mutex::new(producers),
        };
        {
            let mut log = partition.log()?;
            let producers = partition.producers()?;
            partition.publish_offsets(&mut log, &producers);
        }
        Ok(partition)
    }

    /// Topic name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Partition index.
    pub fn index(&self) -> i32 {
        self.index
    }

    /// Locks the log. A poisoned lock (a panic while appending) is reported as a storage error
    /// rather than propagated, so one bad partition cannot take the broker down.
    pub fn log(&self) -> Result<MutexGuard<'_, Log>> {
        self.log.lock().map_err(|_| {
            Error::kafka(
                ErrorCode::KafkaStorageError,
                format!("log of {}-{} is unavailable", self.topic, self.index),
            )
        })
    }

    /// The leader epoch batches appended now are stamped with.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    /// High watermark: offsets below it are visible to consumers.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Last stable offset: the first offset of the earliest open transaction, else the high
    /// watermark. read_committed consumers see only what lies below it.
    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable_offset.load(Ordering::Acquire)
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    /// Locks the producer state (after the log when both are needed).
    pub(super) fn producers(&self) -> Result<MutexGuard<'_, ProducerState>> {
        self.producers
            .lock()
            .map_err(|_| Error::kafka(ErrorCode::KafkaStorageError, "producer state unavailable"))
    }

    /// Clean shutdown of this partition: a producer snapshot at the log end offset, then
    /// [`Log::close`] (checkpoints and the clean-shutdown marker, which also makes the snapshot's
    /// rename durable). Nothing is written if nothing changed since the last close or clean open.
    pub fn close(&self) -> Result<()> {
        let mut log = self.log()?;
        if log.is_closed_clean() {
            return Ok(());
        }
        let producers = self.producers()?;
        snapshot::write(log.dir(), log.log_end_offset(), &producers)?;
        drop(producers);
        log.close()
    }

    /// Forgets idempotent producers idle for `expiration_ms` (`producer.id.expiration.ms`,
    /// see [`ProducerState::remove_expired`]); when any went, writes a producer snapshot at the
    /// log end offset so a restart does not bring them back. Returns how many went.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> Result<usize> {
        let log = self.log()?;
        let mut producers = self.producers()?;
        let removed = producers.remove_expired(now_ms, expiration_ms);
        if removed > 0 {
            snapshot::write(log.dir(), log.log_end_offset(), &producers)?;
        }
        Ok(removed)
    }

    /// Snapshots the producer state when `info`'s batch opened a new segment. Called before the
    /// batch is recorded, so the snapshot covers exactly the offsets below the new segment's
    /// base. A failure costs replay time at the next open only, so it is logged, not returned.
    pub(super) fn snapshot_if_rolled(
        &self,
        log: &Log,
        producers: &ProducerState,
        info: &AppendInfo,
    ) {
        if !info.rolled {
            return;
        }
        if let Err(e) = snapshot::write(log.dir(), info.base_offset, producers) {
            tracing::warn!(dir = %log.dir().display(), offset = info.base_offset, "cannot write producer snapshot: {e}");
        }
    }

    /// After the log start offset moved (segments deleted): keeps a snapshot at or above it
    /// (writing one at the log end offset if none is left, so producers whose batches are gone
    /// stay known after a restart), deletes the snapshots below it, and makes that durable.
    fn snapshots_after_deletion(&self, log: &Log, producers: &ProducerState) -> Result<()> {
        let start = log.log_start_offset();
        let offsets = snapshot::list(log.dir())?;
        let current = offsets.last().is_some_and(|&n| n >= start);
        let stale = offsets.first().is_some_and(|&n| n < start);
        if current && !stale {
            return Ok(());
        }
        if !current {
            snapshot::write(log.dir(), log.log_end_offset(), producers)?;
        }
        snapshot::delete_below(log.dir(), start)?;
        log.sync_dir()
    }

    /// Publishes the offsets readers see after a change: log start, high watermark and last
    /// stable offset (never below the log start offset), and tells the log's cleaner where the
    /// earliest open transaction starts.
    pub(super) fn publish_offsets(&self, log: &mut Log, producers: &ProducerState) {
        let start = log.log_start_offset();
        let hw = if self.replicated.load(Ordering::Acquire) {
            // Replication moves it (a leader: to what its ISR reached, never back); a
            // truncation or a deletion may cap it.
            let leo = log.log_end_offset();
            let current = self.high_watermark.load(Ordering::Acquire);
            let reached = self
                .leader_high_watermark(leo)
                .map_or(current, |c| c.max(current));
            self.high_watermark
                .store(reached.min(leo), Ordering::Release);
            reached.min(leo).max(start)
        } else {
            log.log_end_offset()
        };
        let unstable = producers.first_unstable_offset();
        let lso = unstable.map_or(hw, |u| u.min(hw)).max(start);
        log.set_first_unstable_offset(unstable);
        let mut moved = false;
        if self.log_start_offset.swap(start, Ordering::AcqRel) != start {
            self.other_changes.fetch_add(1, Ordering::AcqRel);
            moved = true;
        }
        self.high_watermark.store(hw, Ordering::Release);
        // (The high watermark itself may have been raised before this call: compare with
        // what was last published.)
        moved |= self.published_hw.swap(hw, Ordering::AcqRel) != hw;
        moved |= self.last_stable_offset.swap(lso, Ordering::AcqRel) != lso;
        let appended = log.appended_bytes();
        moved |= self.appended_bytes.swap(appended, Ordering::AcqRel) != appended;
        let leo = log.log_end_offset();
        moved |= self.published_end.swap(leo, Ordering::AcqRel) != leo;
        // Only a move wakes the waiting fetches: a replica fetch that finds nothing new
        // publishes the same offsets again, and waking on that would make the waiting
        // fetches of a partition wake one another (and themselves) in a loop.
        if moved {
            self.waiters.wake_all();
        }
    }

    /// How far the partition has moved, for a waiting fetch: read it before reading the
    /// partition, and read again only once enough bytes were appended or something else
    /// changed since.
    pub fn progress(&self) -> Progress {
        Progress {
            appended_bytes: self.appended_bytes.load(Ordering::Acquire),
            other_changes: self.other_changes.load(Ordering::Acquire),
        }
    }

    /// Wakes `waiter` whenever this partition's offsets move (until `waiter` is dropped).
    pub fn register_waiter(&self, waiter: &Arc<Notify>) {
        self.waiters.register(waiter);
    }

    /// Something other than an append changed what a waiting fetch must answer (the topic was
    /// deleted, or a test cluster moved the partition's leader): waiting fetches answer now.
    pub fn wake_for_change(&self) {
        self.other_changes.fetch_add(1, Ordering::AcqRel);
        self.waiters.wake_all();
    }

    /// Reads from `offset`, bounded by the high watermark, or for read_committed by the last
    /// stable offset, with the aborted transactions overlapping what was read.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
    ) -> Result<FetchOutcome> {
        let log = self.log()?;
        let hw = self.high_watermark();
        let lso = self.last_stable_offset();
        let bound = if read_committed { lso } else { hw };
        let ReadInfo { records, .. } = log.read(offset, max_bytes, bound, min_one_batch)?;
        let aborted = read_committed.then(|| match markers::end_offset_of(&records) {
            Some(end) => log.aborted_txns(offset, end),
            None => Vec::new(),
        });
        Ok(FetchOutcome {
            records,
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: log.log_start_offset(),
            aborted,
        })
    }

    /// Reads from `offset` up to the log end, past the high watermark (a new leader replaying
    /// its own log: everything in it will be committed).
    pub fn read_to_log_end(&self, offset: i64, max_bytes: usize) -> Result<Bytes> {
        let log = self.log()?;
        let end = log.log_end_offset();
        Ok(log.read(offset, max_bytes, end, true)?.records)
    }

    /// DeleteRecords: moves the log start offset to `offset` (-1 = high watermark).
    pub fn delete_records_before(&self, offset: i64) -> Result<i64> {
        let target = if offset == -1 {
            self.high_watermark()
        } else {
            offset
        };
        if target > self.high_watermark() || target < 0 {
            return Err(Error::kafka(
                ErrorCode::OffsetOutOfRange,
                format!("offset {offset} is beyond the high watermark"),
            ));
        }
        let mut log = self.log()?;
        let before = log.log_start_offset();
        let start = log.delete_records_before(target)?;
        let producers = self.producers()?;
        if start != before {
            self.snapshots_after_deletion(&log, &producers)?;
        }
        self.publish_offsets(&mut log, &producers);
        Ok(start)
    }

    /// Applies retention; returns the number of segments deleted.
    pub fn enforce_retention(&self, now_ms: i64) -> Result<()> {
        let mut log = self.log()?;
        let before = log.log_start_offset();
        log.enforce_retention(now_ms)?;
        let producers = self.producers()?;
        if log.log_start_offset() != before {
            self.snapshots_after_deletion(&log, &producers)?;
        }
        self.publish_offsets(&mut log, &producers);
        Ok(())
    }
}

/// Closes every partition ([`Partition::close`]) on up to `threads` threads; the first error
/// is returned after every partition was tried.
pub fn close_all(partitions: Vec<Arc<Partition>>, threads: usize) -> Result<()> {
    parallel::map_bounded(partitions, threads, |p| p.close())
        .into_iter()
        .collect::<Result<Vec<()>>>()
        .map(|_| ())
}
