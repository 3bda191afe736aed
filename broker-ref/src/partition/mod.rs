//! Partition state: the log plus the offsets the protocol exposes (log start offset, high
//! watermark, last stable offset, leader epoch), and the registry of topics.
//!
//! On a single node every appended batch is immediately "replicated", so the high watermark
//! follows the log end offset; the fields are kept apart so replication and transactions can
//! move them independently later.

mod producer_state;
mod registry;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use odradek::records::RecordBatches;
use odradek::ErrorCode;

use crate::log::{Log, LogConfig, ReadInfo};
use crate::{Error, Result};

pub use producer_state::{ProducerState, SequenceCheck};
pub use registry::{
    validate_topic_name, write_atomically as write_meta, Topic, TopicRegistry, INTERNAL_TOPICS,
};

/// The leader epoch of every partition on this single-node broker.
pub const LEADER_EPOCH: i32 = 0;

/// One partition of a topic.
#[derive(Debug)]
pub struct Partition {
    topic: String,
    index: i32,
    log: Mutex<Log>,
    /// Idempotent producers' recent batches; locked after `log` when both are needed.
    producers: Mutex<ProducerState>,
    high_watermark: AtomicI64,
    log_start_offset: AtomicI64,
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
}

impl Partition {
    /// Opens (recovering if needed) the partition's log.
    pub fn open(dir: &std::path::Path, topic: &str, index: i32, config: LogConfig) -> Result<Self> {
        let log = Log::open(&dir.join(format!("{topic}-{index}")), topic, index, config)?;
        let (hw, start) = (log.log_end_offset(), log.log_start_offset());
        let producers = rebuild_producer_state(&log)?;
        Ok(Partition {
            topic: topic.to_string(),
            index,
            log: Mutex::new(log),
            producers: Mutex::new(producers),
            high_watermark: AtomicI64::new(hw),
            log_start_offset: AtomicI64::new(start),
        })
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

    /// High watermark: offsets below it are visible to consumers.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Last stable offset (no transactions yet: equal to the high watermark).
    pub fn last_stable_offset(&self) -> i64 {
        self.high_watermark()
    }

    /// First offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    fn publish_offsets(&self, log: &Log) {
        self.log_start_offset
            .store(log.log_start_offset(), Ordering::Release);
        self.high_watermark
            .store(log.log_end_offset(), Ordering::Release);
    }

    /// Validates every batch of a produce request's record set, then appends them all. Either
    /// every batch is appended or none is.
    pub fn append_record_set(&self, records: Bytes, now_ms: i64) -> Result<ProduceOutcome> {
        let mut batches = Vec::new();
        let mut set = RecordBatches::new(records);
        for batch in set.by_ref() {
            batches.push(batch?);
        }
        if set.truncated_tail() != 0 || batches.is_empty() {
            return Err(Error::kafka(
                ErrorCode::CorruptMessage,
                "record set ends in a partial batch or holds no batch",
            ));
        }
        let mut log = self.log()?;
        let mut producers = self.producers.lock().map_err(|_| {
            Error::kafka(ErrorCode::KafkaStorageError, "producer state unavailable")
        })?;
        let mut plan = Vec::with_capacity(batches.len());
        for batch in &batches {
            log.validate(batch, now_ms)?;
            let check = if batch.producer_id() >= 0 && batch.base_sequence() >= 0 {
                producers
                    .check(
                        batch.producer_id(),
                        batch.producer_epoch(),
                        batch.base_sequence(),
                        batch.last_sequence(),
                    )
                    .map_err(|code| {
                        Error::kafka(
                            code,
                            format!("producer {}: {}", batch.producer_id(), code.name()),
                        )
                    })?
            } else {
                SequenceCheck::Append
            };
            plan.push(check);
        }
        let mut first_offset: Option<i64> = None;
        let mut log_append_time = -1;
        for (batch, check) in batches.into_iter().zip(plan) {
            if let SequenceCheck::Duplicate { base_offset } = check {
                // A retry of a batch already written: acknowledge the original offset.
                first_offset.get_or_insert(base_offset);
                continue;
            }
            let (pid, epoch, first_seq, last_seq) = (
                batch.producer_id(),
                batch.producer_epoch(),
                batch.base_sequence(),
                batch.last_sequence(),
            );
            let info = log.append(
                BytesMut::from(batch.as_bytes().as_ref()),
                LEADER_EPOCH,
                now_ms,
            )?;
            if pid >= 0 && first_seq >= 0 {
                producers.record(pid, epoch, first_seq, last_seq, info.base_offset);
            }
            log_append_time = info.log_append_time;
            first_offset.get_or_insert(info.base_offset);
        }
        drop(producers);
        self.publish_offsets(&log);
        let base_offset = first_offset.unwrap_or(-1);
        Ok(ProduceOutcome {
            base_offset,
            log_append_time,
            log_start_offset: log.log_start_offset(),
        })
    }

    /// Reads from `offset`, bounded by the high watermark (or the last stable offset for
    /// read_committed).
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
        Ok(FetchOutcome {
            records,
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: log.log_start_offset(),
        })
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
        let start = log.delete_records_before(target)?;
        self.publish_offsets(&log);
        Ok(start)
    }

    /// Applies retention; returns the number of segments deleted.
    pub fn enforce_retention(&self, now_ms: i64) -> Result<()> {
        let mut log = self.log()?;
        log.enforce_retention(now_ms)?;
        self.publish_offsets(&log);
        Ok(())
    }
}

/// Rebuilds the idempotent-producer state from the batch headers of the whole log.
fn rebuild_producer_state(log: &Log) -> Result<ProducerState> {
    let mut state = ProducerState::default();
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    while offset < end {
        let ReadInfo { records, .. } = log.read(offset, 8 << 20, end, true)?;
        let mut progressed = false;
        for batch in RecordBatches::new(records) {
            let batch = batch?;
            if batch.producer_id() >= 0 && batch.base_sequence() >= 0 && !batch.is_control() {
                state.record(
                    batch.producer_id(),
                    batch.producer_epoch(),
                    batch.base_sequence(),
                    batch.last_sequence(),
                    batch.base_offset(),
                );
            }
            progressed |= batch.next_offset() > offset;
            offset = offset.max(batch.next_offset());
        }
        if !progressed {
            break;
        }
    }
    Ok(state)
}
