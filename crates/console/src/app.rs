//! The shared state every handler sees: the store, the console's origin, the sign-in
//! limiter, the change feed's broadcast, the stop signal and the console's metrics.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Uri;
use supervise_store::{Event, Store};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::error::ConsoleError;
use crate::feed;
use crate::limit::Limiter;
use crate::metrics::Metrics;

/// Events a slow live stream may fall behind before it is told to read again.
const FEED_BUFFER: usize = 1024;

#[derive(Clone)]
pub(crate) struct App(Arc<Inner>);

struct Inner {
    store: Store,
    origin: String,
    public_url: String,
    secure: bool,
    limiter: Limiter,
    body_timeout: Duration,
    // A broadcast channel: one feed reader, any number of live streams, each with its own
    // position; a stream that falls behind is told (Lagged) and reads the store again.
    feed: broadcast::Sender<Arc<Event>>,
    // The stop signal: live streams end when it turns true, so graceful shutdown can finish.
    stop: watch::Sender<bool>,
    /// This console's own Prometheus figures (`GET /metrics`).
    metrics: Arc<Metrics>,
}

impl App {
    /// The state, and the feed reader's task (it ends on the stop signal).
    pub(crate) fn start(
        store: Store,
        config: &Config,
    ) -> Result<(App, JoinHandle<()>), ConsoleError> {
        let (origin, secure) = origin_of(&config.public_url)?;
        let (feed, _) = broadcast::channel(FEED_BUFFER);
        let (stop, _) = watch::channel(false);
        let app = App(Arc::new(Inner {
            store: store.clone(),
            origin,
            public_url: config.public_url.trim_end_matches('/').to_owned(),
            secure,
            limiter: Limiter::new(config.sign_in_per_minute, config.sign_in_total_per_minute),
            body_timeout: config.body_timeout,
            feed: feed.clone(),
            stop,
            metrics: Metrics::new(),
        }));
        let task = tokio::spawn(feed::run(
            store,
            feed,
            config.feed_interval,
            app.0.stop.subscribe(),
        ));
        Ok((app, task))
    }

    pub(crate) fn store(&self) -> &Store {
        &self.0.store
    }

    /// The console's own origin, `scheme://host[:port]`, as browsers send it.
    pub(crate) fn origin(&self) -> &str {
        &self.0.origin
    }

    /// The public URL without a trailing slash: sign-in links are `{public_url}/sign-in/...`.
    pub(crate) fn public_url(&self) -> &str {
        &self.0.public_url
    }

    /// Whether operators reach the console over https (the cookie is then `Secure`).
    pub(crate) fn secure(&self) -> bool {
        self.0.secure
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }

    pub(crate) fn limiter(&self) -> &Limiter {
        &self.0.limiter
    }

    /// How long a request's body may take to arrive.
    pub(crate) fn body_timeout(&self) -> Duration {
        self.0.body_timeout
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.0.feed.subscribe()
    }

    pub(crate) fn stopping(&self) -> watch::Receiver<bool> {
        self.0.stop.subscribe()
    }

    pub(crate) fn stop_signal(&self) -> watch::Sender<bool> {
        self.0.stop.clone()
    }
}

/// `scheme://host[:port]` of the public URL (default ports dropped, as browsers send an
/// Origin), and whether it is https.
fn origin_of(url: &str) -> Result<(String, bool), ConsoleError> {
    let bad = |why| ConsoleError::PublicUrl {
        url: url.to_owned(),
        why,
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let secure = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(bad("the scheme must be http or https")),
    };
    let authority = uri.authority().ok_or_else(|| bad("no host"))?;
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(bad(
            "the console is served at the root of its origin, so it takes no path",
        ));
    }
    if authority.as_str().contains('@') {
        return Err(bad("a user name or password does not belong in it"));
    }
    let host = authority.host().to_ascii_lowercase();
    let port = match (authority.port_u16(), secure) {
        (Some(443), true) | (Some(80), false) | (None, _) => String::new(),
        (Some(p), _) => format!(":{p}"),
    };
    let scheme = if secure { "https" } else { "http" };
    Ok((format!("{scheme}://{host}{port}"), secure))
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn the_origin_is_scheme_host_and_a_port_that_is_not_the_default() {
        assert_eq!(
            origin_of("https://Console.Example.org/").unwrap(),
            ("https://console.example.org".into(), true)
        );
        assert_eq!(
            origin_of("https://c.example:443").unwrap().0,
            "https://c.example"
        );
        assert_eq!(
            origin_of("http://127.0.0.1:7412").unwrap(),
            ("http://127.0.0.1:7412".into(), false)
        );
        assert!(origin_of("ftp://x").is_err());
        assert!(origin_of("console.example.org").is_err());
        assert!(origin_of("https://u:p@c.example").is_err());
        assert!(origin_of("https://c.example/console").is_err());
    }
}
