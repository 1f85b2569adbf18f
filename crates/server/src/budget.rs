//! Limits on calls held in their grace window: one for the whole server and one per bottle.
//! Past either, a proposal is still filed but its call answers `pending` at once instead of
//! waiting: nothing is refused, and the agent polls `check-proposal` like after a timeout.
//!
//! A per-connection limit needs no code: HTTP/1.1 serves one request at a time on a
//! connection, so a connection holds at most one waiting call. A bottle that opens many
//! connections is bounded by the per-bottle limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use supervise_store::BottleId;

/// Counts of waiting calls, shared by every request.
#[derive(Debug)]
pub(crate) struct WaitBudget {
    max_total: usize,
    max_per_bottle: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_bottle: HashMap<BottleId, usize>,
}

/// A waiting call's place; dropping it gives the place back.
#[derive(Debug)]
pub(crate) struct WaitPermit {
    budget: Arc<WaitBudget>,
    bottle_id: BottleId,
}

/// Why a call may not wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `--max-waiting` calls are waiting on this server.
    Server(usize),
    /// `--max-waiting-per-bottle` calls of this bottle are waiting.
    Bottle(usize),
}

impl WaitBudget {
    /// `0` means no limit.
    pub(crate) fn new(max_total: usize, max_per_bottle: usize) -> Arc<WaitBudget> {
        let unlimited = |n: usize| if n == 0 { usize::MAX } else { n };
        Arc::new(WaitBudget {
            max_total: unlimited(max_total),
            max_per_bottle: unlimited(max_per_bottle),
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a place for a call of `bottle_id`, or says which limit is reached.
    pub(crate) fn try_acquire(self: &Arc<Self>, bottle_id: BottleId) -> Result<WaitPermit, Full> {
        let mut c = self.counts.lock().expect("not poisoned");
        if c.total >= self.max_total {
            return Err(Full::Server(self.max_total));
        }
        let mine = c.per_bottle.get(&bottle_id).copied().unwrap_or(0);
        if mine >= self.max_per_bottle {
            return Err(Full::Bottle(self.max_per_bottle));
        }
        c.total += 1;
        c.per_bottle.insert(bottle_id, mine + 1);
        Ok(WaitPermit {
            budget: self.clone(),
            bottle_id,
        })
    }

    /// Calls waiting now.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.counts.lock().expect("not poisoned").total
    }
}

impl Drop for WaitPermit {
    fn drop(&mut self) {
        let mut c = self.budget.counts.lock().expect("not poisoned");
        c.total -= 1;
        if let Some(n) = c.per_bottle.get_mut(&self.bottle_id) {
            *n -= 1;
            if *n == 0 {
                c.per_bottle.remove(&self.bottle_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_hold_and_places_come_back() {
        let b = WaitBudget::new(3, 2);
        let a1 = b.try_acquire(BottleId::from_row(1)).unwrap();
        let _a2 = b.try_acquire(BottleId::from_row(1)).unwrap();
        assert_eq!(
            b.try_acquire(BottleId::from_row(1)).unwrap_err(),
            Full::Bottle(2)
        );
        let _b1 = b.try_acquire(BottleId::from_row(2)).unwrap();
        assert_eq!(
            b.try_acquire(BottleId::from_row(3)).unwrap_err(),
            Full::Server(3)
        );
        drop(a1);
        assert_eq!(b.waiting(), 2);
        let _a3 = b.try_acquire(BottleId::from_row(1)).unwrap();
        assert_eq!(b.waiting(), 3);
    }

    #[test]
    fn zero_is_unlimited() {
        let b = WaitBudget::new(0, 0);
        let permits: Vec<_> = (0..1000)
            .map(|i| b.try_acquire(BottleId::from_row(i % 3)).unwrap())
            .collect();
        assert_eq!(b.waiting(), 1000);
        drop(permits);
        assert_eq!(b.waiting(), 0);
    }
}
