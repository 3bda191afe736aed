//! ElectLeaders: a preferred-replica or unclean leader election for partitions, decided by the
//! controller (brokers forward it).

use std::collections::HashMap;

use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{all_to, answers_by_key, Call, Outcome, Route};
use crate::net::Connection;
use crate::{ErrorCode, Result};

/// Which leader an election picks (Kafka's `ElectionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// The preferred replica (the first of the assignment), when it is in sync.
    Preferred,
    /// For a partition without a leader: any live replica, even out of sync (data it lacks is
    /// lost).
    Unclean,
}

/// One ElectLeaders call.
pub(crate) struct ElectLeaders<'a> {
    pub(crate) election: ElectionType,
    pub(crate) partitions: &'a [(&'a str, i32)],
}

impl Call for ElectLeaders<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.controller_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let mut by_topic: HashMap<&str, Vec<i32>> = HashMap::new();
        for &i in items {
            let (topic, partition) = self.partitions[i];
            by_topic.entry(topic).or_default().push(partition);
        }
        let request = ElectLeadersRequest::default()
            .with_election_type(match self.election {
                ElectionType::Preferred => 0,
                ElectionType::Unclean => 1,
            })
            .with_topic_partitions(Some(
                by_topic
                    .into_iter()
                    .map(|(t, partitions)| {
                        TopicPartitions::default()
                            .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            ))
            .with_timeout_ms(timeout_ms);
        let response = connection.send(&request).await?;
        let top = ErrorCode::from_code(response.error_code);
        if !top.is_ok() {
            return Ok(items
                .iter()
                .map(|&i| {
                    let outcome = match top {
                        ErrorCode::NotController => Outcome::Retry(crate::Error::Kafka(top)),
                        _ => Outcome::Done(Err(crate::Error::Kafka(top))),
                    };
                    (i, outcome)
                })
                .collect());
        }
        let answers: HashMap<(String, i32), (ErrorCode, ())> = response
            .replica_election_results
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic.to_string();
                t.partition_result.into_iter().map(move |p| {
                    (
                        (topic.clone(), p.partition_id),
                        (ErrorCode::from_code(p.error_code), ()),
                    )
                })
            })
            .collect();
        Ok(answers_by_key(
            items,
            |i| (self.partitions[i].0.to_string(), self.partitions[i].1),
            answers,
            |code| code == ErrorCode::NotController,
        ))
    }
}
