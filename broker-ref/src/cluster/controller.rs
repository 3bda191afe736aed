//! The active controller: the quorum's leader decides every metadata change and writes it to
//! the metadata log. Brokers register and heartbeat here (soft state: a broker whose session
//! runs out is fenced, and leadership moves away from it), partition leaders propose ISR
//! changes (AlterPartition, with KRaft's checks), and topics are created, grown and deleted.
//!
//! Writes are serialized: each one is computed from the committed image, appended, and
//! answered once it is applied, so the next one sees it. A write whose leadership ended before
//! it was applied answers NOT_CONTROLLER (the caller retries with the new controller).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odradek::ErrorCode;
use tokio::sync::watch;

use super::image::{config_key, MetadataImage, PartitionImage, SharedImage};
use super::placement;
use super::quorum_driver::QuorumHandle;
use super::records::{self, EndpointRecord, MetadataRecord};
use crate::{Error, Result};

/// Producer ids handed to a broker per AllocateProducerIds (Kafka's block size).
pub const PRODUCER_ID_BLOCK: i32 = 1000;

/// How long a write waits to be committed and applied.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// One config resource's change: its type (Kafka's codes: 2 topic, 4 broker, 32 group), its
/// name, and its keys set (`Some`) or removed (`None`).
pub type ConfigChange = (i8, String, Vec<(String, Option<String>)>);

/// Checks a topic's config overrides.
pub type ConfigCheck = Arc<dyn Fn(&BTreeMap<String, String>) -> Result<()> + Send + Sync>;

/// Settings the controller decides with.
#[derive(Clone)]
pub struct ControllerSettings {
    /// `broker.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `num.partitions`.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i32,
    /// `unclean.leader.election.enable` (topic configs may override it).
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable`: every `leader.imbalance.check.interval.seconds`,
    /// preferred replicas that are usable and in sync take their leadership back (Kafka 4's
    /// controller, which has no per-broker threshold any more).
    pub leader_rebalance: Option<Duration>,
    /// Checks a new topic's config overrides (INVALID_CONFIG naming the key).
    pub validate_topic_config: ConfigCheck,
}

impl std::fmt::Debug for ControllerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerSettings")
            .field("session_timeout", &self.session_timeout)
            .finish_non_exhaustive()
    }
}

/// What a broker learns from a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatState {
    /// It has caught up with the metadata up to its registration.
    pub caught_up: bool,
    /// It is fenced.
    pub fenced: bool,
    /// It asked to shut down and leads nothing any more.
    pub should_shut_down: bool,
}

/// One partition of an AlterPartition request.
#[derive(Debug, Clone)]
pub struct IsrProposal {
    /// The topic's id.
    pub topic_id: String,
    /// Partition index.
    pub partition: i32,
    /// The leader epoch the leader decided in.
    pub leader_epoch: i32,
    /// The partition epoch the proposal builds on.
    pub partition_epoch: i32,
    /// The proposed ISR.
    pub new_isr: Vec<i32>,
    /// The leader finished recovering (an unclean election's leader, KIP-704).
    pub recovered: bool,
}

/// A topic to create.
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count (-1: `num.partitions`).
    pub num_partitions: i32,
    /// Replication factor (-1: `default.replication.factor`).
    pub replication_factor: i16,
    /// Explicit replica assignment per partition, if given.
    pub assignments: Vec<Vec<i32>>,
    /// Config overrides.
    pub configs: BTreeMap<String, String>,
}

/// A topic as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    /// Its id.
    pub id: String,
    /// Partition count.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
}

/// The active controller of one controller node.
pub struct Controller {
    settings: ControllerSettings,
    quorum: QuorumHandle,
    image: SharedImage,
    writes: tokio::sync::Mutex<()>,
    /// Last heartbeat per broker (soft state: not in the log).
    heartbeats: Mutex<HashMap<i32, Instant>>,
    /// The epoch this node last became active in: heartbeats restart from then.
    active_epoch: Mutex<i32>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller").finish_non_exhaustive()
    }
}

fn not_controller() -> Error {
    Error::kafka(
        ErrorCode::NotController,
        "this node is not the active controller",
    )
}

impl Controller {
    /// A controller deciding over `image` through `quorum`.
    pub fn new(
        settings: ControllerSettings,
        quorum: QuorumHandle,
        image: SharedImage,
    ) -> Arc<Self> {
        Arc::new(Controller {
            settings,
            quorum,
            image,
            writes: tokio::sync::Mutex::new(()),
            heartbeats: Mutex::new(HashMap::new()),
            active_epoch: Mutex::new(-1),
        })
    }

    /// Fails unless this node is the active controller; on the first call in a new epoch
    /// every broker's heartbeat session starts afresh (heartbeats are not in the log).
    fn ensure_active(&self) -> Result<()> {
        let status = self.quorum.status();
        if !status.active {
            return Err(not_controller());
        }
        let mut epoch = self
            .active_epoch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *epoch != status.epoch {
            *epoch = status.epoch;
            let now = Instant::now();
            let mut hb = self
                .heartbeats
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            hb.clear();
            for id in self
                .image
                .read(|i| i.brokers.keys().copied().collect::<Vec<_>>())
            {
                hb.insert(id, now);
            }
        }
        Ok(())
    }

    /// [`Controller::write`] for the handlers that compute a change themselves (ACLs, SCRAM
    /// credentials): `build` sees the committed image under the controller's write lock.
    pub async fn write_records<T>(
        &self,
        build: impl FnOnce(&MetadataImage) -> Result<(Vec<MetadataRecord>, T)>,
    ) -> Result<T> {
        self.write(build).await
    }

    /// Computes records from the committed image, writes them, and returns once applied.
    async fn write<T>(
        &self,
        build: impl FnOnce(&MetadataImage) -> Result<(Vec<MetadataRecord>, T)>,
    ) -> Result<T> {
        let _serial = self.writes.lock().await;
        self.ensure_active()?;
        let (batch, out) = self.image.read(build)?;
        if batch.is_empty() {
            return Ok(out);
        }
        let (offset, epoch) = self
            .quorum
            .propose(vec![records::encode(&batch)])
            .await
            .map_err(|_| not_controller())?;
        if !self.quorum.wait_applied(offset, WRITE_TIMEOUT).await {
            return Err(Error::kafka(
                ErrorCode::RequestTimedOut,
                "the metadata change was not committed in time",
            ));
        }
        if self.quorum.status().epoch != epoch {
            return Err(not_controller());
        }
        Ok(out)
    }

    fn touch(&self, broker: i32) {
        if let Ok(mut hb) = self.heartbeats.lock() {
            hb.insert(broker, Instant::now());
        }
    }

    fn unclean_for(&self, image: &MetadataImage, topic: &str) -> bool {
        image
            .configs
            .get(&config_key(2, topic))
            .and_then(|c| c.get("unclean.leader.election.enable"))
            .map_or(self.settings.unclean_leader_election, |v| v == "true")
    }

    /// The partition changes that follow from `usable` brokers: leaders elected, ISRs trimmed
    /// of unusable members (see [`placement::elect`]), for every partition `touches`.
    fn leadership_changes(
        &self,
        image: &MetadataImage,
        usable: &BTreeSet<i32>,
        touches: impl Fn(&PartitionImage) -> bool,
    ) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        for topic in image.topics.values() {
            let unclean = self.unclean_for(image, &topic.name);
            for (index, p) in &topic.partitions {
                if !touches(p) {
                    continue;
                }
                let e = placement::elect(&p.replicas, &p.isr, p.leader, usable, unclean);
                if e.leader != p.leader || e.isr != p.isr || (e.recovering && !p.recovering) {
                    out.push(MetadataRecord::PartitionChange {
                        topic_id: topic.id.clone(),
                        partition: *index,
                        leader: (e.leader != p.leader).then_some(e.leader),
                        isr: (e.isr != p.isr).then_some(e.isr),
                        replicas: None,
                        recovering: e.recovering.then_some(true),
                        reassignment: None,
                    });
                }
            }
        }
        out
    }

    fn usable(image: &MetadataImage) -> BTreeSet<i32> {
        image.usable_brokers().map(|b| b.id).collect()
    }

    // ---- brokers ----------------------------------------------------------------------------

    /// BrokerRegistration: a new registration (fenced until it catches up). A broker already
    /// registered under another incarnation whose session is live is refused
    /// (DUPLICATE_BROKER_REGISTRATION); an older registration's leadership moves away first.
    pub async fn register_broker(
        &self,
        broker_id: i32,
        incarnation_id: String,
        endpoints: Vec<EndpointRecord>,
        rack: Option<String>,
    ) -> Result<i64> {
        self.ensure_active()?;
        let live = |id: i32| {
            self.heartbeats
                .lock()
                .ok()
                .and_then(|hb| hb.get(&id).copied())
                .is_some_and(|t| t.elapsed() < self.settings.session_timeout)
        };
        let session_live = live(broker_id);
        let incarnation = incarnation_id.clone();
        self.write(|image| {
            if let Some(old) = image.brokers.get(&broker_id) {
                if old.incarnation_id != incarnation && !old.fenced && session_live {
                    return Err(Error::kafka(
                        ErrorCode::DuplicateBrokerRegistration,
                        format!("broker {broker_id} is already registered and heartbeating"),
                    ));
                }
            }
            let mut batch = Vec::new();
            if image.brokers.get(&broker_id).is_some_and(|b| !b.fenced) {
                let mut usable = Self::usable(image);
                usable.remove(&broker_id);
                batch.extend(self.leadership_changes(image, &usable, |p| {
                    p.leader == broker_id || p.isr.contains(&broker_id)
                }));
            }
            batch.push(MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id: incarnation,
                endpoints,
                rack,
            });
            Ok((batch, ()))
        })
        .await?;
        self.touch(broker_id);
        self.image
            .read(|i| i.brokers.get(&broker_id).map(|b| b.epoch))
            .ok_or_else(not_controller)
    }

    /// BrokerHeartbeat: keeps the broker's session, unfences it once it caught up with its own
    /// registration, and handles a controlled shutdown (leadership moves away first).
    pub async fn heartbeat(
        &self,
        broker_id: i32,
        broker_epoch: i64,
        metadata_offset: i64,
        want_fence: bool,
        want_shut_down: bool,
    ) -> Result<HeartbeatState> {
        self.ensure_active()?;
        let known = self
            .image
            .read(|i| i.brokers.get(&broker_id).map(|b| b.epoch));
        if known != Some(broker_epoch) {
            return Err(Error::kafka(
                ErrorCode::StaleBrokerEpoch,
                format!("broker {broker_id} epoch {broker_epoch} is not its registration"),
            ));
        }
        self.touch(broker_id);
        self.write(|image| {
            let Some(b) = image.brokers.get(&broker_id) else {
                return Ok((Vec::new(), ()));
            };
            let mut batch = Vec::new();
            let caught_up = metadata_offset >= b.epoch;
            if want_shut_down && !b.shutting_down {
                let mut usable = Self::usable(image);
                usable.remove(&broker_id);
                batch.extend(self.leadership_changes(image, &usable, |p| {
                    p.leader == broker_id || p.isr.contains(&broker_id)
                }));
                batch.push(MetadataRecord::BrokerShuttingDown {
                    broker_id,
                    broker_epoch,
                });
            } else if want_fence && !b.fenced {
                let mut usable = Self::usable(image);
                usable.remove(&broker_id);
                batch.extend(self.leadership_changes(image, &usable, |p| {
                    p.leader == broker_id || p.isr.contains(&broker_id)
                }));
                batch.push(MetadataRecord::FenceBroker {
                    broker_id,
                    broker_epoch,
                });
            } else if b.fenced && !want_fence && !want_shut_down && caught_up {
                batch.push(MetadataRecord::UnfenceBroker {
                    broker_id,
                    broker_epoch,
                });
                let mut usable = Self::usable(image);
                usable.insert(broker_id);
                // Partitions it can lead again (offline ones with it in the ISR; with unclean
                // elections, offline ones with it as a replica).
                batch.extend(self.leadership_changes(image, &usable, |p| {
                    p.leader < 0 && p.replicas.contains(&broker_id)
                }));
            }
            Ok((batch, ()))
        })
        .await?;
        Ok(self.image.read(|i| {
            let b = i.brokers.get(&broker_id);
            let leads = i
                .topics
                .values()
                .flat_map(|t| t.partitions.values())
                .any(|p| p.leader == broker_id);
            let shutting = b.is_some_and(|b| b.shutting_down);
            HeartbeatState {
                caught_up: metadata_offset >= b.map_or(i64::MAX, |b| b.epoch),
                fenced: b.is_none_or(|b| b.fenced || b.shutting_down),
                should_shut_down: shutting && !leads,
            }
        }))
    }

    /// Fences every unfenced broker whose heartbeat session ran out (run periodically).
    pub async fn fence_expired(&self) -> Result<()> {
        if !self.quorum.status().active {
            return Ok(());
        }
        self.ensure_active()?;
        let expired: Vec<(i32, i64)> = {
            let hb = self
                .heartbeats
                .lock()
                .map(|h| h.clone())
                .unwrap_or_default();
            self.image.read(|i| {
                i.brokers
                    .values()
                    .filter(|b| !b.fenced)
                    .filter(|b| {
                        hb.get(&b.id)
                            .is_none_or(|t| t.elapsed() > self.settings.session_timeout)
                    })
                    .map(|b| (b.id, b.epoch))
                    .collect()
            })
        };
        for (broker_id, broker_epoch) in expired {
            tracing::warn!(broker_id, "broker session expired: fencing it");
            self.write(|image| {
                if image
                    .brokers
                    .get(&broker_id)
                    .is_none_or(|b| b.fenced || b.epoch != broker_epoch)
                {
                    return Ok((Vec::new(), ()));
                }
                let mut usable = Self::usable(image);
                usable.remove(&broker_id);
                let mut batch = self.leadership_changes(image, &usable, |p| {
                    p.leader == broker_id || p.isr.contains(&broker_id)
                });
                batch.push(MetadataRecord::FenceBroker {
                    broker_id,
                    broker_epoch,
                });
                Ok((batch, ()))
            })
            .await?;
        }
        Ok(())
    }

    /// Preferred leader election (Kafka's auto leader rebalance): every partition whose first
    /// replica is usable and in the ISR but does not lead gets it back as leader.
    pub async fn rebalance_leaders(&self) -> Result<()> {
        if !self.quorum.status().active {
            return Ok(());
        }
        self.write(|image| {
            let usable = Self::usable(image);
            let mut batch = Vec::new();
            for t in image.topics.values() {
                for (index, p) in &t.partitions {
                    let Some(first) = p.replicas.first() else {
                        continue;
                    };
                    if p.leader != *first && usable.contains(first) && p.isr.contains(first) {
                        batch.push(MetadataRecord::PartitionChange {
                            topic_id: t.id.clone(),
                            partition: *index,
                            leader: Some(*first),
                            isr: None,
                            replicas: None,
                            recovering: None,
                            reassignment: None,
                        });
                    }
                }
            }
            if !batch.is_empty() {
                tracing::info!(partitions = batch.len(), "preferred leader election");
            }
            Ok((batch, ()))
        })
        .await
    }

    /// Runs [`Controller::fence_expired`] every 100 ms, and the leader rebalance when enabled,
    /// until `shutdown`.
    pub fn spawn_fencer(
        self: &Arc<Self>,
        mut shutdown: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            let rebalance = this.settings.leader_rebalance;
            let mut next_rebalance = rebalance.map(|every| tokio::time::Instant::now() + every);
            loop {
                tokio::select! {
                    _ = shutdown.changed() => return,
                    _ = tick.tick() => {
                        if let Err(e) = this.fence_expired().await {
                            tracing::debug!(error = %e, "fencing pass");
                        }
                        if let (Some(at), Some(every)) = (next_rebalance, rebalance) {
                            if tokio::time::Instant::now() >= at {
                                next_rebalance = Some(at + every);
                                if let Err(e) = this.rebalance_leaders().await {
                                    tracing::debug!(error = %e, "leader rebalance");
                                }
                            }
                        }
                    }
                }
            }
        })
    }

    // ---- partitions -------------------------------------------------------------------------

    /// AlterPartition from `broker_id` (epoch `broker_epoch`): each proposal checked as KRaft
    /// checks it, accepted ones written together. One result per proposal, the partition's
    /// state after the write for accepted ones.
    pub async fn alter_partition(
        &self,
        broker_id: i32,
        broker_epoch: i64,
        proposals: Vec<IsrProposal>,
    ) -> Result<Vec<Result<PartitionImage>>> {
        let keys: Vec<(String, i32)> = proposals
            .iter()
            .map(|p| (p.topic_id.clone(), p.partition))
            .collect();
        let verdicts = self
            .write(|image| {
                match image.brokers.get(&broker_id) {
                    Some(b) if b.epoch == broker_epoch => {}
                    _ => {
                        return Err(Error::kafka(
                            ErrorCode::StaleBrokerEpoch,
                            format!("broker {broker_id} epoch {broker_epoch} is stale"),
                        ))
                    }
                }
                let usable = Self::usable(image);
                let mut batch = Vec::new();
                let mut verdicts = Vec::new();
                for p in &proposals {
                    let verdict = check_isr(image, broker_id, &usable, p);
                    if let Ok(Some(change)) = &verdict {
                        batch.push(change.clone());
                    }
                    verdicts.push(verdict.map(|_| ()));
                }
                Ok((batch, verdicts))
            })
            .await?;
        Ok(verdicts
            .into_iter()
            .zip(keys)
            .map(|(v, (topic_id, partition))| {
                v.and_then(|()| {
                    self.image
                        .read(|i| {
                            let name = i.topic_names.get(&topic_id)?;
                            i.topics.get(name)?.partitions.get(&partition).cloned()
                        })
                        .ok_or_else(|| ErrorCode::UnknownTopicOrPartition.into())
                })
            })
            .collect())
    }

    // ---- topics -----------------------------------------------------------------------------

    /// CreateTopics: each topic validated, assigned replicas (rack-aware) and written; one
    /// result per topic, in order.
    pub async fn create_topics(
        &self,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> Result<Vec<Result<CreatedTopic>>> {
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<String> = topics
            .iter()
            .filter(|t| !seen.insert(t.name.clone()))
            .map(|t| t.name.clone())
            .collect();
        self.write(|image| {
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for t in &topics {
                let result = if duplicates.contains(&t.name) {
                    Err(Error::kafka(
                        ErrorCode::InvalidRequest,
                        format!("topic `{}` appears twice in the request", t.name),
                    ))
                } else {
                    self.plan_topic(image, t).map(|(records, created)| {
                        if !validate_only {
                            batch.extend(records);
                        }
                        created
                    })
                };
                results.push(result);
            }
            Ok((batch, results))
        })
        .await
    }

    fn plan_topic(
        &self,
        image: &MetadataImage,
        t: &NewTopic,
    ) -> Result<(Vec<MetadataRecord>, CreatedTopic)> {
        crate::partition::validate_topic_name(&t.name)?;
        if image.topics.contains_key(&t.name) {
            return Err(Error::kafka(
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{}' already exists.", t.name),
            ));
        }
        (self.settings.validate_topic_config)(&t.configs)?;
        let brokers: Vec<(i32, Option<String>)> = image
            .usable_brokers()
            .map(|b| (b.id, b.rack.clone()))
            .collect();
        let assignments = if !t.assignments.is_empty() {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                return Err(Error::kafka(
                    ErrorCode::InvalidRequest,
                    "both replica assignments and partition count or replication factor were given",
                ));
            }
            for a in &t.assignments {
                let distinct: BTreeSet<i32> = a.iter().copied().collect();
                if a.is_empty() || distinct.len() != a.len() {
                    return Err(Error::kafka(
                        ErrorCode::InvalidReplicaAssignment,
                        format!("replica assignment {a:?} is empty or names a broker twice"),
                    ));
                }
                if let Some(unknown) = a.iter().find(|id| !image.brokers.contains_key(id)) {
                    return Err(Error::kafka(
                        ErrorCode::InvalidReplicaAssignment,
                        format!("replica assignment {a:?} names broker {unknown}, which is not registered"),
                    ));
                }
            }
            t.assignments.clone()
        } else {
            let partitions = if t.num_partitions == -1 {
                self.settings.num_partitions
            } else {
                t.num_partitions
            };
            if partitions < 1 {
                return Err(Error::kafka(
                    ErrorCode::InvalidPartitions,
                    "Number of partitions was set to an invalid non-positive value.",
                ));
            }
            let rf = if t.replication_factor == -1 {
                self.settings.default_replication_factor
            } else {
                i32::from(t.replication_factor)
            };
            if rf < 1 {
                return Err(Error::kafka(
                    ErrorCode::InvalidReplicationFactor,
                    "Replication factor must be larger than 0.",
                ));
            }
            placement::assign(&brokers, 0, partitions, rf as usize).ok_or_else(|| {
                Error::kafka(
                    ErrorCode::InvalidReplicationFactor,
                    format!(
                        "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {} broker(s) are registered.",
                        brokers.len()
                    ),
                )
            })?
        };
        let id = uuid::Uuid::new_v4().to_string();
        let mut batch = vec![MetadataRecord::Topic {
            name: t.name.clone(),
            topic_id: id.clone(),
        }];
        for (k, v) in &t.configs {
            batch.push(MetadataRecord::Config {
                resource_type: 2,
                resource_name: t.name.clone(),
                name: k.clone(),
                value: Some(v.clone()),
            });
        }
        let usable = Self::usable(image);
        for (index, replicas) in assignments.iter().enumerate() {
            let isr: Vec<i32> = replicas
                .iter()
                .copied()
                .filter(|r| usable.contains(r))
                .collect();
            let leader = isr.first().copied().unwrap_or(-1);
            batch.push(MetadataRecord::Partition {
                topic_id: id.clone(),
                partition: index as i32,
                replicas: replicas.clone(),
                isr: if isr.is_empty() {
                    replicas.clone()
                } else {
                    isr
                },
                leader,
                leader_epoch: 0,
                partition_epoch: 0,
            });
        }
        let created = CreatedTopic {
            id,
            partitions: assignments.len() as i32,
            replication_factor: assignments.first().map_or(0, |a| a.len() as i16),
        };
        Ok((batch, created))
    }

    /// DeleteTopics by name: one result per name (the deleted topic's id).
    pub async fn delete_topics(&self, names: Vec<String>) -> Result<Vec<Result<String>>> {
        self.write(|image| {
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for name in &names {
                match image.topics.get(name) {
                    Some(t) if crate::partition::INTERNAL_TOPICS.contains(&name.as_str()) => {
                        let _ = t;
                        results.push(Err(Error::kafka(
                            ErrorCode::InvalidTopic,
                            format!("cannot delete internal topic `{name}`"),
                        )));
                    }
                    Some(t) => {
                        batch.push(MetadataRecord::RemoveTopic {
                            topic_id: t.id.clone(),
                        });
                        results.push(Ok(t.id.clone()));
                    }
                    None => results.push(Err(Error::kafka(
                        ErrorCode::UnknownTopicOrPartition,
                        "unknown topic",
                    ))),
                }
            }
            Ok((batch, results))
        })
        .await
    }

    /// CreatePartitions: grows each topic to its new count (replicas placed like a create's).
    pub async fn create_partitions(
        &self,
        growths: Vec<Growth>,
        validate_only: bool,
    ) -> Result<Vec<Result<()>>> {
        self.write(|image| {
            let brokers: Vec<(i32, Option<String>)> = image
                .usable_brokers()
                .map(|b| (b.id, b.rack.clone()))
                .collect();
            let usable = Self::usable(image);
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for (name, count, assignments) in &growths {
                let result = (|| {
                    let t = image.topics.get(name).ok_or_else(|| {
                        Error::kafka(ErrorCode::UnknownTopicOrPartition, "unknown topic")
                    })?;
                    let current = t.partitions.len() as i32;
                    if *count <= current {
                        return Err(Error::kafka(
                            ErrorCode::InvalidPartitions,
                            format!("Topic currently has {current} partitions, which is higher than the requested {count}."),
                        ));
                    }
                    let rf = t.partitions.values().next().map_or(1, |p| p.replicas.len());
                    let plan = match assignments {
                        Some(list) => explicit_assignments(image, list, count - current, rf)?,
                        None => placement::assign(&brokers, current, count - current, rf)
                            .ok_or_else(|| {
                                Error::kafka(
                                    ErrorCode::InvalidReplicationFactor,
                                    format!("Unable to replicate the new partitions {rf} time(s): only {} broker(s) are usable.", brokers.len()),
                                )
                            })?,
                    };
                    if !validate_only {
                        for (i, replicas) in plan.into_iter().enumerate() {
                            let isr: Vec<i32> =
                                replicas.iter().copied().filter(|r| usable.contains(r)).collect();
                            batch.push(MetadataRecord::Partition {
                                topic_id: t.id.clone(),
                                partition: current + i as i32,
                                leader: isr.first().copied().unwrap_or(-1),
                                isr: if isr.is_empty() { replicas.clone() } else { isr },
                                replicas,
                                leader_epoch: 0,
                                partition_epoch: 0,
                            });
                        }
                    }
                    Ok(())
                })();
                results.push(result);
            }
            Ok((batch, results))
        })
        .await
    }

    /// Config changes of topics, brokers (the cluster-wide default `""` or a node id) and
    /// groups: per resource, keys set (`Some`) or removed (`None`). A topic must exist and its
    /// resulting overrides are checked here; brokers and groups come checked by the broker that
    /// forwards them (it holds the static configuration they are validated against). One result
    /// per resource.
    pub async fn alter_configs(
        &self,
        changes: Vec<ConfigChange>,
        validate_only: bool,
    ) -> Result<Vec<Result<()>>> {
        self.write(|image| {
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for (resource_type, name, keys) in &changes {
                let result = (|| {
                    if *resource_type == 2 {
                        if !image.topics.contains_key(name) {
                            return Err(Error::kafka(
                                ErrorCode::UnknownTopicOrPartition,
                                format!("unknown topic `{name}`"),
                            ));
                        }
                        let mut overrides = image
                            .configs
                            .get(&config_key(2, name))
                            .cloned()
                            .unwrap_or_default();
                        for (k, v) in keys {
                            match v {
                                Some(v) => overrides.insert(k.clone(), v.clone()),
                                None => overrides.remove(k),
                            };
                        }
                        (self.settings.validate_topic_config)(&overrides)?;
                    }
                    if !validate_only {
                        for (k, v) in keys {
                            batch.push(MetadataRecord::Config {
                                resource_type: *resource_type,
                                resource_name: name.clone(),
                                name: k.clone(),
                                value: v.clone(),
                            });
                        }
                    }
                    Ok(())
                })();
                results.push(result);
            }
            Ok((batch, results))
        })
        .await
    }

    /// ElectLeaders: `unclean` false elects each partition's preferred replica (the first)
    /// when it is usable and in sync; true elects a leader for a partition that has none, from
    /// the ISR if any member is usable, else any usable replica (alone in the ISR, recovering:
    /// data it lacks is lost). `None` names every partition. One result per partition:
    /// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or
    /// UNKNOWN_TOPIC_OR_PARTITION as Kafka answers.
    pub async fn elect_leaders(
        &self,
        unclean: bool,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<((String, i32), Result<()>)>> {
        self.write(|image| {
            let usable = Self::usable(image);
            let wanted: Vec<(String, i32)> = match &partitions {
                Some(list) => list.clone(),
                None => image
                    .topics
                    .values()
                    .flat_map(|t| t.partitions.keys().map(|p| (t.name.clone(), *p)))
                    .collect(),
            };
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for (topic, index) in wanted {
                let found = image
                    .topics
                    .get(&topic)
                    .and_then(|t| t.partitions.get(&index).map(|p| (t.id.clone(), p)));
                let result = match found {
                    None => Err(Error::kafka(
                        ErrorCode::UnknownTopicOrPartition,
                        format!("{topic}-{index} does not exist"),
                    )),
                    Some((id, p)) => {
                        let change = if unclean {
                            unclean_election(p, &usable)
                        } else {
                            preferred_election(p, &usable)
                        };
                        change.map(|e| {
                            batch.push(MetadataRecord::PartitionChange {
                                topic_id: id,
                                partition: index,
                                leader: Some(e.leader),
                                isr: (e.isr != p.isr).then_some(e.isr),
                                replicas: None,
                                recovering: e.recovering.then_some(true),
                                reassignment: None,
                            });
                        })
                    }
                };
                results.push(((topic, index), result));
            }
            Ok((batch, results))
        })
        .await
    }

    /// AlterPartitionReassignments: each (topic, partition, target replicas; `None` cancels)
    /// planned by [`super::reassignment::plan`] and written together; one result per entry,
    /// in order (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
    /// INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS as Kafka answers).
    pub async fn alter_reassignments(
        &self,
        entries: Vec<(String, i32, Option<Vec<i32>>)>,
        allow_replication_factor_change: bool,
    ) -> Result<Vec<Result<()>>> {
        self.write(|image| {
            let usable = Self::usable(image);
            let registered: BTreeSet<i32> = image.brokers.keys().copied().collect();
            let mut batch = Vec::new();
            let mut results = Vec::new();
            for (topic, index, target) in &entries {
                let found = image
                    .topics
                    .get(topic)
                    .and_then(|t| t.partitions.get(index).map(|p| (t.id.clone(), p)));
                let result = match found {
                    None => Err(Error::kafka(
                        ErrorCode::UnknownTopicOrPartition,
                        format!("{topic}-{index} does not exist"),
                    )),
                    Some((id, p)) => super::reassignment::plan(
                        &id,
                        *index,
                        p,
                        target.as_deref(),
                        &registered,
                        &usable,
                        allow_replication_factor_change,
                    )
                    .map(|change| batch.extend(change)),
                };
                results.push(result);
            }
            Ok((batch, results))
        })
        .await
    }

    /// AlterClientQuotas: every alteration checked as a broker checks it (Kafka's messages),
    /// the valid ones written as ClientQuota records (unless `validate_only`). One verdict
    /// per alteration.
    pub async fn alter_client_quotas(
        &self,
        alterations: Vec<crate::quota::Alteration>,
        validate_only: bool,
    ) -> Result<Vec<std::result::Result<(), crate::quota::QuotaError>>> {
        // The checks do not depend on the quotas already set: an empty store runs them.
        let verdicts = crate::quota::QuotaStore::open(None)?.alter(&alterations, true)?;
        self.write(|_image| {
            let mut batch = Vec::new();
            if !validate_only {
                for (alteration, verdict) in alterations.iter().zip(&verdicts) {
                    if verdict.is_err() {
                        continue;
                    }
                    let Ok(entity) = crate::quota::entity::entity_from_wire(
                        alteration
                            .components
                            .iter()
                            .map(|(t, n)| (t.as_str(), n.as_deref())),
                    ) else {
                        continue;
                    };
                    let components: Vec<(String, Option<String>)> = entity
                        .components()
                        .into_iter()
                        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                        .collect();
                    for (key, value) in &alteration.ops {
                        batch.push(MetadataRecord::ClientQuota {
                            entity: components.clone(),
                            key: key.clone(),
                            value: value.map(|v| v.to_string()),
                        });
                    }
                }
            }
            Ok((batch, ()))
        })
        .await?;
        Ok(verdicts)
    }

    /// AllocateProducerIds: the next block of [`PRODUCER_ID_BLOCK`] ids for a broker.
    pub async fn allocate_producer_ids(&self, broker_id: i32, broker_epoch: i64) -> Result<i64> {
        let start = self
            .write(|image| {
                if image
                    .brokers
                    .get(&broker_id)
                    .is_none_or(|b| b.epoch != broker_epoch)
                {
                    return Err(Error::kafka(
                        ErrorCode::StaleBrokerEpoch,
                        format!("broker {broker_id} epoch {broker_epoch} is stale"),
                    ));
                }
                let start = image.next_producer_id;
                Ok((
                    vec![MetadataRecord::ProducerIds {
                        broker_id,
                        next_producer_id: start + i64::from(PRODUCER_ID_BLOCK),
                    }],
                    start,
                ))
            })
            .await?;
        Ok(start)
    }
}

/// KRaft's checks of one AlterPartition proposal (`validateAlterPartitionData`): the record to
/// write, `None` when nothing changes.
/// A CreatePartitions entry: topic, new partition count, explicit replica lists of the new
/// partitions (`None`: placed by the controller).
pub type Growth = (String, i32, Option<Vec<Vec<i32>>>);

/// CreatePartitions' explicit assignments of `added` new partitions, checked as Kafka's
/// controller checks them (INVALID_REPLICA_ASSIGNMENT with its messages).
fn explicit_assignments(
    image: &MetadataImage,
    list: &[Vec<i32>],
    added: i32,
    rf: usize,
) -> Result<Vec<Vec<i32>>> {
    let invalid = |m: String| Error::kafka(ErrorCode::InvalidReplicaAssignment, m);
    if list.len() != usize::try_from(added).unwrap_or(0) {
        return Err(invalid(format!(
            "Increasing the number of partitions by {added} but {} assignments provided.",
            list.len()
        )));
    }
    for replicas in list {
        let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
        if distinct.len() != replicas.len() {
            return Err(invalid(format!(
                "Duplicate brokers not allowed in replica assignment: {replicas:?}."
            )));
        }
        if replicas.len() != rf {
            return Err(invalid(format!(
                "Inconsistent replication factor between partitions: the topic has {rf} and an assignment has {}.",
                replicas.len()
            )));
        }
        let unknown: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|b| !image.brokers.contains_key(b))
            .collect();
        if !unknown.is_empty() {
            return Err(invalid(format!(
                "Unknown broker(s) in replica assignment: {unknown:?}."
            )));
        }
    }
    Ok(list.to_vec())
}

fn check_isr(
    image: &MetadataImage,
    broker_id: i32,
    usable: &BTreeSet<i32>,
    p: &IsrProposal,
) -> Result<Option<MetadataRecord>> {
    let current = image
        .topic_names
        .get(&p.topic_id)
        .and_then(|n| image.topics.get(n))
        .and_then(|t| t.partitions.get(&p.partition))
        .ok_or(ErrorCode::UnknownTopicOrPartition)?;
    if p.leader_epoch > current.leader_epoch || p.partition_epoch > current.partition_epoch {
        return Err(ErrorCode::NotController.into());
    }
    if p.leader_epoch < current.leader_epoch {
        return Err(ErrorCode::FencedLeaderEpoch.into());
    }
    if current.leader != broker_id {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("broker {broker_id} does not lead this partition"),
        ));
    }
    if p.partition_epoch < current.partition_epoch {
        return Err(ErrorCode::InvalidUpdateVersion.into());
    }
    if !p.new_isr.contains(&current.leader)
        || p.new_isr.iter().any(|r| !current.replicas.contains(r))
    {
        return Err(Error::kafka(
            ErrorCode::InvalidRequest,
            format!("ISR {:?} must hold the leader and only replicas", p.new_isr),
        ));
    }
    if let Some(r) = p
        .new_isr
        .iter()
        .find(|r| !current.isr.contains(r) && !usable.contains(r))
    {
        return Err(Error::kafka(
            ErrorCode::IneligibleReplica,
            format!("replica {r} is fenced, shutting down or not registered"),
        ));
    }
    let recovered = current.recovering && p.recovered;
    // The expansion that puts the last adding replica in sync completes a reassignment.
    if let Some(done) = super::reassignment::completion(current, &p.new_isr, usable) {
        return Ok(Some(MetadataRecord::PartitionChange {
            topic_id: p.topic_id.clone(),
            partition: p.partition,
            leader: (done.leader != current.leader).then_some(done.leader),
            isr: (done.isr != current.isr).then_some(done.isr),
            replicas: (done.replicas != current.replicas).then_some(done.replicas),
            recovering: recovered.then_some(false),
            reassignment: Some(Default::default()),
        }));
    }
    if p.new_isr == current.isr && !recovered {
        return Ok(None);
    }
    Ok(Some(MetadataRecord::PartitionChange {
        topic_id: p.topic_id.clone(),
        partition: p.partition,
        leader: None,
        isr: (p.new_isr != current.isr).then(|| p.new_isr.clone()),
        replicas: None,
        recovering: recovered.then_some(false),
        reassignment: None,
    }))
}

/// A preferred-replica election (ElectLeaders PREFERRED).
fn preferred_election(p: &PartitionImage, usable: &BTreeSet<i32>) -> Result<placement::Election> {
    let Some(preferred) = p.replicas.first().copied() else {
        return Err(ErrorCode::PreferredLeaderNotAvailable.into());
    };
    if p.leader == preferred {
        return Err(Error::kafka(
            ErrorCode::ElectionNotNeeded,
            "the preferred replica is the leader already",
        ));
    }
    if !usable.contains(&preferred) || !p.isr.contains(&preferred) {
        return Err(Error::kafka(
            ErrorCode::PreferredLeaderNotAvailable,
            format!("the preferred replica {preferred} is not in sync or not available"),
        ));
    }
    Ok(placement::Election {
        leader: preferred,
        isr: p.isr.clone(),
        recovering: false,
    })
}

/// An unclean election (ElectLeaders UNCLEAN) of a partition without a leader.
fn unclean_election(p: &PartitionImage, usable: &BTreeSet<i32>) -> Result<placement::Election> {
    if p.leader >= 0 {
        return Err(Error::kafka(
            ErrorCode::ElectionNotNeeded,
            "the partition has a leader",
        ));
    }
    let e = placement::elect(&p.replicas, &p.isr, p.leader, usable, true);
    if e.leader < 0 {
        return Err(Error::kafka(
            ErrorCode::EligibleLeadersNotAvailable,
            "no replica of the partition is available",
        ));
    }
    Ok(e)
}
