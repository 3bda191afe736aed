//! Statistics snapshots of a consumer, in the detail librdkafka's statistics report.

use std::time::Instant;

use super::group::RebalanceHistory;
use super::shared::Shared;
use super::state::Reset;
use crate::cluster::BrokerSnapshot;
use crate::types::TopicPartition;

/// One assigned partition in a statistics snapshot. Offsets are -1001 (librdkafka's
/// `OFFSET_INVALID`) where unknown, watermarks -1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDetail {
    /// Topic and partition.
    pub partition: TopicPartition,
    /// Leader broker id (-1: unknown).
    pub leader: i32,
    /// librdkafka's fetch state: `offset-query` (position being looked up),
    /// `validate-epoch-wait` (position being validated with a new leader), `active`.
    pub fetch_state: &'static str,
    /// Next offset to fetch.
    pub next_offset: i64,
    /// Offset of the next record the application gets.
    pub app_offset: i64,
    /// Last offset committed or read back from the group.
    pub committed_offset: i64,
    /// Log start offset from the latest fetch.
    pub lo_offset: i64,
    /// High watermark from the latest fetch.
    pub hi_offset: i64,
    /// Last stable offset from the latest fetch.
    pub ls_offset: i64,
    /// Fetched responses of this partition buffered but not yet consumed.
    pub buffered_chunks: u64,
    /// Their bytes.
    pub buffered_bytes: u64,
    /// Records handed to the application.
    pub rx_records: u64,
    /// Their key and value bytes.
    pub rx_bytes: u64,
    /// Leader epoch of the position (-1: unknown).
    pub leader_epoch: i32,
    /// Paused by the application.
    pub paused: bool,
}

/// A consumer statistics snapshot.
#[derive(Debug, Clone)]
pub struct ConsumerDetail {
    /// Every assigned partition, sorted.
    pub partitions: Vec<PartitionDetail>,
    /// `isolation.level=read_committed`: lag counts to the last stable offset.
    pub read_committed: bool,
    /// Group membership (`None` without `group.id`).
    pub group: Option<RebalanceHistory>,
    /// Topics in the metadata cache.
    pub metadata_topics: usize,
    /// Age of the metadata, milliseconds.
    pub metadata_age_ms: u64,
    /// Per broker (starts new rtt and throttle windows).
    pub brokers: Vec<BrokerSnapshot>,
    /// When the snapshot was taken.
    pub taken: Instant,
}

/// librdkafka's `RD_KAFKA_OFFSET_INVALID`.
pub const OFFSET_INVALID: i64 = -1001;

/// The snapshot of a consumer sharing `shared`, with its group's `history` (`None` without
/// `group.id`); starts new broker windows.
pub(super) fn detail(shared: &Shared, history: Option<RebalanceHistory>) -> ConsumerDetail {
    let cluster = &shared.cluster;
    let metadata = cluster.metadata();
    let committed = shared
        .committed
        .as_ref()
        .and_then(|c| c.lock().ok().map(|c| c.clone()))
        .unwrap_or_default();
    let mut partitions: Vec<PartitionDetail> = {
        let state = shared.lock();
        state
            .parts
            .iter()
            .map(|(tp, p)| {
                let (chunks, bytes) = state
                    .buffer
                    .iter()
                    .filter(|b| &b.tp == tp && b.generation == p.generation)
                    .fold((0u64, 0u64), |(c, n), b| (c + 1, n + b.bytes as u64));
                PartitionDetail {
                    partition: tp.clone(),
                    leader: metadata.leader(&tp.topic, tp.partition).unwrap_or(-1),
                    fetch_state: match (p.reset, p.awaiting_validation) {
                        (Some(Reset::Committed | Reset::Earliest | Reset::Latest), _) => {
                            "offset-query"
                        }
                        (None, true) => "validate-epoch-wait",
                        (None, false) => "active",
                    },
                    next_offset: p.fetch_offset.unwrap_or(OFFSET_INVALID),
                    app_offset: p.position.unwrap_or(OFFSET_INVALID),
                    committed_offset: committed.get(tp).copied().unwrap_or(OFFSET_INVALID),
                    lo_offset: p.log_start_offset,
                    hi_offset: p.high_watermark,
                    ls_offset: p.last_stable_offset,
                    buffered_chunks: chunks,
                    buffered_bytes: bytes,
                    rx_records: p.rx_records,
                    rx_bytes: p.rx_bytes,
                    leader_epoch: p.last_epoch.or(p.leader_epoch).unwrap_or(-1),
                    paused: p.paused,
                }
            })
            .collect()
    };
    partitions.sort_by(|a, b| a.partition.cmp(&b.partition));
    ConsumerDetail {
        partitions,
        read_committed: cluster.config().consumer.read_committed,
        group: history,
        metadata_topics: metadata.topics.len(),
        metadata_age_ms: metadata.age().as_millis() as u64,
        brokers: cluster.broker_snapshots(),
        taken: Instant::now(),
    }
}

impl PartitionDetail {
    /// librdkafka's `consumer_lag`: the end of the log (high watermark, or the last stable
    /// offset with `read_committed`) minus `offset`; -1 while either is unknown.
    pub fn lag_from(&self, offset: i64, read_committed: bool) -> i64 {
        let end = if read_committed {
            self.ls_offset
        } else {
            self.hi_offset
        };
        if end < 0 || offset < 0 {
            return -1;
        }
        (end - offset).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(hi: i64, ls: i64) -> PartitionDetail {
        PartitionDetail {
            partition: TopicPartition::new("t", 0),
            leader: 1,
            fetch_state: "active",
            next_offset: 0,
            app_offset: 0,
            committed_offset: OFFSET_INVALID,
            lo_offset: 0,
            hi_offset: hi,
            ls_offset: ls,
            buffered_chunks: 0,
            buffered_bytes: 0,
            rx_records: 0,
            rx_bytes: 0,
            leader_epoch: -1,
            paused: false,
        }
    }

    #[test]
    fn lag_counts_to_the_high_watermark_or_the_last_stable_offset() {
        assert_eq!(part(100, 90).lag_from(40, false), 60);
        assert_eq!(part(100, 90).lag_from(40, true), 50);
        assert_eq!(part(100, 90).lag_from(OFFSET_INVALID, false), -1);
        assert_eq!(part(-1, -1).lag_from(40, false), -1);
        assert_eq!(part(100, 90).lag_from(120, false), 0);
    }
}
