//! Which partitions a command works on: all of a topic's, or the one `-p` names.

use odradek::producer::TopicPartition;
use odradek::{Admin, Error, ErrorCode};

use crate::failure::Failure;

/// The partitions of `topic` (only `only`, when given), checked against the cluster.
pub async fn of_topic(
    admin: &Admin,
    topic: &str,
    only: Option<i32>,
) -> Result<Vec<TopicPartition>, Failure> {
    let described = admin.describe_topics(&[topic]).await?;
    let description = match described.into_iter().next() {
        Some((_, Ok(d))) => d,
        Some((_, Err(Error::Kafka(ErrorCode::UnknownTopicOrPartition)))) => {
            return Err(Failure::new(format!("topic {topic} does not exist")))
        }
        Some((_, Err(e))) => return Err(Failure::new(format!("topic {topic}: {e}"))),
        None => return Err(Failure::new(format!("topic {topic}: no metadata"))),
    };
    let all: Vec<i32> = description.partitions.iter().map(|p| p.partition).collect();
    let chosen: Vec<i32> = match only {
        Some(p) if all.contains(&p) => vec![p],
        Some(p) => {
            return Err(Failure::new(format!(
                "topic {topic} has no partition {p} (it has {})",
                all.len()
            )))
        }
        None => all,
    };
    Ok(chosen
        .into_iter()
        .map(|partition| TopicPartition {
            topic: topic.into(),
            partition,
        })
        .collect())
}
