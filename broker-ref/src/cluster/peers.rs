//! Connections from this node to the controllers (the voters of `controller.quorum.voters`):
//! two per peer, one for fetches (held by the leader up to their max wait) and one for
//! everything else, so a vote never queues behind a fetch the peer is holding. A connection
//! that fails is dropped and made again on the next request.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use odradek::net::{ConnectParams, Connection};
use odradek::security::SecurityConfig;
use odradek_quorum::{NodeId, Request, Response};
use tokio::sync::Mutex;

use super::quorum_wire::{self, Outbound};
use crate::{Error, Result};

/// Which of a peer's two connections a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    Fetch,
    Control,
}

/// The controllers this node talks to.
#[derive(Debug)]
pub struct Peers {
    cluster_id: String,
    client_id: String,
    addresses: BTreeMap<NodeId, String>,
    connections: BTreeMap<(NodeId, Lane), Mutex<Option<Arc<Connection>>>>,
    security: SecurityConfig,
    timeout: Duration,
    /// When a failed login to each peer was last logged (at most one warning per peer every
    /// [`AUTH_WARN_EVERY`]: the quorum retries many times a second).
    auth_warned: std::sync::Mutex<BTreeMap<NodeId, std::time::Instant>>,
}

/// How often a peer's refused login (SASL or TLS) is logged again.
const AUTH_WARN_EVERY: Duration = Duration::from_secs(30);

impl Peers {
    /// Connections to `voters` (id → `host:port`) for node `node_id` of `cluster_id`;
    /// `timeout` bounds connecting and each request.
    pub fn new(
        cluster_id: &str,
        node_id: NodeId,
        voters: &BTreeMap<NodeId, (String, u16)>,
        timeout: Duration,
        security: SecurityConfig,
    ) -> Peers {
        let addresses: BTreeMap<NodeId, String> = voters
            .iter()
            .map(|(id, (host, port))| (*id, format!("{host}:{port}")))
            .collect();
        let connections = addresses
            .keys()
            .flat_map(|id| [(*id, Lane::Fetch), (*id, Lane::Control)])
            .map(|k| (k, Mutex::new(None)))
            .collect();
        Peers {
            cluster_id: cluster_id.to_string(),
            client_id: format!("odradek-node-{node_id}"),
            addresses,
            connections,
            security,
            timeout,
            auth_warned: std::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// The cluster id every request carries.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// An open connection to controller `to` on `lane`, made if needed.
    async fn connection(&self, to: NodeId, lane: Lane) -> Result<Arc<Connection>> {
        let (Some(slot), Some(addr)) = (self.connections.get(&(to, lane)), self.addresses.get(&to))
        else {
            return Err(Error::kafka(
                odradek::ErrorCode::InconsistentVoterSet,
                format!("node {to} is not a voter"),
            ));
        };
        let mut slot = slot.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let c = Connection::connect(
            addr,
            ConnectParams {
                client_id: &self.client_id,
                setup_timeout: self.timeout,
                request_timeout: self.timeout + Duration::from_millis(500),
                max_in_flight: 16,
                max_response_size: 64 << 20,
                security: &self.security,
                node_id: to,
                on_throttle: None,
                on_request: None,
                socket: Default::default(),
            },
        )
        .await
        .inspect_err(|e| self.warn_refused_login(to, addr, e))?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Logs a refused login (wrong credentials, an untrusted or mismatched certificate) to
    /// `to`: retrying cannot fix it, an operator must.
    fn warn_refused_login(&self, to: NodeId, addr: &str, e: &odradek::Error) {
        if !e.is_authentication() {
            return;
        }
        let now = std::time::Instant::now();
        let mut warned = self.auth_warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned
            .get(&to)
            .is_some_and(|at| now.duration_since(*at) < AUTH_WARN_EVERY)
        {
            return;
        }
        warned.insert(to, now);
        tracing::warn!(node = to, addr, error = %e, "controller listener refused this node's login (check its TLS trust store and SASL settings)");
    }

    async fn forget(&self, to: NodeId, lane: Lane) {
        if let Some(slot) = self.connections.get(&(to, lane)) {
            if let Some(c) = slot.lock().await.take() {
                c.close("request failed");
            }
        }
    }

    /// Sends a quorum request to controller `to` and returns its answer.
    pub async fn send(&self, to: NodeId, request: &Request) -> Result<Response> {
        let lane = match request {
            Request::Fetch { .. } | Request::FetchSnapshot { .. } => Lane::Fetch,
            _ => Lane::Control,
        };
        let result = self.exchange(to, lane, request).await;
        if result.is_err() {
            self.forget(to, lane).await;
        }
        result
    }

    /// Sends any Kafka request to controller `to` on its control connection (broker →
    /// controller calls: registration, heartbeats, AlterPartition, forwarded admin requests).
    pub async fn call<R>(&self, to: NodeId, request: &R) -> Result<R::Response>
    where
        R: kafka_protocol::protocol::Request<Response: odradek::protocol::Throttled>,
    {
        let c = self.connection(to, Lane::Control).await?;
        let result = c.send(request).await.map_err(Error::from);
        if result.is_err() {
            self.forget(to, Lane::Control).await;
        }
        result
    }

    async fn exchange(&self, to: NodeId, lane: Lane, request: &Request) -> Result<Response> {
        let c = self.connection(to, lane).await?;
        match quorum_wire::outbound(&self.cluster_id, to, request) {
            Outbound::Vote(r) => quorum_wire::vote_back(c.send(&r).await?),
            Outbound::Begin(r) => quorum_wire::begin_back(c.send(&r).await?),
            Outbound::End(r) => quorum_wire::end_back(c.send(&r).await?),
            Outbound::Fetch(r) => quorum_wire::fetch_back(c.send(&r).await?),
            Outbound::FetchSnapshot(r) => quorum_wire::fetch_snapshot_back(c.send(&r).await?),
        }
    }
}
