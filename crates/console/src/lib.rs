//! The supervise review console: server-rendered pages for operators and a JSON API for
//! scripts and chat bridges, on the same database as the server and the CLI.
//!
//! Layout: [`serve`] is the entry point and [`Config`] its settings (`supervise console`
//! only parses flags). `listener` accepts plain or TLS connections (`tls` loads the PEM
//! files); `app` is the shared state and the router, `headers` the security headers every
//! answer carries, `limit` the sign-in rate limit per source address. `auth` turns a
//! session cookie or a bearer token into the store's `Operator` and `Actor`, and checks the
//! Origin and CSRF token of every form post. `pages/` holds one module per page (queue,
//! proposal, grants, audit, admin, sign-in) with its template in `templates/`; `api/` one
//! module per API area (proposals, grants, events, the OpenAPI document); `view` shapes
//! store types for both. `feed` is the one reader of the store's change feed: it polls and
//! fans every event out to the live streams (`pages/live.rs`, `api/events.rs`).
//!
//! Roles and scopes are the store's rule: every write passes `Actor::console(&operator)`
//! and the store refuses what the actor may not do; reads are filtered with `Actor::sees`.
//! Each request looks its session or token up in the store, so a removed operator stops at
//! once.

mod api;
mod app;
mod assets;
mod auth;
mod error;
mod feed;
mod headers;
mod limit;
mod listener;
mod pages;
mod tls;
mod view;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use supervise_store::Store;
use tokio::net::TcpListener;

pub use error::ConsoleError;

/// Where `supervise console` listens unless told otherwise (`SUPERVISE_CONSOLE_LISTEN`).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7412";

/// Everything [`serve`] needs besides the listener and the store.
#[derive(Debug, Clone)]
pub struct Config {
    /// How operators reach the console (`--public-url` / `SUPERVISE_CONSOLE_URL`): its origin
    /// is the only one a form post may come from, and an `https` URL makes the session
    /// cookie `Secure`.
    pub public_url: String,
    /// Serve TLS with this certificate chain and key (PEM files).
    pub tls: Option<TlsFiles>,
    /// How often the change feed is read for the live views.
    pub feed_interval: Duration,
    /// Sign-in attempts accepted per source address and minute; past it, 429.
    pub sign_in_per_minute: u32,
}

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Config {
    /// The defaults for a console reached at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Config {
        Config {
            public_url: public_url.into(),
            tls: None,
            feed_interval: Duration::from_millis(250),
            sign_in_per_minute: 10,
        }
    }
}

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
    let router = app::router(app.clone());
    let stop = app.stop_signal();
    let shutdown = async move {
        shutdown.await;
        stop.send_replace(true);
    };
    let result = listener::serve(listener, tls, router, shutdown).await;
    feed.await.ok();
    tracing::info!("supervise console stopped");
    Ok(result?)
}
