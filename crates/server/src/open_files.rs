//! The open-file limit and the wait caps sized from it. Every waiting call and every
//! `subscriptions/listen` stream holds a connection, so a descriptor, for as long as it
//! lasts: the server raises its soft `RLIMIT_NOFILE` to the hard limit at start, then holds
//! both caps to what that limit leaves once the process's own descriptors and everyone
//! else's short calls have room. One bottle at its cap then never shuts out another bottle,
//! a health check or an operator's decision.

/// Descriptors kept out of the caps for the process itself: stdio, the listener, the
/// runtime, the database pool (on SQLite the file, its WAL and its shared memory for each
/// connection; on PostgreSQL a socket each), the server claim and the pipes of running hook
/// processes.
pub const RESERVED: u64 = 64;

/// The open-file limit this process runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit in force.
    pub limit: u64,
    /// The soft limit found at start, when it was raised.
    pub raised_from: Option<u64>,
}

/// Raises the soft open-file limit to the hard one (to the kernel's `nr_open` when the hard
/// one is unlimited) and says what is in force. A failure to raise leaves the limit found.
pub fn raise() -> std::io::Result<OpenFiles> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let found = getrlimit(Resource::Nofile);
    let soft = found.current.unwrap_or(u64::MAX);
    let hard = found.maximum.unwrap_or_else(nr_open);
    if soft >= hard {
        return Ok(OpenFiles {
            limit: soft,
            raised_from: None,
        });
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: found.maximum,
        },
    )?;
    Ok(OpenFiles {
        limit: hard,
        raised_from: Some(soft),
    })
}

/// The soft open-file limit in force.
pub fn current() -> u64 {
    let found = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    found.current.unwrap_or(u64::MAX)
}

/// The most descriptors a process may have open, when the hard limit is unlimited.
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// Calls held in their grace window and listen streams at once: server-wide and per bottle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitCaps {
    pub total: usize,
    pub per_bottle: usize,
}

/// The defaults, when the limit allows them.
pub const DEFAULT_CAPS: WaitCaps = WaitCaps {
    total: 16_384,
    per_bottle: 1_024,
};

/// A cap asked for that the open-file limit does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clamped {
    /// `--max-waiting` or `--max-waiting-per-bottle`.
    pub flag: &'static str,
    /// What was asked (0: no limit).
    pub asked: usize,
    /// What is used.
    pub used: usize,
}

impl WaitCaps {
    /// The most `limit` open files allow: of what [`RESERVED`] leaves, three quarters may be
    /// held by waiting calls and streams (the rest is for health checks, operators, other
    /// bottles' short calls and idle keep-alive connections), and one bottle may hold a
    /// quarter of those, so four bottles at their caps still leave room for the rest.
    pub fn allowed(limit: u64) -> WaitCaps {
        let usable = limit.saturating_sub(RESERVED) / 4 * 3;
        let total = usize::try_from(usable).unwrap_or(usize::MAX).max(1);
        WaitCaps {
            total,
            per_bottle: (total / 4).max(1),
        }
    }

    /// The caps for `limit` open files: each as asked (`None`: the default), but at most
    /// what [`WaitCaps::allowed`] gives; an explicit cap above that (or 0, no limit) is
    /// clamped and listed, so the caller can say so.
    pub fn resolve(
        limit: u64,
        total: Option<usize>,
        per_bottle: Option<usize>,
    ) -> (WaitCaps, Vec<Clamped>) {
        let allowed = WaitCaps::allowed(limit);
        let mut clamped = Vec::new();
        let mut pick =
            |flag: &'static str, asked: Option<usize>, default: usize, max: usize| match asked {
                None => default.min(max),
                Some(n) if n == 0 || n > max => {
                    clamped.push(Clamped {
                        flag,
                        asked: n,
                        used: max,
                    });
                    max
                }
                Some(n) => n,
            };
        let caps = WaitCaps {
            total: pick("--max-waiting", total, DEFAULT_CAPS.total, allowed.total),
            per_bottle: pick(
                "--max-waiting-per-bottle",
                per_bottle,
                DEFAULT_CAPS.per_bottle,
                allowed.per_bottle,
            ),
        };
        (caps, clamped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_limit_keeps_the_defaults() {
        assert_eq!(WaitCaps::resolve(1 << 20, None, None).0, DEFAULT_CAPS);
        let (caps, clamped) = WaitCaps::resolve(1 << 20, Some(50_000), Some(0));
        assert_eq!(caps.total, 50_000);
        assert_eq!(caps.per_bottle, WaitCaps::allowed(1 << 20).per_bottle);
        assert_eq!(clamped.len(), 1);
        assert_eq!(clamped[0].flag, "--max-waiting-per-bottle");
    }

    #[test]
    fn the_caps_fit_in_a_small_limit_with_room_for_others() {
        let (caps, clamped) = WaitCaps::resolve(1024, None, None);
        assert!(clamped.is_empty());
        assert!(caps.total as u64 + RESERVED + 64 <= 1024, "{caps:?}");
        assert!(caps.per_bottle * 4 <= caps.total, "{caps:?}");
        let (asked, clamped) = WaitCaps::resolve(1024, Some(16_384), Some(1_024));
        assert_eq!(asked, caps);
        assert_eq!(clamped.len(), 2);
        let (small, clamped) = WaitCaps::resolve(1024, Some(10), Some(2));
        assert_eq!(
            small,
            WaitCaps {
                total: 10,
                per_bottle: 2
            }
        );
        assert!(clamped.is_empty());
    }

    #[test]
    fn a_tiny_limit_still_lets_one_call_wait() {
        let caps = WaitCaps::allowed(16);
        assert_eq!(
            caps,
            WaitCaps {
                total: 1,
                per_bottle: 1
            }
        );
    }
}
