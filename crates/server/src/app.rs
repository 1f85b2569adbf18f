//! The state every request handler shares, and the background tasks that serve it: the
//! proposal writer, the change-feed reader with its subscribers (the waiters' watcher, the
//! relay to `subscriptions/listen` streams, the hook runner and the metrics' counter) and
//! the sweep. [`App::start`] builds both, so a test can run the
//! whole server in-process without HTTP.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use supervise_protocol::{Implementation, ServerInfoMeta};
use supervise_store::{Store, StoreResult};
use tokio::task::JoinHandle;

use crate::bottles::BottleCache;
use crate::budget::WaitBudget;
use crate::config::Config;
use crate::feed::Feed;
use crate::hooks;
use crate::metrics::{self, Metrics};
use crate::shutdown::Shutdown;
use crate::task_feed::TaskFeed;
use crate::waiters::{self, Waiters};
use crate::writer::Writer;

/// What every request handler can reach.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) store: Store,
    pub(crate) config: Config,
    pub(crate) bottles: BottleCache,
    pub(crate) writer: Writer,
    /// Shared with the watcher task, which wakes the calls registered here.
    pub(crate) waiters: Arc<Waiters>,
    /// Places for calls held in their grace window.
    pub(crate) budget: Arc<WaitBudget>,
    /// Once started, waiting calls answer `pending` at once.
    pub(crate) shutdown: Shutdown,
    /// Where `subscriptions/listen` streams learn that a task may have changed.
    pub(crate) task_feed: TaskFeed,
    /// The address the listener is bound to (its port is part of the allowed Origin/Host).
    pub(crate) local_addr: SocketAddr,
    pub(crate) server_info: Implementation,
    /// `server_info` as a 2026-07-28 tool answer's `_meta`, written to JSON once.
    pub(crate) server_info_meta: ServerInfoMeta,
    /// The Prometheus figures (`--metrics-listen` serves them).
    pub(crate) metrics: Arc<Metrics>,
}

/// The background tasks of one [`App`]; each stops on the shutdown signal.
#[derive(Debug)]
pub(crate) struct Tasks(Vec<JoinHandle<()>>);

impl App {
    /// Starts the background tasks on `store` and returns the state requests share. The
    /// change feed is followed from its current end, read here: start before accepting
    /// requests, so no event of this run is missed. The writer runs until the shutdown is
    /// drained; everything else stops when it starts.
    pub(crate) async fn start(
        store: Store,
        config: Config,
        local_addr: SocketAddr,
        shutdown: Shutdown,
    ) -> StoreResult<(Arc<App>, Tasks)> {
        let start_seq = store.last_seq().await?;
        let metrics = Metrics::new();
        store.observe_writes(metrics.write_observer());
        let mut tasks = Vec::new();
        let (writer, task) = Writer::spawn(store.clone(), shutdown.clone());
        tasks.push(task);

        let feed = Feed::new(store.clone(), start_seq);
        let waiters = Arc::new(Waiters::default());
        tasks.push(tokio::spawn(waiters::watch_feed(
            store.clone(),
            waiters.clone(),
            feed.subscribe(),
            shutdown.clone(),
        )));
        tasks.push(tokio::spawn(metrics::follow_feed(
            metrics.clone(),
            store.clone(),
            feed.subscribe(),
            shutdown.clone(),
        )));
        let task_feed = TaskFeed::new();
        tasks.push(tokio::spawn(
            task_feed.clone().relay(feed.subscribe(), shutdown.clone()),
        ));
        if let Some(command) = config.on_event.clone() {
            // Resume where the hooks stopped; a first start begins at the end, recorded now.
            let from = match store.hook_position().await? {
                Some(seq) => seq.min(start_seq),
                None => {
                    store.advance_hook_position(start_seq).await?;
                    start_seq
                }
            };
            if from < start_seq {
                tracing::info!(
                    from,
                    backlog = start_seq - from,
                    "hooks resume from their recorded position"
                );
            }
            tasks.push(tokio::spawn(hooks::run(
                hooks::HookConfig {
                    console_url: config.console_url.clone(),
                    counted: metrics.hooks.clone(),
                    ..hooks::HookConfig::new(command)
                },
                store.clone(),
                feed.subscribe_from(from),
                from,
                shutdown.clone(),
            )));
        }
        tasks.push(tokio::spawn(
            feed.run(config.watch_interval, shutdown.clone()),
        ));
        tasks.push(tokio::spawn(sweep_loop(
            store.clone(),
            config.sweep_interval,
            shutdown.clone(),
        )));

        let app = App {
            store,
            bottles: BottleCache::new(config.bottle_cache_ttl),
            budget: WaitBudget::new(config.max_waiting, config.max_waiting_per_bottle),
            config,
            writer,
            waiters,
            shutdown,
            task_feed,
            local_addr,
            server_info_meta: ServerInfoMeta::new(&server_info()),
            server_info: server_info(),
            metrics,
        };
        Ok((Arc::new(app), Tasks(tasks)))
    }
}

impl Tasks {
    /// Waits for every task to end (they end on the shutdown signal).
    pub(crate) async fn join(self) {
        for task in self.0 {
            let _ = task.await;
        }
    }
}

/// The identity sent in `initialize`, `server/discover` and modern results.
pub(crate) fn server_info() -> Implementation {
    let mut info = Implementation::new("supervise", env!("CARGO_PKG_VERSION"));
    info.title = Some("supervise: ask a human operator for egress and git-push access".into());
    info
}

/// Expires undecided proposals and grants past their time, every `every`.
async fn sweep_loop(store: Store, every: Duration, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let stop = shutdown.started();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut stop => return,
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
