//! Changing a group's committed offsets from the admin client: OffsetCommit outside any
//! generation (Kafka's `alterConsumerGroupOffsets`: the group must have no active members) and
//! OffsetDelete (refused per partition with GROUP_SUBSCRIBED_TO_TOPIC while a member consumes
//! the topic). Both go to the group's coordinator, found again on every attempt.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, OffsetDeleteRequest, TopicName};

use super::client::Admin;
use super::driver::{Call, Outcome, Route};
use super::groups::{coordinator_error, coordinator_routes, sb};
use crate::net::Connection;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

/// Per-partition answers of one group call.
pub(crate) type PartitionCodes = Vec<(TopicPartition, ErrorCode)>;

/// Groups partitions by topic, keeping the callers' order.
fn by_topic<T>(items: &[(TopicPartition, T)]) -> Vec<(&str, Vec<(i32, &T)>)> {
    let mut topics: Vec<(&str, Vec<(i32, &T)>)> = Vec::new();
    for (tp, v) in items {
        match topics.iter_mut().find(|(t, _)| *t == tp.topic.as_ref()) {
            Some((_, parts)) => parts.push((tp.partition, v)),
            None => topics.push((tp.topic.as_ref(), vec![(tp.partition, v)])),
        }
    }
    topics
}

/// Flattens `(topic, [(partition, error code)])` answers into per-partition codes.
fn partition_codes(
    topics: impl Iterator<Item = (kafka_protocol::protocol::StrBytes, Vec<(i32, i16)>)>,
) -> PartitionCodes {
    let mut out = Vec::new();
    for (name, partitions) in topics {
        let topic: std::sync::Arc<str> = name.as_str().into();
        for (partition, code) in partitions {
            let tp = TopicPartition {
                topic: topic.clone(),
                partition,
            };
            out.push((tp, ErrorCode::from_code(code)));
        }
    }
    out
}

/// The single item's outcome: retry on a coordinator move, else the per-partition codes.
fn outcome(top: ErrorCode, codes: PartitionCodes) -> Outcome<PartitionCodes> {
    if coordinator_error(top) {
        Outcome::Retry(Error::Kafka(top))
    } else if let Some((_, code)) = codes.iter().find(|(_, c)| coordinator_error(*c)) {
        Outcome::Retry(Error::Kafka(*code))
    } else if !top.is_ok() {
        Outcome::Done(Err(Error::Kafka(top)))
    } else {
        Outcome::Done(Ok(codes))
    }
}

/// OffsetCommit of `offsets` for `group` with no member id and generation -1.
pub(crate) struct AlterGroupOffsets<'a> {
    pub group: &'a str,
    pub offsets: &'a [(TopicPartition, i64)],
}

impl Call for AlterGroupOffsets<'_> {
    type Output = PartitionCodes;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        coordinator_routes(admin, &[self.group], pending).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<PartitionCodes>)>> {
        let topics = by_topic(self.offsets)
            .into_iter()
            .map(|(topic, parts)| {
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(sb(topic)))
                    .with_partitions(
                        parts
                            .into_iter()
                            .map(|(p, offset)| {
                                OffsetCommitRequestPartition::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(*offset)
                                    .with_committed_leader_epoch(-1)
                                    .with_committed_metadata(Some(sb("")))
                            })
                            .collect(),
                    )
            })
            .collect();
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(sb(self.group)))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(sb(""))
            .with_retention_time_ms(-1)
            .with_topics(topics);
        let response = connection.send(&request).await?;
        let codes = partition_codes(response.topics.into_iter().map(|t| {
            let parts = t.partitions.into_iter();
            (
                t.name.0,
                parts.map(|p| (p.partition_index, p.error_code)).collect(),
            )
        }));
        let o = outcome(ErrorCode::NoError, codes);
        Ok(items.iter().map(|&i| (i, clone_outcome(&o))).collect())
    }
}

/// OffsetDelete of `partitions` for `group`.
pub(crate) struct DeleteGroupOffsets<'a> {
    pub group: &'a str,
    pub partitions: &'a [TopicPartition],
}

impl Call for DeleteGroupOffsets<'_> {
    type Output = PartitionCodes;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        coordinator_routes(admin, &[self.group], pending).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<PartitionCodes>)>> {
        let keyed: Vec<(TopicPartition, ())> =
            self.partitions.iter().map(|tp| (tp.clone(), ())).collect();
        let topics = by_topic(&keyed)
            .into_iter()
            .map(|(topic, parts)| {
                OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(sb(topic)))
                    .with_partitions(
                        parts
                            .into_iter()
                            .map(|(p, _)| {
                                OffsetDeleteRequestPartition::default().with_partition_index(p)
                            })
                            .collect(),
                    )
            })
            .collect();
        let request = OffsetDeleteRequest::default()
            .with_group_id(GroupId(sb(self.group)))
            .with_topics(topics);
        let response = connection.send(&request).await?;
        let codes = partition_codes(response.topics.into_iter().map(|t| {
            let parts = t.partitions.into_iter();
            (
                t.name.0,
                parts.map(|p| (p.partition_index, p.error_code)).collect(),
            )
        }));
        let o = outcome(ErrorCode::from_code(response.error_code), codes);
        Ok(items.iter().map(|&i| (i, clone_outcome(&o))).collect())
    }
}

/// The driver hands every item its own outcome; errors are not `Clone`, Kafka codes are.
fn clone_outcome(o: &Outcome<PartitionCodes>) -> Outcome<PartitionCodes> {
    match o {
        Outcome::Done(Ok(v)) => Outcome::Done(Ok(v.clone())),
        Outcome::Done(Err(e)) => Outcome::Done(Err(Error::Kafka(e.kafka_code()))),
        Outcome::Retry(e) => Outcome::Retry(Error::Kafka(e.kafka_code())),
    }
}
