//! Accepting connections: plain TCP, or TLS with the handshake done off the accept loop
//! (a slow or silent client delays nobody else), then axum serves HTTP/1.1 on each.
//! The peer's address reaches the handlers as [`Peer`], for the sign-in rate limit.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TCP peer of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub SocketAddr);

impl Connected<IncomingStream<'_, TcpListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// Serves `router` until `shutdown` resolves, then waits for open requests (live streams
/// end on the same signal).
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let service = router.into_make_service_with_connect_info::<Peer>();
    match tls {
        None => {
            axum::serve(listener, service)
                .with_graceful_shutdown(shutdown)
                .await
        }
        Some(acceptor) => {
            let local = listener.local_addr()?;
            let (tx, rx) = mpsc::channel(64);
            let accepting = tokio::spawn(accept_tls(listener, acceptor, tx));
            let result = axum::serve(TlsListener { rx, local }, service)
                .with_graceful_shutdown(shutdown)
                .await;
            accepting.abort();
            result
        }
    }
}

/// Connections whose TLS handshake finished, in the order they finished.
pub(crate) struct TlsListener {
    rx: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The accept task ended: nothing more will arrive.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

async fn accept_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(err) => {
                // Out of file descriptors and the like: wait a moment rather than spin.
                tracing::warn!(error = %err, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => {
                    let _ = tx.send((stream, peer)).await;
                }
                Ok(Err(err)) => tracing::debug!(%peer, error = %err, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}
