//! A follower's fetcher: one task per leader broker pulls every partition this broker follows
//! there, with Kafka's replica Fetch (v12: `ReplicaId`, `LastFetchedEpoch`), appends what comes
//! back unchanged, truncates where the leader reports a divergence, and starts over at the
//! leader's log start when it fell behind it. The fetch offset it sends is what acknowledges
//! its progress to the leader.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{fetch_request, BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use odradek::net::{ConnectParams, Connection};
use odradek::ErrorCode;
use tokio::sync::watch;

use super::image::SharedImage;
use super::settings::ReplicaSettings;
use crate::partition::{Followed, Partition};

/// One partition a fetcher pulls.
#[derive(Debug, Clone)]
pub struct FetchTarget {
    /// The local partition.
    pub partition: Arc<Partition>,
    /// The topic's id.
    pub topic_id: String,
    /// The leader epoch this broker follows.
    pub leader_epoch: i32,
}

impl FetchTarget {
    /// Whether `other` is the same partition at the same leader epoch.
    pub fn same_as(&self, other: &FetchTarget) -> bool {
        Arc::ptr_eq(&self.partition, &other.partition) && self.leader_epoch == other.leader_epoch
    }
}

/// The address of `leader`'s `listener` from the image.
fn address(image: &SharedImage, leader: i32, listener: &str) -> Option<String> {
    image.read(|i| {
        let b = i.brokers.get(&leader)?;
        let e = b
            .endpoints
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(listener))
            .or_else(|| b.endpoints.first())?;
        Some(format!("{}:{}", e.host, e.port))
    })
}

/// Pulls the partitions in `targets` from `leader` until the sender goes away.
pub async fn run(
    settings: ReplicaSettings,
    leader: i32,
    mut targets: watch::Receiver<Vec<FetchTarget>>,
    image: SharedImage,
) {
    let mut connection: Option<Arc<Connection>> = None;
    let security = settings.inter_broker_security.clone();
    let client_id = format!("odradek-replica-fetcher-{}", settings.node_id);
    // Partitions whose last answer was an error rest for `fetch_backoff` (Kafka's delayed
    // partitions): one refused partition must not turn the fetch into a busy loop for all.
    let mut resting: HashMap<(String, i32), tokio::time::Instant> = HashMap::new();
    loop {
        let now = tokio::time::Instant::now();
        resting.retain(|_, until| *until > now);
        let all = targets.borrow_and_update().clone();
        // Throttled replicas (out of sync, listed by follower.replication.throttled.replicas)
        // are not fetched while this broker's throttled bytes are over its rate.
        if settings.quotas.follower.exceeded(crate::clock::now_ms()) {
            for t in &all {
                if t.partition
                    .replication_throttled(false, settings.node_id, settings.node_id)
                {
                    resting.insert(key(t), now + settings.fetch_backoff);
                }
            }
        }
        let list: Vec<FetchTarget> = all
            .iter()
            .filter(|t| !resting.contains_key(&key(t)))
            .cloned()
            .collect();
        if list.is_empty() {
            let wake = resting.values().min().copied();
            tokio::select! {
                r = targets.changed() => if r.is_err() { return },
                _ = sleep_until_or_forever(wake) => {}
            }
            continue;
        }
        let outcome = async {
            let c = match connection.as_ref().filter(|c| !c.is_closed()) {
                Some(c) => c.clone(),
                None => {
                    let addr = address(&image, leader, &settings.inter_broker_listener)
                        .ok_or_else(|| {
                            crate::Error::kafka(
                                ErrorCode::LeaderNotAvailable,
                                format!("broker {leader} has no endpoint"),
                            )
                        })?;
                    let c = Connection::connect(
                        &addr,
                        ConnectParams {
                            client_id: &client_id,
                            setup_timeout: Duration::from_secs(10),
                            request_timeout: Duration::from_millis(
                                settings.fetch_wait_max_ms.max(0) as u64 + 30_000,
                            ),
                            max_in_flight: 1,
                            max_response_size: (settings.fetch_response_max_bytes.max(1) as usize)
                                + (1 << 20),
                            security: &security,
                            node_id: leader,
                            on_throttle: None,
                            on_request: None,
                            socket: Default::default(),
                        },
                    )
                    .await?;
                    connection = Some(c.clone());
                    c
                }
            };
            fetch_once(&settings, leader, &c, &list).await
        }
        .await;
        match outcome {
            Ok(answer) if answer.progress => {
                let until = tokio::time::Instant::now() + settings.fetch_backoff;
                resting.extend(answer.failed.into_iter().map(|k| (k, until)));
            }
            Ok(_) => {
                // Nothing usable came back (errors only): wait for metadata or back off.
                tokio::select! {
                    r = targets.changed() => if r.is_err() { return },
                    _ = tokio::time::sleep(settings.fetch_backoff) => {}
                }
            }
            Err(e) => {
                tracing::warn!(leader, error = %e, "replica fetch failed");
                if let Some(c) = connection.take() {
                    c.close("replica fetch failed");
                }
                tokio::select! {
                    r = targets.changed() => if r.is_err() { return },
                    _ = tokio::time::sleep(settings.fetch_backoff) => {}
                }
            }
        }
    }
}

fn key(t: &FetchTarget) -> (String, i32) {
    (t.partition.topic().to_string(), t.partition.index())
}

async fn sleep_until_or_forever(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What one replica Fetch achieved.
struct Answer {
    /// Some partition was answered without error.
    progress: bool,
    /// The partitions answered with an error (or whose answer could not be applied).
    failed: Vec<(String, i32)>,
}

/// One replica Fetch for `list`.
async fn fetch_once(
    settings: &ReplicaSettings,
    leader: i32,
    c: &Connection,
    list: &[FetchTarget],
) -> crate::Result<Answer> {
    let mut by_topic: HashMap<String, Vec<fetch_request::FetchPartition>> = HashMap::new();
    let mut index: HashMap<(String, i32), &FetchTarget> = HashMap::new();
    for t in list {
        let (fetch_offset, last_epoch) = t.partition.follower_position()?;
        let topic = t.partition.topic().to_string();
        by_topic.entry(topic.clone()).or_default().push(
            fetch_request::FetchPartition::default()
                .with_partition(t.partition.index())
                .with_current_leader_epoch(t.leader_epoch)
                .with_fetch_offset(fetch_offset)
                .with_last_fetched_epoch(last_epoch)
                .with_log_start_offset(t.partition.log_start_offset())
                .with_partition_max_bytes(settings.fetch_max_bytes),
        );
        index.insert((topic, t.partition.index()), t);
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(settings.node_id))
        .with_max_wait_ms(settings.fetch_wait_max_ms)
        .with_min_bytes(settings.fetch_min_bytes.max(1))
        .with_max_bytes(settings.fetch_response_max_bytes)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    fetch_request::FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    tracing::trace!(leader, partitions = list.len(), "replica fetch");
    let response = c.send(&request).await?;
    ErrorCode::from_code(response.error_code).into_result()?;
    let now = crate::clock::now_ms();
    let mut answer = Answer {
        progress: false,
        failed: Vec::new(),
    };
    for topic in response.responses {
        for p in topic.partitions {
            let Some(target) = index.get(&(topic.topic.to_string(), p.partition_index)) else {
                continue;
            };
            let partition = &target.partition;
            // One partition's failure (a disk error, records that do not fit) must not stall
            // the others this leader serves: it is logged and that partition retried.
            let followed = Followed {
                leader,
                leader_epoch: target.leader_epoch,
            };
            let bytes = p.records.as_ref().map_or(0, |r| r.len());
            if bytes > 0
                && settings.quotas.follower.limit() != i64::MAX
                && partition.replication_throttled(false, settings.node_id, settings.node_id)
            {
                settings.quotas.follower.record(bytes, now);
            }
            match apply_answer(partition, followed, &p, now) {
                Ok(true) => answer.progress = true,
                Ok(false) => answer.failed.push(key(target)),
                Err(e) => {
                    tracing::warn!(
                        topic = partition.topic(),
                        partition = partition.index(),
                        error = %e,
                        "cannot apply the leader's answer"
                    );
                    answer.failed.push(key(target));
                }
            }
        }
    }
    tracing::trace!(leader, progress = answer.progress, failed = ?answer.failed, "replica fetch answered");
    Ok(answer)
}

/// Applies one partition's answer: appends, truncates at a divergence or restarts at the
/// leader's log start; whether it counted as progress.
fn apply_answer(
    partition: &Partition,
    followed: Followed,
    p: &kafka_protocol::messages::fetch_response::PartitionData,
    now: i64,
) -> crate::Result<bool> {
    match ErrorCode::from_code(p.error_code) {
        ErrorCode::NoError => {
            if p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0 {
                let to = partition
                    .divergence_truncation(p.diverging_epoch.epoch, p.diverging_epoch.end_offset)?;
                partition.truncate_as_follower(followed, to)?;
                return Ok(true);
            }
            let records = p.records.clone().unwrap_or_default();
            partition.append_as_follower(followed, records, p.high_watermark, now)?;
            Ok(true)
        }
        ErrorCode::OffsetOutOfRange => {
            let (leo, _) = partition.follower_position()?;
            if p.log_start_offset > leo {
                partition.restart_as_follower_at(followed, p.log_start_offset)?;
                return Ok(true);
            }
            tracing::warn!(
                topic = partition.topic(),
                partition = partition.index(),
                leo,
                leader_start = p.log_start_offset,
                "replica fetch out of range"
            );
            Ok(false)
        }
        code => {
            tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %code, "replica fetch refused");
            Ok(false)
        }
    }
}
