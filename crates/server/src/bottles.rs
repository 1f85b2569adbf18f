//! Attribution: the bottle registered for a source address, looked up in the store and
//! reused for a short time (an unregistered address is remembered for the same time).
//!
//! The cache is never trusted with isolation: every agent-side store method checks that the
//! generation it is given is still live and refuses with `BottleGone` otherwise, so a bottle
//! removed (and perhaps re-added on the same address) with the CLI is never served from a
//! stale entry. On that refusal the tool drops the entry and attributes the request again,
//! once ([`BottleCache::reattribute`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use supervise_store::{Bottle, Store, StoreResult};

/// A short-lived cache of `bottle_for_ip`.
#[derive(Debug)]
pub(crate) struct BottleCache {
    ttl: Duration,
    entries: Mutex<HashMap<IpAddr, Entry>>,
}

/// When an address was looked up, and its live bottle then (`None`: unregistered).
type Entry = (Instant, Option<Arc<Bottle>>);

/// A tool found that the generation it was attributed to has been removed: attribute again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stale;

/// Entries kept before old ones are dropped.
const MAX_ENTRIES: usize = 4096;

impl BottleCache {
    /// A cache whose entries live `ttl` (zero: no caching).
    pub(crate) fn new(ttl: Duration) -> Self {
        BottleCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The live bottle for `ip`, if any: shared with the cache, so a request copies no
    /// strings to be attributed.
    pub(crate) async fn lookup(
        &self,
        store: &Store,
        ip: IpAddr,
    ) -> StoreResult<Option<Arc<Bottle>>> {
        if let Some((at, bottle)) = self.entries.lock().expect("not poisoned").get(&ip)
            && at.elapsed() < self.ttl
        {
            return Ok(bottle.clone());
        }
        let bottle = store.bottle_for_ip(ip).await?.map(Arc::new);
        let mut entries = self.entries.lock().expect("not poisoned");
        if entries.len() >= MAX_ENTRIES {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
        }
        entries.insert(ip, (Instant::now(), bottle.clone()));
        Ok(bottle)
    }

    /// Attributes a request again after the store refused `stale` as removed: forgets every
    /// entry naming that generation and looks its address up in the store. `None`: no live
    /// bottle has the address now.
    pub(crate) async fn reattribute(
        &self,
        store: &Store,
        stale: &Bottle,
    ) -> StoreResult<Option<Arc<Bottle>>> {
        self.entries
            .lock()
            .expect("not poisoned")
            .retain(|ip, (_, b)| *ip != stale.ip && b.as_ref().is_none_or(|b| b.id != stale.id));
        let fresh = self.lookup(store, stale.ip).await?;
        Ok(fresh.filter(|b| b.id != stale.id))
    }
}
