//! Choosing the broker for each admin request, as Kafka 4 clients do.
//!
//! - Topic admin (CreateTopics, DeleteTopics, CreatePartitions) and topic config changes go to the
//!   controller id from metadata. In KRaft that id names a broker (any broker forwards these
//!   requests to the active controller); when it is unknown, any broker will do.
//! - Broker-config requests go to that broker; reads that any broker can answer (Metadata,
//!   DescribeCluster, topic DescribeConfigs) go to any broker.
//! - Partition-level requests (ListOffsets, DeleteRecords) go to each partition's leader, found
//!   with a Metadata request that never auto-creates topics.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::Route;
use crate::cluster::ClusterMetadata;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

impl Admin {
    /// Makes the next routing step refresh metadata and, for "any broker" requests, move on to
    /// another broker.
    pub(crate) fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
        self.rotation.fetch_add(1, Ordering::Relaxed);
    }

    /// Brokers and controller, refreshed when stale, empty or older than `metadata.max.age.ms`.
    pub(crate) async fn cluster_metadata(&self) -> Result<Arc<ClusterMetadata>> {
        let cached = self.cluster.metadata();
        let stale = self.stale.swap(false, Ordering::AcqRel);
        if !stale
            && !cached.brokers.is_empty()
            && cached.age() < self.cluster.config().metadata_max_age
        {
            return Ok(cached);
        }
        match self.cluster.refresh().await {
            Ok(m) if !m.brokers.is_empty() => Ok(m),
            Ok(_) => {
                self.stale.store(true, Ordering::Release);
                Err(Error::Kafka(ErrorCode::BrokerNotAvailable))
            }
            Err(e) => {
                self.stale.store(true, Ordering::Release);
                Err(e)
            }
        }
    }

    /// The controller id from metadata when it names a known broker, else any broker.
    pub(crate) async fn controller_node(&self) -> Result<i32> {
        let meta = self.cluster_metadata().await?;
        if meta.brokers.contains_key(&meta.controller) {
            return Ok(meta.controller);
        }
        self.any_node().await
    }

    /// Some broker; successive failures rotate through all of them.
    pub(crate) async fn any_node(&self) -> Result<i32> {
        let meta = self.cluster_metadata().await?;
        let ids: BTreeSet<i32> = meta.brokers.keys().copied().collect();
        let n = self.rotation.load(Ordering::Relaxed) % ids.len().max(1);
        ids.into_iter()
            .nth(n)
            .ok_or(Error::Kafka(ErrorCode::BrokerNotAvailable))
    }

    /// A Metadata request for `topics` (`None`: every topic) to any broker, never auto-creating.
    pub(crate) async fn topics_metadata(
        &self,
        topics: Option<&[String]>,
    ) -> Result<MetadataResponse> {
        let node = self.any_node().await?;
        let connection = self.cluster.connection(node).await?;
        metadata_request(&connection, topics).await
    }

    /// Routes partition-level items to their leaders.
    pub(crate) async fn leader_routes(
        &self,
        items: &[(usize, &TopicPartition)],
    ) -> Result<Vec<(usize, Route)>> {
        let topics: BTreeSet<String> = items.iter().map(|(_, tp)| tp.topic.to_string()).collect();
        let topics: Vec<String> = topics.into_iter().collect();
        let response = self.topics_metadata(Some(&topics)).await?;
        Ok(items
            .iter()
            .map(|&(i, tp)| (i, leader_route(&response, tp)))
            .collect())
    }
}

/// Sends a Metadata request for `topics` on `connection`.
pub(crate) async fn metadata_request(
    connection: &crate::net::Connection,
    topics: Option<&[String]>,
) -> Result<MetadataResponse> {
    let request = MetadataRequest::default()
        .with_topics(topics.map(|names| {
            names
                .iter()
                .map(|t| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                })
                .collect()
        }))
        .with_allow_auto_topic_creation(false);
    let response = connection.send(&request).await?;
    ErrorCode::from_code(response.error_code).into_result()?;
    Ok(response)
}

/// Where a partition-level item goes, per a Metadata response.
fn leader_route(response: &MetadataResponse, tp: &TopicPartition) -> Route {
    let Some(topic) = response.topics.iter().find(|t| {
        t.name
            .as_ref()
            .is_some_and(|n| n.as_str() == tp.topic.as_ref())
    }) else {
        return Route::Done(ErrorCode::UnknownTopicOrPartition.into());
    };
    let code = ErrorCode::from_code(topic.error_code);
    if code == ErrorCode::UnknownTopicOrPartition || (!code.is_ok() && !code.is_retriable()) {
        return Route::Done(code.into());
    }
    if !code.is_ok() {
        return Route::Wait(code.into());
    }
    match topic
        .partitions
        .iter()
        .find(|p| p.partition_index == tp.partition)
    {
        None => Route::Done(ErrorCode::UnknownTopicOrPartition.into()),
        Some(p) if p.leader_id.0 < 0 => Route::Wait(ErrorCode::LeaderNotAvailable.into()),
        Some(p) => Route::Node(p.leader_id.0),
    }
}
