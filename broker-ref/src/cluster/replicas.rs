//! A broker's replicas: the metadata image made real on this broker. Every committed change is
//! reconciled into the local topic registry (topics created with the controller's ids, grown,
//! configured, deleted) and into each partition's role (`Partition::apply_leadership`); one
//! fetcher task per leader pulls the partitions this broker follows (`fetcher`), and the ISR
//! changes the leaders decide (expansions earned by fetches, shrinks of lagging followers every
//! `replica.lag.time.max.ms / 2`) go to the controller as AlterPartition, one at a time per
//! partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::{alter_partition_request, AlterPartitionRequest, BrokerId};
use odradek::ErrorCode;
use tokio::sync::{mpsc, watch};

use super::fetcher::{self, FetchTarget};
use super::image::{config_key, MetadataImage, SharedImage};
use super::lifecycle::LifecycleState;
use super::peers::Peers;
use super::quorum_driver::QuorumHandle;
pub use super::settings::ReplicaSettings;
use crate::partition::{IsrChange, LeaderAndIsr, Partition, ReplicaRole, TopicRegistry};

/// What was last applied to a partition: (leader epoch, partition epoch, this broker led).
type Applied = (i32, i32, bool);

/// An ISR change on its way to the controller.
/// How long a failed or refused ISR change stays pending before it may be proposed again.
const ALTER_PARTITION_RETRY_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Debug)]
struct Proposal {
    topic: String,
    partition: i32,
    change: IsrChange,
}

/// This broker's replicas.
pub struct ReplicaManager {
    settings: ReplicaSettings,
    topics: Arc<TopicRegistry>,
    image: SharedImage,
    lifecycle: watch::Receiver<LifecycleState>,
    /// (leader epoch, partition epoch, led) last applied per partition.
    applied: Mutex<HashMap<(String, i32), Applied>>,
    /// Told when this broker starts or stops leading a partition (the coordinators follow
    /// their internal topics' leadership).
    on_leadership: LeadershipHook,
    on_image: ImageHook,
    /// One fetcher per leader: the partitions it pulls.
    fetchers: Mutex<BTreeMap<i32, watch::Sender<Vec<FetchTarget>>>>,
    proposals: mpsc::UnboundedSender<Proposal>,
}

impl std::fmt::Debug for ReplicaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaManager").finish_non_exhaustive()
    }
}

/// Called with (topic, partition, leads) when this broker starts or stops leading a partition.
pub type LeadershipHook = std::sync::Arc<dyn Fn(&str, i32, bool) + Send + Sync>;

/// Called with every new image (the broker state kept outside partitions follows it: client
/// quotas).
pub type ImageHook = std::sync::Arc<dyn Fn(&MetadataImage) + Send + Sync>;

/// What a [`ReplicaManager`] runs on.
pub struct ReplicaDeps {
    /// Settings.
    pub settings: ReplicaSettings,
    /// The local topic registry.
    pub topics: Arc<TopicRegistry>,
    /// The metadata image.
    pub image: SharedImage,
    /// This broker's registration.
    pub lifecycle: watch::Receiver<LifecycleState>,
    /// The quorum (for the active controller).
    pub quorum: QuorumHandle,
    /// Connections to controllers.
    pub peers: Arc<Peers>,
    /// Told of leadership changes.
    pub on_leadership: LeadershipHook,
    /// Told of every new image.
    pub on_image: ImageHook,
}

impl ReplicaManager {
    /// Starts reconciling, fetching and proposing ISR changes until `shutdown`.
    pub fn start(deps: ReplicaDeps, shutdown: watch::Receiver<bool>) -> Arc<ReplicaManager> {
        let (tx, rx) = mpsc::unbounded_channel();
        let manager = Arc::new(ReplicaManager {
            settings: deps.settings,
            topics: deps.topics,
            image: deps.image,
            lifecycle: deps.lifecycle,
            applied: Mutex::new(HashMap::new()),
            on_leadership: deps.on_leadership,
            on_image: deps.on_image,
            fetchers: Mutex::new(BTreeMap::new()),
            proposals: tx,
        });
        tokio::spawn(manager.clone().publish_loop(shutdown.clone()));
        tokio::spawn(manager.clone().shrink_loop(shutdown.clone()));
        tokio::spawn(
            manager
                .clone()
                .propose_loop(rx, deps.quorum, deps.peers, shutdown),
        );
        manager
    }

    /// Sends an ISR change a leader decided to the controller.
    pub fn propose_isr(&self, topic: &str, partition: i32, change: IsrChange) {
        let _ = self.proposals.send(Proposal {
            topic: topic.to_string(),
            partition,
            change,
        });
    }

    async fn publish_loop(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut changed = self.image.watch();
        let mut lifecycle = self.lifecycle.clone();
        loop {
            self.reconcile();
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = changed.changed() => {}
                _ = lifecycle.changed() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
        if let Ok(mut f) = self.fetchers.lock() {
            f.clear();
        }
    }

    /// Makes the local registry and every partition's role match the image.
    fn reconcile(&self) {
        let image = self.image.current();
        let state = self.lifecycle.borrow().clone();
        // Deleting is safe only once this broker has the metadata up to its registration.
        let settled = state.epoch.is_some() && state.caught_up;
        self.reconcile_topics(&image, settled);
        (self.on_image)(&image);
        let me = self.settings.node_id;
        let mut targets: BTreeMap<i32, Vec<FetchTarget>> = BTreeMap::new();
        let now = crate::clock::now_ms();
        for t in image.topics.values() {
            let Some(local) = self.topics.get(&t.name) else {
                continue;
            };
            let min_isr = self
                .topics
                .effective_config(&local.overrides())
                .map_or(1, |c| c.min_insync_replicas);
            for (index, p) in &t.partitions {
                let Some(partition) = local.partition(*index) else {
                    continue;
                };
                let key = (t.name.clone(), *index);
                let previous = self.applied.lock().ok().and_then(|a| a.get(&key).copied());
                let fresh = previous
                    .is_none_or(|(le, pe, _)| (le, pe) != (p.leader_epoch, p.partition_epoch));
                if fresh {
                    let decision = LeaderAndIsr {
                        me,
                        leader: p.leader,
                        leader_epoch: p.leader_epoch,
                        partition_epoch: p.partition_epoch,
                        replicas: p.replicas.clone(),
                        isr: p.isr.clone(),
                        min_isr,
                    };
                    match partition.apply_leadership(&decision, now) {
                        Ok(role) => {
                            tracing::debug!(topic = %t.name, partition = index, ?role, leader = p.leader, epoch = p.leader_epoch, "partition role");
                            let leads = role == ReplicaRole::Leader;
                            let (led, led_epoch) = previous.map_or((false, -1), |(e, _, l)| (l, e));
                            if leads && (!led || led_epoch != p.leader_epoch) {
                                (self.on_leadership)(&t.name, *index, true);
                            } else if !leads && led {
                                (self.on_leadership)(&t.name, *index, false);
                            }
                            if let Ok(mut a) = self.applied.lock() {
                                a.insert(key, (p.leader_epoch, p.partition_epoch, leads));
                            }
                        }
                        Err(e) => {
                            tracing::warn!(topic = %t.name, partition = index, error = %e, "cannot take the partition's role")
                        }
                    }
                }
                if p.leader >= 0 && p.leader != me && p.replicas.contains(&me) {
                    targets.entry(p.leader).or_default().push(FetchTarget {
                        partition: partition.clone(),
                        topic_id: t.id.clone(),
                        leader_epoch: p.leader_epoch,
                    });
                }
            }
        }
        self.update_fetchers(targets);
    }

    fn reconcile_topics(&self, image: &MetadataImage, settled: bool) {
        for t in image.topics.values() {
            let Ok(id) = uuid::Uuid::parse_str(&t.id) else {
                continue;
            };
            let overrides = image
                .configs
                .get(&config_key(2, &t.name))
                .cloned()
                .unwrap_or_default();
            let partitions = t.partitions.len() as i32;
            let local = self.topics.get(&t.name);
            if local.as_ref().is_some_and(|l| l.id != id) {
                if !settled {
                    continue;
                }
                if let Err(e) = self.topics.delete(&t.name) {
                    tracing::warn!(topic = %t.name, error = %e, "cannot delete a topic recreated elsewhere");
                    continue;
                }
                self.forget_topic(&t.name);
            }
            match self.topics.get(&t.name) {
                None if partitions > 0 => {
                    if let Err(e) = self
                        .topics
                        .create_with_id(&t.name, id, partitions, overrides, false)
                    {
                        tracing::warn!(topic = %t.name, error = %e, "cannot host the topic");
                    }
                }
                None => {}
                Some(local) => {
                    if local.partition_count() < partitions {
                        if let Err(e) = self.topics.add_partitions(&t.name, partitions, false) {
                            tracing::warn!(topic = %t.name, error = %e, "cannot grow the topic");
                        }
                    }
                    if local.overrides() != overrides {
                        if let Err(e) = self.topics.set_overrides(&t.name, overrides, false) {
                            tracing::warn!(topic = %t.name, error = %e, "cannot apply the topic's configs");
                        }
                    }
                }
            }
        }
        if settled {
            for local in self.topics.list() {
                if !image.topics.contains_key(&local.name) {
                    if let Err(e) = self.topics.delete(&local.name) {
                        tracing::warn!(topic = %local.name, error = %e, "cannot delete the topic");
                    }
                    self.forget_topic(&local.name);
                }
            }
        }
    }

    /// Forgets a deleted topic's partitions (telling the hook of those it led).
    fn forget_topic(&self, name: &str) {
        let led: Vec<i32> = match self.applied.lock() {
            Ok(mut a) => {
                let led = a
                    .iter()
                    .filter(|((n, _), (_, _, l))| n == name && *l)
                    .map(|((_, i), _)| *i)
                    .collect();
                a.retain(|(n, _), _| n != name);
                led
            }
            Err(_) => Vec::new(),
        };
        for i in led {
            (self.on_leadership)(name, i, false);
        }
    }

    fn update_fetchers(&self, targets: BTreeMap<i32, Vec<FetchTarget>>) {
        let Ok(mut fetchers) = self.fetchers.lock() else {
            return;
        };
        fetchers.retain(|leader, _| targets.contains_key(leader));
        for (leader, list) in targets {
            match fetchers.get(&leader) {
                Some(tx) => {
                    tx.send_if_modified(|current| {
                        let same = current.len() == list.len()
                            && current.iter().zip(&list).all(|(a, b)| a.same_as(b));
                        if !same {
                            *current = list;
                        }
                        !same
                    });
                }
                None => {
                    let (tx, rx) = watch::channel(list);
                    tokio::spawn(fetcher::run(
                        self.settings.clone(),
                        leader,
                        rx,
                        self.image.clone(),
                    ));
                    fetchers.insert(leader, tx);
                }
            }
        }
    }

    /// Every `replica.lag.time.max.ms / 2`, leaders propose dropping lagging followers.
    async fn shrink_loop(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let period = Duration::from_millis((self.settings.lag_max_ms / 2).max(50) as u64);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(period) => {}
            }
            let now = crate::clock::now_ms();
            for topic in self.topics.list() {
                for p in topic.partitions() {
                    if p.replication_view().role != ReplicaRole::Leader {
                        continue;
                    }
                    if let Some(change) = p.isr_shrink(now, self.settings.lag_max_ms) {
                        tracing::info!(topic = %topic.name, partition = p.index(), isr = ?change.isr, "shrinking the ISR");
                        self.propose_isr(&topic.name, p.index(), change);
                    }
                }
            }
        }
    }

    async fn propose_loop(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<Proposal>,
        quorum: QuorumHandle,
        peers: Arc<Peers>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        loop {
            let proposal = tokio::select! {
                _ = shutdown.changed() => return,
                p = rx.recv() => match p { Some(p) => p, None => return },
            };
            let partition = self
                .topics
                .get(&proposal.topic)
                .and_then(|t| t.partition(proposal.partition));
            let Some(partition) = partition else { continue };
            let outcome = self.send_proposal(&proposal, &quorum, &peers).await;
            let accepted = match outcome {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(topic = %proposal.topic, partition = proposal.partition, error = %e, "AlterPartition failed");
                    None
                }
            };
            if accepted.is_some() {
                if let Err(e) = partition.isr_change_done(accepted) {
                    tracing::warn!(error = %e, "cannot apply the ISR change");
                }
                continue;
            }
            // Failed or refused: the change stays pending for a retry backoff, so the next
            // follower fetch does not resend it at once (an unreachable controller was asked
            // hundreds of times a second); new metadata usually settles it meanwhile.
            tokio::spawn(async move {
                tokio::time::sleep(ALTER_PARTITION_RETRY_BACKOFF).await;
                if let Err(e) = partition.isr_change_refused(&proposal.change) {
                    tracing::warn!(error = %e, "cannot clear the ISR change");
                }
            });
        }
    }

    /// One AlterPartition to the active controller: the ISR and partition epoch it accepted.
    async fn send_proposal(
        &self,
        proposal: &Proposal,
        quorum: &QuorumHandle,
        peers: &Peers,
    ) -> crate::Result<Option<(Vec<i32>, i32)>> {
        let epoch = self
            .lifecycle
            .borrow()
            .epoch
            .ok_or(ErrorCode::StaleBrokerEpoch)?;
        let controller = quorum.status().leader.ok_or(ErrorCode::NotController)?;
        let topic_id = self
            .topics
            .get(&proposal.topic)
            .map(|t| t.id)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let request = AlterPartitionRequest::default()
            .with_broker_id(BrokerId(self.settings.node_id))
            .with_broker_epoch(epoch)
            .with_topics(vec![alter_partition_request::TopicData::default()
                .with_topic_id(topic_id)
                .with_partitions(vec![
                    alter_partition_request::PartitionData::default()
                        .with_partition_index(proposal.partition)
                        .with_leader_epoch(proposal.change.leader_epoch)
                        .with_partition_epoch(proposal.change.partition_epoch)
                        .with_new_isr_with_epochs(
                            proposal
                                .change
                                .isr
                                .iter()
                                .map(|id| {
                                    alter_partition_request::BrokerState::default()
                                        .with_broker_id(BrokerId(*id))
                                        .with_broker_epoch(-1)
                                })
                                .collect(),
                        ),
                ])]);
        let response = peers.call(controller, &request).await?;
        ErrorCode::from_code(response.error_code).into_result()?;
        let p = response
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .next()
            .ok_or(ErrorCode::UnknownServerError)?;
        match ErrorCode::from_code(p.error_code) {
            ErrorCode::NoError => Ok(Some((
                p.isr.iter().map(|b| b.0).collect(),
                p.partition_epoch,
            ))),
            code => {
                tracing::info!(topic = %proposal.topic, partition = proposal.partition, error = %code, "AlterPartition refused");
                Ok(None)
            }
        }
    }

    /// The partition of `topic` this broker hosts.
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topics.get(topic)?.partition(index)
    }
}
