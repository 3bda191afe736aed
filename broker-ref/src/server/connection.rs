//! One client connection: frames in, responses out, in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use futures_util::StreamExt;
use odradek::protocol::FrameCodec;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::codec::FramedRead;

use super::dispatch::{dispatch_with, Reply};
use super::intercept::Interceptor;
use super::view::ClusterView;
use crate::broker::Broker;
use crate::handlers::ConnectionContext;

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

/// Serves requests on `stream`, which arrived on `listener`, until the peer closes, a request
/// is rejected, the connection is idle for `connections.max.idle.ms`, or the broker shuts down.
pub(super) async fn serve(
    shared: Shared,
    listener: Arc<str>,
    stream: TcpStream,
    peer: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let Shared {
        broker,
        interceptor,
        view,
    } = shared;
    // Built once: what every request on this connection shares (the security work will set the
    // principal here after the TLS / SASL handshake).
    let connection = ConnectionContext::plaintext(peer, listener);
    let _ = stream.set_nodelay(true);
    let max_frame = broker.config.int("socket.request.max.bytes").max(1) as usize;
    let idle = Duration::from_millis(broker.config.long("connections.max.idle.ms").max(1) as u64);
    let (reader, writer) = stream.into_split();
    let mut frames = FramedRead::with_capacity(reader, FrameCodec::new(max_frame), 64 * 1024);
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    loop {
        let next = tokio::select! {
            _ = shutdown.changed() => break,
            r = tokio::time::timeout(idle, frames.next()) => r,
        };
        let frame = match next {
            Err(_) => {
                tracing::debug!(%peer, "closing idle connection");
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                tracing::warn!(%peer, error = %e, "closing connection: bad frame");
                break;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let mut reply =
            dispatch_with(&broker, &connection, &interceptor, view.as_deref(), frame).await;
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
            // (A delay was waited out above.)
            Reply::Nothing | Reply::Delayed(..) => {}
            Reply::Close(reason) => {
                tracing::warn!(%peer, %reason, "closing connection");
                break;
            }
        }
        if !has_complete_frame(frames.read_buffer()) && writer.flush().await.is_err() {
            break;
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
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
