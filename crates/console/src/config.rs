//! What [`serve`](crate::serve) is told: the public URL, TLS files, how often the feed is
//! read, the sign-in limits, and how long and how many clients may hold a connection.

use std::path::PathBuf;
use std::time::Duration;

/// Everything [`serve`](crate::serve) needs besides the listener and the store.
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
    /// Sign-in attempts accepted per minute from all addresses together; past it, 429.
    pub sign_in_total_per_minute: u32,
    /// How long a client may take to send a request's headers (and, on a kept-alive
    /// connection, to start the next request); past it, the connection is closed.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body once its headers arrived; past
    /// it, 408 and the connection is closed.
    pub body_timeout: Duration,
    /// Connections served at once (TLS handshakes included); more wait in the listen
    /// backlog until one closes.
    pub max_connections: usize,
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
            sign_in_total_per_minute: 60,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: default_max_connections(),
        }
    }
}

/// Half the process's soft limit on open files, between 16 and 4,096: the other half is
/// for the database, the listener and whatever else the process holds, so a flood of
/// connections never makes `accept` fail.
fn default_max_connections() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    usize::try_from(soft / 2)
        .unwrap_or(usize::MAX)
        .clamp(16, 4096)
}
