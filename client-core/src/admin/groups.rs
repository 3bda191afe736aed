//! Consumer-group admin: ListGroups (every broker), and DescribeGroups, OffsetFetch and
//! DeleteGroups (each group's coordinator, found with FindCoordinator on every attempt so a
//! coordinator that moved is followed).

use std::collections::HashMap;
use std::sync::Mutex;

use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, DeleteGroupsRequest, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, ListGroupsRequest, OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{answers_by_key, Call, Outcome, Route};
use crate::cluster::BrokerInfo;
use crate::net::Connection;
use crate::protocol::consumer_protocol::decode_assignment;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

/// A group as `list_groups` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// Group id.
    pub group_id: String,
    /// `consumer` for consumer groups, "" for groups that only commit offsets.
    pub protocol_type: String,
    /// `Stable`, `Empty`, `PreparingRebalance`, `CompletingRebalance`, `Dead`, or for a
    /// consumer-protocol group `Assigning` / `Reconciling` ("" when the broker does not say).
    pub state: String,
    /// `classic` or `consumer` (KIP-848) ("" from a broker before ListGroups v5).
    pub group_type: String,
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// The member's `client.id`.
    pub client_id: String,
    /// The member's host as the broker saw it.
    pub client_host: String,
    /// Partitions assigned to it (decoded for `consumer` groups; empty otherwise).
    pub assignment: Vec<TopicPartition>,
    /// The member's metadata as the broker returned it (the consumer protocol's subscription
    /// for `consumer` groups): what KafkaJS's `describeGroups` hands out.
    pub metadata_bytes: bytes::Bytes,
    /// The member's assignment as the broker returned it (classic groups).
    pub assignment_bytes: bytes::Bytes,
    /// A consumer-protocol member's epoch (-1 in a classic group).
    pub member_epoch: i32,
    /// What the broker means the member to own (consumer-protocol groups; empty in a classic
    /// group, where the leader assigns).
    pub target_assignment: Vec<TopicPartition>,
}

/// A described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group_id: String,
    /// State (`Stable`, `Empty`, ..., `Dead` for a group that does not exist).
    pub state: String,
    /// Protocol type (`consumer`, or "" for a group with no members).
    pub protocol_type: String,
    /// The chosen protocol: the partition assignor for consumer groups.
    pub protocol: String,
    /// Members.
    pub members: Vec<GroupMember>,
    /// `classic`, or `consumer` for a KIP-848 group.
    pub group_type: String,
    /// A consumer-protocol group's epoch and its target assignment's epoch (-1 for classic).
    pub group_epoch: i32,
    /// The epoch of the target assignment (-1 for classic).
    pub assignment_epoch: i32,
    /// The group's coordinator: the broker that answered (None if the metadata no longer lists
    /// it).
    pub coordinator: Option<BrokerInfo>,
}

/// A committed offset as `list_group_offsets` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The committed offset, `None` when nothing is committed.
    pub offset: Option<i64>,
    /// Metadata committed with it.
    pub metadata: String,
    /// The broker's error for this partition.
    pub error: Option<ErrorCode>,
}

pub(super) fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub(super) fn coordinator_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::NotCoordinator
            | ErrorCode::CoordinatorNotAvailable
            | ErrorCode::CoordinatorLoadInProgress
    )
}

/// Routes each pending group to its coordinator.
pub(super) async fn coordinator_routes(
    admin: &Admin,
    groups: &[&str],
    pending: &[usize],
) -> Result<Vec<(usize, Route)>> {
    let node = admin.any_node().await?;
    let connection = admin.cluster().connection(node).await?;
    let version = connection.versions().version(ApiKey::FindCoordinator)?;
    let known = admin.cluster_metadata().await?;
    let mut out = Vec::with_capacity(pending.len());
    for &i in pending {
        let group = groups.get(i).copied().unwrap_or_default();
        let request = if version >= 4 {
            FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![sb(group)])
        } else {
            FindCoordinatorRequest::default()
                .with_key(sb(group))
                .with_key_type(0)
        };
        let response = connection.send_versioned(&request, version).await?;
        let (code, id) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.node_id.0),
            None => (response.error_code, response.node_id.0),
        };
        let code = ErrorCode::from_code(code);
        let route = if !code.is_ok() {
            if code.is_retriable() {
                Route::Wait(code.into())
            } else {
                Route::Done(code.into())
            }
        } else if known.brokers.contains_key(&id) {
            Route::Node(id)
        } else {
            Route::Wait(ErrorCode::CoordinatorNotAvailable.into())
        };
        out.push((i, route));
    }
    Ok(out)
}

/// ListGroups to each broker in `brokers`.
pub(crate) struct ListGroups<'a> {
    pub brokers: &'a [i32],
}

impl Call for ListGroups<'_> {
    type Output = Vec<GroupListing>;

    async fn route(&self, _admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(pending
            .iter()
            .map(|&i| (i, Route::Node(self.brokers.get(i).copied().unwrap_or(-1))))
            .collect())
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<GroupListing>>)>> {
        let response = connection.send(&ListGroupsRequest::default()).await?;
        let code = ErrorCode::from_code(response.error_code);
        let listings: Vec<GroupListing> = response
            .groups
            .into_iter()
            .map(|g| GroupListing {
                group_id: g.group_id.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: g.group_state.to_string(),
                group_type: g.group_type.to_string(),
            })
            .collect();
        Ok(items
            .iter()
            .map(|&i| {
                let outcome = if code.is_ok() {
                    Outcome::Done(Ok(listings.clone()))
                } else if code.is_retriable() {
                    Outcome::Retry(code.into())
                } else {
                    Outcome::Done(Err(code.into()))
                };
                (i, outcome)
            })
            .collect())
    }
}

/// Partitions of a ConsumerGroupDescribe assignment, by name.
fn named(
    a: &kafka_protocol::messages::consumer_group_describe_response::Assignment,
) -> Vec<TopicPartition> {
    let mut out: Vec<TopicPartition> = a
        .topic_partitions
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| TopicPartition {
                topic: t.topic_name.to_string().into(),
                partition: *p,
            })
        })
        .collect();
    out.sort();
    out
}

/// ConsumerGroupDescribe for `names`: the consumer-protocol groups' descriptions, and the
/// groups it does not describe (classic ones, answered GROUP_ID_NOT_FOUND) to ask with
/// DescribeGroups.
async fn describe_consumer_groups(
    connection: &Connection,
    names: &[&str],
) -> Result<(HashMap<String, (ErrorCode, GroupDescription)>, Vec<String>)> {
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(names.iter().map(|g| GroupId(sb(g))).collect());
    let response = connection.send(&request).await?;
    let mut described = HashMap::new();
    let mut classic = Vec::new();
    for g in response.groups {
        let code = ErrorCode::from_code(g.error_code);
        if code == ErrorCode::GroupIdNotFound {
            classic.push(g.group_id.to_string());
            continue;
        }
        let members = g
            .members
            .iter()
            .map(|m| GroupMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.instance_id.as_ref().map(|s| s.to_string()),
                client_id: m.client_id.to_string(),
                client_host: m.client_host.to_string(),
                assignment: named(&m.assignment),
                metadata_bytes: bytes::Bytes::new(),
                assignment_bytes: bytes::Bytes::new(),
                member_epoch: m.member_epoch,
                target_assignment: named(&m.target_assignment),
            })
            .collect();
        let description = GroupDescription {
            group_id: g.group_id.to_string(),
            state: g.group_state.to_string(),
            protocol_type: "consumer".into(),
            protocol: g.assignor_name.to_string(),
            members,
            group_type: "consumer".into(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            coordinator: None,
        };
        described.insert(g.group_id.to_string(), (code, description));
    }
    Ok((described, classic))
}

/// DescribeGroups, per coordinator: ConsumerGroupDescribe first where the broker has it (KIP-848
/// groups), DescribeGroups for the classic ones, as the Java admin does.
pub(crate) struct DescribeGroups<'a> {
    pub groups: &'a [&'a str],
    /// Each pending group's coordinator as this attempt routed it (by item index).
    coordinators: Mutex<HashMap<usize, BrokerInfo>>,
}

impl<'a> DescribeGroups<'a> {
    pub(crate) fn new(groups: &'a [&'a str]) -> Self {
        DescribeGroups {
            groups,
            coordinators: Mutex::new(HashMap::new()),
        }
    }
}

impl Call for DescribeGroups<'_> {
    type Output = GroupDescription;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        let routes = coordinator_routes(admin, self.groups, pending).await?;
        let brokers = admin.cluster().metadata();
        let mut coordinators = self.coordinators.lock().unwrap_or_else(|e| e.into_inner());
        for (i, route) in &routes {
            match route {
                Route::Node(id) => match brokers.brokers.get(id) {
                    Some(b) => coordinators.insert(*i, b.clone()),
                    None => coordinators.remove(i),
                },
                _ => coordinators.remove(i),
            };
        }
        Ok(routes)
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<GroupDescription>)>> {
        let wanted: Vec<&str> = items
            .iter()
            .filter_map(|&i| self.groups.get(i).copied())
            .collect();
        let (mut answers, classic) = if connection
            .versions()
            .version(ApiKey::ConsumerGroupDescribe)
            .is_ok()
        {
            describe_consumer_groups(connection, &wanted).await?
        } else {
            (
                HashMap::new(),
                wanted.iter().map(|g| g.to_string()).collect(),
            )
        };
        let names: Vec<GroupId> = classic.iter().map(|g| GroupId(sb(g))).collect();
        let response = if names.is_empty() {
            Default::default()
        } else {
            connection
                .send(&DescribeGroupsRequest::default().with_groups(names))
                .await?
        };
        answers.extend(response.groups.into_iter().map(|g| {
            let consumer = g.protocol_type.as_str() == "consumer";
            let members = g
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.to_string(),
                    group_instance_id: m.group_instance_id.map(|s| s.to_string()),
                    client_id: m.client_id.to_string(),
                    client_host: m.client_host.to_string(),
                    assignment: if consumer && !m.member_assignment.is_empty() {
                        decode_assignment(&m.member_assignment).unwrap_or_default()
                    } else {
                        Vec::new()
                    },
                    metadata_bytes: m.member_metadata,
                    assignment_bytes: m.member_assignment,
                    member_epoch: -1,
                    target_assignment: Vec::new(),
                })
                .collect();
            let description = GroupDescription {
                group_id: g.group_id.to_string(),
                state: g.group_state.to_string(),
                protocol_type: g.protocol_type.to_string(),
                protocol: g.protocol_data.to_string(),
                members,
                group_type: "classic".into(),
                group_epoch: -1,
                assignment_epoch: -1,
                coordinator: None,
            };
            (
                g.group_id.to_string(),
                (ErrorCode::from_code(g.error_code), description),
            )
        }));
        let mut outcomes = answers_by_key(
            items,
            |i| {
                self.groups
                    .get(i)
                    .map(|g| g.to_string())
                    .unwrap_or_default()
            },
            answers,
            coordinator_error,
        );
        let coordinators = self.coordinators.lock().unwrap_or_else(|e| e.into_inner());
        for (i, outcome) in &mut outcomes {
            if let Outcome::Done(Ok(d)) = outcome {
                d.coordinator = coordinators.get(i).cloned();
            }
        }
        Ok(outcomes)
    }
}

/// DeleteGroups, per coordinator.
pub(crate) struct DeleteGroups<'a> {
    pub groups: &'a [&'a str],
}

impl Call for DeleteGroups<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        coordinator_routes(admin, self.groups, pending).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let names: Vec<GroupId> = items
            .iter()
            .filter_map(|&i| self.groups.get(i))
            .map(|g| GroupId(sb(g)))
            .collect();
        let response = connection
            .send(&DeleteGroupsRequest::default().with_groups_names(names))
            .await?;
        let answers: HashMap<String, (ErrorCode, ())> = response
            .results
            .into_iter()
            .map(|r| {
                (
                    r.group_id.to_string(),
                    (ErrorCode::from_code(r.error_code), ()),
                )
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| {
                self.groups
                    .get(i)
                    .map(|g| g.to_string())
                    .unwrap_or_default()
            },
            answers,
            coordinator_error,
        ))
    }
}

/// OffsetFetch of one group (all partitions, or the given ones), at its coordinator.
pub(crate) struct ListGroupOffsets<'a> {
    pub group: &'a str,
    pub partitions: Option<&'a [TopicPartition]>,
}

impl Call for ListGroupOffsets<'_> {
    type Output = Vec<GroupOffset>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        coordinator_routes(admin, &[self.group], pending).await
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Vec<GroupOffset>>)>> {
        let topics = self.partitions.map(|parts| {
            let mut topics: Vec<OffsetFetchRequestTopic> = Vec::new();
            for tp in parts {
                match topics
                    .iter_mut()
                    .find(|t| t.name.as_str() == tp.topic.as_ref())
                {
                    Some(t) => t.partition_indexes.push(tp.partition),
                    None => topics.push(
                        OffsetFetchRequestTopic::default()
                            .with_name(TopicName(sb(&tp.topic)))
                            .with_partition_indexes(vec![tp.partition]),
                    ),
                }
            }
            topics
        });
        // Versions 0-7 carry one group, the shape every broker answers.
        let version = connection.versions().version(ApiKey::OffsetFetch)?.min(7);
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(sb(self.group)))
            .with_topics(topics);
        let response = connection.send_versioned(&request, version).await?;
        let code = ErrorCode::from_code(response.error_code);
        let outcome = if coordinator_error(code) {
            Outcome::Retry(code.into())
        } else if !code.is_ok() {
            Outcome::Done(Err(Error::Kafka(code)))
        } else {
            let mut offsets: Vec<GroupOffset> = response
                .topics
                .into_iter()
                .flat_map(|t| {
                    let topic: std::sync::Arc<str> = t.name.as_str().into();
                    t.partitions.into_iter().map(move |p| {
                        let code = ErrorCode::from_code(p.error_code);
                        GroupOffset {
                            partition: TopicPartition {
                                topic: topic.clone(),
                                partition: p.partition_index,
                            },
                            offset: (p.committed_offset >= 0).then_some(p.committed_offset),
                            metadata: p.metadata.map(|m| m.to_string()).unwrap_or_default(),
                            error: (!code.is_ok()).then_some(code),
                        }
                    })
                })
                .collect();
            offsets.sort_by(|a, b| {
                (&a.partition.topic, a.partition.partition)
                    .cmp(&(&b.partition.topic, b.partition.partition))
            });
            Outcome::Done(Ok(offsets))
        };
        Ok(items
            .iter()
            .map(|&i| {
                let o = match &outcome {
                    Outcome::Done(Ok(v)) => Outcome::Done(Ok(v.clone())),
                    Outcome::Done(Err(Error::Kafka(c))) => Outcome::Done(Err(Error::Kafka(*c))),
                    Outcome::Retry(Error::Kafka(c)) => Outcome::Retry(Error::Kafka(*c)),
                    _ => Outcome::Done(Err(Error::malformed("offset fetch", "unexpected"))),
                };
                (i, o)
            })
            .collect())
    }
}
