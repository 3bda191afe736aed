//! The admin client: topics, partitions, configs, offsets, records and cluster views.
//!
//! Every call is async and takes a list of items; it returns one result per item, in input
//! order, so one bad topic does not hide the others' outcomes. Each item's error is the broker's
//! Kafka code for it (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
//! INVALID_CONFIG, …) or the request-level failure that kept it from an answer. The call itself
//! fails only when it got nowhere: no broker answered within `default.api.timeout.ms`.
//!
//! Requests go where Kafka 4 clients send them (see `route`): topic admin through the
//! controller id from metadata (in KRaft any broker forwards), broker configs to that broker,
//! ListOffsets and DeleteRecords to each partition's leader. Retriable failures are retried with
//! backoff within `default.api.timeout.ms`, each request bounded by `request.timeout.ms` (see
//! `driver`). Versions are negotiated per connection and every request sets only fields that
//! exist in the version chosen. The admin client never auto-creates topics.

mod acl_types;
mod acls;
mod client;
mod configs;
mod describe;
mod driver;
mod elections;
mod group_offsets;
mod groups;
mod offsets;
mod quotas;
mod route;
mod scram;
mod topics;
mod types;

pub use acl_types::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType,
};
pub use acls::DeletedAcl;
pub use client::Admin;
pub use elections::ElectionType;
pub use groups::{GroupDescription, GroupListing, GroupMember, GroupOffset};
pub use quotas::{QuotaAlteration, QuotaEntity, QuotaFilter, QuotaMatch};
pub use scram::{
    ScramAlteration, ScramCredentialInfo, ScramMechanism, UserScramCredentials, SCRAM_ITERATIONS,
};
pub use types::{
    AlterConfigOp, BrokerDescription, ClusterDescription, ConfigEntry, ConfigOp, ConfigResource,
    ConfigSource, CreatedTopic, ListedOffset, LogDirDescription, NewTopic, OffsetSpec,
    PartitionDescription, ReplicaInfo, TopicDescription, TopicListing,
};

use std::time::Duration;

use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

impl Admin {
    /// Creates topics. With `validate_only` the broker checks the request (name, partitions,
    /// replication factor, configs) without creating anything. Per topic: its id, partition
    /// count, replication factor and configs, or e.g. TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
    /// INVALID_REPLICATION_FACTOR, INVALID_CONFIG.
    pub async fn create_topics(
        &self,
        topics: &[NewTopic],
        validate_only: bool,
    ) -> Result<Vec<(String, Result<CreatedTopic>)>> {
        self.create_topics_within(topics, validate_only, None).await
    }

    /// [`Admin::create_topics`] with an operation timeout (the Java and librdkafka admin
    /// clients' `operation_timeout`): the controller gets at most that long to complete the
    /// creation before it answers REQUEST_TIMED_OUT for a topic (which may still be created
    /// later). `None`: as long as the request itself may take.
    pub async fn create_topics_within(
        &self,
        topics: &[NewTopic],
        validate_only: bool,
        operation_timeout: Option<Duration>,
    ) -> Result<Vec<(String, Result<CreatedTopic>)>> {
        let call = topics::CreateTopics {
            topics,
            validate_only,
            operation_timeout,
        };
        let results = driver::run(self, &call, topics.len()).await?;
        Ok(topics.iter().map(|t| t.name.clone()).zip(results).collect())
    }

    /// Deletes topics by name (UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist).
    pub async fn delete_topics(&self, topics: &[&str]) -> Result<Vec<(String, Result<()>)>> {
        self.delete_topics_within(topics, None).await
    }

    /// [`Admin::delete_topics`] with an operation timeout (see
    /// [`Admin::create_topics_within`]).
    pub async fn delete_topics_within(
        &self,
        topics: &[&str],
        operation_timeout: Option<Duration>,
    ) -> Result<Vec<(String, Result<()>)>> {
        let call = topics::DeleteTopics {
            topics,
            operation_timeout,
        };
        let results = driver::run(self, &call, topics.len()).await?;
        Ok(topics.iter().map(|t| t.to_string()).zip(results).collect())
    }

    /// Elects leaders for `partitions` (ElectLeaders): the preferred replica, or for a
    /// partition without a leader any live replica (unclean). Per partition: done, or
    /// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE.
    pub async fn elect_leaders(
        &self,
        election: elections::ElectionType,
        partitions: &[(&str, i32)],
    ) -> Result<Vec<((String, i32), Result<()>)>> {
        let call = elections::ElectLeaders {
            election,
            partitions,
        };
        let results = driver::run(self, &call, partitions.len()).await?;
        Ok(partitions
            .iter()
            .map(|(t, p)| (t.to_string(), *p))
            .zip(results)
            .collect())
    }

    /// Raises each topic's partition count to `new_total` (INVALID_PARTITIONS when it is not
    /// larger than the current count).
    pub async fn create_partitions(
        &self,
        topics: &[(&str, i32)],
        validate_only: bool,
    ) -> Result<Vec<(String, Result<()>)>> {
        self.create_partitions_within(topics, validate_only, None)
            .await
    }

    /// [`Admin::create_partitions`] with an operation timeout (see
    /// [`Admin::create_topics_within`]).
    pub async fn create_partitions_within(
        &self,
        topics: &[(&str, i32)],
        validate_only: bool,
        operation_timeout: Option<Duration>,
    ) -> Result<Vec<(String, Result<()>)>> {
        let call = topics::CreatePartitions {
            topics,
            validate_only,
            operation_timeout,
        };
        let results = driver::run(self, &call, topics.len()).await?;
        Ok(topics
            .iter()
            .map(|t| t.0.to_string())
            .zip(results)
            .collect())
    }

    /// Every config entry of each resource, with its value, source and flags.
    pub async fn describe_configs(
        &self,
        resources: &[ConfigResource],
    ) -> Result<Vec<(ConfigResource, Result<Vec<ConfigEntry>>)>> {
        let call = configs::DescribeConfigs { resources };
        let results = driver::run(self, &call, resources.len()).await?;
        Ok(resources.iter().cloned().zip(results).collect())
    }

    /// Legacy AlterConfigs: each resource's overrides become exactly the given set; keys left
    /// out revert to their defaults. Prefer [`Admin::incremental_alter_configs`].
    pub async fn alter_configs(
        &self,
        changes: &[(ConfigResource, Vec<(String, String)>)],
        validate_only: bool,
    ) -> Result<Vec<(ConfigResource, Result<()>)>> {
        let call = configs::AlterConfigs {
            changes,
            validate_only,
        };
        let results = driver::run(self, &call, changes.len()).await?;
        Ok(changes.iter().map(|c| c.0.clone()).zip(results).collect())
    }

    /// IncrementalAlterConfigs: SET, DELETE, APPEND or SUBTRACT individual keys, leaving the
    /// others as they are.
    pub async fn incremental_alter_configs(
        &self,
        changes: &[(ConfigResource, Vec<AlterConfigOp>)],
        validate_only: bool,
    ) -> Result<Vec<(ConfigResource, Result<()>)>> {
        let call = configs::IncrementalAlterConfigs {
            changes,
            validate_only,
        };
        let results = driver::run(self, &call, changes.len()).await?;
        Ok(changes.iter().map(|c| c.0.clone()).zip(results).collect())
    }

    /// Looks up offsets (read_uncommitted): per query, the offset found, or `None` when no
    /// record matches (a timestamp after the last record, or an empty partition for
    /// `MaxTimestamp`). A partition may be queried more than once.
    pub async fn list_offsets(
        &self,
        queries: &[(TopicPartition, OffsetSpec)],
    ) -> Result<Vec<(TopicPartition, Result<Option<ListedOffset>>)>> {
        self.list_offsets_isolated(queries, false).await
    }

    /// [`Admin::list_offsets`] at an isolation level: with `read_committed`, `Latest` is each
    /// partition's last stable offset (the end of what a read_committed consumer can read).
    pub async fn list_offsets_isolated(
        &self,
        queries: &[(TopicPartition, OffsetSpec)],
        read_committed: bool,
    ) -> Result<Vec<(TopicPartition, Result<Option<ListedOffset>>)>> {
        let call = offsets::ListOffsets {
            queries,
            read_committed,
        };
        let results = driver::run(self, &call, queries.len()).await?;
        Ok(queries.iter().map(|q| q.0.clone()).zip(results).collect())
    }

    /// Deletes every record before the given offset (-1: the high watermark) of each partition;
    /// per partition, its new low watermark.
    pub async fn delete_records(
        &self,
        before: &[(TopicPartition, i64)],
    ) -> Result<Vec<(TopicPartition, Result<i64>)>> {
        self.delete_records_within(before, None).await
    }

    /// [`Admin::delete_records`] with an operation timeout: how long each leader may wait for
    /// its followers to move their low watermark too (see [`Admin::create_topics_within`]).
    pub async fn delete_records_within(
        &self,
        before: &[(TopicPartition, i64)],
        operation_timeout: Option<Duration>,
    ) -> Result<Vec<(TopicPartition, Result<i64>)>> {
        let call = offsets::DeleteRecords {
            before,
            operation_timeout,
        };
        let results = driver::run(self, &call, before.len()).await?;
        Ok(before.iter().map(|q| q.0.clone()).zip(results).collect())
    }

    /// The cluster id, controller and brokers.
    pub async fn describe_cluster(&self) -> Result<ClusterDescription> {
        one(driver::run(self, &describe::DescribeCluster, 1).await?)
    }

    /// The log directories of every broker, per broker id.
    pub async fn describe_log_dirs(&self) -> Result<Vec<(i32, Result<Vec<LogDirDescription>>)>> {
        let brokers: Vec<i32> = self
            .describe_cluster()
            .await?
            .brokers
            .iter()
            .map(|b| b.id)
            .collect();
        let call = describe::DescribeLogDirs { brokers: &brokers };
        let results = driver::run(self, &call, brokers.len()).await?;
        Ok(brokers.iter().copied().zip(results).collect())
    }

    /// Every topic, internal ones included (see [`TopicListing::internal`]), sorted by name.
    pub async fn list_topics(&self) -> Result<Vec<TopicListing>> {
        one(driver::run(self, &describe::ListTopics, 1).await?)
    }

    /// Partitions, leaders, replicas, topic id and internal flag of each topic
    /// (UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist).
    pub async fn describe_topics(
        &self,
        topics: &[&str],
    ) -> Result<Vec<(String, Result<TopicDescription>)>> {
        let results = driver::run(self, &describe::DescribeTopics { topics }, topics.len()).await?;
        Ok(topics.iter().map(|t| t.to_string()).zip(results).collect())
    }

    /// Every group each broker coordinates, per broker id (a broker's failure does not hide
    /// the others' groups).
    pub async fn list_groups(&self) -> Result<Vec<(i32, Result<Vec<GroupListing>>)>> {
        let brokers: Vec<i32> = self
            .cluster_metadata()
            .await?
            .brokers
            .keys()
            .copied()
            .collect();
        let call = groups::ListGroups { brokers: &brokers };
        let results = driver::run(self, &call, brokers.len()).await?;
        Ok(brokers.into_iter().zip(results).collect())
    }

    /// State, protocol and members (with their assignments) of each group, from its
    /// coordinator (reported as `coordinator`). A group that does not exist is described with
    /// state `Dead`.
    pub async fn describe_groups(
        &self,
        groups: &[&str],
    ) -> Result<Vec<(String, Result<GroupDescription>)>> {
        let results = driver::run(self, &groups::DescribeGroups::new(groups), groups.len()).await?;
        Ok(groups.iter().map(|g| g.to_string()).zip(results).collect())
    }

    /// Deletes groups that have no members (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for
    /// an unknown group).
    pub async fn delete_groups(&self, groups: &[&str]) -> Result<Vec<(String, Result<()>)>> {
        let results = driver::run(self, &groups::DeleteGroups { groups }, groups.len()).await?;
        Ok(groups.iter().map(|g| g.to_string()).zip(results).collect())
    }

    /// A group's committed offsets: of `partitions`, or of every partition it committed.
    pub async fn list_group_offsets(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<GroupOffset>> {
        let call = groups::ListGroupOffsets { group, partitions };
        one(driver::run(self, &call, 1).await?)
    }

    /// Sets a group's committed offsets (the group must have no active members: Kafka answers
    /// UNKNOWN_MEMBER_ID otherwise). One result per partition.
    pub async fn alter_group_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let call = group_offsets::AlterGroupOffsets { group, offsets };
        Ok(per_partition(one(driver::run(self, &call, 1).await?)?))
    }

    /// Deletes a group's committed offsets (GROUP_SUBSCRIBED_TO_TOPIC for a partition whose
    /// topic a member still consumes; GROUP_ID_NOT_FOUND for an unknown group). One result per
    /// partition.
    pub async fn delete_group_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let call = group_offsets::DeleteGroupOffsets { group, partitions };
        Ok(per_partition(one(driver::run(self, &call, 1).await?)?))
    }
}

/// Per-partition codes as results.
fn per_partition(codes: Vec<(TopicPartition, ErrorCode)>) -> Vec<(TopicPartition, Result<()>)> {
    codes
        .into_iter()
        .map(|(tp, c)| (tp, c.into_result().map_err(Error::Kafka)))
        .collect()
}

/// The single result of a one-item call.
fn one<T>(results: Vec<Result<T>>) -> Result<T> {
    results
        .into_iter()
        .next()
        .unwrap_or_else(|| Err(Error::malformed("admin call", "no result")))
}
