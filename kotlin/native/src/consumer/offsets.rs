//! Commits, committed offsets, positions and watermarks.

use odradek_bindings::consumer::{CommitOffset, CommitSource, OFFSET_INVALID};

use super::NativeConsumer;
use crate::spawn::on_runtime;
use crate::types::to_core_list;
use crate::{GroupMetadata, NativeError, OffsetCommit, TopicPartition};

/// A partition's committed offset (`null` when the group has none).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CommittedOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The committed offset.
    pub offset: Option<i64>,
}

/// A partition's low and high watermarks.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Watermarks {
    /// The partition.
    pub partition: TopicPartition,
    /// Log start offset.
    pub low: i64,
    /// High watermark (the next offset to be written).
    pub high: i64,
}

impl NativeConsumer {
    /// The assigned partitions' positions (partitions whose position is not known yet, e.g.
    /// still being reset, are left out).
    async fn positions_to_commit(&self) -> Result<Vec<CommitOffset>, NativeError> {
        let assigned = self.client.assignment();
        let found = on_runtime(self.client.positions(assigned.clone())).await?;
        Ok(assigned
            .into_iter()
            .zip(found)
            .filter_map(|(tp, r)| {
                r.ok().filter(|o| *o >= 0).map(|offset| CommitOffset {
                    partition: tp,
                    offset,
                    metadata: None,
                })
            })
            .collect())
    }
}

#[uniffi::export]
impl NativeConsumer {
    /// Commits `offsets`, or (`null`) the positions of the assigned partitions: the offset of
    /// the next record `poll` returns, so a `seek` counts, as in the Java client's
    /// `commitSync()`. Nothing to commit is success.
    pub async fn commit(&self, offsets: Option<Vec<OffsetCommit>>) -> Result<(), NativeError> {
        let list: Vec<CommitOffset> = match offsets {
            Some(list) => list.iter().map(OffsetCommit::to_binding).collect(),
            None => self.positions_to_commit().await?,
        };
        if list.is_empty() {
            return Ok(());
        }
        let request = self.client.commit(CommitSource::Offsets(list))?;
        on_runtime(request).await?.into_result()?;
        Ok(())
    }

    /// The group's committed offsets of `partitions`.
    pub async fn committed(
        &self,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<CommittedOffset>, NativeError> {
        let found = on_runtime(self.client.committed(to_core_list(&partitions))).await??;
        Ok(found
            .into_iter()
            .map(|(tp, o)| CommittedOffset {
                partition: TopicPartition::from_core(&tp),
                offset: (o != OFFSET_INVALID && o >= 0).then_some(o),
            })
            .collect())
    }

    /// The offset of the next record `poll` will return for `partition`.
    pub async fn position(&self, partition: TopicPartition) -> Result<i64, NativeError> {
        let found = on_runtime(self.client.positions(vec![partition.to_core()])).await?;
        match found.into_iter().next() {
            Some(r) => Ok(r?),
            None => Err(odradek_bindings::ClientError::state("no position").into()),
        }
    }

    /// Low and high watermarks of each partition (looked up from the leaders).
    pub async fn watermarks(
        &self,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<Watermarks>, NativeError> {
        let mut out = Vec::with_capacity(partitions.len());
        for tp in partitions {
            let (low, high) = on_runtime(self.client.watermarks(tp.to_core())).await??;
            out.push(Watermarks {
                partition: tp,
                low,
                high,
            });
        }
        Ok(out)
    }

    /// The group identity for `send_offsets_to_transaction`; `null` without `group.id`.
    pub fn group_metadata(&self) -> Option<GroupMetadata> {
        self.client
            .group_metadata()
            .map(GroupMetadata::from_binding)
    }
}
