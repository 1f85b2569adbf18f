//! The supervise MCP endpoint: Streamable HTTP on hyper + tokio, attributing every call to a
//! bottle by its source address and filing proposals in the store.
//!
//! Layout: [`serve`] is the entry point (`main.rs` only parses flags). [`http`] owns the
//! connection: routing, body limit, Origin/Host checks and attribution, then hands one
//! JSON-RPC message to [`rpc`], which decides the protocol era (handshake or per-request
//! `_meta`), checks the 2026-07-28 headers and dispatches to one module per method in
//! [`methods`]. `tools/call` dispatches again, to one module per tool in [`tools`], whose
//! answers are shaped by [`answer`]. Proposals go through the [`writer`] (one task, group
//! commit) and wait for decisions through [`waiters`] (one watcher task on the store's
//! change feed); [`bottles`] caches attribution briefly.
//!
//! All state lives in the database: the server mints no MCP session, so any request can go
//! to any server process on the same file.

pub mod answer;
pub mod bottles;
pub mod budget;
pub mod config;
pub mod hooks;
pub mod http;
pub mod methods;
pub mod rpc;
pub mod tools;
pub mod waiters;
pub mod writer;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use supervise_store::Store;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use config::Config;

/// What every request handler can reach.
#[derive(Debug)]
pub struct App {
    pub store: Store,
    pub config: Config,
    pub bottles: bottles::BottleCache,
    pub writer: writer::Writer,
    pub waiters: Arc<waiters::Waiters>,
    /// Places for calls held in their grace window.
    pub budget: Arc<budget::WaitBudget>,
    /// Turns true when shutdown begins: waiting calls answer `pending` at once.
    pub shutdown: watch::Receiver<bool>,
    /// The address the listener is bound to (its port is part of the allowed Origin/Host).
    pub local_addr: std::net::SocketAddr,
    pub server_info: supervise_protocol::Implementation,
}

/// Serves MCP on `listener` until `shutdown` resolves, then stops accepting, answers every
/// waiting call `pending`, lets in-flight requests finish and returns.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let local_addr = listener
        .local_addr()
        .context("reading the listen address")?;
    let (stop_tx, stop_rx) = watch::channel(false);

    let (writer, writer_task) = writer::Writer::spawn(store.clone());
    let waiters = Arc::new(waiters::Waiters::default());
    let start_seq = store
        .last_seq()
        .await
        .context("reading the change feed of the database")?;
    let watcher_task = tokio::spawn(waiters::watch_feed(
        store.clone(),
        waiters.clone(),
        start_seq,
        config.watch_interval,
        stop_rx.clone(),
    ));
    let sweep_task = tokio::spawn(sweep_loop(
        store.clone(),
        config.sweep_interval,
        stop_rx.clone(),
    ));
    let hooks_task = config.on_event.clone().map(|command| {
        let mut stop = stop_rx.clone();
        tokio::spawn(hooks::run(
            store.clone(),
            hooks::HookConfig::new(command),
            start_seq,
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
        ))
    });

    let budget = budget::WaitBudget::new(config.max_waiting, config.max_waiting_per_bottle);
    let app = Arc::new(App {
        store: store.clone(),
        bottles: bottles::BottleCache::new(config.bottle_cache_ttl),
        config,
        writer,
        waiters,
        budget,
        shutdown: stop_rx,
        local_addr,
        server_info: server_info(),
    });

    let graceful = http::accept_loop(listener, app.clone(), shutdown).await;

    // No longer accepting: answer every waiting call `pending`, then let requests finish.
    let _ = stop_tx.send(true);
    http::drain(graceful, app.config.drain_timeout).await;
    drop(app);
    let _ = writer_task.await;
    let _ = watcher_task.await;
    let _ = sweep_task.await;
    if let Some(t) = hooks_task {
        let _ = t.await;
    }
    store.close().await;
    tracing::info!("supervise-server stopped");
    Ok(())
}

/// The identity sent in `initialize`, `server/discover` and modern results.
pub fn server_info() -> supervise_protocol::Implementation {
    let mut info = supervise_protocol::Implementation::new("supervise", env!("CARGO_PKG_VERSION"));
    info.title = Some("supervise: ask a human operator for egress and git-push access".into());
    info
}

async fn sweep_loop(store: Store, every: std::time::Duration, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match store.sweep().await {
            Ok(s) if s.expired_proposals + s.expired_grants > 0 => {
                tracing::info!(
                    expired_proposals = s.expired_proposals,
                    expired_grants = s.expired_grants,
                    "sweep"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "sweep failed; will retry"),
        }
    }
}
