//! The supervise review console: server-rendered pages for operators and a JSON API for
//! scripts and chat bridges, on the same database as the server and the CLI.
//!
//! Layout: [`serve`] is the entry point and [`Config`] (`config`) its settings
//! (`supervise console` only parses flags). `listener` accepts plain or TLS connections
//! (`tls` loads the PEM files) and holds clients to the connection cap, header and body
//! timeouts and size limits; `app` is the shared state; `router` builds every route from
//! its lists and lays the guards over them; `headers` the security headers every answer
//! carries, `limit` the sign-in rate limit, `metrics` the console's own figures (`GET
//! /metrics` for any API token) and `GET /healthz`. `auth` turns a session cookie or a bearer
//! token into the store's `Operator` and `Actor`, and its `guard` checks the Origin and
//! CSRF token of every state-changing page request before the handler runs. `pages/`
//! holds one module per page (queue, proposal, grants, audit, admin, sign-in) with its
//! template in `templates/`; `api/` one module per API area (proposals, grants, events,
//! the OpenAPI document); `error` the refusals of both, `view` shapes store types for
//! both, `input` reads what operators type.
//! `feed` is the one reader of the store's change feed: it polls and fans every event out
//! to the live streams (`pages/live.rs`, `api/events.rs`). Handlers import the state and
//! these shared modules, never the router: the module graph has no cycle.
//!
//! Roles and scopes are the store's rule: every write passes `Actor::console(&operator)`
//! and the store refuses what the actor may not do; reads are filtered with `Actor::sees`
//! and `Actor::sees_event`.
//! Each request looks its session or token up in the store, so a removed operator stops at
//! once.

mod api;
mod app;
mod assets;
mod auth;
mod config;
mod error;
mod feed;
mod headers;
mod input;
mod limit;
mod listener;
mod metrics;
mod monitoring;
mod pages;
mod router;
mod tls;
mod view;

use std::future::Future;

use supervise_store::Store;
use tokio::net::TcpListener;

pub use config::{Config, TlsFiles};
pub use error::ConsoleError;

/// Where `supervise console` listens unless told otherwise (`SUPERVISE_CONSOLE_LISTEN`).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7412";

/// Serves the console on `listener` until `shutdown` resolves: live streams end, requests
/// in flight finish, and it returns. Refuses to start on a public URL that is not
/// `http(s)://HOST[:PORT]` (the console is served at the root of its origin) or TLS files
/// that cannot be read.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ConsoleError> {
    let tls = match &config.tls {
        Some(files) => Some(tls::acceptor(files)?),
        None => None,
    };
    let (app, feed) = app::App::start(store, &config)?;
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, public_url = %config.public_url, tls = tls.is_some(), "supervise console serving");
    }
    let router = router::router(app.clone());
    let stop = app.stop_signal();
    let shutdown = async move {
        shutdown.await;
        stop.send_replace(true);
    };
    let limits = listener::Limits {
        header_timeout: config.header_timeout,
        max_connections: config.max_connections,
    };
    listener::serve(listener, tls, router, limits, shutdown).await;
    feed.await.ok();
    tracing::info!("supervise console stopped");
    Ok(())
}
