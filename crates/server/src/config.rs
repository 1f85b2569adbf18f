//! The server's settings, resolved by `main.rs` from flags and environment.

use std::time::Duration;

/// Largest request body accepted on `POST /mcp`; larger ones get HTTP 413.
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Largest answer to a JSON-RPC batch (2025-03-26), the same as the largest body: an item
/// whose answer is over 32 KiB and would pass it gets a short error instead (see
/// `rpc::batch`). With at most
/// [`supervise_protocol::MAX_BATCH_LEN`] (32) items per batch, each running concurrently,
/// one request costs at most 32 items' work and ~1 MiB of answer (plus ~200 bytes and the
/// echoed id for each item left out). A single message's answer is not capped: it is
/// bounded by what that one call returns.
pub const MAX_BATCH_ANSWER_BYTES: usize = 1024 * 1024;

/// Everything [`crate::serve`] needs besides the listener and the store.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a proposal tool waits for a decision before answering `pending` (zero:
    /// answer at once).
    pub grace: Duration,
    /// Extra `Origin` values accepted besides `http://localhost:PORT` and
    /// `http://127.0.0.1:PORT`.
    pub allowed_origins: Vec<String>,
    /// Extra `Host` values accepted (and, on a non-loopback listener, the only ones accepted
    /// when any is given).
    pub allowed_hosts: Vec<String>,
    /// `--on-event` command, run once per audit event (see [`crate::hooks`]).
    pub on_event: Option<String>,
    /// The review console's public URL (`SUPERVISE_CONSOLE_URL`): a hook's event document
    /// then carries its proposal's page as `url`.
    pub console_url: Option<String>,
    /// How often the watcher reads the store's change feed.
    pub watch_interval: Duration,
    /// How often undecided proposals and grants past their time are expired.
    pub sweep_interval: Duration,
    /// How long a bottle lookup by source address is reused.
    pub bottle_cache_ttl: Duration,
    /// How long a client may take to send the request head.
    pub header_read_timeout: Duration,
    /// How long a client may take to send the request body.
    pub body_read_timeout: Duration,
    /// How long a client may leave its answer untaken (not one byte read) before its
    /// connection is dropped. An idle keep-alive connection is closed after
    /// `header_read_timeout`.
    pub write_timeout: Duration,
    /// How long shutdown waits for in-flight requests after waiting calls were answered;
    /// connections still open then are dropped, so shutdown takes at most this long.
    pub drain_timeout: Duration,
    /// Calls held in their grace window at once, server-wide (0: no limit); past it a
    /// proposal call answers `pending` at once.
    pub max_waiting: usize,
    /// Calls of one bottle held in their grace window at once (0: no limit).
    pub max_waiting_per_bottle: usize,
    /// The `pollIntervalMs` a task suggests (`--task-poll-interval`).
    pub task_poll_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            grace: Duration::from_secs(30),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            on_event: None,
            console_url: None,
            watch_interval: Duration::from_millis(20),
            sweep_interval: Duration::from_secs(5),
            bottle_cache_ttl: Duration::from_secs(1),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(10),
            max_waiting: 16_384,
            max_waiting_per_bottle: 1_024,
            task_poll_interval: Duration::from_secs(5),
        }
    }
}
