//! The HTTP side: accepting connections and their timeouts, the bounded drain at shutdown,
//! routing (`POST /mcp`, `GET /healthz`), the body limit, DNS-rebinding protection
//! (Origin/Host), attribution by source address, and turning an [`rpc::Reply`] into a
//! response.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde_json::json;
use supervise_protocol::{ErrorCode, ErrorObject, ErrorResponse};
use supervise_store::StoreError;
use tokio::net::TcpListener;
use tracing::Instrument;

use crate::app::App;
use crate::body::ReplyBody;
use crate::config::MAX_BODY_BYTES;
use crate::metrics::Refusal;
use crate::rpc::{self, Read};
use crate::write_timeout::WriteTimeout;

/// The most a connection's read buffer grows to (hyper's default is about 400 KiB). A
/// connection keeps its buffer for as long as it is open, a held call or a listen stream
/// included, so a large body would otherwise cost its high-water mark for the connection's
/// life.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Accepts connections until `shutdown` resolves; returns the handle that drains them. Each
/// connection is also dropped outright once the app's shutdown is drained, whatever its
/// client does.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
) -> GracefulShutdown {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    let mut last_warned: Option<Instant> = None;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning,
                    // and say so once every 10 s rather than at every try.
                    if last_warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
                        tracing::warn!(error = %e, "accept failed; retrying every 50 ms");
                        last_warned = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app_for_conn = app.clone();
        let service = service_fn(move |req| {
            let app = app_for_conn.clone();
            // Boxed before the future is made, so each level of the request future keeps
            // a pointer rather than its own copy of the request (held calls included).
            let req = Box::new(req);
            async move { Ok::<_, Infallible>(handle(app, peer, req).await) }
        });
        let stream = WriteTimeout::new(stream, app.config.write_timeout);
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .max_buf_size(READ_BUFFER_BYTES)
            .header_read_timeout(app.config.header_read_timeout)
            .keep_alive(true)
            .serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        let shutdown = app.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                ended = conn => if let Err(e) = ended {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                },
                () = shutdown.drained() => {
                    tracing::debug!(%peer, "connection dropped: the drain time is over");
                }
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: no longer accepting connections");
    graceful
}

/// Waits for open connections to finish their requests (idle keep-alive connections are
/// closed at once), at most `timeout`; the caller then drops the rest.
pub(crate) async fn drain(graceful: GracefulShutdown, timeout: Duration) {
    if tokio::time::timeout(timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            timeout_ms = timeout.as_millis() as u64,
            "shutdown: some connections did not finish in time; dropping them"
        );
    }
}

/// The source address as attribution sees it: IPv4-mapped IPv6 becomes IPv4.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

async fn handle(
    app: Arc<App>,
    peer: SocketAddr,
    req: Box<Request<Incoming>>,
) -> Response<ReplyBody> {
    let started = Instant::now();
    let ip = canonical_ip(peer.ip());
    let span = tracing::debug_span!("request", %ip, http_method = %req.method(), path = req.uri().path(), rpc_method = tracing::field::Empty, bottle = tracing::field::Empty);
    async move {
        let response = route(&app, ip, req).await;
        tracing::debug!(
            status = response.status().as_u16(),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request"
        );
        response
    }
    .instrument(span)
    .await
}

async fn route(app: &App, ip: IpAddr, req: Box<Request<Incoming>>) -> Response<ReplyBody> {
    // Reading and checking the request is one future and answering it another, awaited one
    // after the other, so a call that waits holds none of the reading's state.
    let read = match Box::pin(read(app, ip, req)).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let reply = rpc::handle(app, read).await;
    reply_response(reply)
}

/// A `POST /mcp` request read and checked: its bottle, headers and body; or the answer to
/// anything else (health checks, refusals).
async fn read(
    app: &App,
    ip: IpAddr,
    req: Box<Request<Incoming>>,
) -> Result<Box<Read>, Response<ReplyBody>> {
    let req = *req;
    let path = req.uri().path();
    if path != "/mcp" && path != "/healthz" {
        return Err(plain(
            StatusCode::NOT_FOUND,
            "not found: this server answers POST /mcp and GET /healthz\n",
        ));
    }
    if let Err(refusal) = check_origin_and_host(app, req.headers()) {
        tracing::info!(%ip, reason = %refusal, "refused by DNS-rebinding protection");
        app.metrics.refused(Refusal::OriginOrHost);
        return Err(rpc_error(
            StatusCode::FORBIDDEN,
            ErrorObject::new(ErrorCode::INVALID_REQUEST, refusal),
        ));
    }
    if path == "/healthz" {
        return Err(match *req.method() {
            Method::GET | Method::HEAD => Box::pin(healthz(app)).await,
            _ => with_allow(
                plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n"),
                "GET, HEAD",
            ),
        });
    }
    if req.method() != Method::POST {
        // Stateless server: no GET stream to resume, no session to DELETE.
        return Err(with_allow(
            rpc_error(
                StatusCode::METHOD_NOT_ALLOWED,
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "{} /mcp is not supported: this server is stateless and answers POST only",
                        req.method()
                    ),
                ),
            ),
            "POST",
        ));
    }

    // Boxed, like the store calls of `methods`: a lookup that reads the store should not
    // size the state every request holds.
    let bottle = match Box::pin(app.bottles.lookup(&app.store, ip)).await {
        Ok(Some(b)) => b,
        Ok(None) => {
            tracing::info!(%ip, "refused: no bottle registered for this address");
            app.metrics.refused(Refusal::UnknownBottle);
            return Err(rpc_error(
                StatusCode::FORBIDDEN,
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "source address {ip} is not registered to any bottle; an operator can \
                         register it with `supervise bottle add SLUG --ip {ip}`"
                    ),
                ),
            ));
        }
        Err(e) => {
            tracing::warn!(%ip, error = %e, "bottle lookup failed");
            return Err(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorObject::internal("the database did not answer; try again"),
            ));
        }
    };
    tracing::Span::current().record("bottle", bottle.slug.as_str());

    if let Some(refusal) = media_type_refusal(req.headers()) {
        app.metrics.refused(Refusal::MediaType);
        return Err(refusal);
    }
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        && len > MAX_BODY_BYTES as u64
    {
        app.metrics.refused(Refusal::TooLarge);
        return Err(too_large());
    }
    // Only the headers are kept (the URI and the rest go now); see `rpc::handle`.
    let (http::request::Parts { headers, .. }, body) = req.into_parts();
    let collected = tokio::time::timeout(
        app.config.body_read_timeout,
        Limited::new(body, MAX_BODY_BYTES).collect(),
    )
    .await;
    let body = match collected {
        Err(_) => {
            app.metrics.refused(Refusal::BodyTimeout);
            return Err(rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                ErrorObject::invalid_request("the request body was not received in time"),
            ));
        }
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            app.metrics.refused(Refusal::TooLarge);
            return Err(too_large());
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "reading the request body failed");
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorObject::invalid_request("the request body could not be read"),
            ));
        }
        Ok(Ok(b)) => b.to_bytes(),
    };

    Ok(Box::new(Read {
        bottle,
        headers,
        body,
    }))
}

fn reply_response(reply: rpc::Reply) -> Response<ReplyBody> {
    match reply {
        rpc::Reply::Accepted => Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(ReplyBody::full(Bytes::new()))
            .expect("static response"),
        rpc::Reply::Json { status, body } => json_response(status, body),
        rpc::Reply::Stream(rx) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-store")
            .body(ReplyBody::Stream(rx))
            .expect("static response"),
    }
}

/// A media type without its parameters, compared by the caller with ASCII case ignored.
fn essence(v: &str) -> &str {
    v.split(';').next().unwrap_or("").trim()
}

/// `POST /mcp` carries JSON and must accept a JSON answer (MCP Streamable HTTP: the client
/// sends `Content-Type: application/json` and lists `application/json` and
/// `text/event-stream` in `Accept`). This server only ever answers JSON, so an `Accept` that
/// admits JSON (`application/json`, `application/*`, `*/*`) is enough.
fn media_type_refusal(headers: &HeaderMap) -> Option<Response<ReplyBody>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(essence);
    if !content_type.is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
        let got = content_type.map_or_else(|| "none".into(), str::to_ascii_lowercase);
        return Some(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorObject::invalid_request(format!(
                "Content-Type must be application/json (got {got})"
            )),
        ));
    }
    let accepts_json = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(essence)
        .any(|t| {
            ["application/json", "application/*", "*/*"]
                .iter()
                .any(|j| t.eq_ignore_ascii_case(j))
        });
    if !accepts_json {
        return Some(rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            ErrorObject::invalid_request("Accept must list application/json and text/event-stream"),
        ));
    }
    None
}

async fn healthz(app: &App) -> Response<ReplyBody> {
    match app.store.health().await {
        Ok(()) => json_response(
            StatusCode::OK,
            json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }).to_string(),
        ),
        Err(e) => {
            // 503 whenever the database cannot take writes, with the cause as a word a
            // monitor can match and as the store's sentence an operator can act on.
            let status = match &e {
                StoreError::FileReplaced(_) => "file-replaced",
                StoreError::ReadOnly(_) => "read-only",
                StoreError::DiskFull(_) => "disk-full",
                StoreError::Busy => "busy",
                _ => "unavailable",
            };
            tracing::warn!(error = %e, status, "health check: the database cannot take writes");
            json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": status, "error": e.to_string() }).to_string(),
            )
        }
    }
}

/// DNS-rebinding protection, exactly as SPEC says: a present `Origin` must be
/// `http://localhost:PORT`, `http://127.0.0.1:PORT` or an allowed origin; on a loopback
/// listener `Host` must be `localhost:PORT`, `127.0.0.1:PORT`, `[::1]:PORT` or an allowed
/// host; elsewhere `Host` is checked only against allowed hosts, when any are given.
fn check_origin_and_host(app: &App, headers: &HeaderMap) -> Result<(), String> {
    let port = app.local_addr.port();
    let config = &app.config;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("").trim();
        let norm = origin.trim_end_matches('/');
        let ok = (norm
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
            && is_local(&norm[7..], &["localhost", "127.0.0.1"], port))
            || config
                .allowed_origins
                .iter()
                .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(norm));
        if !ok {
            return Err(format!(
                "origin {origin:?} is not allowed (allowed: http://localhost:{port}, \
                 http://127.0.0.1:{port}{}); start the server with --allowed-origin to allow it",
                extra(&config.allowed_origins)
            ));
        }
    }
    let host = headers
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("").trim());
    let host_allowed = |h: &str| {
        config
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(h))
    };
    let shown = |host: Option<&str>| host.unwrap_or_default().to_ascii_lowercase();
    if app.local_addr.ip().is_loopback() {
        let ok = host.is_some_and(|h| {
            is_local(h, &["localhost", "127.0.0.1", "[::1]"], port) || host_allowed(h)
        });
        if !ok {
            return Err(format!(
                "host {:?} is not allowed (allowed: localhost:{port}, 127.0.0.1:{port}, \
                 [::1]:{port}{}); start the server with --allowed-host to allow it",
                shown(host),
                extra(&config.allowed_hosts)
            ));
        }
    } else if !config.allowed_hosts.is_empty() && !host.is_some_and(host_allowed) {
        return Err(format!(
            "host {:?} is not allowed (allowed: {})",
            shown(host),
            config.allowed_hosts.join(", ")
        ));
    }
    Ok(())
}

/// Whether `value` is `NAME:PORT` with NAME one of `names` (ASCII case ignored) and PORT
/// exactly `port` in decimal, without a leading zero. Compared in place: this runs on
/// every request.
fn is_local(value: &str, names: &[&str], port: u16) -> bool {
    let Some((name, digits)) = value.rsplit_once(':') else {
        return false;
    };
    let decimal = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || !digits.starts_with('0'));
    decimal
        && digits.parse::<u16>() == Ok(port)
        && names.iter().any(|n| n.eq_ignore_ascii_case(name))
}

fn extra(list: &[String]) -> String {
    list.iter().map(|s| format!(", {s}")).collect()
}

fn too_large() -> Response<ReplyBody> {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorObject::invalid_request(format!(
            "the request body is larger than {MAX_BODY_BYTES} bytes"
        )),
    )
}

/// An HTTP error with a JSON-RPC error body (`"id": null`).
pub(crate) fn rpc_error(status: StatusCode, error: ErrorObject) -> Response<ReplyBody> {
    let body = serde_json::to_string(&ErrorResponse::new(None, error)).expect("serialisable");
    json_response(status, body)
}

fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<ReplyBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(ReplyBody::full(body))
        .expect("static response")
}

fn plain(status: StatusCode, text: &'static str) -> Response<ReplyBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(ReplyBody::full(Bytes::from_static(text.as_bytes())))
        .expect("static response")
}

fn with_allow(mut r: Response<ReplyBody>, allow: &'static str) -> Response<ReplyBody> {
    r.headers_mut()
        .insert(header::ALLOW, http::HeaderValue::from_static(allow));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_mapped_ipv6_is_attributed_as_ipv4() {
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(canonical_ip(mapped), "127.0.0.2".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(canonical_ip(v6), v6);
        let v4: IpAddr = "10.0.0.7".parse().unwrap();
        assert_eq!(canonical_ip(v4), v4);
    }

    #[test]
    fn a_local_host_is_its_name_and_exactly_this_port() {
        let names = ["localhost", "127.0.0.1", "[::1]"];
        for ok in [
            "localhost:7411",
            "LocalHost:7411",
            "127.0.0.1:7411",
            "[::1]:7411",
        ] {
            assert!(is_local(ok, &names, 7411), "{ok}");
        }
        for refused in [
            "localhost",
            "localhost:",
            "localhost:7412",
            "localhost:07411",
            "localhost:+7411",
            "localhost:74110",
            "localhost.evil:7411",
            "evil:7411",
            ":7411",
            "localhost:7411:7411",
        ] {
            assert!(!is_local(refused, &names, 7411), "{refused}");
        }
        assert!(is_local("localhost:0", &names, 0));
    }

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, C, Fut>(_: impl FnOnce(A, B, C) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    fn future_size_2<A, B, Fut>(_: impl FnOnce(A, B) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// hyper keeps a request's future, at its largest state's size, for every connection;
    /// for a call held in its grace window that is the memory the server adds to hyper's
    /// own. The levels that read, dispatch and file the call are awaited to their end
    /// before it waits, so the request's future is the wait and a little more.
    #[test]
    fn a_held_calls_request_future_is_about_its_wait() {
        let request = future_size(handle);
        let wait = future_size_2(crate::grace::Held::wait);
        eprintln!("request future {request} bytes, the wait {wait}");
        assert!(
            request <= wait + 1024,
            "the request's future is {request} bytes, the wait's {wait}: the levels above the wait keep more than 1 KiB of their own while a call is held"
        );
    }
}
