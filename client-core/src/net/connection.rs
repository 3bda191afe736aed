//! One connection to one broker: TCP, TLS when `security.protocol` says so, then ApiVersions
//! and, for SASL, authentication (see `sasl`).
//!
//! A writer task owns the stream's write half and sends frames in submission order; a reader task
//! splits responses into frames and hands each to the request waiting on its correlation id.
//! Requests are pipelined up to `max.in.flight.requests.per.connection`. When the socket fails,
//! or a request times out (after which the response stream can no longer be trusted, as in the
//! Java client), the connection closes and every waiting request fails with a retriable error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
use kafka_protocol::protocol::{Encodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;
use tracing::Instrument;

use super::request_events::{epoch_ms, RequestEvent, RequestInfo, RequestSink};
use super::window::Window;
use crate::protocol::{api_name, decode_response, FrameCodec, NegotiatedVersions, Throttled};
use crate::{Error, ErrorCode, Result};

/// The read half of a broker stream (TCP, or TLS over TCP).
pub(super) type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
/// The write half of a broker stream.
pub(super) type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// Requests waiting for their response, by correlation id.
type Waiters = Arc<Mutex<HashMap<i32, Waiter>>>;

/// One request waiting for its response.
struct Waiter {
    /// When the request was queued for writing.
    sent: std::time::Instant,
    tx: oneshot::Sender<Result<Bytes>>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").field("sent", &self.sent).finish()
    }
}

/// A request written to the connection: what waiting for its response needs.
struct Submitted {
    /// Frame size in bytes.
    bytes: usize,
    /// The request's correlation id.
    correlation_id: i32,
    /// Where the response arrives (`None` for requests without one, e.g. acks=0 produce).
    response: Option<oneshot::Receiver<Result<Bytes>>>,
    /// The in-flight slot, released when the response has been read (`None` for the
    /// authentication requests of a re-authentication, which run with every slot held).
    permit: Option<OwnedSemaphorePermit>,
    /// When the caller made the request, and when it was written.
    created: Instant,
    sent: Instant,
}
/// Counters a statistics snapshot reads.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Requests sent.
    pub requests: AtomicU64,
    /// Request bytes written.
    pub bytes_sent: AtomicU64,
    /// Response bytes read.
    pub bytes_received: AtomicU64,
    /// Sum of round-trip times in microseconds (divide by `requests` for the mean).
    pub latency_us_total: AtomicU64,
    /// SASL re-authentications on this connection (KIP-368).
    pub reauthentications: AtomicU64,
    /// Responses that reported a throttle time above zero (a broker quota, KIP-219).
    pub throttled: AtomicU64,
    /// Sum of the reported throttle times, milliseconds.
    pub throttle_ms_total: AtomicU64,
    /// Longest reported throttle time, milliseconds.
    pub throttle_ms_max: AtomicU64,
    /// Shortest reported (non-zero) throttle time, milliseconds (0: none yet).
    pub throttle_ms_min: AtomicU64,
    /// Responses read.
    pub responses: AtomicU64,
    /// Requests that got no response within `request.timeout.ms`.
    pub timeouts: AtomicU64,
    /// Round-trip times since the last statistics emission, microseconds.
    pub rtt: Window,
    /// Every response's throttle time (zero included) since the last emission, milliseconds.
    pub throttle: Window,
    /// Requests sent, per API key.
    pub by_api: ApiCounts,
    /// When the connection was established.
    pub opened: OpenedAt,
}

/// When a connection was established (its statistics' `stateage`).
#[derive(Debug, Clone, Copy)]
pub struct OpenedAt(pub Instant);

impl Default for OpenedAt {
    fn default() -> Self {
        OpenedAt(Instant::now())
    }
}

/// Requests sent per API key (librdkafka's per-broker `req` object).
#[derive(Debug)]
pub struct ApiCounts(Vec<AtomicU64>);

impl Default for ApiCounts {
    fn default() -> Self {
        ApiCounts((0..=API_KEY_MAX).map(|_| AtomicU64::new(0)).collect())
    }
}

/// The highest API key [`ApiCounts`] keeps a counter for.
const API_KEY_MAX: usize = 95;

impl ApiCounts {
    fn add(&self, api_key: i16) {
        if let Some(c) = usize::try_from(api_key).ok().and_then(|k| self.0.get(k)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `(API name, requests sent)` of every API this connection used.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(key, c)| {
                let n = c.load(Ordering::Relaxed);
                (n > 0).then(|| (api_name(key as i16), n))
            })
            .collect()
    }
}

impl ConnectionStats {
    /// Counts one non-zero throttle time, in the history and in the current window.
    fn record_throttle(&self, ms: u64) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
        self.throttle_ms_total.fetch_add(ms, Ordering::Relaxed);
        self.throttle_ms_max.fetch_max(ms, Ordering::Relaxed);
        let _ = self
            .throttle_ms_min
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m == 0 || ms < m).then_some(ms)
            });
    }
}

/// A throttle time a broker reported (librdkafka's `throttle_cb`, KafkaJS's throttle events):
/// one event per response with a non-zero throttle time, and one when it drops back to zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleEvent {
    /// The broker's address, `host:port`.
    pub broker: String,
    /// The broker's node id (-1 for a bootstrap connection).
    pub node_id: i32,
    /// The throttle time, milliseconds (0: no longer throttled).
    pub throttle_time_ms: i32,
}

/// Where a connection reports throttle times.
#[derive(Clone)]
pub struct ThrottleSink(pub Arc<dyn Fn(ThrottleEvent) + Send + Sync>);

impl std::fmt::Debug for ThrottleSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThrottleSink")
    }
}

/// A connection's throttle state: until when nothing may be sent (KIP-219).
#[derive(Debug, Default)]
struct ThrottleState {
    until: Mutex<Option<Instant>>,
    last_ms: AtomicI32,
}

/// A connection to one broker.
#[derive(Debug)]
pub struct Connection {
    addr: String,
    client_id: StrBytes,
    outgoing: mpsc::UnboundedSender<Bytes>,
    waiters: Waiters,
    correlation: AtomicI32,
    in_flight: Arc<Semaphore>,
    closed: Arc<AtomicBool>,
    versions: NegotiatedVersions,
    request_timeout: Duration,
    max_in_flight: usize,
    throttle: ThrottleState,
    node_id: i32,
    on_throttle: Option<ThrottleSink>,
    /// Per-request instrumentation events.
    on_request: RequestSink,
    /// Requests waiting for an in-flight slot.
    waiting: std::sync::atomic::AtomicUsize,
    /// Traffic counters.
    pub stats: Arc<ConnectionStats>,
}

pub(super) fn conn_err(addr: &str, detail: impl std::fmt::Display) -> Error {
    Error::Connection {
        broker: addr.to_string(),
        detail: detail.to_string(),
    }
}

impl Connection {
    /// Adopts the versions negotiated on connect.
    pub(super) fn set_versions(&mut self, versions: NegotiatedVersions) {
        self.versions = versions;
    }

    /// Where throttle times go, and the node id they are reported with.
    pub(super) fn set_throttle_sink(&mut self, node_id: i32, sink: Option<ThrottleSink>) {
        self.node_id = node_id;
        self.on_throttle = sink;
    }

    /// Where per-request instrumentation events go.
    pub(super) fn set_request_sink(&mut self, sink: RequestSink) {
        self.on_request = sink;
    }

    /// Until when this connection sends nothing because the broker throttled it.
    pub fn throttled_until(&self) -> Option<Instant> {
        let until = self.throttle.until.lock().ok().and_then(|u| *u)?;
        (until > Instant::now()).then_some(until)
    }

    /// Takes note of a response's throttle time: counted, reported, and, for the versions
    /// where the client waits it out (KIP-219), nothing more is sent until it has passed.
    fn on_throttle_time(&self, api_key: i16, version: i16, ms: i32) {
        let ms = ms.max(0);
        self.stats.throttle.record(ms as u64);
        let was = self.throttle.last_ms.swap(ms, Ordering::Relaxed);
        if ms > 0 {
            let v = ms as u64;
            self.stats.record_throttle(v);
            if crate::protocol::client_throttles(api_key, version) {
                let until = Instant::now() + Duration::from_millis(v);
                if let Ok(mut u) = self.throttle.until.lock() {
                    if u.is_none_or(|old| old < until) {
                        *u = Some(until);
                    }
                }
            }
            tracing::debug!(broker = %self.addr, api = api_name(api_key), throttle_ms = ms, "throttled by the broker");
        }
        if ms > 0 || was > 0 {
            if let Some(ThrottleSink(sink)) = &self.on_throttle {
                sink(ThrottleEvent {
                    broker: self.addr.clone(),
                    node_id: self.node_id,
                    throttle_time_ms: ms,
                });
            }
        }
    }

    pub(super) fn start(
        addr: &str,
        client_id: &str,
        read: BoxRead,
        mut write: BoxWrite,
        request_timeout: Duration,
        max_in_flight: usize,
        max_response_size: usize,
    ) -> Connection {
        let (outgoing, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let waiters: Waiters = Arc::new(Mutex::new(HashMap::new()));
        let closed = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(ConnectionStats::default());
        let span = tracing::debug_span!("connection", broker = %addr);
        // Writer: coalesce whatever is queued into one write; a frame queued alone (typically a
        // Produce request carrying whole batches) is written as it is, without a copy.
        {
            let closed = closed.clone();
            let waiters = waiters.clone();
            let addr = addr.to_string();
            tokio::spawn(
                async move {
                    let mut buf = Vec::with_capacity(64 * 1024);
                    while let Some(frame) = rx.recv().await {
                        let result = match rx.try_recv() {
                            Err(_) => write.write_all(&frame).await,
                            Ok(more) => {
                                buf.clear();
                                buf.extend_from_slice(&frame);
                                buf.extend_from_slice(&more);
                                while buf.len() < 1 << 20 {
                                    match rx.try_recv() {
                                        Ok(more) => buf.extend_from_slice(&more),
                                        Err(_) => break,
                                    }
                                }
                                write.write_all(&buf).await
                            }
                        };
                        if let Err(e) = result {
                            fail_all(&closed, &waiters, &addr, &format!("write failed: {e}"));
                            break;
                        }
                    }
                    let _ = write.shutdown().await;
                }
                .instrument(span.clone()),
            );
        }
        // Reader: route each response frame to its waiter.
        {
            let closed = closed.clone();
            let waiters = waiters.clone();
            let stats = stats.clone();
            let addr = addr.to_string();
            tokio::spawn(
                async move {
                    let mut frames = FramedRead::with_capacity(
                        read,
                        // The declared size is checked before the buffer grows for it.
                        FrameCodec::new(max_response_size),
                        64 * 1024,
                    );
                    let reason = loop {
                        match frames.next().await {
                            None => break "connection closed by broker".to_string(),
                            Some(Err(e)) => break read_failure(&e),
                            Some(Ok(frame)) => {
                                stats
                                    .bytes_received
                                    .fetch_add(frame.len() as u64 + 4, Ordering::Relaxed);
                                if frame.len() < 4 {
                                    break "response shorter than a correlation id".to_string();
                                }
                                let id =
                                    i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
                                let waiter = waiters.lock().ok().and_then(|mut w| w.remove(&id));
                                match waiter {
                                    Some(Waiter { tx, .. }) => {
                                        let _ = tx.send(Ok(frame));
                                    }
                                    None => tracing::debug!(
                                        correlation_id = id,
                                        "response for an abandoned request"
                                    ),
                                }
                            }
                        }
                    };
                    fail_all(&closed, &waiters, &addr, &reason);
                }
                .instrument(span),
            );
        }
        Connection {
            addr: addr.to_string(),
            client_id: StrBytes::from_string(client_id.to_string()),
            outgoing,
            waiters,
            correlation: AtomicI32::new(0),
            in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))),
            closed,
            versions: NegotiatedVersions::default(),
            request_timeout,
            max_in_flight: max_in_flight.max(1),
            throttle: ThrottleState::default(),
            node_id: -1,
            on_throttle: None,
            on_request: RequestSink::default(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            stats,
        }
    }

    pub(super) async fn negotiate(&self) -> Result<NegotiatedVersions> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("odradek"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let mut version = 3;
        loop {
            let response: ApiVersionsResponse = self.send_versioned(&request, version).await?;
            let code = ErrorCode::from_code(response.error_code);
            if code == ErrorCode::UnsupportedVersion && version > 0 {
                // The broker answered with its own ApiVersions range: retry at its maximum.
                let theirs = response
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                    .map_or(0, |k| k.max_version);
                version = theirs.min(version - 1).max(0);
                continue;
            }
            code.into_result()?;
            let mut negotiated = NegotiatedVersions::from_response(&response);
            for key in [ApiKey::Produce, ApiKey::Fetch, ApiKey::ApiVersions] {
                negotiated.limit_ours(
                    key,
                    crate::protocol::codec_versions(key).min,
                    crate::protocol::client_max_version(key),
                );
            }
            return Ok(negotiated);
        }
    }

    /// The broker address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the connection has failed or been closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Negotiated versions.
    pub fn versions(&self) -> &NegotiatedVersions {
        &self.versions
    }

    /// Requests currently awaiting a response.
    pub fn in_flight(&self) -> usize {
        self.waiters.lock().map_or(0, |w| w.len())
    }

    /// How long the oldest request still waiting for its response has waited (`None` when
    /// nothing waits). A broker that is frozen or cut off answers nothing while its
    /// connection stays open; this tells it from a busy one.
    pub fn oldest_unanswered(&self) -> Option<std::time::Duration> {
        let w = self.waiters.lock().ok()?;
        w.values().map(|w| w.sent.elapsed()).max()
    }

    /// Sends a request at the negotiated version and waits for its response.
    pub async fn send<R: Request<Response: Throttled>>(&self, body: &R) -> Result<R::Response> {
        let key = ApiKey::try_from(R::KEY).map_err(|_| Error::UnknownApiKey(R::KEY))?;
        let version = self.versions.version(key)?;
        self.send_versioned(body, version).await
    }

    /// Sends a request at an explicit version and waits for its response.
    pub async fn send_versioned<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        version: i16,
    ) -> Result<R::Response> {
        self.send_versioned_timeout(body, version, self.request_timeout)
            .await
    }

    /// Sends a request at the negotiated version, waiting up to `timeout` (for requests the
    /// broker may hold longer than `request.timeout.ms`, such as JoinGroup).
    pub async fn send_timeout<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        timeout: Duration,
    ) -> Result<R::Response> {
        let key = ApiKey::try_from(R::KEY).map_err(|_| Error::UnknownApiKey(R::KEY))?;
        let version = self.versions.version(key)?;
        self.send_versioned_timeout(body, version, timeout).await
    }

    /// Writes a request now, at the negotiated version, and returns a future of its response.
    /// Requests submitted one after another reach the broker in that order, which idempotent
    /// produce relies on; awaiting the responses can then happen concurrently.
    pub async fn submit_request<R: Request<Response: Throttled>>(
        self: &Arc<Self>,
        body: &R,
    ) -> Result<impl std::future::Future<Output = Result<R::Response>> + Send + 'static>
    where
        R::Response: Send + 'static,
    {
        self.submit_request_capped(body, i16::MAX).await
    }

    /// [`Connection::submit_request`] at no more than `max_version` (a transactional producer
    /// of transaction protocol V1 keeps Produce at v11: v12 asks the broker to add partitions
    /// to the transaction implicitly, which is protocol V2).
    pub async fn submit_request_capped<R: Request<Response: Throttled>>(
        self: &Arc<Self>,
        body: &R,
        max_version: i16,
    ) -> Result<impl std::future::Future<Output = Result<R::Response>> + Send + 'static>
    where
        R::Response: Send + 'static,
    {
        let key = ApiKey::try_from(R::KEY).map_err(|_| Error::UnknownApiKey(R::KEY))?;
        let version = self.versions.version(key)?.min(max_version);
        let submitted = self.submit(body, version, true).await?;
        let this = self.clone();
        Ok(async move {
            this.await_response::<R>(submitted, version, this.request_timeout)
                .await
        })
    }

    async fn send_versioned_timeout<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        version: i16,
        request_timeout: Duration,
    ) -> Result<R::Response> {
        let submitted = self.submit(body, version, true).await?;
        self.await_response::<R>(submitted, version, request_timeout)
            .await
    }

    /// Waits for a submitted request's response inside a `request` span (API, version,
    /// correlation id, broker, request size), which ends with a `trace` event carrying the
    /// latency and response size, or a `debug` event with the error.
    async fn await_response<R: Request<Response: Throttled>>(
        &self,
        submitted: Submitted,
        version: i16,
        request_timeout: Duration,
    ) -> Result<R::Response> {
        let span = tracing::debug_span!(
            "request",
            api = api_name(R::KEY),
            version,
            correlation_id = submitted.correlation_id,
            broker = %self.addr,
            bytes = submitted.bytes,
        );
        let result = self
            .await_response_inner::<R>(submitted, version, request_timeout)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result {
            span.in_scope(|| tracing::debug!(error = %e, "request failed"));
        }
        result
    }

    async fn await_response_inner<R: Request<Response: Throttled>>(
        &self,
        submitted: Submitted,
        version: i16,
        request_timeout: Duration,
    ) -> Result<R::Response> {
        let Submitted {
            response: rx,
            permit: _permit,
            correlation_id,
            bytes,
            created,
            sent,
        } = submitted;
        let request_info = || RequestInfo {
            broker: self.addr.clone(),
            correlation_id,
            size: bytes,
            created_at_ms: epoch_ms(created),
            sent_at_ms: epoch_ms(sent),
            pending_duration_ms: sent.saturating_duration_since(created).as_millis() as i64,
            api_key: R::KEY,
            api_version: version,
        };
        let started = Instant::now();
        let Some(rx) = rx else {
            return Err(Error::malformed("request", "expected a response channel"));
        };
        let response = match tokio::time::timeout(request_timeout, rx).await {
            Ok(Ok(Ok(frame))) => frame,
            Ok(Ok(Err(e))) => return Err(e),
            Ok(Err(_)) => return Err(conn_err(&self.addr, "connection closed")),
            Err(_) => {
                self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                self.on_request.emit(|| RequestEvent::TimedOut {
                    request: request_info(),
                });
                self.close(&format!("{} request timed out", api_name(R::KEY)));
                return Err(Error::Timeout(format!(
                    "{} request to {} got no response within {:?}",
                    api_name(R::KEY),
                    self.addr,
                    request_timeout
                )));
            }
        };
        let latency_us = started.elapsed().as_micros() as u64;
        self.stats
            .latency_us_total
            .fetch_add(latency_us, Ordering::Relaxed);
        self.stats.responses.fetch_add(1, Ordering::Relaxed);
        self.stats.rtt.record(latency_us);
        self.on_request.emit(|| RequestEvent::Answered {
            request: request_info(),
            duration_ms: sent.elapsed().as_millis() as i64,
        });
        tracing::trace!(latency_us, response_bytes = response.len(), "response");
        let (_, body) = decode_response::<R::Response>(response, version)?;
        self.on_throttle_time(R::KEY, version, body.throttle_time_ms());
        Ok(body)
    }

    /// Sends a request that gets no response (Produce with acks=0).
    pub async fn send_no_response<R: Request<Response: Throttled>>(&self, body: &R) -> Result<()> {
        let key = ApiKey::try_from(R::KEY).map_err(|_| Error::UnknownApiKey(R::KEY))?;
        let version = self.versions.version(key)?;
        self.submit(body, version, false).await.map(|_| ())
    }

    async fn submit<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        version: i16,
        expect_response: bool,
    ) -> Result<Submitted> {
        if self.is_closed() {
            return Err(conn_err(&self.addr, "connection is closed"));
        }
        let created = Instant::now();
        // KIP-219: a throttled connection sends nothing until the throttle time has passed.
        if let Some(until) = self.throttled_until() {
            tokio::time::sleep_until(until.into()).await;
        }
        let queued = self.on_request.is_listening() && self.in_flight.available_permits() == 0;
        if queued {
            self.queue_size_changed(1);
        }
        let permit = self.in_flight.clone().acquire_owned().await;
        if queued {
            self.queue_size_changed(-1);
        }
        let permit = permit.map_err(|_| conn_err(&self.addr, "connection is closed"))?;
        self.submit_with(body, version, expect_response, Some(permit), created)
    }

    /// A request starts or stops waiting for an in-flight slot.
    fn queue_size_changed(&self, delta: isize) {
        let size = if delta > 0 {
            self.waiting.fetch_add(1, Ordering::AcqRel) + 1
        } else {
            self.waiting
                .fetch_sub(1, Ordering::AcqRel)
                .saturating_sub(1)
        };
        self.on_request.emit(|| RequestEvent::QueueSize {
            broker: self.addr.clone(),
            queue_size: size,
        });
    }

    /// Sends a request while the caller holds every in-flight slot (re-authentication).
    pub(crate) async fn send_privileged<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        version: i16,
    ) -> Result<R::Response> {
        let submitted = self.submit_with(body, version, true, None, Instant::now())?;
        self.await_response::<R>(submitted, version, self.request_timeout)
            .await
    }

    /// Waits until no request is in flight and holds every slot, so nothing else is sent
    /// until the returned permit is dropped (re-authentication, KIP-368).
    pub(crate) async fn quiesce(&self) -> Result<OwnedSemaphorePermit> {
        let n = u32::try_from(self.max_in_flight).unwrap_or(u32::MAX);
        self.in_flight
            .clone()
            .acquire_many_owned(n)
            .await
            .map_err(|_| conn_err(&self.addr, "connection is closed"))
    }

    fn submit_with<R: Request<Response: Throttled>>(
        &self,
        body: &R,
        version: i16,
        expect_response: bool,
        permit: Option<OwnedSemaphorePermit>,
        created: Instant,
    ) -> Result<Submitted> {
        if self.is_closed() {
            return Err(conn_err(&self.addr, "connection is closed"));
        }
        let id = self
            .correlation
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(id)
            .with_client_id(Some(self.client_id.clone()));
        let frame = encode_frame(&header, body)?;
        let len = frame.len();
        let rx = if expect_response {
            let (tx, rx) = oneshot::channel();
            if let Ok(mut w) = self.waiters.lock() {
                let sent = std::time::Instant::now();
                w.insert(id, Waiter { sent, tx });
            }
            Some(rx)
        } else {
            None
        };
        if self.is_closed() || self.outgoing.send(frame).is_err() {
            if let Ok(mut w) = self.waiters.lock() {
                w.remove(&id);
            }
            return Err(conn_err(&self.addr, "connection is closed"));
        }
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        self.stats.by_api.add(R::KEY);
        self.stats
            .bytes_sent
            .fetch_add(len as u64, Ordering::Relaxed);
        Ok(Submitted {
            bytes: len,
            correlation_id: id,
            response: rx,
            permit,
            created,
            sent: Instant::now(),
        })
    }

    /// Closes the connection; waiting requests fail with a retriable connection error.
    pub fn close(&self, reason: &str) {
        fail_all(&self.closed, &self.waiters, &self.addr, reason);
        self.in_flight.close();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close("connection dropped");
    }
}

/// How a read failure is described; a TLS failure (an alert from the broker, typically the
/// verdict on our client certificate, which TLS 1.3 delivers after the handshake) is marked so
/// that a connection being set up reports it as an SSL handshake failure.
fn read_failure(e: &Error) -> String {
    if let Error::Io(io) = e {
        if let Some(tls) = io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return format!("{TLS_FAILURE}{tls}");
        }
    }
    format!("bad response frame: {e}")
}

/// Marks a connection failure that TLS reported (see `read_failure`).
pub(super) const TLS_FAILURE: &str = "TLS failure: ";

/// Encodes a request with its header as one frame, size prefix included. The frame is sized
/// first and written once: a Produce request carries whole record batches, and encoding into a
/// growing buffer and then copying it behind a prefix used to copy every batch three times.
fn encode_frame<R: Request>(header: &RequestHeader, body: &R) -> Result<Bytes> {
    let version = header.request_api_version;
    // The request struct's own version range (what `protocol::encode_request` checks too).
    let range = R::VERSIONS;
    if version < range.min || version > range.max {
        return Err(Error::UnsupportedVersion {
            api: api_name(R::KEY),
            version,
            min: range.min,
            max: range.max,
        });
    }
    let header_version = R::header_version(version);
    let size = header
        .compute_size(header_version)
        .map_err(|e| Error::malformed("request header", e))?
        + body
            .compute_size(version)
            .map_err(|e| Error::malformed(api_name(R::KEY), e))?;
    let prefix = i32::try_from(size).map_err(|_| Error::FrameTooLarge {
        size,
        max: i32::MAX as usize,
    })?;
    let mut frame = BytesMut::with_capacity(4 + size);
    frame.put_i32(prefix);
    header
        .encode(&mut frame, header_version)
        .map_err(|e| Error::malformed("request header", e))?;
    body.encode(&mut frame, version)
        .map_err(|e| Error::malformed(api_name(R::KEY), e))?;
    if frame.len() != 4 + size {
        return Err(Error::malformed(
            api_name(R::KEY),
            format!("encoded {} bytes, computed {size}", frame.len() - 4),
        ));
    }
    Ok(frame.freeze())
}

fn fail_all(closed: &AtomicBool, waiters: &Waiters, addr: &str, reason: &str) {
    if !closed.swap(true, Ordering::AcqRel) {
        tracing::debug!(broker = addr, reason, "connection closed");
    }
    let pending: Vec<_> = waiters
        .lock()
        .map(|mut w| w.drain().collect())
        .unwrap_or_default();
    for (_, Waiter { tx, .. }) in pending {
        let _ = tx.send(Err(conn_err(addr, reason)));
    }
}

#[cfg(test)]
mod tests {
    // A panic is the assertion in these tests.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection over an in-memory pipe whose far end the test plays as the broker.
    fn pipe(max_response_size: usize) -> (Connection, tokio::io::DuplexStream) {
        let (client, broker) = tokio::io::duplex(64 * 1024);
        let (r, w) = tokio::io::split(client);
        let conn = Connection::start(
            "test:9092",
            "test",
            Box::new(r),
            Box::new(w),
            Duration::from_secs(10),
            1,
            max_response_size,
        );
        (conn, broker)
    }

    async fn read_request(broker: &mut tokio::io::DuplexStream) -> Vec<u8> {
        let mut len = [0u8; 4];
        broker.read_exact(&mut len).await.unwrap();
        let mut body = vec![0; i32::from_be_bytes(len) as usize];
        broker.read_exact(&mut body).await.unwrap();
        body
    }

    /// A connection with max in-flight 1 whose request events are collected.
    fn listened_pipe(
        timeout: Duration,
    ) -> (
        Connection,
        tokio::io::DuplexStream,
        Arc<Mutex<Vec<RequestEvent>>>,
    ) {
        let (client, broker) = tokio::io::duplex(64 * 1024);
        let (r, w) = tokio::io::split(client);
        let mut conn = Connection::start(
            "test:9092",
            "test",
            Box::new(r),
            Box::new(w),
            timeout,
            1,
            1000,
        );
        let sink = RequestSink::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        sink.listen(move |e| s.lock().unwrap().push(e));
        conn.set_request_sink(sink);
        (conn, broker, seen)
    }

    #[tokio::test]
    async fn request_events_report_answers_queueing_and_timeouts() {
        let (conn, mut broker, seen) = listened_pipe(Duration::from_millis(300));
        let conn = Arc::new(conn);
        // Two requests on one in-flight slot: the second waits for it.
        let first = tokio::spawn({
            let c = conn.clone();
            async move { c.send_versioned(&ApiVersionsRequest::default(), 1).await }
        });
        let header = read_request(&mut broker).await;
        let second = tokio::spawn({
            let c = conn.clone();
            async move { c.send_versioned(&ApiVersionsRequest::default(), 1).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let correlation = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        let body = ApiVersionsResponse::default();
        let frame = crate::protocol::encode_response(1, correlation, &body).unwrap();
        broker.write_all(&frame).await.unwrap();
        first.await.unwrap().unwrap();
        // The second is sent and never answered: it times out.
        read_request(&mut broker).await;
        assert!(second.await.unwrap().is_err());
        let events = seen.lock().unwrap().clone();
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                RequestEvent::Answered { .. } => "answered",
                RequestEvent::TimedOut { .. } => "timeout",
                RequestEvent::QueueSize { queue_size: 1, .. } => "queued",
                RequestEvent::QueueSize { queue_size: 0, .. } => "dequeued",
                RequestEvent::QueueSize { .. } => "other",
            })
            .collect();
        // The slot is released once the answer has been read: the waiter leaves the queue then.
        assert_eq!(
            kinds,
            ["queued", "answered", "dequeued", "timeout"],
            "{events:?}"
        );
        let RequestEvent::Answered {
            request,
            duration_ms,
        } = &events[1]
        else {
            unreachable!()
        };
        assert_eq!((request.api_key, request.api_version), (18, 1));
        assert_eq!(request.correlation_id, correlation);
        assert!(
            request.size > 0 && *duration_ms >= 40,
            "{request:?} {duration_ms}"
        );
        assert!(request.sent_at_ms >= request.created_at_ms);
        let RequestEvent::TimedOut { request } = &events[3] else {
            unreachable!()
        };
        // It waited for the first one's slot about 50 ms before it was sent.
        assert!(request.pending_duration_ms >= 40, "{request:?}");
    }

    #[tokio::test]
    async fn a_frame_above_receive_message_max_bytes_fails_the_request_before_allocating() {
        let (conn, mut broker) = pipe(1000);
        let peer = tokio::spawn(async move {
            let request = read_request(&mut broker).await;
            // A 2 GiB frame announced, four bytes of it sent: the size alone must be refused.
            broker.write_all(&[0x7f, 0xff, 0xff, 0xff]).await.unwrap();
            broker.write_all(&request[4..8]).await.unwrap();
            broker
        });
        let err = conn
            .send_versioned(&ApiVersionsRequest::default(), 0)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Connection { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("exceeds the maximum of 1000 bytes"),
            "{err}"
        );
        assert!(conn.is_closed());
        drop(peer.await.unwrap());
    }

    #[tokio::test]
    async fn a_lying_array_count_in_a_small_response_is_malformed() {
        let (conn, mut broker) = pipe(1000);
        let peer = tokio::spawn(async move {
            let request = read_request(&mut broker).await;
            // ApiVersions v0 response: correlation id, error code 0, api_keys count i32::MAX.
            let mut frame = vec![0, 0, 0, 10];
            frame.extend_from_slice(&request[4..8]);
            frame.extend_from_slice(&[0, 0, 0x7f, 0xff, 0xff, 0xff]);
            broker.write_all(&frame).await.unwrap();
            broker
        });
        let err = conn
            .send_versioned(&ApiVersionsRequest::default(), 0)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        drop(peer.await.unwrap());
    }

    /// KIP-219 on the client's side: a broker that reports a throttle time and keeps reading
    /// (real brokers mute the connection, which would hide a client that does not wait) must
    /// not see the client's next request before the throttle time has passed. Timed where the
    /// broker sees the requests, so a slow client cannot pass it.
    #[tokio::test]
    async fn nothing_is_sent_to_a_broker_until_its_throttle_time_has_passed() {
        const THROTTLE: Duration = Duration::from_millis(300);
        let (conn, mut broker) = pipe(1000);
        let conn = Arc::new(conn);
        let sender = conn.clone();
        let client = tokio::spawn(async move {
            // ApiVersions v2+ responses are waited out (Java's shouldClientThrottle).
            for _ in 0..2 {
                sender
                    .send_versioned(&ApiVersionsRequest::default(), 2)
                    .await
                    .unwrap();
            }
        });
        let answer = |header: &[u8], throttle: Duration| {
            let correlation = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
            let body = ApiVersionsResponse::default()
                .with_throttle_time_ms(i32::try_from(throttle.as_millis()).unwrap());
            crate::protocol::encode_response(2, correlation, &body).unwrap()
        };
        let first = read_request(&mut broker).await;
        let answered_at = Instant::now();
        broker.write_all(&answer(&first, THROTTLE)).await.unwrap();
        let second = read_request(&mut broker).await;
        let gap = answered_at.elapsed();
        broker
            .write_all(&answer(&second, Duration::ZERO))
            .await
            .unwrap();
        client.await.unwrap();
        assert!(
            gap >= THROTTLE,
            "the next request arrived {gap:?} after a {THROTTLE:?} throttle"
        );
        assert_eq!(conn.stats.throttled.load(Ordering::Relaxed), 1);
    }

    /// The statistics' throttle window (librdkafka's rollover): taking it resets it, so
    /// throttles seen before one emission are not in the next one's window, while the
    /// cumulative counters keep them all.
    #[tokio::test]
    async fn a_taken_throttle_window_holds_only_the_throttles_since_the_previous_take() {
        let (conn, mut broker) = pipe(1000);
        let conn = Arc::new(conn);
        // One request per throttle time (ApiVersions v1: the broker alone waits it out, so
        // the client sends the next one at once).
        for ms in [40, 10, 0, 7] {
            let sender = conn.clone();
            let request = tokio::spawn(async move {
                sender
                    .send_versioned(&ApiVersionsRequest::default(), 1)
                    .await
            });
            let header = read_request(&mut broker).await;
            let correlation = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
            let body = ApiVersionsResponse::default().with_throttle_time_ms(ms);
            let frame = crate::protocol::encode_response(1, correlation, &body).unwrap();
            broker.write_all(&frame).await.unwrap();
            request.await.unwrap().unwrap();
            match ms {
                10 => {
                    let w = conn.stats.throttle.take();
                    assert_eq!((w.cnt, w.sum, w.min, w.max), (2, 50, 10, 40));
                }
                0 => {
                    let w = conn.stats.throttle.take();
                    assert_eq!(
                        (w.cnt, w.sum, w.max),
                        (1, 0, 0),
                        "a zero throttle is sampled"
                    );
                }
                _ => {}
            }
        }
        let last = conn.stats.throttle.take();
        assert_eq!(
            (last.cnt, last.sum, last.min, last.max, last.avg),
            (1, 7, 7, 7, 7)
        );
        assert_eq!(
            conn.stats.throttle.take(),
            crate::net::WindowSnapshot::default()
        );
        // The history since the connection opened is untouched by the takes.
        assert_eq!(conn.stats.throttled.load(Ordering::Relaxed), 3);
        assert_eq!(conn.stats.throttle_ms_total.load(Ordering::Relaxed), 57);
        assert_eq!(conn.stats.throttle_ms_min.load(Ordering::Relaxed), 7);
        assert_eq!(conn.stats.throttle_ms_max.load(Ordering::Relaxed), 40);
    }

    #[tokio::test]
    async fn the_oldest_unanswered_request_is_timed_until_its_answer() {
        let (conn, mut broker) = pipe(1000);
        assert_eq!(conn.oldest_unanswered(), None);
        let conn = Arc::new(conn);
        let sender = conn.clone();
        let request = tokio::spawn(async move {
            sender
                .send_versioned(&ApiVersionsRequest::default(), 0)
                .await
        });
        let header = read_request(&mut broker).await;
        tokio::time::sleep(Duration::from_millis(120)).await;
        let age = conn.oldest_unanswered().unwrap();
        assert!(age >= Duration::from_millis(120), "{age:?}");
        // ApiVersions v0: error code 0 and no API keys.
        let mut frame = vec![0, 0, 0, 10];
        frame.extend_from_slice(&header[4..8]);
        frame.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        broker.write_all(&frame).await.unwrap();
        request.await.unwrap().unwrap();
        assert_eq!(conn.oldest_unanswered(), None);
    }
}
