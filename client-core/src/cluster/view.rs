//! The cluster view one client instance keeps: metadata snapshot, topics of interest, one
//! connection slot per broker, and the refresh that merges concurrent callers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::backoff::jitter;
use super::error_events::{ErrorEvents, ErrorListener};
use super::metadata::{BrokerInfo, ClusterMetadata, TopicInfo};
use super::slot_key::{coordinator_slot, slot_node};
use super::stats::BrokerSnapshot;
use crate::config::{ClientConfig, MetadataRecovery};
use crate::net::{ConnectParams, Connection, RequestEvent, RequestSink, ThrottleSink};
use crate::{Error, ErrorCode, Result};

/// Per-broker counters of a statistics snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerStats {
    /// Broker address.
    pub broker: String,
    /// Requests sent.
    pub requests: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Mean round trip, microseconds.
    pub mean_latency_us: u64,
    /// Requests awaiting a response.
    pub in_flight: usize,
    /// SASL re-authentications of the connection (KIP-368).
    pub reauthentications: u64,
    /// Node id of the broker.
    pub node_id: i32,
    /// Responses with a throttle time (broker quotas, KIP-219).
    pub throttled: u64,
    /// Sum of the throttle times, milliseconds.
    pub throttle_ms_total: u64,
    /// Shortest non-zero throttle time, milliseconds.
    pub throttle_ms_min: u64,
    /// Longest throttle time, milliseconds.
    pub throttle_ms_max: u64,
}

/// Connection state for one broker.
#[derive(Debug, Default)]
struct BrokerSlot {
    connection: Option<Arc<Connection>>,
    failures: u32,
    retry_at: Option<Instant>,
}

/// Shared cluster state of one client instance.
#[derive(Debug)]
pub struct Cluster {
    config: ClientConfig,
    metadata: RwLock<Arc<ClusterMetadata>>,
    /// Topics this client cares about (refreshed together).
    interest: Mutex<HashSet<String>>,
    slots: Mutex<HashMap<i32, Arc<tokio::sync::Mutex<BrokerSlot>>>>,
    /// Each slot's current connection, readable without the slot's (async) lock, which a
    /// connect or a reconnect backoff holds: statistics, closing and the metadata path read
    /// this, so they never skip a live connection.
    live: Mutex<HashMap<i32, Arc<Connection>>>,
    /// Per slot: connection attempts, disconnects and the traffic of closed connections.
    history: Mutex<HashMap<i32, super::stats::SlotHistory>>,
    bootstrap: tokio::sync::Mutex<Option<Arc<Connection>>>,
    refresh_lock: tokio::sync::Mutex<()>,
    /// Bumped on every metadata change (refreshes and leader hints).
    generation: AtomicU64,
    /// Woken on every metadata update (see [`Cluster::metadata_changed`]).
    metadata_changed: tokio::sync::Notify,
    /// Bumped whenever a topic joins `interest`.
    interest_version: AtomicU64,
    /// Completed topic refreshes, and the `interest_version` the latest one asked with: a
    /// caller shares a refresh that finished while it waited only if that refresh asked for
    /// every topic the caller cared about when it arrived.
    refreshes: AtomicU64,
    covered_interest: AtomicU64,
    stale: std::sync::atomic::AtomicBool,
    /// The latest authentication failure not yet taken by a consumer's `poll`.
    auth_error: Mutex<Option<Error>>,
    /// Told of every connection-level failure an application should hear of (librdkafka's
    /// `error_cb` events), kept until a listener is set.
    error_events: ErrorEvents,
    /// Every connection's throttle reports go here; the listener behind it may be set later.
    throttle_sink: ThrottleSink,
    /// Every connection's per-request events go here (see [`Cluster::set_request_listener`]).
    request_sink: RequestSink,
    throttle_listener: Arc<RwLock<Option<ThrottleSink>>>,
    /// Since when every metadata request failed (`None` while they succeed): past
    /// `metadata.recovery.rebootstrap.trigger.ms` the client rebootstraps.
    metadata_failing_since: Mutex<Option<Instant>>,
    /// This cluster handle, for the background refresh [`Cluster::invalidate`] starts.
    me: std::sync::Weak<Cluster>,
    /// Whether a background metadata refresh runs.
    refreshing: std::sync::atomic::AtomicBool,
    /// Which brokers answered their latest connection attempt (for the error listener).
    health: super::health::BrokerHealth,
    closed: std::sync::atomic::AtomicBool,
}

/// How long a request may go unanswered (beyond `fetch.max.wait.ms`) before its broker counts
/// as unresponsive when choosing one for a request any broker can answer.
pub const STALLED_AFTER: Duration = Duration::from_secs(5);

impl Cluster {
    /// A cluster handle; nothing is connected until first use.
    pub fn new(config: ClientConfig) -> Arc<Cluster> {
        let throttle_listener: Arc<RwLock<Option<ThrottleSink>>> = Arc::new(RwLock::new(None));
        let throttle_sink: ThrottleSink = {
            let listener = throttle_listener.clone();
            ThrottleSink(Arc::new(move |event| {
                let l = listener.read().ok().and_then(|l| l.clone());
                if let Some(ThrottleSink(l)) = l {
                    l(event);
                }
            }))
        };
        Arc::new_cyclic(|me| Cluster {
            config,
            metadata: RwLock::new(Arc::new(ClusterMetadata::default())),
            interest: Mutex::new(HashSet::new()),
            slots: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            history: Mutex::new(HashMap::new()),
            bootstrap: tokio::sync::Mutex::new(None),
            refresh_lock: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            metadata_changed: tokio::sync::Notify::new(),
            interest_version: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            covered_interest: AtomicU64::new(0),
            stale: std::sync::atomic::AtomicBool::new(true),
            auth_error: Mutex::new(None),
            error_events: ErrorEvents::default(),
            throttle_sink,
            request_sink: RequestSink::default(),
            throttle_listener,
            metadata_failing_since: Mutex::new(None),
            me: me.clone(),
            refreshing: std::sync::atomic::AtomicBool::new(false),
            health: super::health::BrokerHealth::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The current metadata snapshot.
    pub fn metadata(&self) -> Arc<ClusterMetadata> {
        self.metadata
            .read()
            .map(|m| m.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Adds `topics` to the topics every refresh asks for (the producer's held records wait for
    /// theirs).
    pub fn add_interest(&self, topics: &[String]) {
        if let Ok(mut interest) = self.interest.lock() {
            for t in topics {
                if interest.insert(t.clone()) {
                    self.interest_version.fetch_add(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// Marks metadata stale and refreshes it in the background (not sooner than
    /// `retry.backoff.ms` after the last metadata, retrying with exponential backoff up to
    /// `retry.backoff.max.ms`), so every client of this cluster follows a moved leader
    /// whether or not it looks at metadata itself.
    pub fn invalidate(&self) {
        self.stale.store(true, Ordering::Release);
        self.refresh_in_background();
    }

    fn refresh_in_background(&self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // Outside a runtime: the next lookup refreshes.
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(me) = self.me.upgrade() else {
            self.refreshing.store(false, Ordering::Release);
            return;
        };
        runtime.spawn(async move {
            let mut backoff = me.config.retry_backoff;
            loop {
                let age = me.metadata().age();
                if age < backoff {
                    tokio::time::sleep(jitter(backoff - age)).await;
                }
                if me.closed.load(Ordering::Acquire) || !me.stale.load(Ordering::Acquire) {
                    break;
                }
                match me.refresh().await {
                    Ok(_) => break,
                    Err(e) if e.is_authentication() => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "background metadata refresh failed");
                        tokio::time::sleep(jitter(backoff)).await;
                        backoff = (backoff * 2).min(me.config.retry_backoff_max);
                    }
                }
            }
            me.refreshing.store(false, Ordering::Release);
        });
    }

    /// Moves a partition to the leader an error response named (KIP-951) without a metadata
    /// round trip. Returns whether the hint was applied; when it was not (older epoch, unknown
    /// leader address), the caller falls back to [`Cluster::on_error`].
    pub fn apply_leader_hint(
        &self,
        topic: &str,
        partition: i32,
        leader: i32,
        leader_epoch: i32,
        endpoints: &[BrokerInfo],
    ) -> bool {
        let Ok(mut guard) = self.metadata.write() else {
            return false;
        };
        match guard.with_leader_hint(topic, partition, leader, leader_epoch, endpoints) {
            Some(updated) => {
                *guard = Arc::new(updated);
                drop(guard);
                self.metadata_updated();
                tracing::debug!(
                    topic,
                    partition,
                    leader,
                    leader_epoch,
                    "leader hint applied"
                );
                true
            }
            None => false,
        }
    }

    /// Reacts to an error from a broker: stale-metadata errors and lost connections trigger a
    /// refresh on next use.
    pub fn on_error(&self, error: &Error) {
        let refresh = match error {
            Error::Kafka(code) => code.invalidates_metadata(),
            Error::Connection { .. } | Error::Io(_) | Error::Timeout(_) => true,
            _ => false,
        };
        if refresh {
            self.invalidate();
        }
    }

    /// Sets the callback told of client-level errors: authentication failures (SASL or TLS),
    /// once per failed connection attempt (attempts are spaced by the reconnect backoff); a
    /// broker that cannot be reached any more ([`Error::Connection`], once until it answers
    /// again); and every known broker down at once ([`Error::AllBrokersDown`], once per
    /// episode). Events told before the listener is set (a client starts connecting when it
    /// is created) are handed to it now, up to the latest 64.
    pub fn set_error_listener(&self, listener: ErrorListener) {
        self.error_events.set(listener);
    }

    /// Sets the callback told of every throttle time a broker reports (librdkafka's
    /// `throttle_cb`): each non-zero one, and the return to zero.
    pub fn set_throttle_listener(&self, listener: ThrottleSink) {
        if let Ok(mut slot) = self.throttle_listener.write() {
            *slot = Some(listener);
        }
    }

    /// Reports every request of this client's connections to `listener` (instrumentation:
    /// answered, timed out, waiting for an in-flight slot), replacing an earlier listener.
    /// Without one nothing is built.
    pub fn set_request_listener(&self, listener: impl Fn(RequestEvent) + Send + Sync + 'static) {
        self.request_sink.listen(listener);
    }

    /// Takes the latest authentication failure, if one happened since the last call.
    pub fn take_auth_error(&self) -> Option<Error> {
        self.auth_error.lock().ok().and_then(|mut e| e.take())
    }

    fn auth_failed(&self, e: &Error) {
        tracing::warn!(error = %e, "authentication failed");
        if let Ok(mut slot) = self.auth_error.lock() {
            *slot = Some(e.duplicate());
        }
        self.tell(e);
    }

    /// Tells the error listener, or keeps the event until one is set.
    fn tell(&self, e: &Error) {
        self.error_events.tell(e);
    }

    /// Notes a failed connection attempt to `node` and tells the listener what changed.
    fn broker_failed(&self, node: i32, e: &Error) {
        let known: Vec<i32> = self.metadata().brokers.keys().copied().collect();
        let reachable: Vec<i32> = self
            .live
            .lock()
            .map(|live| {
                live.iter()
                    .filter(|(_, c)| !c.is_closed())
                    .map(|(key, _)| slot_node(*key))
                    .collect()
            })
            .unwrap_or_default();
        let change = self.health.failed(node, &known, &reachable);
        if change.went_down && !e.is_authentication() {
            tracing::info!(node, error = %e, "broker down");
            self.tell(e);
        }
        if let Some((down, total)) = change.all_down {
            tracing::warn!(down, total, "all brokers are down");
            self.tell(&Error::AllBrokersDown { down, total });
        }
    }

    fn connect(
        &self,
        addr: &str,
        node_id: i32,
    ) -> impl std::future::Future<Output = Result<Arc<Connection>>> + '_ {
        let c = &self.config;
        let addr = addr.to_string();
        async move {
            let result = self.connect_inner(&addr, node_id, c).await;
            if let Err(e) = &result {
                if e.is_authentication() {
                    self.auth_failed(e);
                }
            }
            result
        }
    }

    async fn connect_inner(
        &self,
        addr: &str,
        node_id: i32,
        c: &ClientConfig,
    ) -> Result<Arc<Connection>> {
        {
            Connection::connect(
                addr,
                ConnectParams {
                    client_id: &c.client_id,
                    setup_timeout: c.connection_setup_timeout,
                    request_timeout: c.request_timeout,
                    max_in_flight: c.max_in_flight,
                    max_response_size: c.receive_message_max_bytes(),
                    security: &c.security,
                    node_id,
                    on_throttle: Some(&self.throttle_sink),
                    on_request: Some(&self.request_sink),
                    socket: c.socket,
                },
            )
            .await
        }
    }

    /// A connection to any bootstrap server (tried in order), for the first metadata request.
    async fn bootstrap_connection(&self) -> Result<Arc<Connection>> {
        let mut guard = self.bootstrap.lock().await;
        if let Some(c) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let mut last = Error::config("bootstrap.servers", "no server given");
        let servers = crate::net::dns::bootstrap_servers(
            self.config.dns_lookup,
            &self.config.bootstrap_servers,
        )
        .await;
        for addr in &servers {
            match self.connect(addr, -1).await {
                Ok(c) => {
                    *guard = Some(c.clone());
                    self.health.bootstrap_up();
                    return Ok(c);
                }
                Err(e) => {
                    tracing::debug!(broker = %addr, error = %e, "bootstrap server unreachable");
                    last = e;
                }
            }
        }
        if self.metadata().brokers.is_empty() && !last.is_authentication() {
            if let Some((down, total)) = self.health.bootstrap_failed(servers.len()) {
                tracing::warn!(down, total, "no bootstrap server can be reached");
                self.tell(&Error::AllBrokersDown { down, total });
            }
        }
        Err(last)
    }

    /// The connection to broker `node_id`, reconnecting with exponential backoff and jitter
    /// (`reconnect.backoff.ms` .. `reconnect.backoff.max.ms`) after failures.
    pub async fn connection(&self, node_id: i32) -> Result<Arc<Connection>> {
        self.connection_in_slot(node_id, node_id).await
    }

    /// A connection to broker `node_id` of its own, beside the one produce and fetch requests
    /// use. A broker answers each connection's requests in order, so a group's heartbeats,
    /// joins and commits must not queue behind a fetch long-polling for `fetch.max.wait.ms`
    /// (Kafka's clients keep a separate coordinator connection for the same reason).
    pub async fn coordinator_connection(&self, node_id: i32) -> Result<Arc<Connection>> {
        self.connection_in_slot(coordinator_slot(node_id), node_id)
            .await
    }

    /// Closes the coordinator connection to `node_id` (see
    /// [`Cluster::coordinator_connection`]): requests waiting on it fail at once. For a
    /// coordinator that stopped answering.
    pub fn close_coordinator_connection(&self, node_id: i32, reason: &str) {
        if let Some(c) = self
            .live
            .lock()
            .ok()
            .and_then(|l| l.get(&coordinator_slot(node_id)).cloned())
        {
            c.close(reason);
        }
    }

    async fn connection_in_slot(&self, slot_key: i32, node_id: i32) -> Result<Arc<Connection>> {
        let slot = {
            let mut slots = self.slots.lock().map_err(|_| Error::Closed)?;
            slots.entry(slot_key).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some(c) = slot.connection.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        if let Some(at) = slot.retry_at {
            tokio::time::sleep_until(at.into()).await;
        }
        let addr = self
            .metadata()
            .brokers
            .get(&node_id)
            .map(|b| format!("{}:{}", b.host, b.port))
            .ok_or_else(|| Error::Connection {
                broker: format!("node {node_id}"),
                detail: "broker not in metadata".into(),
            })?;
        match self.connect(&addr, node_id).await {
            Ok(c) => {
                let replaced = self
                    .live
                    .lock()
                    .ok()
                    .and_then(|mut live| live.insert(slot_key, c.clone()));
                // The statistics' throttle window is the broker's, not the connection's: what
                // the closed connection saw and no emission took yet stays in it.
                if let Some(old) = &replaced {
                    c.stats.throttle.absorb(&old.stats.throttle);
                    c.stats.rtt.absorb(&old.stats.rtt);
                }
                self.count_connect(slot_key, replaced.as_deref());
                slot.connection = Some(c.clone());
                slot.failures = 0;
                slot.retry_at = None;
                self.health.up(node_id);
                Ok(c)
            }
            Err(e) => {
                self.count_connect(slot_key, None);
                self.broker_failed(node_id, &e);
                slot.failures = slot.failures.saturating_add(1);
                let backoff = super::backoff::exponential(
                    self.config.reconnect_backoff,
                    self.config.reconnect_backoff_max,
                    slot.failures,
                );
                slot.retry_at = Some(Instant::now() + backoff);
                self.invalidate();
                Err(e)
            }
        }
    }

    /// A connection for a metadata request: an open one to a known broker, else a new one to
    /// a known broker that is not backing off after failures (Java's least loaded node), else,
    /// with `metadata.recovery.strategy=rebootstrap` or before the first metadata, one to a
    /// bootstrap server. Metadata failing for `metadata.recovery.rebootstrap.trigger.ms`
    /// sends the client back to the bootstrap servers first.
    async fn any_connection(&self) -> Result<Arc<Connection>> {
        let rebootstrap = self.config.metadata_recovery == MetadataRecovery::Rebootstrap;
        if rebootstrap
            && self.metadata_failing_for() >= Some(self.config.metadata_rebootstrap_trigger)
        {
            tracing::info!(
                "no metadata for metadata.recovery.rebootstrap.trigger.ms: rebootstrapping"
            );
            self.drop_bootstrap_connection().await;
            if let Ok(c) = self.bootstrap_connection().await {
                return Ok(c);
            }
        }
        // Best first (see `ranked_brokers`): an open connection to a responsive broker is used
        // as it is; a frozen broker's open connection comes last.
        let nodes = self.ranked_brokers();
        let mut last = None;
        for node in &nodes {
            if self.backing_off(*node) {
                continue;
            }
            match self.connection(*node).await {
                Ok(c) => return Ok(c),
                Err(e) if e.is_authentication() => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        if nodes.is_empty() || rebootstrap {
            if !nodes.is_empty() {
                tracing::info!("no known broker reachable: rebootstrapping from bootstrap.servers");
            }
            return self.bootstrap_connection().await;
        }
        Err(last.unwrap_or_else(|| Error::Connection {
            broker: "every known broker".into(),
            detail: "all backing off after failures (metadata.recovery.strategy=none)".into(),
        }))
    }

    /// Resolves at the next metadata update (a refresh, a leader hint). Create it (and
    /// `enable` it) before looking at the metadata, so an update in between is not missed.
    pub fn metadata_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.metadata_changed.notified()
    }

    fn metadata_updated(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.metadata_changed.notify_waiters();
    }

    /// The broker to send a request any broker can answer (FindCoordinator) to, Java's "least
    /// loaded node": the first of [`Cluster::ranked_brokers`] that is not `exclude` (unless no
    /// other is known).
    pub fn least_loaded_broker(&self, exclude: Option<i32>) -> Option<i32> {
        let ranked = self.ranked_brokers();
        ranked
            .iter()
            .copied()
            .find(|n| Some(*n) != exclude)
            .or_else(|| ranked.first().copied())
    }

    /// Every known broker, best first for a request any broker can answer: responsive ones
    /// (not down at their latest connection attempt, not in their reconnect backoff, and no
    /// request left unanswered on their open connection for [`STALLED_AFTER`] beyond
    /// `fetch.max.wait.ms`: a frozen or
    /// cut-off broker keeps its connection open and answers nothing) before the others; then,
    /// as Java's client does, brokers with an open connection before those that would need a
    /// new one (connecting to a frozen broker succeeds, and its handshake hangs); then the
    /// fewest requests waiting. Ties go to a different broker as the metadata generation moves.
    pub fn ranked_brokers(&self) -> Vec<i32> {
        // A Fetch is held by the broker for up to fetch.max.wait.ms by design.
        let stalled_after = STALLED_AFTER + self.config.consumer.fetch_max_wait;
        let mut nodes: Vec<i32> = self.metadata().brokers.keys().copied().collect();
        nodes.sort_unstable();
        if !nodes.is_empty() {
            let turn = (self.generation.load(Ordering::Relaxed) as usize) % nodes.len();
            nodes.rotate_left(turn);
        }
        let mut keyed: Vec<((bool, bool, usize), i32)> = nodes
            .into_iter()
            .map(|n| {
                let open = self.open_connection(n);
                let stalled = open
                    .as_ref()
                    .and_then(|c| c.oldest_unanswered())
                    .is_some_and(|age| age >= stalled_after);
                let unresponsive = stalled || self.health.is_down(n) || self.backing_off(n);
                let waiting = open.as_ref().map_or(0, |c| c.in_flight());
                ((unresponsive, open.is_none(), waiting), n)
            })
            .collect();
        // Stable: equal keys keep the rotated order.
        keyed.sort_by_key(|(key, _)| *key);
        keyed.into_iter().map(|(_, n)| n).collect()
    }

    /// The open connection to `node`, if there is one and nobody is reconnecting it.
    fn open_connection(&self, node: i32) -> Option<Arc<Connection>> {
        let live = self.live.lock().ok()?;
        live.get(&node).filter(|c| !c.is_closed()).cloned()
    }

    /// Whether `node`'s last connection attempt failed and its reconnect backoff still runs
    /// (or another task is connecting it right now).
    fn backing_off(&self, node: i32) -> bool {
        let Some(slot) = self.slots.lock().ok().and_then(|s| s.get(&node).cloned()) else {
            return false;
        };
        let busy = match slot.try_lock() {
            Ok(s) => s.retry_at.is_some_and(|at| at > Instant::now()),
            Err(_) => true,
        };
        busy
    }

    /// How long every metadata request has been failing, if the last one failed.
    fn metadata_failing_for(&self) -> Option<Duration> {
        self.metadata_failing_since
            .lock()
            .ok()
            .and_then(|s| s.map(|t| t.elapsed()))
    }

    fn metadata_outcome(&self, ok: bool) {
        if let Ok(mut since) = self.metadata_failing_since.lock() {
            if ok {
                *since = None;
            } else if since.is_none() {
                *since = Some(Instant::now());
            }
        }
    }

    /// Forgets the bootstrap connection, so the next one resolves and connects afresh.
    async fn drop_bootstrap_connection(&self) {
        if let Some(c) = self.bootstrap.lock().await.take() {
            c.close("rebootstrap");
        }
    }

    /// Metadata for `topic`, refreshing (and, when allowed, auto-creating) until it has
    /// partitions or `deadline` passes.
    pub async fn topic(&self, topic: &str, deadline: Instant) -> Result<TopicInfo> {
        self.add_interest(&[topic.to_string()]);
        let mut retry = super::backoff::Retry::default();
        // Why the last metadata request failed, if it did (named in the timeout).
        let mut refresh_error: Option<String> = None;
        loop {
            let fresh = !self.stale.load(Ordering::Acquire)
                && self.metadata().age() < self.config.metadata_max_age;
            let meta = if fresh {
                self.metadata()
            } else {
                match self.refresh().await {
                    Ok(m) => {
                        refresh_error = None;
                        m
                    }
                    // Authentication fails the same way on every retry: report it now.
                    Err(e) if e.is_authentication() => return Err(e),
                    Err(e) => {
                        refresh_error = Some(e.to_string());
                        self.metadata()
                    }
                }
            };
            let last_error = match meta.topics.get(topic) {
                Some(t) if t.error.is_ok() && !t.partitions.is_empty() => return Ok(t.clone()),
                Some(t) => t.error,
                None => ErrorCode::UnknownTopicOrPartition,
            };
            self.invalidate();
            let backoff = retry.failed(&self.config);
            if Instant::now() + backoff > deadline {
                return Err(match (last_error, refresh_error) {
                    (_, Some(why)) => Error::Timeout(format!(
                        "topic `{topic}` not available within max.block.ms: metadata request failed: {why}"
                    )),
                    (ErrorCode::NoError, None) => ErrorCode::UnknownTopicOrPartition.into(),
                    (code, None) if code.is_retriable() => Error::Timeout(format!(
                        "topic `{topic}` not available within max.block.ms ({code})"
                    )),
                    (code, None) => code.into(),
                });
            }
            tokio::time::sleep(backoff).await;
        }
    }

    /// Fetches metadata for every topic of interest. A caller arriving during a refresh shares
    /// it when that refresh asked for every topic of interest the caller knew of.
    pub async fn refresh(&self) -> Result<Arc<ClusterMetadata>> {
        let seen = self.refreshes.load(Ordering::Acquire);
        let wanted = self.interest_version.load(Ordering::Acquire);
        let _guard = self.refresh_lock.lock().await;
        if self.refreshes.load(Ordering::Acquire) != seen
            && self.covered_interest.load(Ordering::Acquire) >= wanted
        {
            return Ok(self.metadata());
        }
        let (topics, asked_with): (Vec<String>, u64) = self
            .interest
            .lock()
            .map(|i| {
                (
                    i.iter().cloned().collect(),
                    self.interest_version.load(Ordering::Acquire),
                )
            })
            .unwrap_or_default();
        let request = MetadataRequest::default()
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                    })
                    .collect(),
            ))
            .with_allow_auto_topic_creation(self.config.allow_auto_create_topics);
        let response = match self.metadata_answer(&request).await {
            Ok(r) => {
                self.metadata_outcome(true);
                r
            }
            Err(e) => {
                self.metadata_outcome(false);
                return Err(e);
            }
        };
        let merged = self.metadata().merge(&response);
        let merged = Arc::new(merged);
        if let Ok(mut m) = self.metadata.write() {
            *m = merged.clone();
        }
        self.stale.store(false, Ordering::Release);
        self.covered_interest.store(asked_with, Ordering::Release);
        self.refreshes.fetch_add(1, Ordering::AcqRel);
        self.metadata_updated();
        Ok(merged)
    }

    /// Sends a metadata request on [`Cluster::any_connection`]. A broker that answers
    /// REBOOTSTRAP_REQUIRED (KIP-1102) sends the client back to the bootstrap servers, once.
    async fn metadata_answer(&self, request: &MetadataRequest) -> Result<MetadataResponse> {
        let connection = self.any_connection().await?;
        let response = match connection.send(request).await {
            Ok(r) => r,
            Err(e) => {
                connection.close("metadata request failed");
                return Err(e);
            }
        };
        let code = ErrorCode::from_code(response.error_code);
        if code != ErrorCode::RebootstrapRequired {
            return Ok(response);
        }
        if self.config.metadata_recovery != MetadataRecovery::Rebootstrap {
            return Err(code.into());
        }
        tracing::info!("broker answered REBOOTSTRAP_REQUIRED: rebootstrapping");
        self.drop_bootstrap_connection().await;
        let connection = self.bootstrap_connection().await?;
        let response = connection.send(request).await?;
        match ErrorCode::from_code(response.error_code) {
            ErrorCode::NoError => Ok(response),
            code => Err(code.into()),
        }
    }

    /// Counts a connection attempt of `slot_key`; `replaced` is the connection the new one
    /// took over from (a disconnect whose traffic the slot's history keeps).
    fn count_connect(&self, slot_key: i32, replaced: Option<&Connection>) {
        if let Ok(mut h) = self.history.lock() {
            h.entry(slot_key).or_default().connected(replaced);
        }
    }

    /// Every broker's statistics (librdkafka's `brokers` entries; see [`BrokerSnapshot`]),
    /// starting new rtt and throttle windows. For the statistics emitter alone: two callers
    /// would split the windows between them.
    pub fn broker_snapshots(&self) -> Vec<BrokerSnapshot> {
        let live: Vec<(i32, Arc<Connection>)> = self
            .live
            .lock()
            .map(|l| l.iter().map(|(k, c)| (*k, c.clone())).collect())
            .unwrap_or_default();
        let history = self.history.lock().map(|h| h.clone()).unwrap_or_default();
        let bootstrap = self.bootstrap.try_lock().ok().and_then(|b| b.clone());
        super::stats::broker_snapshots(
            super::stats::SlotsForStats {
                live,
                history,
                bootstrap,
            },
            &self.metadata(),
        )
    }

    /// Per-broker traffic counters of live connections (throttle counts since each
    /// connection opened).
    pub fn broker_stats(&self) -> Vec<BrokerStats> {
        let mut out = Vec::new();
        if let Ok(live) = self.live.lock() {
            for (key, c) in live.iter() {
                out.push(broker_stats_of(*key, c));
            }
        }
        out
    }

    /// Fetches metadata for every topic in the cluster (pattern subscriptions need this).
    pub async fn refresh_all(&self) -> Result<Arc<ClusterMetadata>> {
        let _guard = self.refresh_lock.lock().await;
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false);
        let connection = self.any_connection().await?;
        let response = connection.send(&request).await?;
        let merged = Arc::new(self.metadata().merge(&response));
        if let Ok(mut m) = self.metadata.write() {
            *m = merged.clone();
        }
        self.metadata_updated();
        Ok(merged)
    }

    /// Closes every connection.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Ok(live) = self.live.lock() {
            for c in live.values() {
                c.close("client closed");
            }
        }
    }
}

/// The counters of the connection in slot `key`.
fn broker_stats_of(key: i32, c: &Connection) -> BrokerStats {
    let requests = c.stats.requests.load(Ordering::Relaxed);
    BrokerStats {
        broker: c.addr().to_string(),
        requests,
        bytes_sent: c.stats.bytes_sent.load(Ordering::Relaxed),
        bytes_received: c.stats.bytes_received.load(Ordering::Relaxed),
        mean_latency_us: c.stats.latency_us_total.load(Ordering::Relaxed) / requests.max(1),
        in_flight: c.in_flight(),
        reauthentications: c.stats.reauthentications.load(Ordering::Relaxed),
        node_id: slot_node(key),
        throttled: c.stats.throttled.load(Ordering::Relaxed),
        throttle_ms_total: c.stats.throttle_ms_total.load(Ordering::Relaxed),
        throttle_ms_min: c.stats.throttle_ms_min.load(Ordering::Relaxed),
        throttle_ms_max: c.stats.throttle_ms_max.load(Ordering::Relaxed),
    }
}
