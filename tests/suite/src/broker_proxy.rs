//! A Kafka-aware TCP proxy for fault tests against any broker, Apache Kafka included.
//!
//! The plain [`crate::Proxy`] only sees the connections made to its own address, and a client
//! that bootstraps through it then connects straight to the addresses the broker advertises.
//! This proxy rewrites those addresses in Metadata, FindCoordinator and DescribeCluster
//! responses to listeners of its own (one per upstream broker), so every connection of the
//! client passes through it and [`BrokerProxy::cut_all`] drops them all. Every other frame is
//! forwarded byte for byte. It also notes the session fields of every Fetch exchange
//! ([`BrokerProxy::fetches`]), so tests can see incremental fetch sessions (KIP-227) at work.
//! Started with [`BrokerProxy::start_apart`], its bootstrap listener is not any broker's, so a
//! test can tell the client's bootstrap connections from its broker connections and make the
//! brokers' Metadata answers fail ([`BrokerProxy::broker_metadata_fault`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use odradek::protocol::messages::{
    DescribeClusterResponse, FetchResponse, FindCoordinatorResponse, MetadataResponse, RequestKind,
};
use odradek::protocol::types::StrBytes;
use odradek::protocol::{decode_request, decode_response, encode_response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;

const FETCH: i16 = 1;
const METADATA: i16 = 3;
const FIND_COORDINATOR: i16 = 10;
const DESCRIBE_CLUSTER: i16 = 60;

/// Requests awaiting a response on one connection: correlation id → (API key, version, and for
/// a Fetch what the request said).
type InFlight = Arc<Mutex<HashMap<i32, (i16, i16, Option<FetchSeen>)>>>;

/// What the broker listeners of a proxy started with [`BrokerProxy::start_apart`] do to
/// Metadata responses (the bootstrap listener forwards them unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataFault {
    /// Never forward them: the client's request times out.
    Stall,
    /// Answer with this top-level error code instead of none (Metadata v13+, e.g.
    /// REBOOTSTRAP_REQUIRED, KIP-1102).
    Error(i16),
}

/// One Fetch request and its response, as far as fetch sessions go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchSeen {
    /// Request `session_id`.
    pub session_id: i32,
    /// Request `session_epoch`.
    pub epoch: i32,
    /// Partitions the request listed.
    pub listed: usize,
    /// Partitions in `forgotten_topics_data`.
    pub forgotten: usize,
    /// Response top-level error code.
    pub error_code: i16,
    /// Response `session_id`.
    pub response_session_id: i32,
    /// Partitions in the response.
    pub answered: usize,
}

#[derive(Debug)]
struct Inner {
    /// Upstream `host:port` → the proxy listener's `127.0.0.1:port`.
    listeners: Mutex<HashMap<String, String>>,
    cut: watch::Sender<u64>,
    /// Set once by [`BrokerProxy::stop`]: listeners close, so new connections are refused.
    stopped: watch::Sender<bool>,
    /// Client connections accepted so far.
    accepted: std::sync::atomic::AtomicUsize,
    /// Fetch exchanges completed, in order.
    fetches: Mutex<Vec<FetchSeen>>,
    /// Milliseconds every Metadata response is held back.
    metadata_delay_ms: std::sync::atomic::AtomicU64,
    /// What broker listeners do to Metadata responses.
    metadata_fault: Mutex<Option<MetadataFault>>,
    /// Metadata responses forwarded by the bootstrap listener / by broker listeners.
    metadata_forwarded: [std::sync::atomic::AtomicUsize; 2],
    /// The API key whose responses are never forwarded (-1: none), see
    /// [`BrokerProxy::stall_responses`].
    stalled_key: std::sync::atomic::AtomicI32,
}

/// Which listener a connection came through (index into `Inner::metadata_forwarded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Bootstrap = 0,
    Broker = 1,
}

/// The proxy. Its listeners live until [`BrokerProxy::stop`] (dropping the handle does not
/// close them: a connection accepted meanwhile would still be forwarded).
#[derive(Debug, Clone)]
pub struct BrokerProxy {
    /// The bootstrap address to give clients (the proxy in front of the upstream bootstrap).
    pub bootstrap: String,
    inner: Arc<Inner>,
}

impl BrokerProxy {
    /// A proxy in front of `upstream` (`host:port` of one broker of the cluster; of a bootstrap
    /// list, the first). Must run inside a tokio runtime.
    pub fn start(upstream: &str) -> BrokerProxy {
        Self::started(upstream, false)
    }

    /// Like [`BrokerProxy::start`], but the bootstrap address is a listener of its own, never
    /// the one of the broker advertising the same address: the client's connections to a
    /// broker it knows from metadata are then distinct from its bootstrap connections.
    pub fn start_apart(upstream: &str) -> BrokerProxy {
        Self::started(upstream, true)
    }

    fn started(upstream: &str, apart: bool) -> BrokerProxy {
        // A bootstrap list (an external cluster): the proxy fronts its first broker.
        let upstream = upstream.split(',').next().unwrap_or(upstream).trim();
        let (cut, _) = watch::channel(0u64);
        let (stopped, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            listeners: Mutex::new(HashMap::new()),
            cut,
            stopped,
            accepted: std::sync::atomic::AtomicUsize::new(0),
            fetches: Mutex::new(Vec::new()),
            metadata_delay_ms: std::sync::atomic::AtomicU64::new(0),
            metadata_fault: Mutex::new(None),
            metadata_forwarded: Default::default(),
            stalled_key: std::sync::atomic::AtomicI32::new(-1),
        });
        let bootstrap = if apart {
            listen(
                &inner,
                &format!("bootstrap {upstream}"),
                upstream,
                Role::Bootstrap,
            )
        } else {
            listen(&inner, upstream, upstream, Role::Bootstrap)
        };
        BrokerProxy { bootstrap, inner }
    }

    /// From now on, broker listeners do `fault` to every Metadata response (`None`: forward
    /// them again). Meant for a proxy from [`BrokerProxy::start_apart`]; with
    /// [`BrokerProxy::start`] the bootstrap listener is also a broker's, and only connections
    /// to other advertised addresses count as broker connections.
    pub fn broker_metadata_fault(&self, fault: Option<MetadataFault>) {
        if let Ok(mut f) = self.inner.metadata_fault.lock() {
            *f = fault;
        }
    }

    /// Metadata responses forwarded to the client so far: `(through the bootstrap listener,
    /// through broker listeners)`, the ones a fault changed included, stalled ones not.
    pub fn metadata_forwarded(&self) -> (usize, usize) {
        let n = |r: Role| {
            self.inner.metadata_forwarded[r as usize].load(std::sync::atomic::Ordering::Relaxed)
        };
        (n(Role::Bootstrap), n(Role::Broker))
    }

    /// Drops every connection currently open through the proxy.
    pub fn cut_all(&self) {
        self.inner.cut.send_modify(|n| *n += 1);
    }

    /// The brokers go away, as far as clients can tell: every listener closes (new connections
    /// are refused) and every open connection is cut.
    pub fn stop(&self) {
        self.inner.stopped.send_replace(true);
        self.cut_all();
    }

    /// Holds back every later Metadata response by `delay` (a slow metadata round trip).
    pub fn delay_metadata(&self, delay: std::time::Duration) {
        self.inner.metadata_delay_ms.store(
            delay.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// From now on, responses to requests with this API key (`None`: none) are dropped on
    /// every listener: the broker did the work, the client never hears of it and its request
    /// times out, while the other requests on the same connection are answered.
    pub fn stall_responses(&self, api_key: Option<i16>) {
        self.inner.stalled_key.store(
            api_key.map_or(-1, i32::from),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Client connections accepted so far (evidence that clients really go through it).
    pub fn connections_accepted(&self) -> usize {
        self.inner
            .accepted
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every Fetch exchange answered so far, in order.
    pub fn fetches(&self) -> Vec<FetchSeen> {
        self.inner
            .fetches
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }
}

/// The proxy address for the listener named `key` in front of `upstream`, starting it the
/// first time.
fn listen(inner: &Arc<Inner>, key: &str, upstream: &str, role: Role) -> String {
    let mut listeners = inner.listeners.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(addr) = listeners.get(key) {
        return addr.clone();
    }
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    std_listener.set_nonblocking(true).expect("nonblocking");
    let addr = std_listener.local_addr().expect("addr").to_string();
    let listener = tokio::net::TcpListener::from_std(std_listener).expect("tokio listener");
    listeners.insert(key.to_string(), addr.clone());
    let weak = Arc::downgrade(inner);
    let upstream = upstream.to_string();
    let mut stopped = inner.stopped.subscribe();
    tokio::spawn(async move {
        loop {
            // The listener is dropped (connections refused) once the proxy stops.
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stopped.wait_for(|s| *s) => return,
            };
            let Ok((client, _)) = accepted else { return };
            let Some(inner) = weak.upgrade() else { return };
            if *inner.stopped.borrow() {
                return;
            }
            inner
                .accepted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let mut cut = inner.cut.subscribe();
                cut.borrow_and_update();
                // A connection accepted just as the proxy stopped misses that cut: this ends it.
                let mut stopped = inner.stopped.subscribe();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let in_flight: InFlight = Arc::default();
                tokio::select! {
                    _ = requests(client_read, server_write, in_flight.clone()) => {}
                    _ = responses(server_read, client_write, in_flight, &inner, role) => {}
                    _ = cut.changed() => {}
                    _ = stopped.wait_for(|s| *s) => {}
                }
            });
        }
    });
    addr
}

async fn read_frame(r: &mut OwnedReadHalf) -> Option<Bytes> {
    let len = r.read_i32().await.ok()?;
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    r.read_exact(&mut buf).await.ok()?;
    Some(Bytes::from(buf))
}

/// Client → broker: notes each request's API key and version, forwards it unchanged.
async fn requests(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, in_flight: InFlight) {
    while let Some(frame) = read_frame(&mut from).await {
        if frame.len() >= 8 {
            let key = i16::from_be_bytes([frame[0], frame[1]]);
            let version = i16::from_be_bytes([frame[2], frame[3]]);
            let correlation = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            let fetch = (key == FETCH)
                .then(|| fetch_request(frame.clone()))
                .flatten();
            if let Ok(mut m) = in_flight.lock() {
                m.insert(correlation, (key, version, fetch));
            }
        }
        let len = (frame.len() as i32).to_be_bytes();
        if to.write_all(&len).await.is_err() || to.write_all(&frame).await.is_err() {
            return;
        }
    }
}

/// Broker → client: rewrites broker addresses in the responses that carry them.
async fn responses(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    in_flight: InFlight,
    inner: &Arc<Inner>,
    role: Role,
) {
    while let Some(frame) = read_frame(&mut from).await {
        let correlation = frame
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let request = correlation.and_then(|c| in_flight.lock().ok()?.remove(&c));
        let out = match request {
            Some((key, version, fetch)) => {
                if let Some(seen) = fetch {
                    note_fetch(inner, seen, frame.clone(), version);
                }
                let delay = inner
                    .metadata_delay_ms
                    .load(std::sync::atomic::Ordering::Relaxed);
                if key == METADATA && delay > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                }
                let fault = match (key, role) {
                    (METADATA, Role::Broker) => inner.metadata_fault.lock().ok().and_then(|f| *f),
                    _ => None,
                };
                let stalled = inner.stalled_key.load(std::sync::atomic::Ordering::Relaxed);
                if fault == Some(MetadataFault::Stall) || i32::from(key) == stalled {
                    continue;
                }
                if key == METADATA {
                    inner.metadata_forwarded[role as usize]
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                let error = match fault {
                    Some(MetadataFault::Error(code)) => Some(code),
                    _ => None,
                };
                rewrite(inner, key, version, frame, error)
            }
            None => with_length(&frame),
        };
        if to.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// The session fields of a Fetch request frame.
fn fetch_request(frame: Bytes) -> Option<FetchSeen> {
    let RequestKind::Fetch(r) = decode_request(frame).ok()?.body else {
        return None;
    };
    Some(FetchSeen {
        session_id: r.session_id,
        epoch: r.session_epoch,
        listed: r.topics.iter().map(|t| t.partitions.len()).sum(),
        forgotten: r
            .forgotten_topics_data
            .iter()
            .map(|t| t.partitions.len())
            .sum(),
        ..FetchSeen::default()
    })
}

/// Completes a Fetch exchange with its response and records it.
fn note_fetch(inner: &Inner, mut seen: FetchSeen, frame: Bytes, version: i16) {
    if let Ok((_, body)) = decode_response::<FetchResponse>(frame, version) {
        seen.error_code = body.error_code;
        seen.response_session_id = body.session_id;
        seen.answered = body.responses.iter().map(|t| t.partitions.len()).sum();
    }
    if let Ok(mut f) = inner.fetches.lock() {
        f.push(seen);
    }
}

fn with_length(frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
    out.extend_from_slice(frame);
    out
}

/// The proxy's host and port for a broker the upstream advertised.
fn proxied(inner: &Arc<Inner>, host: &StrBytes, port: i32) -> (StrBytes, i32) {
    let upstream = format!("{host}:{port}");
    let addr = listen(inner, &upstream, &upstream, Role::Broker);
    let (h, p) = addr.rsplit_once(':').unwrap_or(("127.0.0.1", "0"));
    (StrBytes::from_string(h.to_string()), p.parse().unwrap_or(0))
}

/// Rewrites the broker addresses a response carries; `metadata_error` replaces a Metadata
/// response's top-level error code.
fn rewrite(
    inner: &Arc<Inner>,
    key: i16,
    version: i16,
    frame: Bytes,
    metadata_error: Option<i16>,
) -> Vec<u8> {
    let rewritten = match key {
        METADATA => decode_response::<MetadataResponse>(frame.clone(), version)
            .ok()
            .and_then(|(h, mut body)| {
                for b in &mut body.brokers {
                    (b.host, b.port) = proxied(inner, &b.host, b.port);
                }
                if let Some(code) = metadata_error {
                    body.error_code = code;
                }
                encode_response(version, h.correlation_id, &body).ok()
            }),
        FIND_COORDINATOR => decode_response::<FindCoordinatorResponse>(frame.clone(), version)
            .ok()
            .and_then(|(h, mut body)| {
                if version < 4 && body.port >= 0 && !body.host.is_empty() {
                    (body.host, body.port) = proxied(inner, &body.host, body.port);
                }
                for c in &mut body.coordinators {
                    if c.port >= 0 && !c.host.is_empty() {
                        (c.host, c.port) = proxied(inner, &c.host, c.port);
                    }
                }
                encode_response(version, h.correlation_id, &body).ok()
            }),
        DESCRIBE_CLUSTER => decode_response::<DescribeClusterResponse>(frame.clone(), version)
            .ok()
            .and_then(|(h, mut body)| {
                for b in &mut body.brokers {
                    (b.host, b.port) = proxied(inner, &b.host, b.port);
                }
                encode_response(version, h.correlation_id, &body).ok()
            }),
        _ => None,
    };
    match rewritten {
        Some(encoded) => encoded.to_vec(),
        None => with_length(&frame),
    }
}
