//! Read-only cluster views: DescribeCluster, DescribeLogDirs, and topic listings and
//! descriptions from Metadata (which never auto-creates here).

use std::collections::HashMap;

use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{ApiKey, DescribeClusterRequest, DescribeLogDirsRequest};

use super::client::Admin;
use super::driver::{all_to, answers_by_key, retry_read, Call, Outcome, Route};
use super::route::metadata_request;
use super::types::{
    BrokerDescription, ClusterDescription, LogDirDescription, PartitionDescription, ReplicaInfo,
    TopicDescription, TopicListing,
};
use crate::net::Connection;
use crate::{ErrorCode, Result};

/// One whole-request answer as a per-item outcome.
fn single<T>(code: ErrorCode, value: T) -> Outcome<T> {
    if code.is_ok() {
        Outcome::Done(Ok(value))
    } else if retry_read(code) {
        Outcome::Retry(code.into())
    } else {
        Outcome::Done(Err(code.into()))
    }
}

/// DescribeCluster (falls back to Metadata on brokers without it).
pub(crate) struct DescribeCluster;

impl Call for DescribeCluster {
    type Output = ClusterDescription;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<ClusterDescription>)>> {
        let outcome = match connection.versions().version(ApiKey::DescribeCluster) {
            Ok(version) => {
                let r = connection
                    .send_versioned(&DescribeClusterRequest::default(), version)
                    .await?;
                let mut brokers: Vec<BrokerDescription> = r
                    .brokers
                    .into_iter()
                    .map(|b| BrokerDescription {
                        id: b.broker_id.0,
                        host: b.host.to_string(),
                        port: b.port,
                        rack: b.rack.map(|r| r.to_string()),
                        fenced: b.is_fenced,
                    })
                    .collect();
                brokers.sort_by_key(|b| b.id);
                let description = ClusterDescription {
                    cluster_id: r.cluster_id.to_string(),
                    controller: (r.controller_id.0 >= 0).then_some(r.controller_id.0),
                    brokers,
                };
                single(ErrorCode::from_code(r.error_code), description)
            }
            Err(_) => {
                let m = metadata_request(connection, Some(&[])).await?;
                let mut brokers: Vec<BrokerDescription> = m
                    .brokers
                    .into_iter()
                    .map(|b| BrokerDescription {
                        id: b.node_id.0,
                        host: b.host.to_string(),
                        port: b.port,
                        rack: b.rack.map(|r| r.to_string()),
                        fenced: false,
                    })
                    .collect();
                brokers.sort_by_key(|b| b.id);
                Outcome::Done(Ok(ClusterDescription {
                    cluster_id: m.cluster_id.map(|c| c.to_string()).unwrap_or_default(),
                    controller: (m.controller_id.0 >= 0).then_some(m.controller_id.0),
                    brokers,
                }))
            }
        };
        Ok(items.first().map(|&i| (i, outcome)).into_iter().collect())
    }
}

/// DescribeLogDirs of every broker (one item per broker id).
pub(crate) struct DescribeLogDirs<'a> {
    pub(crate) brokers: &'a [i32],
}

impl Call for DescribeLogDirs<'_> {
    type Output = Vec<LogDirDescription>;

    async fn route(&self, _admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(pending
            .iter()
            .map(|&i| (i, Route::Node(self.brokers[i])))
            .collect())
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<LogDirDescription>>)>> {
        let version = connection.versions().version(ApiKey::DescribeLogDirs)?;
        let r = connection
            .send_versioned(
                &DescribeLogDirsRequest::default().with_topics(None),
                version,
            )
            .await?;
        let dirs: Vec<LogDirDescription> = r
            .results
            .into_iter()
            .map(|d| LogDirDescription {
                path: d.log_dir.to_string(),
                error: Some(ErrorCode::from_code(d.error_code)).filter(|c| !c.is_ok()),
                total_bytes: (version >= 4 && d.total_bytes >= 0).then_some(d.total_bytes),
                usable_bytes: (version >= 4 && d.usable_bytes >= 0).then_some(d.usable_bytes),
                replicas: d
                    .topics
                    .into_iter()
                    .flat_map(|t| {
                        let topic = t.name.to_string();
                        t.partitions.into_iter().map(move |p| ReplicaInfo {
                            topic: topic.clone(),
                            partition: p.partition_index,
                            size: p.partition_size,
                            offset_lag: p.offset_lag,
                            future: p.is_future_key,
                        })
                    })
                    .collect(),
            })
            .collect();
        let code = ErrorCode::from_code(r.error_code);
        Ok(items
            .first()
            .map(|&i| (i, single(code, dirs)))
            .into_iter()
            .collect())
    }
}

fn describe_topic(t: MetadataResponseTopic) -> TopicDescription {
    let ids = |v: Vec<kafka_protocol::messages::BrokerId>| v.into_iter().map(|b| b.0).collect();
    let mut partitions: Vec<PartitionDescription> = t
        .partitions
        .into_iter()
        .map(|p| PartitionDescription {
            partition: p.partition_index,
            leader: (p.leader_id.0 >= 0).then_some(p.leader_id.0),
            leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
            replicas: ids(p.replica_nodes),
            isr: ids(p.isr_nodes),
            offline: ids(p.offline_replicas),
            error: Some(ErrorCode::from_code(p.error_code)).filter(|c| !c.is_ok()),
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    TopicDescription {
        name: t.name.map(|n| n.to_string()).unwrap_or_default(),
        topic_id: t.topic_id,
        internal: t.is_internal,
        partitions,
    }
}

/// Every topic, from one Metadata request.
pub(crate) struct ListTopics;

impl Call for ListTopics {
    type Output = Vec<TopicListing>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<TopicListing>>)>> {
        let m = metadata_request(connection, None).await?;
        let mut topics: Vec<TopicListing> = m
            .topics
            .into_iter()
            .filter(|t| ErrorCode::from_code(t.error_code).is_ok())
            .map(describe_topic)
            .map(|t| TopicListing {
                partitions: t.partitions.len(),
                name: t.name,
                topic_id: t.topic_id,
                internal: t.internal,
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(items
            .first()
            .map(|&i| (i, Outcome::Done(Ok(topics))))
            .into_iter()
            .collect())
    }
}

/// Metadata for named topics.
pub(crate) struct DescribeTopics<'a> {
    pub(crate) topics: &'a [&'a str],
}

impl Call for DescribeTopics<'_> {
    type Output = TopicDescription;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<TopicDescription>)>> {
        let mut names: Vec<String> = items.iter().map(|&i| self.topics[i].to_string()).collect();
        names.sort();
        names.dedup();
        let m = metadata_request(connection, Some(&names)).await?;
        let answers: HashMap<String, (ErrorCode, TopicDescription)> = m
            .topics
            .into_iter()
            .filter_map(|t| {
                let name = t.name.as_ref()?.to_string();
                let code = ErrorCode::from_code(t.error_code);
                Some((name, (code, describe_topic(t))))
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| self.topics[i].to_string(),
            answers,
            retry_read,
        ))
    }
}
