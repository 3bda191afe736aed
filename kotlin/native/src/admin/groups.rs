//! Consumer-group admin: list, describe, delete, and the groups' committed offsets.

use super::{partition_results, NativeAdmin, PartitionResult};
use crate::error::{info_of, info_of_code};
use crate::spawn::on_runtime;
use crate::types::{from_core_list, to_core_list};
use crate::{ErrorInfo, NativeError, OffsetCommit, TopicPartition};

/// A group as `list_groups` reports it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GroupListing {
    /// Group id.
    pub group_id: String,
    /// `consumer` for consumer groups.
    pub protocol_type: String,
    /// `Stable`, `Empty`, ... ("" when the broker does not say).
    pub state: String,
}

/// A member of a described group.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// The member's `client.id`.
    pub client_id: String,
    /// The member's host as the broker saw it.
    pub host: String,
    /// Partitions assigned to it.
    pub assignment: Vec<TopicPartition>,
}

/// A described group, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GroupDescription {
    /// Group id.
    pub group_id: String,
    /// State (`Stable`, `Empty`, ..., `Dead` for a group that does not exist).
    pub state: String,
    /// The assignor chosen (for consumer groups).
    pub protocol: String,
    /// Members.
    pub members: Vec<MemberDescription>,
    /// The group's error; `null` on success.
    pub error: Option<ErrorInfo>,
}

/// One group's outcome.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GroupResult {
    /// Group id.
    pub group_id: String,
    /// Its error (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...); `null` on success.
    pub error: Option<ErrorInfo>,
}

/// A group's committed offset of one partition.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GroupOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The committed offset; `null` when none.
    pub offset: Option<i64>,
    /// Metadata committed with it.
    pub metadata: String,
    /// The partition's error; `null` on success.
    pub error: Option<ErrorInfo>,
}

#[uniffi::export]
impl NativeAdmin {
    /// Every group of every broker; fails if a broker could not be asked.
    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, NativeError> {
        let admin = self.admin.clone();
        let per_broker = on_runtime(async move { admin.list_groups().await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        let mut out = Vec::new();
        for (_, r) in per_broker {
            let groups = r.map_err(|e| NativeError::core(&e))?;
            out.extend(groups.into_iter().map(|g| GroupListing {
                group_id: g.group_id,
                protocol_type: g.protocol_type,
                state: g.state,
            }));
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Ok(out)
    }

    /// State, protocol and members of each group.
    pub async fn describe_groups(
        &self,
        group_ids: Vec<String>,
    ) -> Result<Vec<GroupDescription>, NativeError> {
        let admin = self.admin.clone();
        let described = on_runtime(async move {
            let refs: Vec<&str> = group_ids.iter().map(String::as_str).collect();
            admin.describe_groups(&refs).await
        })
        .await?
        .map_err(|e| NativeError::core(&e))?;
        Ok(described
            .into_iter()
            .map(|(group_id, r)| match r {
                Ok(d) => GroupDescription {
                    group_id,
                    state: d.state,
                    protocol: d.protocol,
                    members: d
                        .members
                        .into_iter()
                        .map(|m| MemberDescription {
                            member_id: m.member_id,
                            group_instance_id: m.group_instance_id,
                            client_id: m.client_id,
                            host: m.client_host,
                            assignment: from_core_list(&m.assignment),
                        })
                        .collect(),
                    error: None,
                },
                Err(e) => GroupDescription {
                    group_id,
                    state: String::new(),
                    protocol: String::new(),
                    members: Vec::new(),
                    error: Some(info_of(&e)),
                },
            })
            .collect())
    }

    /// Deletes groups without members.
    pub async fn delete_groups(
        &self,
        group_ids: Vec<String>,
    ) -> Result<Vec<GroupResult>, NativeError> {
        let admin = self.admin.clone();
        let done = on_runtime(async move {
            let refs: Vec<&str> = group_ids.iter().map(String::as_str).collect();
            admin.delete_groups(&refs).await
        })
        .await?
        .map_err(|e| NativeError::core(&e))?;
        Ok(done
            .into_iter()
            .map(|(group_id, r)| GroupResult {
                group_id,
                error: r.err().map(|e| info_of(&e)),
            })
            .collect())
    }

    /// A group's committed offsets: of `partitions`, or (`null`) of every partition it
    /// committed.
    pub async fn list_group_offsets(
        &self,
        group_id: String,
        partitions: Option<Vec<TopicPartition>>,
    ) -> Result<Vec<GroupOffset>, NativeError> {
        let admin = self.admin.clone();
        let wanted = partitions.as_deref().map(to_core_list);
        let found =
            on_runtime(async move { admin.list_group_offsets(&group_id, wanted.as_deref()).await })
                .await?
                .map_err(|e| NativeError::core(&e))?;
        Ok(found
            .into_iter()
            .map(|o| GroupOffset {
                partition: TopicPartition::from_core(&o.partition),
                offset: o.offset,
                metadata: o.metadata,
                error: o.error.map(info_of_code),
            })
            .collect())
    }

    /// Sets a group's committed offsets (the group must have no active members).
    pub async fn alter_group_offsets(
        &self,
        group_id: String,
        offsets: Vec<OffsetCommit>,
    ) -> Result<Vec<PartitionResult>, NativeError> {
        let admin = self.admin.clone();
        let list: Vec<_> = offsets
            .iter()
            .map(|o| (o.partition.to_core(), o.offset))
            .collect();
        let done = on_runtime(async move { admin.alter_group_offsets(&group_id, &list).await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(partition_results(done))
    }

    /// Deletes a group's committed offsets of `partitions`.
    pub async fn delete_group_offsets(
        &self,
        group_id: String,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<PartitionResult>, NativeError> {
        let admin = self.admin.clone();
        let list = to_core_list(&partitions);
        let done = on_runtime(async move { admin.delete_group_offsets(&group_id, &list).await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(partition_results(done))
    }
}
