//! Partition reassignment APIs in cluster mode (KIP-455): AlterPartitionReassignments is
//! forwarded to the active controller, which plans and writes it
//! (`cluster::reassignment`); so is ListPartitionReassignments, answered from the
//! controller's image (a list right after a change shows it, as on Kafka).

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, ResponseKind, TopicName,
};
use odradek::ErrorCode;

use super::reply::{error_parts, sb, HandlerResult};
use crate::cluster::controller::Controller;
use crate::cluster::ClusterNode;

/// AlterPartitionReassignments on a broker: forwarded to the controller.
pub async fn alter(
    node: &ClusterNode,
    request: AlterPartitionReassignmentsRequest,
) -> HandlerResult {
    let timeout = super::cluster_admin::timeout_of(request.timeout_ms);
    let response = super::cluster_admin::forward(node, &request, timeout, |r| {
        r.error_code == ErrorCode::NotController.code()
    })
    .await?;
    Ok(ResponseKind::AlterPartitionReassignments(response))
}

/// AlterPartitionReassignments on the controller: one result per partition, in request
/// order.
pub async fn alter_on_controller(
    controller: Result<&Controller, crate::Error>,
    r: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let entries: Vec<(String, i32, Option<Vec<i32>>)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.name.to_string(),
                    p.partition_index,
                    p.replicas
                        .as_ref()
                        .map(|list| list.iter().map(|b| b.0).collect()),
                )
            })
        })
        .collect();
    let outcome = match controller {
        Ok(c) => {
            c.alter_reassignments(entries.clone(), r.allow_replication_factor_change)
                .await
        }
        Err(e) => Err(e),
    };
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            let (code, message) = error_parts(&e);
            return AlterPartitionReassignmentsResponse::default()
                .with_allow_replication_factor_change(r.allow_replication_factor_change)
                .with_error_code(code)
                .with_error_message(message);
        }
    };
    let mut topics: Vec<ReassignableTopicResponse> = Vec::new();
    for ((topic, index, _), result) in entries.into_iter().zip(results) {
        let mut p = ReassignablePartitionResponse::default().with_partition_index(index);
        if let Err(e) = result {
            let (code, message) = error_parts(&e);
            p = p.with_error_code(code).with_error_message(message);
        }
        match topics.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                ReassignableTopicResponse::default()
                    .with_name(TopicName(sb(&topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(r.allow_replication_factor_change)
        .with_responses(topics)
}

/// ListPartitionReassignments on a broker: forwarded to the controller.
pub async fn list(node: &ClusterNode, request: ListPartitionReassignmentsRequest) -> HandlerResult {
    let timeout = super::cluster_admin::timeout_of(request.timeout_ms);
    let response = super::cluster_admin::forward(node, &request, timeout, |r| {
        r.error_code == ErrorCode::NotController.code()
    })
    .await?;
    Ok(ResponseKind::ListPartitionReassignments(response))
}

/// ListPartitionReassignments on the controller: the reassignments in flight its image holds,
/// of the named partitions (`None`: all); unknown partitions are left out, as Kafka does.
pub fn list_on_controller(
    node: &ClusterNode,
    r: &ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    if super::controller_ops::controller(node).is_err() {
        return ListPartitionReassignmentsResponse::default()
            .with_error_code(ErrorCode::NotController.code());
    }
    let ids = |list: &[i32]| list.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
    let mut by_topic: BTreeMap<String, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
    node.image.read(|image| {
        for t in image.topics.values() {
            let wanted: Option<Vec<i32>> = match &r.topics {
                None => None,
                Some(list) => match list.iter().find(|x| x.name.as_str() == t.name) {
                    None => continue,
                    Some(x) => Some(x.partition_indexes.clone()),
                },
            };
            for (index, p) in &t.partitions {
                if p.reassigning.is_empty() || wanted.as_ref().is_some_and(|w| !w.contains(index)) {
                    continue;
                }
                by_topic.entry(t.name.clone()).or_default().push(
                    OngoingPartitionReassignment::default()
                        .with_partition_index(*index)
                        .with_replicas(ids(&p.replicas))
                        .with_adding_replicas(ids(&p.reassigning.adding))
                        .with_removing_replicas(ids(&p.reassigning.removing)),
                );
            }
        }
    });
    ListPartitionReassignmentsResponse::default().with_topics(
        by_topic
            .into_iter()
            .map(|(name, partitions)| {
                OngoingTopicReassignment::default()
                    .with_name(TopicName(sb(&name)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}
