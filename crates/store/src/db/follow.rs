//! [`Follow`]: the one way to follow the change feed, which every reader of the trail loops
//! over (the server's feed reader and its subscribers' catch-up, the console's reader and its
//! API's backlog and stream catch-up, `list --watch`). It reads the events after its
//! position a page of [`Follow::PAGE`] at a time; between reads it waits for the store's
//! change signal ([`Store::changes`]: PostgreSQL's `NOTIFY`, SQLite's data version) and,
//! as a safety net, its interval: every [`Follow::NOTIFIED_EVERY`] while the signal is
//! live, every [`Follow::every`] while it is lost (or on a store without one). A wake-up is
//! a hint, never the data: the follower always reads the feed itself, so a lost signal
//! delays a read and never loses an event.

use std::time::Duration;

use tokio::time::Instant;

use super::{Changes, Store};
use crate::error::StoreResult;
use crate::model::Event;

/// What ended a [`Follow::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The store's change signal: something was committed, or the signal was lost or is
    /// back (so something may have been missed).
    Signal,
    /// The interval since the last read passed.
    Interval,
}

/// A position in the change feed and the means to read on from it (see the module docs).
/// Reading never waits; [`Follow::wait`] and [`Follow::next_page`] do. Every method is
/// cancel-safe: a read or wait dropped half-way loses nothing and moves nothing.
#[derive(Debug)]
pub struct Follow {
    store: Store,
    /// The last event read (or skipped with [`Follow::skip_to`]).
    position: i64,
    /// How often to read while the change signal is lost.
    every: Duration,
    /// The change signal, started at the first wait (a follower that only reads, as a
    /// catch-up does, never listens).
    changes: Option<Changes>,
    /// When the last read began: the safety-net interval counts from it.
    read_at: Instant,
    /// The last read found the end of the feed (or failed): the next page is waited for.
    caught_up: bool,
}

impl Store {
    /// A follower of the change feed from just after `after` (0: from the first event).
    pub fn follow(&self, after: i64) -> Follow {
        Follow {
            store: self.clone(),
            position: after.max(0),
            every: Follow::EVERY,
            changes: None,
            read_at: Instant::now(),
            caught_up: false,
        }
    }

    /// A follower from the feed's current end: it is given what is appended from now on.
    pub async fn follow_from_end(&self) -> StoreResult<Follow> {
        Ok(self.follow(self.last_seq().await?))
    }
}

impl Follow {
    /// Events read at once: one range scan on the primary key. A longer backlog is read
    /// a page after another, without waiting in between.
    pub const PAGE: u32 = 1000;
    /// How often a follower reads while the change signal is lost, unless told otherwise.
    pub const EVERY: Duration = Duration::from_millis(250);
    /// How often a follower reads on its own while the store's change signal is live (a
    /// safety net), unless its interval is longer.
    pub const NOTIFIED_EVERY: Duration = Duration::from_secs(2);

    /// The same follower, reading every `every` while the change signal is lost (and at
    /// least every [`Follow::NOTIFIED_EVERY`] while it is live).
    #[must_use]
    pub fn every(mut self, every: Duration) -> Follow {
        self.every = every;
        self
    }

    /// The last event read or skipped: a follower started here again reads what follows.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Whether the last read found the end of the feed (less than a full page) or failed:
    /// a caller reading a backlog reads until this is true.
    pub fn caught_up(&self) -> bool {
        self.caught_up
    }

    /// Moves the position on to `seq` without reading: the events up to it were had some
    /// other way (a page another follower read and shared). Never moves back.
    pub fn skip_to(&mut self, seq: i64) {
        self.position = self.position.max(seq);
    }

    /// The next page of events after the position, oldest first (empty at the end of the
    /// feed), and the position moved past them. Never waits for the change signal.
    pub async fn read_page(&mut self) -> StoreResult<Vec<Event>> {
        let started = Instant::now();
        let page = self.store.events_after(self.position, Self::PAGE).await;
        self.read_at = started;
        match page {
            Ok(events) => {
                if let Some(last) = events.last() {
                    self.position = last.seq;
                }
                self.caught_up = events.len() < Self::PAGE as usize;
                Ok(events)
            }
            Err(e) => {
                self.caught_up = true;
                Err(e)
            }
        }
    }

    /// Returns when the feed may have grown: the store's change signal woke it, or the
    /// interval since the last read has passed ([`Follow::NOTIFIED_EVERY`] while the signal
    /// is live, else [`Follow::every`]); says which. Starts listening for the signal at its
    /// first call, so call it from within a tokio runtime.
    pub async fn wait(&mut self) -> Woken {
        let changes = self.changes.get_or_insert_with(|| self.store.changes());
        let every = if changes.live() {
            self.every.max(Self::NOTIFIED_EVERY)
        } else {
            self.every
        };
        tokio::select! {
            () = tokio::time::sleep_until(self.read_at + every) => Woken::Interval,
            () = changes.changed() => Woken::Signal,
        }
    }

    /// The next events after the position, oldest first, never empty: at once while a
    /// backlog remains, else after waiting ([`Follow::wait`]) for something to be appended.
    /// After a failed read the next call waits before it reads again.
    pub async fn next_page(&mut self) -> StoreResult<Vec<Event>> {
        loop {
            if self.caught_up {
                self.wait().await;
            }
            let events = self.read_page().await?;
            if !events.is_empty() {
                return Ok(events);
            }
        }
    }
}
