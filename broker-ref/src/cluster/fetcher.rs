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
use odradek::security::SecurityConfig;
use odradek::ErrorCode;
use tokio::sync::watch;

use super::image::SharedImage;
use super::settings::ReplicaSettings;
use crate::partition::Partition;

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
    let security = SecurityConfig::default();
    let client_id = format!("odradek-replica-fetcher-{}", settings.node_id);
    loop {
        let list = targets.borrow_and_update().clone();
        if list.is_empty() {
            if targets.changed().await.is_err() {
                return;
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
                        },
                    )
                    .await?;
                    connection = Some(c.clone());
                    c
                }
            };
            fetch_once(&settings, &c, &list).await
        }
        .await;
        match outcome {
            Ok(true) => {}
            Ok(false) => {
                // Nothing usable came back (errors only): wait for metadata or back off.
                tokio::select! {
                    r = targets.changed() => if r.is_err() { return },
                    _ = tokio::time::sleep(settings.fetch_backoff) => {}
                }
            }
            Err(e) => {
                tracing::debug!(leader, error = %e, "replica fetch failed");
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

/// One replica Fetch for `list`; whether any partition made progress or was answered
/// without error.
async fn fetch_once(
    settings: &ReplicaSettings,
    c: &Connection,
    list: &[FetchTarget],
) -> crate::Result<bool> {
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
    let response = c.send(&request).await?;
    ErrorCode::from_code(response.error_code).into_result()?;
    let now = crate::clock::now_ms();
    let mut useful = false;
    for topic in response.responses {
        for p in topic.partitions {
            let Some(target) = index.get(&(topic.topic.to_string(), p.partition_index)) else {
                continue;
            };
            let partition = &target.partition;
            match ErrorCode::from_code(p.error_code) {
                ErrorCode::NoError => {
                    useful = true;
                    if p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0 {
                        let to = partition.divergence_truncation(
                            p.diverging_epoch.epoch,
                            p.diverging_epoch.end_offset,
                        )?;
                        partition.truncate_as_follower(to)?;
                        continue;
                    }
                    if let Some(records) = p.records.filter(|r| !r.is_empty()) {
                        partition.append_as_follower(records, p.high_watermark, now)?;
                    } else {
                        partition.append_as_follower(bytes::Bytes::new(), p.high_watermark, now)?;
                    }
                }
                ErrorCode::OffsetOutOfRange => {
                    let (leo, _) = partition.follower_position()?;
                    if p.log_start_offset > leo {
                        partition.restart_as_follower_at(p.log_start_offset)?;
                        useful = true;
                    } else {
                        tracing::warn!(
                            topic = partition.topic(),
                            partition = partition.index(),
                            leo,
                            leader_start = p.log_start_offset,
                            "replica fetch out of range"
                        );
                    }
                }
                code => {
                    tracing::debug!(topic = partition.topic(), partition = partition.index(), error = %code, "replica fetch refused");
                }
            }
        }
    }
    Ok(useful)
}
