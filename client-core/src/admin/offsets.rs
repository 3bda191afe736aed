//! ListOffsets and DeleteRecords, sent to each partition's leader.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DeleteRecordsRequest, ListOffsetsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{answers_by_key, operation_ms, Call, Outcome, Route};
use super::types::{ListedOffset, OffsetSpec};
use crate::net::Connection;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

type Key = (String, i32);

fn key(tp: &TopicPartition) -> Key {
    (tp.topic.to_string(), tp.partition)
}

/// A partition-level answer is retried on any retriable code: an UNKNOWN_TOPIC_OR_PARTITION from
/// a leader is re-checked against fresh metadata, which ends the item if the topic is gone.
fn retry_partition(code: ErrorCode) -> bool {
    code.is_retriable()
}

/// Groups `(partition, value)` pairs by topic, in a stable order.
fn by_topic<'a, T>(
    items: impl Iterator<Item = (&'a TopicPartition, T)>,
) -> BTreeMap<String, Vec<(i32, T)>> {
    let mut topics: BTreeMap<String, Vec<(i32, T)>> = BTreeMap::new();
    for (tp, v) in items {
        topics
            .entry(tp.topic.to_string())
            .or_default()
            .push((tp.partition, v));
    }
    topics
}

/// Splits items into rounds in which no key appears twice, keeping their order.
fn rounds(items: &[usize], key_of: impl Fn(usize) -> Key) -> Vec<Vec<usize>> {
    let mut rounds: Vec<(std::collections::HashSet<Key>, Vec<usize>)> = Vec::new();
    for &i in items {
        let k = key_of(i);
        match rounds.iter_mut().find(|(keys, _)| !keys.contains(&k)) {
            Some((keys, round)) => {
                keys.insert(k);
                round.push(i);
            }
            None => rounds.push(([k].into_iter().collect(), vec![i])),
        }
    }
    rounds.into_iter().map(|(_, round)| round).collect()
}

/// ListOffsets for `(partition, spec)` queries.
pub(crate) struct ListOffsets<'a> {
    pub(crate) queries: &'a [(TopicPartition, OffsetSpec)],
    /// Read committed: `Latest` is the last stable offset, not the high watermark.
    pub(crate) read_committed: bool,
}

impl Call for ListOffsets<'_> {
    type Output = Option<ListedOffset>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        let items: Vec<(usize, &TopicPartition)> =
            pending.iter().map(|&i| (i, &self.queries[i].0)).collect();
        admin.leader_routes(&items).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Option<ListedOffset>>)>> {
        let version = connection.versions().version(ApiKey::ListOffsets)?;
        // MaxTimestamp needs v7; against an older broker those items fail alone.
        let (sendable, unsupported): (Vec<usize>, Vec<usize>) = items
            .iter()
            .partition(|&&i| self.queries[i].1 != OffsetSpec::MaxTimestamp || version >= 7);
        let mut out: Vec<(usize, Outcome<Option<ListedOffset>>)> = unsupported
            .into_iter()
            .map(|i| {
                (
                    i,
                    Outcome::Done(Err(Error::Kafka(ErrorCode::UnsupportedVersion))),
                )
            })
            .collect();
        for round in rounds(&sendable, |i| key(&self.queries[i].0)) {
            out.extend(
                self.send_round(connection, version, &round, timeout_ms)
                    .await?,
            );
        }
        Ok(out)
    }
}

impl ListOffsets<'_> {
    /// One ListOffsets request, in which each partition appears once (Kafka rejects requests
    /// naming a partition twice).
    async fn send_round(
        &self,
        connection: &Connection,
        version: i16,
        sendable: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Option<ListedOffset>>)>> {
        let topics = by_topic(sendable.iter().map(|&i| {
            let (tp, spec) = &self.queries[i];
            (tp, spec.wire())
        }))
        .into_iter()
        .map(|(name, partitions)| {
            ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(name)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(p, ts)| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_timestamp(ts)
                        })
                        .collect(),
                )
        })
        .collect();
        let mut request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(i8::from(self.read_committed))
            .with_topics(topics);
        if version >= 10 {
            request = request.with_timeout_ms(timeout_ms);
        }
        let response = connection.send_versioned(&request, version).await?;
        let mut answers: HashMap<Key, (ErrorCode, Option<ListedOffset>)> = HashMap::new();
        for t in response.topics {
            for p in t.partitions {
                let found = (p.offset >= 0).then_some(ListedOffset {
                    offset: p.offset,
                    timestamp: (p.timestamp >= 0).then_some(p.timestamp),
                    leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                });
                answers.insert(
                    (t.name.to_string(), p.partition_index),
                    (ErrorCode::from_code(p.error_code), found),
                );
            }
        }
        Ok(answers_by_key(
            sendable,
            |i| key(&self.queries[i].0),
            answers,
            retry_partition,
        ))
    }
}

/// DeleteRecords: moves each partition's log start offset to the given offset.
pub(crate) struct DeleteRecords<'a> {
    pub(crate) before: &'a [(TopicPartition, i64)],
    pub(crate) operation_timeout: Option<std::time::Duration>,
}

impl Call for DeleteRecords<'_> {
    type Output = i64;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        let items: Vec<(usize, &TopicPartition)> =
            pending.iter().map(|&i| (i, &self.before[i].0)).collect();
        admin.leader_routes(&items).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<i64>)>> {
        let mut out = Vec::with_capacity(items.len());
        for round in rounds(items, |i| key(&self.before[i].0)) {
            out.extend(self.send_round(connection, &round, timeout_ms).await?);
        }
        Ok(out)
    }
}

impl DeleteRecords<'_> {
    /// One DeleteRecords request, naming each partition once.
    async fn send_round(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<i64>)>> {
        let topics = by_topic(items.iter().map(|&i| {
            let (tp, offset) = &self.before[i];
            (tp, *offset)
        }))
        .into_iter()
        .map(|(name, partitions)| {
            DeleteRecordsTopic::default()
                .with_name(TopicName(StrBytes::from_string(name)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(p, offset)| {
                            DeleteRecordsPartition::default()
                                .with_partition_index(p)
                                .with_offset(offset)
                        })
                        .collect(),
                )
        })
        .collect();
        let request = DeleteRecordsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(operation_ms(self.operation_timeout, timeout_ms));
        let response = connection.send(&request).await?;
        let mut answers: HashMap<Key, (ErrorCode, i64)> = HashMap::new();
        for t in response.topics {
            for p in t.partitions {
                answers.insert(
                    (t.name.to_string(), p.partition_index),
                    (ErrorCode::from_code(p.error_code), p.low_watermark),
                );
            }
        }
        Ok(answers_by_key(
            items,
            |i| key(&self.before[i].0),
            answers,
            retry_partition,
        ))
    }
}
