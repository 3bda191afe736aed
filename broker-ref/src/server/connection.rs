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

use crate::broker::Broker;
use crate::handlers::{dispatch, Reply};

/// Whether `buf` already holds a complete frame (so the next request needs no read).
fn has_complete_frame(buf: &[u8]) -> bool {
    if buf.len() < 4 {
        return false;
    }
    let size = (&buf[..4]).get_i32();
    size >= 0 && buf.len() >= 4 + size as usize
}

/// Serves requests on `stream` until the peer closes, a request is rejected, the connection is
/// idle for `connections.max.idle.ms`, or the broker shuts down.
pub async fn serve(
    broker: Arc<Broker>,
    stream: TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    crate::handlers::groups::PEER
        .scope(peer, serve_inner(broker, stream, peer, shutdown))
        .await
}

async fn serve_inner(
    broker: Arc<Broker>,
    stream: TcpStream,
    peer: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
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
        match dispatch(&broker, frame).await {
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
            Reply::Nothing => {}
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
