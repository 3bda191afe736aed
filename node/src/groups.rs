//! Consumer-group requests the admin needs and the core's admin client does not make:
//! FindCoordinator, OffsetFetch of a whole group, ListGroups and DescribeGroups.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use odradek::cluster::Cluster;
use odradek::net::Connection;
use odradek::protocol::messages::{
    ApiKey, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, ListGroupsRequest,
    OffsetFetchRequest,
};
use odradek::protocol::types::StrBytes;
use odradek::{Error, ErrorCode, Result};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Broker ids from metadata, refreshed when none are known yet.
async fn brokers(cluster: &Cluster) -> Result<Vec<i32>> {
    let mut meta = cluster.metadata();
    if meta.brokers.is_empty() {
        meta = cluster.refresh().await?;
    }
    let mut ids: Vec<i32> = meta.brokers.keys().copied().collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The group's coordinator connection (FindCoordinator with key type 0).
pub async fn coordinator(cluster: &Cluster, group: &str) -> Result<Arc<Connection>> {
    let ids = brokers(cluster).await?;
    let first = *ids
        .first()
        .ok_or(Error::Kafka(ErrorCode::CoordinatorNotAvailable))?;
    let any = cluster.connection(first).await?;
    let version = any.versions().version(ApiKey::FindCoordinator)?;
    let request = if version >= 4 {
        FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![sb(group)])
    } else {
        FindCoordinatorRequest::default()
            .with_key(sb(group))
            .with_key_type(0)
    };
    let response = any.send_versioned(&request, version).await?;
    let (code, node) = match response.coordinators.first() {
        Some(c) => (c.error_code, c.node_id.0),
        None => (response.error_code, response.node_id.0),
    };
    ErrorCode::from_code(code).into_result()?;
    if !cluster.metadata().brokers.contains_key(&node) {
        cluster.refresh().await?;
    }
    cluster.connection(node).await
}

/// A committed offset.
#[derive(Debug, Clone)]
pub struct Committed {
    /// Partition.
    pub partition: i32,
    /// Offset (-1: none).
    pub offset: i64,
    /// Commit metadata.
    pub metadata: Option<String>,
}

/// Every offset `group` has committed, by topic.
pub async fn offset_fetch(
    cluster: &Cluster,
    group: &str,
) -> Result<BTreeMap<String, Vec<Committed>>> {
    let conn = coordinator(cluster, group).await?;
    // v2..=7 take one group and a null topic list for "all topics".
    let version = conn.versions().version(ApiKey::OffsetFetch)?.min(7);
    if version < 2 {
        return Err(Error::Kafka(ErrorCode::UnsupportedVersion));
    }
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_topics(None);
    let response = conn.send_versioned(&request, version).await?;
    ErrorCode::from_code(response.error_code).into_result()?;
    let mut out: BTreeMap<String, Vec<Committed>> = BTreeMap::new();
    for t in response.topics {
        let entry = out.entry(t.name.to_string()).or_default();
        for p in t.partitions {
            ErrorCode::from_code(p.error_code).into_result()?;
            entry.push(Committed {
                partition: p.partition_index,
                offset: p.committed_offset,
                metadata: p.metadata.map(|m| m.to_string()),
            });
        }
    }
    Ok(out)
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Group id.
    pub group_id: String,
    /// `consumer` for consumer groups.
    pub protocol_type: String,
}

/// Every group on every broker.
pub async fn list_groups(cluster: &Cluster) -> Result<Vec<Listed>> {
    let mut out: BTreeMap<String, Listed> = BTreeMap::new();
    for id in brokers(cluster).await? {
        let conn = cluster.connection(id).await?;
        let response = conn.send(&ListGroupsRequest::default()).await?;
        ErrorCode::from_code(response.error_code).into_result()?;
        for g in response.groups {
            let group_id = g.group_id.to_string();
            out.insert(
                group_id.clone(),
                Listed {
                    group_id,
                    protocol_type: g.protocol_type.to_string(),
                },
            );
        }
    }
    Ok(out.into_values().collect())
}

/// A member of a described group.
#[derive(Debug, Clone)]
pub struct Member {
    /// Member id.
    pub member_id: String,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// The member's subscription (consumer protocol bytes).
    pub metadata: Bytes,
    /// The member's assignment (consumer protocol bytes).
    pub assignment: Bytes,
}

/// A described group.
#[derive(Debug, Clone)]
pub struct Described {
    /// Error code for this group.
    pub error_code: i16,
    /// Group id.
    pub group_id: String,
    /// State (`Stable`, `Empty`, `Dead`, ...).
    pub state: String,
    /// Protocol type.
    pub protocol_type: String,
    /// Chosen protocol (assignor).
    pub protocol: String,
    /// Members.
    pub members: Vec<Member>,
}

/// Describes each group at its coordinator, in input order.
pub async fn describe_groups(cluster: &Cluster, groups: &[String]) -> Result<Vec<Described>> {
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let conn = coordinator(cluster, group).await?;
        let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(group))]);
        let response = conn.send(&request).await?;
        for g in response.groups {
            out.push(Described {
                error_code: g.error_code,
                group_id: g.group_id.to_string(),
                state: g.group_state.to_string(),
                protocol_type: g.protocol_type.to_string(),
                protocol: g.protocol_data.to_string(),
                members: g
                    .members
                    .into_iter()
                    .map(|m| Member {
                        member_id: m.member_id.to_string(),
                        client_id: m.client_id.to_string(),
                        client_host: m.client_host.to_string(),
                        metadata: m.member_metadata,
                        assignment: m.member_assignment,
                    })
                    .collect(),
            });
        }
    }
    Ok(out)
}
