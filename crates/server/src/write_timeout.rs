//! A connection whose peer stops reading is dropped: [`WriteTimeout`] wraps a stream and
//! fails a write that has made no progress for a set time, which ends hyper's connection
//! and frees the answer it was holding. (A peer that sends nothing is handled by hyper's
//! header read timeout, which also runs while a keep-alive connection is idle.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A stream whose writes fail with `TimedOut` after `timeout` without progress.
#[derive(Debug)]
pub(crate) struct WriteTimeout<T> {
    inner: T,
    timeout: Duration,
    /// Armed when a write first finds the peer's window full; disarmed by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(crate) fn new(inner: T, timeout: Duration) -> Self {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Passes `poll` on, arming the timer while it is pending and failing it once the timer
    /// ran out. Only a write that took bytes disarms the timer (`progress`): a flush that
    /// is ready at once, as a TCP stream's always is, says nothing about the peer.
    fn check<R>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<R>>,
        progress: impl FnOnce(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        if let Poll::Ready(result) = &poll {
            if matches!(result, Ok(r) if progress(r)) {
                self.stalled = None;
            }
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the peer took nothing of the answer for {} ms",
                    timeout.as_millis()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check(cx, poll, |n| *n > 0)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, poll, |n| *n > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, poll, |()| false)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.check(cx, poll, |()| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_the_peer_never_takes_fails_after_the_timeout() {
        // A pipe with a 64-byte window whose far end is never read.
        let (near, _far) = tokio::io::duplex(64);
        let mut stream = WriteTimeout::new(near, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let err = stream.write_all(&[0u8; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_slow_but_steady_reader_is_not_cut_off() {
        use tokio::io::AsyncReadExt;
        let (near, mut far) = tokio::io::duplex(64);
        let mut stream = WriteTimeout::new(near, Duration::from_millis(200));
        let reader = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = [0u8; 64];
            while got < 1024 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                got += far.read(&mut buf).await.unwrap();
            }
        });
        // 16 windows at 50 ms each: 800 ms in all, never 200 ms without progress.
        stream.write_all(&[0u8; 1024]).await.unwrap();
        reader.await.unwrap();
    }
}
