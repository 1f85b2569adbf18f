//! The sign-in rate limit: a fixed one-minute window per source address, kept in memory
//! (a restart forgets it, which costs an attacker nothing they could not get by waiting a
//! minute).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it, windows that ended are forgotten first.
const MAX_TRACKED: usize = 10_000;

pub(crate) struct Limiter {
    per_window: u32,
    // A std mutex: held for a map lookup only, never across an await.
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Limiter {
    pub(crate) fn new(per_minute: u32) -> Limiter {
        Limiter {
            per_window: per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts an attempt from `ip`; false when it is over the limit for this minute.
    pub(crate) fn allow(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() >= MAX_TRACKED {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let entry = windows.entry(ip).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
        entry.1 <= self.per_window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eleventh_attempt_in_a_minute_is_refused_and_others_are_not() {
        let limiter = Limiter::new(10);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..10 {
            assert!(limiter.allow(a));
        }
        assert!(!limiter.allow(a));
        assert!(limiter.allow(b));
    }
}
