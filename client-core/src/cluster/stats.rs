//! Per-broker statistics in the shape of librdkafka's `brokers` objects: one entry per
//! connection slot (a broker's plain connection, its group coordinator connection, the
//! bootstrap connection) and one per broker known from metadata but not connected.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::metadata::ClusterMetadata;
use super::slot_key::slot_node;
use crate::net::{Connection, WindowSnapshot};

/// What a slot's closed connections did, and how often it connected.
#[derive(Debug, Default, Clone)]
pub(super) struct SlotHistory {
    connects: u64,
    disconnects: u64,
    requests: u64,
    bytes_sent: u64,
    responses: u64,
    bytes_received: u64,
    timeouts: u64,
}

impl SlotHistory {
    /// A connection attempt; `replaced` is the closed connection a new one takes over from.
    pub(super) fn connected(&mut self, replaced: Option<&Connection>) {
        self.connects += 1;
        if let Some(old) = replaced {
            let s = &old.stats;
            self.disconnects += 1;
            self.requests += s.requests.load(Ordering::Relaxed);
            self.bytes_sent += s.bytes_sent.load(Ordering::Relaxed);
            self.responses += s.responses.load(Ordering::Relaxed);
            self.bytes_received += s.bytes_received.load(Ordering::Relaxed);
            self.timeouts += s.timeouts.load(Ordering::Relaxed);
        }
    }
}

/// The cluster's connections as the statistics read them.
pub(super) struct SlotsForStats {
    pub live: Vec<(i32, Arc<Connection>)>,
    pub history: HashMap<i32, SlotHistory>,
    pub bootstrap: Option<Arc<Connection>>,
}

/// One broker entry of a statistics snapshot (librdkafka's field meanings).
#[derive(Debug, Clone, Default)]
pub struct BrokerSnapshot {
    /// `host:port/nodeid`, `host:port/bootstrap`, or `GroupCoordinator` (librdkafka's names).
    pub name: String,
    /// Broker id (-1 for the bootstrap and the coordinator connections).
    pub node_id: i32,
    /// `host:port`.
    pub nodename: String,
    /// `configured` (bootstrap), `learned` (from metadata) or `logical` (coordinator).
    pub source: &'static str,
    /// `UP` (connected), `DOWN` (connection closed) or `INIT` (never connected).
    pub state: &'static str,
    /// Microseconds since the current connection was established (0 without one).
    pub state_age_us: u64,
    /// Requests awaiting a response.
    pub waitresp_cnt: u64,
    /// Requests sent, over every connection of this slot.
    pub tx: u64,
    /// Bytes sent.
    pub txbytes: u64,
    /// Responses received.
    pub rx: u64,
    /// Bytes received.
    pub rxbytes: u64,
    /// Requests that timed out.
    pub req_timeouts: u64,
    /// Connection attempts.
    pub connects: u64,
    /// Connections lost and replaced.
    pub disconnects: u64,
    /// Round-trip times since the last snapshot, microseconds.
    pub rtt: WindowSnapshot,
    /// Throttle times since the last snapshot, milliseconds.
    pub throttle: WindowSnapshot,
    /// Requests sent per API name, on the current connection.
    pub requests_by_api: Vec<(&'static str, u64)>,
}

/// Every broker's statistics from the cluster view's slots and metadata (see
/// [`super::Cluster::broker_snapshots`]); starts new rtt and throttle windows.
pub(super) fn broker_snapshots(
    slots: SlotsForStats,
    metadata: &ClusterMetadata,
) -> Vec<BrokerSnapshot> {
    let SlotsForStats {
        live,
        history,
        bootstrap,
    } = slots;
    let mut out: Vec<BrokerSnapshot> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut coordinators = 0;
    let mut live = live;
    live.sort_by_key(|(key, _)| *key);
    for (key, c) in &live {
        let node = slot_node(*key);
        let coordinator = node != *key;
        seen.insert(*key);
        let mut b = snapshot_of(c, history.get(key));
        if coordinator {
            // librdkafka's logical coordinator broker: no node id of its own.
            b.node_id = -1;
            b.source = "logical";
            b.name = if coordinators == 0 {
                "GroupCoordinator".to_string()
            } else {
                format!("GroupCoordinator/{node}")
            };
            coordinators += 1;
        } else {
            b.node_id = node;
            b.source = "learned";
            b.name = format!("{}/{node}", b.nodename);
        }
        out.push(b);
    }
    for (id, info) in &metadata.brokers {
        if seen.contains(id) {
            continue;
        }
        let nodename = format!("{}:{}", info.host, info.port);
        let h = history.get(id).cloned().unwrap_or_default();
        out.push(BrokerSnapshot {
            name: format!("{nodename}/{id}"),
            node_id: *id,
            nodename,
            source: "learned",
            state: if h.connects > 0 { "DOWN" } else { "INIT" },
            tx: h.requests,
            txbytes: h.bytes_sent,
            rx: h.responses,
            rxbytes: h.bytes_received,
            req_timeouts: h.timeouts,
            connects: h.connects,
            disconnects: h.disconnects,
            ..BrokerSnapshot::default()
        });
    }
    if let Some(c) = bootstrap {
        let mut b = snapshot_of(&c, None);
        b.node_id = -1;
        b.source = "configured";
        b.name = format!("{}/bootstrap", b.nodename);
        b.connects = b.connects.max(1);
        out.push(b);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The snapshot of a live connection, with its slot's history added.
fn snapshot_of(c: &Connection, history: Option<&SlotHistory>) -> BrokerSnapshot {
    let h = history.cloned().unwrap_or_default();
    let s = &c.stats;
    let up = !c.is_closed();
    BrokerSnapshot {
        nodename: c.addr().to_string(),
        state: if up { "UP" } else { "DOWN" },
        state_age_us: if up {
            s.opened.0.elapsed().as_micros() as u64
        } else {
            0
        },
        waitresp_cnt: c.in_flight() as u64,
        tx: h.requests + s.requests.load(Ordering::Relaxed),
        txbytes: h.bytes_sent + s.bytes_sent.load(Ordering::Relaxed),
        rx: h.responses + s.responses.load(Ordering::Relaxed),
        rxbytes: h.bytes_received + s.bytes_received.load(Ordering::Relaxed),
        req_timeouts: h.timeouts + s.timeouts.load(Ordering::Relaxed),
        connects: h.connects,
        disconnects: h.disconnects,
        rtt: s.rtt.take(),
        throttle: s.throttle.take(),
        requests_by_api: s.by_api.snapshot(),
        ..BrokerSnapshot::default()
    }
}
