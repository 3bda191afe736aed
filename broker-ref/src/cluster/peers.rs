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
}

impl Peers {
    /// Connections to `voters` (id → `host:port`) for node `node_id` of `cluster_id`;
    /// `timeout` bounds connecting and each request.
    pub fn new(
        cluster_id: &str,
        node_id: NodeId,
        voters: &BTreeMap<NodeId, (String, u16)>,
        timeout: Duration,
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
            security: SecurityConfig::default(),
            timeout,
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
            },
        )
        .await?;
        *slot = Some(c.clone());
        Ok(c)
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
