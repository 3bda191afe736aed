//! Commits, committed offsets, positions and watermarks.

use odradek_bindings::codes;
use odradek_bindings::consumer::{CommitSource, OFFSET_INVALID};

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

#[uniffi::export]
impl NativeConsumer {
    /// Commits `offsets`, or (`null`) the positions after the records `poll` returned. Nothing
    /// to commit is success, as in the Java client.
    pub async fn commit(&self, offsets: Option<Vec<OffsetCommit>>) -> Result<(), NativeError> {
        let stored = offsets.is_none();
        let source = match offsets {
            None => CommitSource::Stored,
            Some(list) => {
                CommitSource::Offsets(list.iter().map(OffsetCommit::to_binding).collect())
            }
        };
        let request = match self.client.commit(source) {
            Err(e) if stored && e.code() == codes::NO_OFFSET => return Ok(()),
            other => other?,
        };
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
