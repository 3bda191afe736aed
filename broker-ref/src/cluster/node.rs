//! One node of a cluster: its settings, its quorum member and metadata image, and, by role,
//! the controller (a voter) and the broker's registration and replicas.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::controller::{Controller, ControllerSettings};
use super::image::SharedImage;
use super::lifecycle::{Lifecycle, LifecycleState};
use super::metadata_log::MetadataLogStore;
use super::peers::Peers;
use super::quorum_driver::{self, QuorumHandle};
use super::records::EndpointRecord;
use super::replicas::{ReplicaDeps, ReplicaManager, ReplicaSettings};
use super::settings::ClusterSettings;
use crate::partition::TopicRegistry;
use crate::Result;

/// Bytes of metadata records between two snapshots of the image (Kafka's
/// `metadata.log.max.record.bytes.between.snapshots` default is 20 MiB).
const SNAPSHOT_EVERY: u64 = 20 << 20;

/// What a node needs from the broker it runs in.
pub struct NodeDeps {
    /// The local topic registry (replicas live there).
    pub topics: Arc<TopicRegistry>,
    /// How the controller decides (used on controller nodes).
    pub controller: ControllerSettings,
    /// Advertised client listeners (registered by the broker role).
    pub endpoints: Vec<EndpointRecord>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// The replication data plane's settings.
    pub replicas: ReplicaSettings,
    /// Told when this broker starts or stops leading a partition.
    pub on_leadership: super::replicas::LeadershipHook,
    /// Told of every new metadata image.
    pub on_image: super::replicas::ImageHook,
    /// Producer ids: in cluster mode in blocks from the controller.
    pub producer_ids: Arc<crate::coordinator::producer_ids::ProducerIdManager>,
    /// How this node connects to the controller listener of the others (quorum and broker to
    /// controller calls): `security::inter_node`.
    pub controller_security: odradek::security::SecurityConfig,
}

/// A running cluster node.
#[derive(Debug)]
pub struct ClusterNode {
    /// Its settings.
    pub settings: ClusterSettings,
    /// Its member of the metadata quorum (a voter, or an observer for a broker-only node).
    pub quorum: QuorumHandle,
    /// The metadata every committed record built.
    pub image: SharedImage,
    /// Connections to the controllers.
    pub peers: Arc<Peers>,
    /// Wall-clock ms when the quorum's clock started (its times are relative to it).
    pub started_ms: i64,
    /// The controller, on a controller node.
    pub controller: Option<Arc<Controller>>,
    /// The broker's registration, on a broker node.
    pub lifecycle: Option<watch::Receiver<LifecycleState>>,
    /// The broker's replicas, on a broker node.
    pub replicas: Option<Arc<ReplicaManager>>,
    /// Connections to the other brokers, on a broker node.
    pub links: Option<Arc<super::links::BrokerLinks>>,
    want_shutdown: watch::Sender<bool>,
    /// Set once the broker caught up with the metadata after starting.
    ready: std::sync::atomic::AtomicBool,
}

impl ClusterNode {
    /// Opens the metadata log under `data_dir` and starts the node's parts until `shutdown`.
    pub fn start(
        settings: ClusterSettings,
        data_dir: &Path,
        deps: NodeDeps,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Arc<ClusterNode>, Vec<JoinHandle<()>>)> {
        let (store, persisted) = MetadataLogStore::open(data_dir)?;
        let peers = Arc::new(Peers::new(
            &settings.cluster_id,
            settings.node_id,
            &settings.voters,
            Duration::from_millis(settings.quorum.request_timeout_ms),
            deps.controller_security.clone(),
        ));
        let image = SharedImage::default();
        let started_ms = crate::clock::now_ms();
        let (quorum, task) = quorum_driver::start(
            settings.quorum.clone(),
            store,
            persisted,
            image.clone(),
            peers.clone(),
            SNAPSHOT_EVERY,
            shutdown.clone(),
        )?;
        let mut tasks = vec![task];
        let controller = settings.controller.then(|| {
            let c = Controller::new(deps.controller.clone(), quorum.clone(), image.clone());
            tasks.push(c.spawn_fencer(shutdown.clone()));
            c
        });
        let (want_shutdown, want_rx) = watch::channel(false);
        let links = settings.broker.then(|| {
            Arc::new(super::links::BrokerLinks::new(
                settings.node_id,
                &deps.replicas.inter_broker_listener,
                deps.replicas.inter_broker_security.clone(),
                image.clone(),
                Duration::from_secs(30),
            ))
        });
        let (lifecycle, replicas) = if settings.broker {
            let (state_tx, state_rx) = watch::channel(LifecycleState::default());
            let lifecycle = Lifecycle {
                node_id: settings.node_id,
                cluster_id: settings.cluster_id.clone(),
                endpoints: deps.endpoints,
                rack: deps.rack,
                heartbeat_interval: Duration::from_millis(settings.heartbeat_interval_ms),
                quorum: quorum.clone(),
                image: image.clone(),
                peers: peers.clone(),
            };
            tasks.push(tokio::spawn(lifecycle.run(
                state_tx,
                want_rx,
                shutdown.clone(),
            )));
            let replicas = ReplicaManager::start(
                ReplicaDeps {
                    settings: deps.replicas,
                    topics: deps.topics,
                    image: image.clone(),
                    lifecycle: state_rx.clone(),
                    quorum: quorum.clone(),
                    peers: peers.clone(),
                    on_leadership: deps.on_leadership,
                    on_image: deps.on_image,
                },
                shutdown.clone(),
            );
            tasks.push(tokio::spawn(refill_producer_ids(
                deps.producer_ids,
                settings.node_id,
                state_rx.clone(),
                quorum.clone(),
                peers.clone(),
                shutdown,
            )));
            (Some(state_rx), Some(replicas))
        } else {
            (None, None)
        };
        Ok((
            Arc::new(ClusterNode {
                settings,
                quorum,
                image,
                peers,
                started_ms,
                controller,
                lifecycle,
                replicas,
                links,
                want_shutdown,
                ready: std::sync::atomic::AtomicBool::new(false),
            }),
            tasks,
        ))
    }

    /// A controlled shutdown: the controller moves this broker's leadership away before it
    /// stops (bounded by `timeout`). A controller that leads the quorum resigns when it stops.
    pub async fn controlled_shutdown(&self, timeout: Duration) {
        let Some(state) = self.lifecycle.clone() else {
            return;
        };
        let _ = self.want_shutdown.send(true);
        let mut state = state;
        let _ = tokio::time::timeout(timeout, state.wait_for(|s| s.should_shut_down)).await;
    }

    /// Waits (up to `timeout`) until this broker has caught up with the cluster's metadata
    /// since it started: registered, and its image holds its own registration. Client requests
    /// wait for it, as a Kafka broker opens its listeners only then, so a restarted broker
    /// never answers from an image it has not rebuilt yet. Controller-only nodes are ready at
    /// once.
    pub async fn wait_ready(&self, timeout: Duration) {
        use std::sync::atomic::Ordering;
        if self.ready.load(Ordering::Acquire) {
            return;
        }
        let Some(mut state) = self.lifecycle.clone() else {
            self.ready.store(true, Ordering::Release);
            return;
        };
        let caught_up = tokio::time::timeout(
            timeout,
            state.wait_for(|s| s.epoch.is_some() && s.caught_up),
        )
        .await;
        if matches!(caught_up, Ok(Ok(_))) {
            self.ready.store(true, Ordering::Release);
        }
    }

    /// Whether this broker is registered and unfenced (it may lead and follow).
    pub fn is_unfenced(&self) -> bool {
        self.lifecycle.as_ref().is_some_and(|l| {
            let s = l.borrow();
            s.epoch.is_some() && !s.fenced
        })
    }
}

/// Keeps a block of producer ids ahead from the controller (AllocateProducerIds).
async fn refill_producer_ids(
    ids: Arc<crate::coordinator::producer_ids::ProducerIdManager>,
    node_id: i32,
    lifecycle: watch::Receiver<LifecycleState>,
    quorum: QuorumHandle,
    peers: Arc<Peers>,
    mut shutdown: watch::Receiver<bool>,
) {
    use kafka_protocol::messages::{AllocateProducerIdsRequest, BrokerId};
    let wanted = ids.from_controller();
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = wanted.notified() => {}
        }
        while ids.wants_block() {
            let epoch = lifecycle.borrow().epoch;
            let (Some(epoch), Some(controller)) = (epoch, quorum.status().leader) else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let request = AllocateProducerIdsRequest::default()
                .with_broker_id(BrokerId(node_id))
                .with_broker_epoch(epoch);
            match peers.call(controller, &request).await {
                Ok(r) if r.error_code == 0 => {
                    ids.add_block(r.producer_id_start.0, i64::from(r.producer_id_len));
                }
                Ok(r) => {
                    tracing::debug!(error = r.error_code, "AllocateProducerIds refused");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "AllocateProducerIds failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}
