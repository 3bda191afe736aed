//! Transactional offset commits (TxnOffsetCommit, KIP-98/KIP-447): offsets a transactional
//! producer commits for a consumer group are written to `__consumer_offsets` as a
//! transactional batch of ordinary offset records, held as *pending* per producer id, and
//! published when the transaction's COMMIT marker reaches that `__consumer_offsets` partition
//! (dropped on ABORT). Until then OffsetFetch with `require_stable` answers
//! UNSTABLE_OFFSET_COMMIT for those partitions. Replay at startup follows the same rule, so a
//! transaction still open at a restart keeps its offsets pending.

use std::collections::HashSet;

use odradek::records::{BatchBuilder, Compression};
use odradek::ErrorCode;

use super::group::Group;
use super::storage::{self, CommittedOffset};
use super::types::{OffsetToCommit, PartitionResult, TopicPartitionKey, TxnCommit, OFFSETS_TOPIC};
use super::GroupCoordinator;
use crate::clock::now_ms;

impl GroupCoordinator {
    /// TxnOffsetCommit: validates the member (only when the client names one, as Kafka does),
    /// appends the offsets as a transactional batch and keeps them pending. The caller has
    /// verified that the group's `__consumer_offsets` partition is in the transaction.
    pub fn txn_commit(&self, req: TxnCommit) -> Vec<PartitionResult> {
        let all = |code: ErrorCode, offsets: Vec<OffsetToCommit>| -> Vec<PartitionResult> {
            offsets.into_iter().map(|(tp, ..)| (tp, code)).collect()
        };
        if req.group_id.is_empty() {
            return all(ErrorCode::InvalidGroupId, req.offsets);
        }
        let mut groups = self.lock();
        // As Kafka: only a commit from outside group management creates a group.
        if req.generation >= 0 && !groups.contains_key(&req.group_id) {
            return all(ErrorCode::IllegalGeneration, req.offsets);
        }
        let group = groups
            .entry(req.group_id.clone())
            .or_insert_with(|| Group::new(&req.group_id, now_ms()));
        let anonymous = req.generation < 0 && req.member_id.is_empty() && req.instance_id.is_none();
        if !anonymous {
            let valid = match group.consumer.as_ref() {
                // A consumer-protocol member commits with its member epoch; a stale one is
                // ILLEGAL_GENERATION here, as in Kafka.
                Some(c) => c
                    .validate_commit(&req.member_id, req.generation, i16::MAX)
                    .map_err(|code| match code {
                        ErrorCode::StaleMemberEpoch => ErrorCode::IllegalGeneration,
                        other => other,
                    }),
                None => group.validate_commit(
                    &req.member_id,
                    req.generation,
                    req.instance_id.as_deref(),
                ),
            };
            if let Err(code) = valid {
                return all(code, req.offsets);
            }
        }
        let now = now_ms();
        let mut results = Vec::with_capacity(req.offsets.len());
        let mut accepted = Vec::new();
        let mut builder = BatchBuilder::new(Compression::None)
            .producer(req.producer_id, req.producer_epoch, -1)
            .transactional(true);
        for (tp, offset, leader_epoch, metadata) in req.offsets {
            let metadata = metadata.unwrap_or_default();
            let known = self.partition_exists(&tp.0, tp.1);
            let code = if metadata.len() > self.max_metadata {
                ErrorCode::OffsetMetadataTooLarge
            } else if !known {
                ErrorCode::UnknownTopicOrPartition
            } else {
                ErrorCode::NoError
            };
            if code.is_ok() {
                let c = CommittedOffset {
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp: now,
                };
                let (k, v) = storage::offset_record(&req.group_id, &tp.0, tp.1, Some(&c));
                if builder.append(now, Some(&k), v.as_deref(), &[]).is_err() {
                    results.push((tp, ErrorCode::UnknownServerError));
                    continue;
                }
                accepted.push((tp.clone(), c));
            }
            results.push((tp, code));
        }
        if accepted.is_empty() {
            return results;
        }
        let written = self.append_txn_batch(&req.group_id, builder);
        match written {
            Ok(()) => {
                let pending = group.pending_txn.entry(req.producer_id).or_default();
                for (tp, c) in accepted {
                    pending.insert(tp, c);
                }
                results
            }
            Err(code) => results
                .into_iter()
                .map(|(tp, c)| (tp, if c.is_ok() { code } else { c }))
                .collect(),
        }
    }

    fn append_txn_batch(&self, group_id: &str, builder: BatchBuilder) -> Result<(), ErrorCode> {
        self.ensure_topic()
            .map_err(|_| ErrorCode::CoordinatorNotAvailable)?;
        let partition = self
            .log
            .topics
            .get(OFFSETS_TOPIC)
            .and_then(|t| t.partition(self.offsets_partition(group_id)))
            .ok_or(ErrorCode::CoordinatorNotAvailable)?;
        let batch = builder.build().map_err(|_| ErrorCode::UnknownServerError)?;
        match partition.append_from_coordinator(batch, now_ms()) {
            Ok(_) => Ok(()),
            Err(e) if e.code() == ErrorCode::InvalidProducerEpoch => {
                Err(ErrorCode::InvalidProducerEpoch)
            }
            Err(e) => {
                tracing::warn!(group = group_id, error = %e, "persisting transactional offsets failed");
                Err(ErrorCode::CoordinatorNotAvailable)
            }
        }
    }

    /// A transaction's marker reached `__consumer_offsets` partition `partition`: publishes
    /// (commit) or drops (abort) the pending offsets of `producer_id` in the groups there.
    pub fn complete_txn(&self, partition: i32, producer_id: i64, commit: bool) {
        let mut groups = self.lock();
        for group in groups.values_mut() {
            if self.offsets_partition(&group.id) != partition {
                continue;
            }
            let Some(pending) = group.pending_txn.remove(&producer_id) else {
                continue;
            };
            if commit {
                group.offsets.extend(pending);
            }
        }
    }

    /// The partitions of `group_id` with offsets pending in an open transaction.
    pub fn unstable_partitions(&self, group_id: &str) -> HashSet<TopicPartitionKey> {
        self.lock()
            .get(group_id)
            .map(|g| {
                g.pending_txn
                    .values()
                    .flat_map(|m| m.keys().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }
}
