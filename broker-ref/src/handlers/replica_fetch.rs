//! A follower's Fetch (a request with a replica id): the leader checks each partition's fetch
//! position against its leader epoch cache (answering a divergence, KIP-320 / Fetch v12),
//! records the follower's progress (which moves the high watermark and may earn it an ISR
//! expansion, sent to the controller), and reads up to the log end, not the high watermark. It
//! long-polls like a consumer fetch until `min_bytes` arrive or `max_wait_ms` passes.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_response::{
    EpochEndOffset, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ResponseKind};
use odradek::ErrorCode;

use super::context::RequestContext;
use crate::broker::Broker;
use crate::partition::{Partition, ReplicaRead};
use crate::Result;

/// Handles a Fetch from follower `replica`.
pub async fn handle(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: FetchRequest,
    replica: i32,
) -> Result<ResponseKind> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let waiter = Arc::new(tokio::sync::Notify::new());
    let mut registered = false;
    let min_bytes = request.min_bytes.max(1) as usize;
    tracing::trace!(replica, "replica fetch arrived");
    loop {
        let (responses, bytes, errors) = serve(broker, &request, replica);
        if bytes >= min_bytes || errors || tokio::time::Instant::now() >= deadline {
            tracing::trace!(replica, bytes, errors, "replica fetch answered");
            return Ok(ResponseKind::Fetch(
                FetchResponse::default().with_responses(responses),
            ));
        }
        if !registered {
            for p in partitions(broker, &request) {
                p.register_waiter(&waiter);
            }
            registered = true;
            continue;
        }
        crate::request_slots::release_while_waiting();
        if tokio::time::timeout_at(deadline, waiter.notified())
            .await
            .is_err()
        {
            let (responses, _, _) = serve(broker, &request, replica);
            return Ok(ResponseKind::Fetch(
                FetchResponse::default().with_responses(responses),
            ));
        }
    }
}

fn partitions(broker: &Broker, request: &FetchRequest) -> Vec<Arc<Partition>> {
    request
        .topics
        .iter()
        .filter_map(|t| broker.topics.get(&t.topic))
        .flat_map(|topic| {
            request
                .topics
                .iter()
                .filter(|t| t.topic.as_str() == topic.name)
                .flat_map(|t| t.partitions.iter().map(|p| p.partition))
                .filter_map(|i| topic.partition(i))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Serves every partition once: the responses, the record bytes they carry (a divergence
/// counts as enough to answer), and whether any failed.
fn serve(
    broker: &Broker,
    request: &FetchRequest,
    replica: i32,
) -> (Vec<FetchableTopicResponse>, usize, bool) {
    let now = crate::clock::now_ms();
    let mut budget = request.max_bytes.max(0) as usize;
    let mut data = 0usize;
    let mut diverged = false;
    let mut errors = false;
    let replicas = broker.cluster_node().and_then(|n| n.replicas.clone());
    let responses = request
        .topics
        .iter()
        .map(|t| {
            let topic = broker.topics.get(&t.topic);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let base = PartitionData::default().with_partition_index(p.partition);
                    let Some(partition) = topic.as_ref().and_then(|tp| tp.partition(p.partition))
                    else {
                        errors = true;
                        return base.with_error_code(ErrorCode::UnknownTopicOrPartition.code());
                    };
                    if let Err(e) = partition.check_leader(p.current_leader_epoch) {
                        errors = true;
                        return base.with_error_code(e.code().code());
                    }
                    let limit = (p.partition_max_bytes.max(0) as usize).min(budget);
                    partition.note_follower_log_start(replica, p.log_start_offset);
                    match partition.serve_follower(
                        replica,
                        p.fetch_offset,
                        p.last_fetched_epoch,
                        limit.max(1),
                        now,
                    ) {
                        Ok(ReplicaRead::Records {
                            records,
                            high_watermark,
                            log_start_offset,
                            expand,
                        }) => {
                            if let (Some(change), Some(r)) = (expand, replicas.as_ref()) {
                                r.propose_isr(partition.topic(), partition.index(), change);
                            }
                            // A throttled follower (out of sync, listed by the topic's
                            // leader.replication.throttled.replicas) gets no records while
                            // the leader's throttled bytes are over its rate.
                            // (The topic's list is read only when a rate is set.)
                            let quota = &broker.replication_quotas.leader;
                            let records = if quota.limit() != i64::MAX
                                && partition.replication_throttled(true, broker.node_id, replica)
                            {
                                if quota.exceeded(now) {
                                    bytes::Bytes::new()
                                } else {
                                    quota.record(records.len(), now);
                                    records
                                }
                            } else {
                                records
                            };
                            budget = budget.saturating_sub(records.len());
                            data += records.len();
                            base.with_high_watermark(high_watermark)
                                .with_last_stable_offset(partition.last_stable_offset())
                                .with_log_start_offset(log_start_offset)
                                .with_records(Some(records))
                        }
                        Ok(ReplicaRead::Diverging {
                            epoch,
                            end_offset,
                            high_watermark,
                        }) => {
                            diverged = true;
                            base.with_high_watermark(high_watermark)
                                .with_log_start_offset(partition.log_start_offset())
                                .with_diverging_epoch(
                                    EpochEndOffset::default()
                                        .with_epoch(epoch)
                                        .with_end_offset(end_offset),
                                )
                        }
                        Err(e) => {
                            errors = true;
                            base.with_error_code(e.code().code())
                                .with_high_watermark(partition.high_watermark())
                                .with_log_start_offset(partition.log_start_offset())
                        }
                    }
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(partitions)
        })
        .collect();
    // A divergence must reach the follower at once, whatever else the answer carries.
    (responses, if diverged { usize::MAX } else { data }, errors)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;
    use odradek::records::{BatchBuilder, Compression};

    use super::*;
    use crate::config::BrokerConfig;
    use crate::partition::LeaderAndIsr;

    /// A broker on a temporary data directory (kept alive by the first value) with topic `t`
    /// of `partitions` partitions.
    fn broker_with_topic(
        partitions: i32,
    ) -> (tempfile::TempDir, Arc<Broker>, Arc<crate::partition::Topic>) {
        let dir = tempfile::tempdir().unwrap();
        let config =
            BrokerConfig::from_entries([("log.dirs", dir.path().display().to_string())]).unwrap();
        let broker = Broker::open(config, "127.0.0.1".into(), 9092).unwrap();
        let topic = broker
            .topics
            .create("t", partitions, BTreeMap::new(), false)
            .unwrap();
        (dir, broker, topic)
    }

    fn two_records() -> bytes::Bytes {
        let mut b = BatchBuilder::new(Compression::None);
        for value in [b"a", b"b"] {
            b.append(0, None, Some(value.as_slice()), &[]).unwrap();
        }
        b.build().unwrap()
    }

    fn lead(p: &Partition, epoch: i32) {
        let decision = LeaderAndIsr {
            me: 1,
            leader: 1,
            leader_epoch: epoch,
            partition_epoch: epoch,
            replicas: vec![1, 2],
            isr: vec![1, 2],
            min_isr: 1,
        };
        p.apply_leadership(&decision, 0).unwrap();
    }

    #[test]
    fn a_divergence_and_records_in_one_answer_are_served_together() {
        let (_dir, broker, topic) = broker_with_topic(2);
        let (diverging, reading) = (topic.partition(0).unwrap(), topic.partition(1).unwrap());
        // Partition 0: epoch 1 wrote 2 records, epoch 2 leads now; the follower claims it
        // fetched up to offset 5 in epoch 1 (which ended at 2): a divergence.
        lead(&diverging, 1);
        diverging.append_record_set(two_records(), 0).unwrap();
        lead(&diverging, 2);
        diverging.append_record_set(two_records(), 1).unwrap();
        // Partition 1: the follower reads its records from the start.
        lead(&reading, 1);
        reading.append_record_set(two_records(), 0).unwrap();
        let request = FetchRequest::default()
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(5)
                        .with_last_fetched_epoch(1)
                        .with_partition_max_bytes(1 << 20),
                    FetchPartition::default()
                        .with_partition(1)
                        .with_fetch_offset(0)
                        .with_last_fetched_epoch(-1)
                        .with_partition_max_bytes(1 << 20),
                ])]);
        let (responses, bytes, errors) = serve(&broker, &request, 2);
        assert!(!errors, "{responses:?}");
        assert_eq!(bytes, usize::MAX, "a divergence is answered at once");
        let partitions = &responses[0].partitions;
        assert_eq!(partitions[0].diverging_epoch.epoch, 1);
        assert_eq!(partitions[0].diverging_epoch.end_offset, 2);
        assert!(partitions[1]
            .records
            .as_ref()
            .is_some_and(|r| !r.is_empty()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_replica_fetch_answers_as_soon_as_the_leader_appends() {
        let (_dir, broker, topic) = broker_with_topic(1);
        let partition = topic.partition(0).unwrap();
        lead(&partition, 1);
        partition.append_record_set(two_records(), 0).unwrap();
        // The follower has everything (offset 2) and long-polls for 10 s.
        let request = FetchRequest::default()
            .with_max_wait_ms(10_000)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(1)
                    .with_fetch_offset(2)
                    .with_last_fetched_epoch(1)
                    .with_partition_max_bytes(1 << 20)])]);
        let waiting = tokio::spawn({
            let broker = broker.clone();
            async move {
                let conn = crate::handlers::context::ConnectionContext::plaintext(
                    "127.0.0.1:1".parse().unwrap(),
                    "INTERNAL",
                );
                let ctx = RequestContext {
                    connection: &conn,
                    api_key: kafka_protocol::messages::ApiKey::Fetch,
                    api_version: 12,
                    correlation_id: 1,
                    client_id: None,
                };
                handle(&broker, &ctx, request, 2).await
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let appended = tokio::time::Instant::now();
        partition.append_record_set(two_records(), 1).unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the append must wake the waiting fetch")
            .unwrap()
            .unwrap();
        assert!(
            appended.elapsed() < Duration::from_secs(2),
            "{:?}",
            appended.elapsed()
        );
        let ResponseKind::Fetch(f) = answer else {
            panic!("{answer:?}")
        };
        let records = f.responses[0].partitions[0]
            .records
            .clone()
            .unwrap_or_default();
        assert!(!records.is_empty(), "{f:?}");
    }

    /// A replica fetch that finds nothing new must not wake the fetches waiting on the
    /// partition (its own included): they would wake one another in a loop until their
    /// deadline, a spinning core per idle partition.
    #[tokio::test]
    async fn serving_a_caught_up_follower_wakes_no_waiting_fetch() {
        let (_dir, _broker, topic) = broker_with_topic(1);
        let partition = topic.partition(0).unwrap();
        lead(&partition, 1);
        partition.append_record_set(two_records(), 0).unwrap();
        // The follower catches up: the high watermark moves to 2.
        partition.serve_follower(2, 2, 1, 1 << 20, 0).unwrap();
        assert_eq!(partition.high_watermark(), 2);
        let waiting = Arc::new(tokio::sync::Notify::new());
        partition.register_waiter(&waiting);
        for _ in 0..3 {
            partition.serve_follower(2, 2, 1, 1 << 20, 0).unwrap();
        }
        let woken = tokio::time::timeout(Duration::from_millis(50), waiting.notified()).await;
        assert!(woken.is_err(), "nothing moved, nobody is woken");
        partition.append_record_set(two_records(), 1).unwrap();
        tokio::time::timeout(Duration::from_secs(1), waiting.notified())
            .await
            .expect("an append wakes the waiting fetch");
    }
}
