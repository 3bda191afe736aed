//! One client connection: the TLS handshake (SSL / SASL_SSL listeners, under a deadline), the
//! SASL state machine (SASL_* listeners, [`super::sasl`]), then frames in, responses out, in
//! order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use futures_util::StreamExt;
use odradek::protocol::FrameCodec;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::codec::FramedRead;

use super::dispatch::{dispatch_with, Reply};
use super::intercept::Interceptor;
use super::sasl::{GateAction, SaslGate};
use super::view::ClusterView;
use super::write_deadline::WriteDeadline;
use crate::broker::Broker;
use crate::handlers::ConnectionContext;
use crate::security::{ListenerSecurity, Principal};

/// Whether `buf` already holds a complete frame (so the next request needs no read).
fn has_complete_frame(buf: &[u8]) -> bool {
    if buf.len() < 4 {
        return false;
    }
    let size = (&buf[..4]).get_i32();
    size >= 0 && buf.len() >= 4 + size as usize
}

/// What a connection task shares with the rest of the broker.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    /// The broker's state.
    pub(super) broker: Arc<Broker>,
    /// The interception point (tests' fault injection and request log).
    pub(super) interceptor: Arc<Interceptor>,
    /// Which broker of an in-process test cluster this listener is (`None`: a real broker).
    pub(super) view: Option<Arc<dyn ClusterView>>,
}

/// How long a TLS handshake or a SASL authentication may take: `connections.max.idle.ms`, at
/// most 10 s (a client that opens a connection and never finishes its handshake is closed).
pub(super) fn handshake_deadline(broker: &Broker) -> Duration {
    let idle = broker.config.long("connections.max.idle.ms").max(1) as u64;
    Duration::from_millis(idle.min(10_000))
}

/// Serves requests on `stream`, which arrived on `listener`, until the peer closes, a request
/// is rejected, the connection is idle for `connections.max.idle.ms`, or the broker shuts down.
pub(super) async fn serve(
    shared: Shared,
    listener: Arc<ListenerSecurity>,
    stream: TcpStream,
    peer: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let Some(tls) = &listener.tls else {
        let (reader, writer) = stream.into_split();
        return run(
            shared,
            listener,
            reader,
            writer,
            peer,
            Principal::anonymous(),
            shutdown,
        )
        .await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
    let deadline = handshake_deadline(&shared.broker);
    let accepted = tokio::select! {
        _ = shutdown.changed() => return,
        r = tokio::time::timeout(deadline, acceptor.accept(stream)) => r,
    };
    let tls_stream = match accepted {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            // A refused client certificate is the usual cause of an mTLS setup not working:
            // say so where an operator looks first.
            tracing::warn!(%peer, listener = %listener.spec.name, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, listener = %listener.spec.name, ?deadline, "TLS handshake not finished in time, closing");
            return;
        }
    };
    let principal = match tls_stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        None => Principal::anonymous(),
        Some(cert) => {
            let name = crate::security::dn::subject_dn(cert)
                .map_err(|e| e.to_string())
                .and_then(|dn| listener.mapper.map(&dn));
            match name {
                Ok(name) => Principal::user(name),
                Err(e) => {
                    tracing::info!(%peer, error = %e, "client certificate maps to no principal, closing");
                    return;
                }
            }
        }
    };
    let (reader, writer) = tokio::io::split(tls_stream);
    run(shared, listener, reader, writer, peer, principal, shutdown).await
}

/// The request's own error response with ILLEGAL_SASL_STATE (Kafka's answer to a request other
/// than SaslAuthenticate during an exchange), if the broker can shape one for that API.
fn illegal_sasl_state(
    broker: &Broker,
    connection: &ConnectionContext,
    frame: bytes::Bytes,
) -> Option<bytes::Bytes> {
    let request = odradek::protocol::decode_request(frame).ok()?;
    if !crate::handlers::error_response::supports(request.api_key) {
        return None;
    }
    let ctx = crate::handlers::RequestContext {
        connection,
        api_key: request.api_key,
        api_version: request.header.request_api_version,
        correlation_id: request.header.correlation_id,
        client_id: request.header.client_id,
    };
    let body = crate::handlers::error_response::error_response(
        broker,
        &ctx,
        &request.body,
        odradek::ErrorCode::IllegalSaslState,
    )
    .ok()??;
    odradek::protocol::encode_response_kind(ctx.api_key, ctx.api_version, ctx.correlation_id, &body)
        .ok()
}

async fn run<R, W>(
    shared: Shared,
    listener: Arc<ListenerSecurity>,
    reader: R,
    writer: W,
    peer: SocketAddr,
    tls_principal: Principal,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let Shared {
        broker,
        interceptor,
        view,
    } = shared;
    let name: Arc<str> = Arc::from(listener.spec.name.as_str());
    let mut connection = ConnectionContext::new(peer, name, listener.spec.protocol, tls_principal);
    let mut gate = listener.sasl.clone().map(SaslGate::new);
    let max_frame = broker.config.int("socket.request.max.bytes").max(1) as usize;
    let idle = Duration::from_millis(broker.config.long("connections.max.idle.ms").max(1) as u64);
    // Before authentication, frames are limited to sasl.server.max.receive.size: a larger one
    // closes the connection before any buffer grows for it.
    let first_limit = gate
        .as_ref()
        .map_or(max_frame, |g| g.max_receive_size().min(max_frame));
    let mut frames = FramedRead::with_capacity(reader, FrameCodec::new(first_limit), 64 * 1024);
    // A client that stops reading its responses is closed once a write stalls for
    // connections.max.idle.ms, like any idle connection.
    let mut writer = BufWriter::with_capacity(64 * 1024, WriteDeadline::new(writer, idle));
    let auth_time = handshake_deadline(&broker);
    let mut auth_deadline = tokio::time::Instant::now() + auth_time;
    loop {
        let unauthenticated = gate.as_ref().is_some_and(|g| !g.authenticated());
        let wait = if unauthenticated {
            auth_deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .min(idle)
        } else {
            idle
        };
        let next = tokio::select! {
            _ = shutdown.changed() => break,
            r = tokio::time::timeout(wait, frames.next()) => r,
        };
        let frame = match next {
            Err(_) if unauthenticated => {
                tracing::info!(%peer, "SASL authentication not finished in time, closing");
                break;
            }
            Err(_) => {
                tracing::debug!(%peer, "closing idle connection");
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(odradek::Error::Io(e)))) => {
                // The peer went away: a reset, or a TLS peer closing its socket without
                // close_notify (kafka-python does this routinely). A normal end, not a bad frame.
                tracing::debug!(%peer, error = %e, "connection closed by the peer");
                break;
            }
            Ok(Some(Err(e))) => {
                if unauthenticated {
                    tracing::info!(%peer, error = %e, "closing connection: frame refused before SASL authentication (sasl.server.max.receive.size)");
                } else {
                    tracing::warn!(%peer, error = %e, "closing connection: bad frame");
                }
                break;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        if let Some(g) = gate.as_mut() {
            let was_authenticated = g.authenticated();
            let action = g.on_frame(&frame).await;
            if was_authenticated && !g.authenticated() {
                // A re-authentication started: it gets its own deadline.
                auth_deadline = tokio::time::Instant::now() + auth_time;
            }
            match action {
                GateAction::Pass => {}
                GateAction::Reply(bytes) => {
                    if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                        break;
                    }
                    continue;
                }
                GateAction::Authenticated(bytes, principal) => {
                    if connection.principal != principal {
                        connection.principal = principal;
                    }
                    *frames.decoder_mut() = FrameCodec::new(max_frame);
                    if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                        break;
                    }
                    continue;
                }
                GateAction::Fail(bytes, reason) => {
                    tracing::info!(%peer, listener = %connection.listener, %reason, "SASL authentication failed, closing");
                    if let Some(bytes) = bytes {
                        let _ = writer.write_all(&bytes).await;
                        let _ = writer.flush().await;
                    }
                    let delay = g.failed_delay();
                    tokio::select! {
                        _ = shutdown.changed() => {}
                        _ = tokio::time::sleep(delay) => {}
                    }
                    break;
                }
                GateAction::Close(reason) => {
                    tracing::info!(%peer, %reason, "closing connection");
                    break;
                }
                GateAction::IllegalState(reason) => {
                    tracing::info!(%peer, %reason, "closing connection (ILLEGAL_SASL_STATE)");
                    if let Some(bytes) = illegal_sasl_state(&broker, &connection, frame) {
                        let _ = writer.write_all(&bytes).await;
                        let _ = writer.flush().await;
                    }
                    break;
                }
            }
        }
        let mut reply = broker
            .request_slots
            .serve(dispatch_with(
                &broker,
                &connection,
                &interceptor,
                view.as_deref(),
                frame,
            ))
            .await;
        // An interceptor's delay; shutdown does not wait for it.
        let reply = loop {
            match reply {
                Reply::Delayed(delay, inner) => tokio::select! {
                    _ = shutdown.changed() => break None,
                    _ = tokio::time::sleep(delay) => reply = *inner,
                },
                other => break Some(other),
            }
        };
        let Some(reply) = reply else { break };
        // A quota's throttle: the response goes out now, the next request is read later.
        let (reply, mute) = match reply {
            Reply::Throttled(mute, inner) => (*inner, Some(mute)),
            other => (other, None),
        };
        match reply {
            Reply::Frame(bytes) => {
                if writer.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            Reply::Chunks(chunks) => {
                // Large chunks bypass the buffer: record bytes go straight to the socket.
                let mut failed = false;
                for chunk in chunks {
                    if writer.write_all(&chunk).await.is_err() {
                        failed = true;
                        break;
                    }
                }
                if failed {
                    break;
                }
            }
            // (A delay was waited out above; a throttle is applied below.)
            Reply::Nothing | Reply::Delayed(..) | Reply::Throttled(..) => {}
            Reply::Close(reason) => {
                tracing::warn!(%peer, %reason, "closing connection");
                break;
            }
        }
        if let Some(mute) = mute {
            if writer.flush().await.is_err() {
                break;
            }
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = tokio::time::sleep(mute) => {}
            }
            continue;
        }
        if !has_complete_frame(frames.read_buffer()) && writer.flush().await.is_err() {
            break;
        }
    }
    // What is still buffered gets a moment to leave, not another stall limit.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = writer.flush().await;
        let _ = writer.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::has_complete_frame;

    #[test]
    fn complete_frame_detection() {
        assert!(!has_complete_frame(&[0, 0, 0]));
        assert!(!has_complete_frame(&[0, 0, 0, 2, 1]));
        assert!(has_complete_frame(&[0, 0, 0, 2, 1, 2]));
        assert!(has_complete_frame(&[0, 0, 0, 0]));
        assert!(!has_complete_frame(&[0xff, 0, 0, 0, 1]));
    }
}
