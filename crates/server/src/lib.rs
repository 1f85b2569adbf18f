//! The supervise MCP endpoint: Streamable HTTP on hyper + tokio, attributing every call to a
//! bottle by its source address and filing proposals in the store.
//!
//! Layout: [`serve`] is the entry point (`main.rs` only parses flags) and [`Config`] its
//! settings. `app` holds the shared state and starts the background tasks; `shutdown` is
//! the one signal they all stop on. `http` owns the connection: routing, body limit,
//! timeouts (`write_timeout` drops a client that does not read), the bounded drain,
//! Origin/Host checks and attribution, then hands one JSON-RPC message to `rpc`, which
//! decides the protocol era (handshake or per-request `_meta`), checks the 2026-07-28
//! headers and dispatches to one module per method in `methods`. `tools/call` dispatches
//! again, to one module per tool in `tools`, whose answers are shaped by `answer`. The
//! proposal tools share one flow, `grace`: file through the `writer` (one task, group
//! commit), take a place in the `budget`, and wait through `waiters` for a decision. `feed`
//! is the one reader of the store's change feed; the waiters' watcher and the `hooks`
//! subscribe to it. `bottles` caches attribution briefly. `open_files` raises the
//! open-file limit at start and sizes the budget's caps from it. `metrics` keeps the
//! Prometheus figures and serves them on their own listener (`--metrics-listen`).
//!
//! All state lives in the database: the server mints no MCP session, so a restarted server
//! carries on where the last one stopped. One server serves a database on a host
//! (`main.rs` holds `Store::claim_server` for its life).

mod answer;
mod app;
mod body;
mod bottles;
mod budget;
mod config;
mod feed;
mod grace;
mod hooks;
mod http;
mod methods;
mod metrics;
pub mod open_files;
mod rpc;
mod shutdown;
mod task;
mod task_feed;
mod tools;
mod waiters;
mod write_timeout;
mod writer;

use std::future::Future;

use anyhow::Context;
use supervise_store::Store;
use tokio::net::TcpListener;

pub use config::Config;

/// Serves MCP on `listener` until `shutdown` resolves, then stops accepting, answers every
/// waiting call `pending`, lets in-flight requests finish for at most
/// [`Config::drain_timeout`], drops the connections still open, and returns.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    serve_with_metrics(listener, None, store, config, shutdown).await
}

/// [`serve`], plus `GET /metrics` in Prometheus's text format on `metrics` when given: a
/// listener of its own, never the MCP one, served until shutdown starts.
pub async fn serve_with_metrics(
    listener: TcpListener,
    metrics: Option<TcpListener>,
    store: Store,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let local_addr = listener
        .local_addr()
        .context("reading the listen address")?;
    let (trigger, stop) = shutdown::channel();
    let (app, tasks) = app::App::start(store.clone(), config, local_addr, stop)
        .await
        .context("reading the change feed of the database")?;
    let metrics = metrics.map(|l| {
        tokio::spawn(metrics::serve(
            l,
            app.metrics.clone(),
            store.clone(),
            app.shutdown.clone(),
        ))
    });

    let graceful = http::accept_loop(listener, app.clone(), shutdown).await;

    // No longer accepting: answer every waiting call `pending`, then let requests finish.
    trigger.start();
    http::drain(graceful, app.config.drain_timeout).await;
    // Whatever is still open is dropped now; the writer files what is queued and stops.
    trigger.drained();
    drop(app);
    tasks.join().await;
    if let Some(m) = metrics {
        let _ = m.await;
    }
    store.close().await;
    tracing::info!("supervise-server stopped");
    Ok(())
}
