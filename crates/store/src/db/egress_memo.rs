//! What the egress decision reads about one bottle (the bottle, its egress grants in force,
//! its undecided egress proposals), remembered while the database is unchanged, so a proxy
//! helper's lookup costs microseconds and is exactly as fresh as a read.
//!
//! The proof of "unchanged" is the version of [`fresh`](super::fresh) (SQLite's data
//! version, PostgreSQL's snapshot): a lookup reads the version first (or lookups that all
//! arrived before it, [`Store::egress_lookups`](super::Store::egress_lookups), share one
//! read); a snapshot read after the version `v` was read is kept under `v`, and used only
//! while a later lookup reads `v` again (no commit, of any connection or process, landed
//! since before the snapshot was read). A new version forgets every snapshot. Time is applied at each lookup, not at the
//! read: a grant or proposal past its `expires_at` is not used. On SQLite without a watch,
//! nothing is remembered: every lookup reads.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::fresh::Stamp;
use crate::model::{Bottle, BottleRef, Grant, ProposalId, Timestamp};

/// Bottles remembered at most; a full memo is emptied rather than grown.
const BOTTLES_MAX: usize = 4096;

/// One bottle's egress state as read in one transaction, with what matching needs taken
/// out of each change once, when read, rather than at every lookup.
#[derive(Debug)]
pub(super) struct Snapshot {
    /// `None`: no live bottle under the slug or address.
    pub bottle: Option<Arc<Bottle>>,
    /// Egress grants not ended and not past `expires_at` when read, oldest first.
    pub grants: Vec<Granted>,
    /// Undecided egress proposals, oldest first.
    pub pending: Vec<Asked>,
}

/// A grant in force and its change's terms.
#[derive(Debug)]
pub(super) struct Granted {
    pub grant: Arc<Grant>,
    /// The change's host and port; `None` when it has none (it then covers nothing).
    pub dest: Option<(String, u64)>,
    /// Limited to methods or a path prefix ([`crate::change::is_limited`]).
    pub limited: bool,
    /// The change's methods (`None`: every method) and path prefix
    /// ([`crate::change::limits`]).
    pub methods: Option<Vec<String>>,
    pub prefix: Option<String>,
}

/// An undecided egress proposal: its id, the change's host and port, its expiry.
#[derive(Debug)]
pub(super) struct Asked {
    pub id: ProposalId,
    pub dest: Option<(String, u64)>,
    pub expires_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Slug(String),
    Ip(IpAddr),
}

impl From<BottleRef<'_>> for Key {
    fn from(b: BottleRef<'_>) -> Key {
        match b {
            BottleRef::Slug(s) => Key::Slug(s.to_owned()),
            BottleRef::Ip(ip) => Key::Ip(ip),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Memo {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The version every remembered snapshot was read after.
    version: Option<Stamp>,
    bottles: HashMap<Key, Arc<Snapshot>>,
}

impl Memo {
    /// The snapshot remembered for `key` at `version` (the version a lookup just read),
    /// forgetting every snapshot of another version.
    pub(super) fn get(&self, version: &Stamp, key: &Key) -> Option<Arc<Snapshot>> {
        let mut state = self.state.lock().expect("not poisoned");
        if state.version.as_ref() != Some(version) {
            state.bottles.clear();
            state.version = Some(version.clone());
            return None;
        }
        state.bottles.get(key).cloned()
    }

    /// Remembers a snapshot read after `version` was read, unless another version has
    /// been read since.
    pub(super) fn put(&self, version: Stamp, key: Key, snapshot: Arc<Snapshot>) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.version.as_ref() != Some(&version) {
            return;
        }
        if state.bottles.len() >= BOTTLES_MAX {
            state.bottles.clear();
        }
        state.bottles.insert(key, snapshot);
    }
}
