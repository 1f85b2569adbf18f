//! Accepting connections and holding every client to limits, so a client that stalls is
//! dropped within seconds and a flood of them never shuts operators out: at most
//! `max_connections` at once (more wait in the listen backlog, and `accept` never runs out
//! of file descriptors), the TLS handshake within 10 s (off the accept loop), a request's
//! headers within `header_timeout` and [`HEADER_LIMIT`], its body within `body_timeout`
//! and [`BODY_LIMIT`] ([`read_body`]). hyper serves HTTP/1.1 on each connection and axum
//! routes; the peer's address reaches the handlers as [`Peer`], for the sign-in rate limit.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's line and headers at most; past it, 431 and the connection is closed.
pub(crate) const HEADER_LIMIT: usize = 16 * 1024;
/// What hyper buffers of one connection at most.
const BUFFER_LIMIT: usize = 64 * 1024;
/// A request's body at most (a form or a decision is a few hundred bytes); past it, 413.
pub(crate) const BODY_LIMIT: usize = 64 * 1024;

/// The TCP peer of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub SocketAddr);

/// The connection limits of [`serve`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` until `shutdown` resolves, then stops accepting, lets each connection
/// finish its request in flight (live streams end on the same signal) and returns when
/// every connection has closed.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let max = limits
        .max_connections
        .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    // One slot per open connection, held until it closes.
    let slots = Arc::new(Semaphore::new(max));
    let (closing, closing_rx) = watch::channel(false);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(HEADER_LIMIT)
        .max_buf_size(BUFFER_LIMIT);
    let mut shutdown = pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let http = http.clone();
        let router = router.clone();
        let closing = closing_rx.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(&http, tcp, router, peer, closing).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            serve_connection(&http, stream, router, peer, closing).await;
                        }
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, error = %err, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    closing.send_replace(true);
    // Every slot back: every connection has closed.
    let _ = slots
        .acquire_many(u32::try_from(max).unwrap_or(u32::MAX))
        .await;
}

/// Serves HTTP/1.1 on one connection until it closes, or, once `closing` turns true, until
/// its request in flight is answered.
async fn serve_connection<I>(
    http: &http1::Builder,
    io: I,
    router: Router,
    peer: SocketAddr,
    mut closing: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let router = TowerToHyperService::new(router);
    let service = service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(Peer(peer)));
        router.call(req)
    });
    let mut conn = pin!(http.serve_connection(TokioIo::new(io), service));
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(err) = result {
        // A header timeout, an oversized header, a client gone: the connection is closed.
        tracing::debug!(%peer, error = %err, "connection ended");
    }
}

/// Reads a request's whole body before it is routed: within `timeout` of its headers and
/// at most [`BODY_LIMIT`]. A body that stalls is 408 and one too large 413, and either
/// closes the connection.
pub(crate) async fn read_body(
    State(timeout): State<Duration>,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(body)) => next.run(Request::from_parts(parts, Body::from(body))).await,
        // Over the limit (or cut off, and then nobody hears the answer).
        Ok(Err(_)) => refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is over 64 KiB",
        ),
        Err(_) => refuse(
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive in time",
        ),
    }
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, [(header::CONNECTION, "close")], message).into_response()
}
