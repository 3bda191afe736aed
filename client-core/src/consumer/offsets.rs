//! ListOffsets lookups: earliest, latest, by timestamp.

use std::collections::HashMap;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::Cluster;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode, Result};

/// ListOffsets timestamp meaning "the log start offset".
pub const EARLIEST: i64 = -2;
/// ListOffsets timestamp meaning "the high watermark" (or LSO for read_committed).
pub const LATEST: i64 = -1;

/// Looks up `(offset, timestamp)` for each partition's query (`EARLIEST`, `LATEST` or a
/// timestamp in ms). A partition with no record at or after the timestamp maps to `None`.
pub async fn list_offsets(
    cluster: &Cluster,
    queries: &[(TopicPartition, i64)],
    read_committed: bool,
) -> Result<HashMap<TopicPartition, Option<(i64, i64)>>> {
    let mut meta = cluster.metadata();
    if queries
        .iter()
        .any(|(tp, _)| meta.leader(&tp.topic, tp.partition).is_none())
    {
        for (tp, _) in queries {
            cluster
                .topic(
                    &tp.topic,
                    std::time::Instant::now() + cluster.config().request_timeout,
                )
                .await?;
        }
        meta = cluster.metadata();
    }
    let mut by_leader: HashMap<i32, Vec<&(TopicPartition, i64)>> = HashMap::new();
    for q in queries {
        let leader = meta
            .leader(&q.0.topic, q.0.partition)
            .ok_or(Error::Kafka(ErrorCode::UnknownTopicOrPartition))?;
        by_leader.entry(leader).or_default().push(q);
    }
    let mut out = HashMap::new();
    for (leader, qs) in by_leader {
        let mut topics: Vec<ListOffsetsTopic> = Vec::new();
        for (tp, ts) in &qs {
            // KIP-320: the leader refuses (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) when our
            // view of its epoch is stale or ahead, and the error refreshes metadata.
            let epoch = meta
                .topics
                .get(tp.topic.as_ref())
                .and_then(|t| t.partitions.iter().find(|p| p.partition == tp.partition))
                .map_or(-1, |p| p.leader_epoch);
            let p = ListOffsetsPartition::default()
                .with_partition_index(tp.partition)
                .with_current_leader_epoch(epoch)
                .with_timestamp(*ts);
            match topics
                .iter_mut()
                .find(|t| t.name.as_str() == tp.topic.as_ref())
            {
                Some(t) => t.partitions.push(p),
                None => topics.push(
                    ListOffsetsTopic::default()
                        .with_name(TopicName(StrBytes::from_string(tp.topic.to_string())))
                        .with_partitions(vec![p]),
                ),
            }
        }
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(i8::from(read_committed))
            .with_topics(topics);
        let connection = cluster.connection(leader).await?;
        let response = connection
            .send(&request)
            .await
            .inspect_err(|e| cluster.on_error(e))?;
        for t in response.topics {
            for p in t.partitions {
                let code = ErrorCode::from_code(p.error_code);
                if !code.is_ok() {
                    let e = Error::Kafka(code);
                    cluster.on_error(&e);
                    return Err(e);
                }
                let tp = TopicPartition {
                    topic: t.name.to_string().into(),
                    partition: p.partition_index,
                };
                out.insert(tp, (p.offset >= 0).then_some((p.offset, p.timestamp)));
            }
        }
    }
    Ok(out)
}
