//! Listeners, connections, request dispatch, the interception point and background
//! maintenance.
//!
//! Each connection is one task: it builds its [`ConnectionContext`](crate::handlers::ConnectionContext)
//! once, splits the byte stream into frames (the size limit is checked before any buffer grows),
//! and hands each frame to [`dispatch`], which decodes it, adds the header's fields to make the
//! request's [`RequestContext`](crate::handlers::RequestContext), asks the [`Interceptor`] (one
//! atomic load when no test registered anything) and calls the handler. Requests are handled one
//! at a time, so responses leave in request order even when a client pipelines, and writes are
//! flushed only when no further complete request is already buffered, so pipelined requests
//! share system calls.

pub(crate) mod accept_backoff;
pub mod alloc_meter;
pub mod bounded_decode;
mod chunked;
mod connection;
pub(crate) mod connection_limits;
mod dispatch;
pub mod intercept;
pub mod items;
mod maintenance;
mod sasl;
mod throttle;
pub mod view;
mod write_deadline;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::{Broker, Endpoint};
use crate::config::BrokerConfig;
use crate::security::{self, CredentialStore, ListenerSecurity, SecurityProtocol};
use crate::{Error, Result};
use connection::Shared;

pub use dispatch::{dispatch, dispatch_with, Reply};
pub use intercept::{Action, Interceptor, LoggedRequest, Rule, RuleId, Verdict};
pub use view::ClusterView;

/// A started broker: its address, and the handle to stop it.
#[derive(Debug)]
pub struct RunningBroker {
    /// The address the first listener is bound to.
    pub local_addr: SocketAddr,
    /// Every listener: name, security protocol, bound address.
    pub listeners: Vec<(String, SecurityProtocol, SocketAddr)>,
    /// Shared state.
    pub broker: Arc<Broker>,
    /// The interception point every connection consults: tests inject errors, delays, dropped
    /// requests and closed connections per API key, and read the request log.
    pub interceptor: Arc<Interceptor>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningBroker {
    /// The bound address of the listener named `name` (case-insensitive).
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.listeners
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, _, a)| *a)
    }

    /// Stops accepting, closes connections, flushes every log and writes checkpoints. A
    /// cluster broker first has the controller move its leadership away (controlled shutdown).
    pub async fn shutdown(self) -> Result<()> {
        if let Some(node) = self
            .broker
            .cluster_node()
            .filter(|_| self.broker.config.bool("controlled.shutdown.enable"))
        {
            node.controlled_shutdown(std::time::Duration::from_secs(30))
                .await;
        }
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        self.broker.shutdown()
    }
}

/// This machine's host name (what Kafka advertises for a listener with an empty host).
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates within it on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(h) if rc == 0 && !h.is_empty() => h.to_string(),
        _ => "localhost".to_string(),
    }
}

/// Binds the listeners, recovers the data directory and starts serving. Every listener's
/// security (protocol, TLS material, SASL mechanisms and JAAS, authorizer) is checked before
/// anything is bound.
pub async fn start(config: BrokerConfig) -> Result<RunningBroker> {
    let dir = config.log_dir();
    std::fs::create_dir_all(&dir)?;
    let cluster = crate::cluster::ClusterSettings::from_config(&config)?;
    let credentials = Arc::new(CredentialStore::open(&dir)?);
    let securities = security::listener_security(&config, &credentials)?;
    let mut bound = Vec::with_capacity(securities.len());
    let mut endpoints = Vec::with_capacity(securities.len());
    for sec in securities {
        let l = &sec.spec;
        let host = if l.host.is_empty() {
            "0.0.0.0"
        } else {
            l.host.as_str()
        };
        let listener = TcpListener::bind((host, l.port)).await.map_err(|e| {
            Error::config("listeners", format!("cannot bind {host}:{}: {e}", l.port))
        })?;
        let local = listener.local_addr()?;
        let advertised_host = match &l.advertised_host {
            Some(h) => h.clone(),
            None if l.host.is_empty() => host_name(),
            None if local.ip().is_unspecified() => {
                return Err(Error::config(
                    "advertised.listeners",
                    format!(
                        "listener {} is bound to {}: advertised.listeners must name a routable host for it (the broker never advertises a wildcard address)",
                        l.name, l.host
                    ),
                ))
            }
            None => l.host.clone(),
        };
        // A port-0 listener advertises the port it actually got.
        let advertised_port = if l.advertised_port == 0 {
            local.port()
        } else {
            l.advertised_port
        };
        endpoints.push(Endpoint {
            listener: l.name.clone(),
            host: advertised_host,
            port: advertised_port,
        });
        bound.push((Arc::new(sec), listener, local));
    }
    let (first, local_addr) = match (endpoints.first(), bound.first()) {
        (Some(e), Some(b)) => ((e.host.clone(), e.port), b.2),
        _ => return Err(Error::config("listeners", "no listener configured")),
    };
    let broker = Broker::open_with(config, endpoints, first, credentials)?;
    for (sec, _, _) in &bound {
        if let Some(jwks) = sec.sasl.as_ref().and_then(|s| s.jwks()) {
            match jwks.refresh().await {
                Ok(n) => {
                    tracing::info!(listener = %sec.spec.name, keys = n, url = %jwks.settings().url, "JWKS loaded")
                }
                Err(e) => {
                    tracing::warn!(listener = %sec.spec.name, error = %e, "JWKS not loaded yet; tokens are refused until it is")
                }
            }
            jwks.spawn_refresher();
        }
    }
    let interceptor = Arc::new(Interceptor::new());
    let shared = Shared {
        broker: broker.clone(),
        interceptor: interceptor.clone(),
        view: None,
    };
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    if let Some(settings) = cluster {
        let deps = cluster_deps(&broker, &settings)?;
        let (node, node_tasks) = crate::cluster::ClusterNode::start(
            settings,
            &broker.config.log_dir(),
            deps,
            shutdown_rx.clone(),
        )?;
        let _ = broker.cluster.set(node);
        tasks.extend(node_tasks);
    }
    let mut addresses = Vec::new();
    // One set of limits for every listener: max.connections bounds the broker.
    let limits = Arc::new(connection_limits::ConnectionLimits::from_config(
        &broker.config,
    )?);
    for (sec, listener, local) in bound {
        addresses.push((sec.spec.name.clone(), sec.spec.protocol, local));
        tasks.push(tokio::spawn(accept_loop(
            sec,
            listener,
            shared.clone(),
            limits.clone(),
            shutdown_rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(maintenance::run(broker.clone(), shutdown_rx)));
    Ok(RunningBroker {
        local_addr,
        listeners: addresses,
        broker,
        interceptor,
        shutdown,
        tasks,
    })
}

/// What a cluster node needs from this broker: its registry, the controller's settings from
/// the broker config, its advertised client listeners and the replication settings.
fn cluster_deps(
    broker: &Arc<Broker>,
    settings: &crate::cluster::ClusterSettings,
) -> Result<crate::cluster::NodeDeps> {
    let config = &broker.config;
    // The metadata log holds dynamic broker and group configs in cluster mode: values a single
    // node stored in its data directory are replaced by the cluster's as soon as it has them.
    if broker.dynamic.values() != crate::dynamic_config::DynamicValues::default()
        || !broker.group_configs.is_empty()
    {
        tracing::warn!(
            "dynamic-broker-configs / group-configs.json in the data directory are not used in \
             cluster mode (the cluster's metadata holds these configs): set them again with \
             IncrementalAlterConfigs through any broker"
        );
    }
    let topics = broker.topics.clone();
    let validator = topics.clone();
    let controller = crate::cluster::controller::ControllerSettings {
        session_timeout: std::time::Duration::from_millis(settings.session_timeout_ms),
        num_partitions: config.num_partitions(),
        default_replication_factor: config.int("default.replication.factor").max(1),
        unclean_leader_election: config.bool("unclean.leader.election.enable"),
        leader_rebalance: config.bool("auto.leader.rebalance.enable").then(|| {
            std::time::Duration::from_secs(
                config
                    .long("leader.imbalance.check.interval.seconds")
                    .max(1) as u64,
            )
        }),
        validate_topic_config: Arc::new(move |overrides| {
            validator.effective_config(overrides).map(|_| ())
        }),
    };
    let endpoints = broker
        .endpoints
        .iter()
        .filter(|e| !settings.is_controller_listener(&e.listener))
        .map(|e| crate::cluster::records::EndpointRecord {
            name: e.listener.clone(),
            host: e.host.clone(),
            port: e.port,
            security_protocol: 0,
        })
        .collect();
    let rack = Some(config.get("broker.rack").to_string()).filter(|r| !r.is_empty());
    let inter_broker = match config.get("inter.broker.listener.name") {
        "" => broker
            .endpoints
            .iter()
            .find(|e| !settings.is_controller_listener(&e.listener))
            .map_or_else(|| "PLAINTEXT".to_string(), |e| e.listener.clone()),
        name => name.to_string(),
    };
    let replicas = crate::cluster::replicas::ReplicaSettings {
        node_id: settings.node_id,
        lag_max_ms: config.long("replica.lag.time.max.ms"),
        fetch_wait_max_ms: config.int("replica.fetch.wait.max.ms"),
        fetch_max_bytes: config.int("replica.fetch.max.bytes"),
        fetch_response_max_bytes: config.int("replica.fetch.response.max.bytes"),
        fetch_min_bytes: config.int("replica.fetch.min.bytes"),
        fetch_backoff: std::time::Duration::from_millis(
            config.long("replica.fetch.backoff.ms").max(1) as u64,
        ),
        // A controller-only node makes no inter-broker connections.
        inter_broker_security: if settings.broker {
            security::inter_node::client_security(
                config,
                &inter_broker,
                "sasl.mechanism.inter.broker.protocol",
            )?
        } else {
            odradek::security::SecurityConfig::default()
        },
        inter_broker_listener: inter_broker,
        quotas: broker.replication_quotas.clone(),
    };
    if settings.broker {
        // This broker coordinates only the groups and transactional ids of the internal
        // partitions it leads; the completer writes its transactions' markers.
        broker.groups.own_partitions_only();
        broker.txns.own_partitions_only();
        let (completions, ids) = tokio::sync::mpsc::unbounded_channel();
        broker.txns.set_completer(completions);
        tokio::spawn(crate::handlers::cluster_txn::run_completer(
            Arc::downgrade(broker),
            ids,
        ));
    }
    let coordinators = Arc::downgrade(broker);
    let on_leadership: crate::cluster::replicas::LeadershipHook = Arc::new(
        move |topic: &str, partition: i32, leads: bool| {
            let Some(broker) = coordinators.upgrade() else {
                return;
            };
            match (topic, leads) {
                (crate::coordinator::OFFSETS_TOPIC, true) => {
                    if let Err(e) = broker.groups.load_partition(partition) {
                        tracing::warn!(partition, error = %e, "cannot load the partition's groups");
                    }
                }
                (crate::coordinator::OFFSETS_TOPIC, false) => {
                    broker.groups.unload_partition(partition)
                }
                (crate::coordinator::txn::TRANSACTION_TOPIC, true) => {
                    if let Err(e) = broker.txns.load_partition(partition) {
                        tracing::warn!(partition, error = %e, "cannot load the partition's transactional ids");
                    }
                }
                (crate::coordinator::txn::TRANSACTION_TOPIC, false) => {
                    broker.txns.unload_partition(partition)
                }
                _ => {}
            }
        },
    );
    // Client quotas are the cluster's: every broker applies the image's.
    let weak = Arc::downgrade(broker);
    // The hook runs on every reconcile (each new image and once a second): state that follows
    // the image is rebuilt only when an entry was applied since.
    let applied = std::sync::atomic::AtomicI64::new(-1);
    let on_image: crate::cluster::replicas::ImageHook = Arc::new(move |image| {
        let Some(broker) = weak.upgrade() else {
            return;
        };
        if applied.swap(image.offset, std::sync::atomic::Ordering::AcqRel) == image.offset {
            return;
        }
        let mut quotas = crate::quota::store::QuotaMap::new();
        for q in image.client_quotas.values() {
            let Ok(entity) = crate::quota::entity::entity_from_wire(
                q.entity.iter().map(|(t, n)| (t.as_str(), n.as_deref())),
            ) else {
                continue;
            };
            let values = q
                .values
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.parse::<f64>().ok()?)))
                .collect();
            quotas.insert(entity, values);
        }
        if let Err(e) = broker.quotas.store.replace(quotas) {
            tracing::warn!(error = %e, "cannot apply the cluster's client quotas");
        }
        // So are ACLs and SCRAM credentials, and broker and group configs.
        crate::handlers::cluster_security::apply_image(&broker, image);
        follow_configs(&broker, image);
    });
    let controller_security = security::inter_node::client_security(
        config,
        &settings.controller_listeners[0],
        "sasl.mechanism.controller.protocol",
    )?;
    Ok(crate::cluster::NodeDeps {
        topics,
        controller,
        endpoints,
        rack,
        replicas,
        on_leadership,
        on_image,
        producer_ids: broker.producer_ids.clone(),
        controller_security,
    })
}

/// Applies the dynamic broker configs (the cluster-wide default and this node's) and the group
/// configs of the cluster's metadata image. Values this broker's static configuration refuses
/// are logged and the previous ones kept.
fn follow_configs(broker: &Broker, image: &crate::cluster::image::MetadataImage) {
    use crate::cluster::image::config_key;
    let level = |name: &str| {
        image
            .configs
            .get(&config_key(4, name))
            .cloned()
            .unwrap_or_default()
    };
    let values = crate::dynamic_config::DynamicValues {
        broker: level(&broker.node_id.to_string()),
        cluster_default: level(""),
    };
    match broker.dynamic.follow(values) {
        Ok(Some(effective)) => match broker.apply_dynamic(&effective) {
            Ok(()) => tracing::info!("dynamic broker configs changed (cluster metadata)"),
            Err(e) => tracing::warn!(error = %e, "cannot apply the cluster's broker configs"),
        },
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cannot apply the cluster's broker configs"),
    }
    let prefix = config_key(32, "");
    let groups = image
        .configs
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, v)| (k[prefix.len()..].to_string(), v.clone()))
        .collect();
    broker.group_configs.follow(groups);
}

/// Serves one accepted connection until it closes or `shutdown` turns true: the building block
/// of listeners other than [`start`]'s (the in-process test cluster's, each with its
/// [`ClusterView`]).
pub async fn serve_connection(
    broker: Arc<Broker>,
    interceptor: Arc<Interceptor>,
    view: Option<Arc<dyn ClusterView>>,
    listener: Arc<ListenerSecurity>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let shared = Shared {
        broker,
        interceptor,
        view,
    };
    connection::serve(shared, listener, stream, peer, shutdown).await;
}

/// Starts the broker's background maintenance (retention, timed flushes, the log cleaner,
/// transaction timeouts) until `shutdown` turns true; [`start`] does this itself.
pub fn spawn_maintenance(broker: Arc<Broker>, shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(maintenance::run(broker, shutdown))
}

/// Admits a connection just accepted: a slot under the connection limits, then the address's
/// `connection_creation_rate` quota. `None` when it is not to be served: refused by a limit
/// (closed at once, logged), or over the rate (closed after the throttle time without being
/// read, as Kafka closes it, so a reconnect loop cannot outrun the quota).
pub(crate) fn admit_connection(
    broker: &Broker,
    limits: &Arc<connection_limits::ConnectionLimits>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
) -> Option<(tokio::net::TcpStream, connection_limits::Admission)> {
    let permit = match limits.admit(peer.ip()) {
        Ok(permit) => permit,
        Err(refusal) => {
            // Kafka logs these at info as well: one line per refused connection.
            tracing::info!(%peer, "closing new connection: {refusal}");
            return None;
        }
    };
    if let Err(ms) = broker
        .quotas
        .admit_connection(peer.ip(), crate::clock::now_ms())
    {
        tracing::debug!(%peer, throttle_ms = ms, "connection_creation_rate exceeded, closing the new connection after the throttle time");
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms.max(0) as u64)).await;
            drop(stream);
            drop(permit);
        });
        return None;
    }
    Some((stream, permit))
}

async fn accept_loop(
    security: Arc<ListenerSecurity>,
    listener: TcpListener,
    shared: Shared,
    limits: Arc<connection_limits::ConnectionLimits>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    let mut backoff = accept_backoff::AcceptBackoff::default();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => {
                        backoff.succeeded();
                        a
                    }
                    Err(e) => {
                        let pause = backoff.failed(&e);
                        if !pause.is_zero() {
                            tokio::select! {
                                _ = shutdown.changed() => break,
                                _ = tokio::time::sleep(pause) => {}
                            }
                        }
                        continue;
                    }
                };
                let Some((stream, permit)) = admit_connection(&shared.broker, &limits, stream, peer) else {
                    continue;
                };
                let (shared, security) = (shared.clone(), security.clone());
                let shutdown = shutdown.clone();
                // The TLS handshake and SASL run in the connection's own task, never here.
                connections.spawn(async move {
                    connection::serve(shared, security, stream, peer, shutdown).await;
                    drop(permit);
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}
