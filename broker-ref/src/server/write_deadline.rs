//! A bound on how long a response may wait for a client to read it.
//!
//! A client that sends requests and never reads the responses fills its socket buffer; without
//! a bound, the connection's task would then wait in `write` forever, holding the connection,
//! its buffers and its `max.connections` slot. [`WriteDeadline`] wraps a connection's writer:
//! when a write, flush or shutdown makes no progress for the limit (`connections.max.idle.ms`:
//! a connection that has not moved a byte that long is idle), it fails with `TimedOut` and the
//! connection closes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::time::Sleep;

/// A writer whose operations fail once they have been stalled for `limit`.
#[derive(Debug)]
pub(super) struct WriteDeadline<W> {
    inner: W,
    limit: Duration,
    /// Running while the current operation is stalled; reset by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<W> WriteDeadline<W> {
    /// Wraps `inner`.
    pub(super) fn new(inner: W, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// Passes on a ready result (progress: the stall clock stops) or, while pending, checks
    /// the stall clock.
    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {limit:?} (connections.max.idle.ms)"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.settle(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.settle(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.settle(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.settle(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_reader_that_never_reads_fails_the_write_after_the_limit() {
        // A pipe whose reading end is held but never read: 1 KiB of buffer.
        let (writer, _unread) = tokio::io::duplex(1024);
        let mut w = WriteDeadline::new(writer, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let err = w.write_all(&[0u8; 64 * 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(err.to_string().contains("connections.max.idle.ms"), "{err}");
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_served() {
        use tokio::io::AsyncReadExt;
        let (writer, mut reader) = tokio::io::duplex(1024);
        let drain = tokio::spawn(async move {
            let mut total = 0;
            let mut buf = [0u8; 512];
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => return total,
                    Ok(n) => total += n,
                }
            }
        });
        let mut w = WriteDeadline::new(writer, Duration::from_millis(100));
        // 32 KiB at ~100 KiB/s takes ~0.3 s in all, longer than the limit, but never stalls
        // for 100 ms at a time.
        w.write_all(&[1u8; 32 * 1024]).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(drain.await.unwrap(), 32 * 1024);
    }
}
