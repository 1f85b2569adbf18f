//! The sign-in rate limit: fixed one-minute windows, one per source address (an IPv6
//! address counts by its /64, what one client can rotate through) and one for all
//! addresses together, kept in memory (a restart forgets them, which costs an attacker
//! nothing they could not get by waiting a minute). Only attempts that passed the Origin
//! check reach it, so a cross-site page cannot spend it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it, windows that ended are forgotten first.
const MAX_TRACKED: usize = 10_000;

/// Whose limit an attempt is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// Its source address's.
    Address,
    /// The console's, for all addresses together.
    Total,
}

pub(crate) struct Limiter {
    per_window: u32,
    total_per_window: u32,
    // A std mutex: held for a map lookup only, never across an await.
    windows: Mutex<Windows>,
}

struct Windows {
    by_source: HashMap<IpAddr, (Instant, u32)>,
    total: (Instant, u32),
}

impl Limiter {
    pub(crate) fn new(per_minute: u32, total_per_minute: u32) -> Limiter {
        Limiter {
            per_window: per_minute,
            total_per_window: total_per_minute,
            windows: Mutex::new(Windows {
                by_source: HashMap::new(),
                total: (Instant::now(), 0),
            }),
        }
    }

    /// Counts an attempt from `ip`; `Err` when it is over a limit for this minute. An
    /// attempt refused for its address does not count towards the total, so one address
    /// cannot spend everyone's.
    pub(crate) fn allow(&self, ip: IpAddr) -> Result<(), Over> {
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let by_source = &mut windows.by_source;
        if by_source.len() >= MAX_TRACKED {
            by_source.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        if !count(
            by_source.entry(source(ip)).or_insert((now, 0)),
            now,
            self.per_window,
        ) {
            return Err(Over::Address);
        }
        if !count(&mut windows.total, now, self.total_per_window) {
            return Err(Over::Total);
        }
        Ok(())
    }
}

/// Counts one attempt in `window` (its start, its count), starting a new window when a
/// minute has passed; whether it is within `limit`.
fn count(window: &mut (Instant, u32), now: Instant, limit: u32) -> bool {
    if now.duration_since(window.0) >= WINDOW {
        *window = (now, 0);
    }
    window.1 = window.1.saturating_add(1);
    window.1 <= limit
}

/// The key an address counts under: an IPv4 address (mapped ones included) as it is, an
/// IPv6 address by its /64.
fn source(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eleventh_attempt_in_a_minute_is_refused_and_others_are_not() {
        let limiter = Limiter::new(10, 1000);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..10 {
            assert_eq!(limiter.allow(a), Ok(()));
        }
        assert_eq!(limiter.allow(a), Err(Over::Address));
        assert_eq!(limiter.allow(b), Ok(()));
    }

    #[test]
    fn many_addresses_together_meet_the_total() {
        let limiter = Limiter::new(10, 50);
        for i in 0..50u8 {
            assert_eq!(limiter.allow(IpAddr::from([127, 0, 1, i])), Ok(()));
        }
        assert_eq!(
            limiter.allow(IpAddr::from([127, 0, 2, 1])),
            Err(Over::Total)
        );
    }

    #[test]
    fn an_ipv6_client_counts_by_its_64() {
        let limiter = Limiter::new(2, 1000);
        for host in ["2001:db8::1", "2001:db8::2:3"] {
            assert_eq!(limiter.allow(host.parse().unwrap()), Ok(()));
        }
        let same_64: IpAddr = "2001:db8::ffff:1".parse().unwrap();
        assert_eq!(limiter.allow(same_64), Err(Over::Address));
        let other_64: IpAddr = "2001:db8:0:1::1".parse().unwrap();
        assert_eq!(limiter.allow(other_64), Ok(()));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let v4: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(source(mapped), v4);
    }
}
