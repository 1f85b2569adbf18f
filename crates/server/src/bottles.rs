//! Attribution: the bottle registered for a source address, looked up in the store and
//! reused for a short time (a bottle removed with the CLI stops being served within that
//! time; an unregistered address is remembered for the same time).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use supervise_store::{Bottle, Store, StoreResult};

/// A short-lived cache of `bottle_for_ip`.
#[derive(Debug)]
pub(crate) struct BottleCache {
    ttl: Duration,
    entries: Mutex<HashMap<IpAddr, (Instant, Option<Bottle>)>>,
}

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

    /// The live bottle for `ip`, if any.
    pub(crate) async fn lookup(&self, store: &Store, ip: IpAddr) -> StoreResult<Option<Bottle>> {
        if let Some((at, bottle)) = self.entries.lock().expect("not poisoned").get(&ip)
            && at.elapsed() < self.ttl
        {
            return Ok(bottle.clone());
        }
        let bottle = store.bottle_for_ip(ip).await?;
        let mut entries = self.entries.lock().expect("not poisoned");
        if entries.len() >= MAX_ENTRIES {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
        }
        entries.insert(ip, (Instant::now(), bottle.clone()));
        Ok(bottle)
    }
}
