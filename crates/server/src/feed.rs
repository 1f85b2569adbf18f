//! The one reader of the store's change feed in the server. A task follows the feed
//! ([`supervise_store::Follow`]: at once when the store's change signal says the trail may
//! have grown, PostgreSQL's `NOTIFY` or SQLite's data version, else at its interval; one
//! range scan, whatever the number of subscribers) and publishes each page as a batch; the
//! waiters' watcher and the hook runner subscribe to it. A subscriber that falls behind
//! reads the gap from the store itself with a follower of its own, page by page, so it
//! loses nothing and the reader never waits for it.

use std::sync::Arc;
use std::time::Duration;

use supervise_store::{Event, Follow, Store, Woken};
use tokio::sync::{Notify, broadcast, watch};

use crate::shutdown::Shutdown;

/// Batches kept for a subscriber that is slow to take them; past that it catches up from
/// the store.
const CAPACITY: usize = 64;
/// How long a subscriber that could not read its gap waits before it tries again.
const RETRY: Duration = Duration::from_millis(200);

/// One page of the feed, as the reader read it.
#[derive(Debug, Clone)]
struct Batch {
    /// The position the page was read after: a subscriber whose own position is older
    /// missed events and reads them first.
    after: i64,
    /// Shared, not copied, by every subscriber.
    events: Arc<[Event]>,
}

/// What a subscriber is told.
#[derive(Debug)]
pub(crate) enum Update {
    /// The next events, in order, none seen before by this subscriber.
    Events(Arc<[Event]>),
    /// The feed stopped (`true`) or started again (`false`) being readable.
    Failing(bool),
}

/// The reader, before it runs. Subscribe first: [`Feed::run`] takes it, so nobody can
/// subscribe once batches flow.
#[derive(Debug)]
pub(crate) struct Feed {
    store: Store,
    start: i64,
    /// A `broadcast`: every subscriber sees every batch and the reader never waits for a
    /// slow one; a subscriber more than [`CAPACITY`] batches behind is told it lagged and
    /// reads the gap from the store, so memory stays bounded whatever a subscriber does.
    batches: broadcast::Sender<Batch>,
    /// A `watch`: subscribers need the feed's health now, never the history of it.
    failing: watch::Sender<bool>,
    /// Asks for a read now instead of at the next tick ([`Subscription::read_now`]).
    kick: Arc<Notify>,
}

/// One subscriber's view of the feed.
#[derive(Debug)]
pub(crate) struct Subscription {
    /// Its position is the last event this subscriber was given; it reads (never waits)
    /// only to catch up.
    follow: Follow,
    batches: broadcast::Receiver<Batch>,
    failing: watch::Receiver<bool>,
    /// False once the reader is gone (its health can no longer change).
    health_open: bool,
    /// A batch received while a gap before it is being read.
    held: Option<Batch>,
    /// A subscriber that starts before the reader's start position reads up to here from
    /// the store first, without waiting for the next batch (on a quiet server there may
    /// be none for a long time).
    catch_up_to: i64,
    kick: Arc<Notify>,
}

impl Feed {
    /// A reader of the events after `start` (read it before accepting requests, so no event
    /// of this run is missed).
    pub(crate) fn new(store: Store, start: i64) -> Feed {
        let (batches, _) = broadcast::channel(CAPACITY);
        Feed {
            store,
            start,
            batches,
            failing: watch::Sender::new(false),
            kick: Arc::new(Notify::new()),
        }
    }

    /// A subscriber that will be given every event after the start position.
    pub(crate) fn subscribe(&self) -> Subscription {
        self.subscribe_from(self.start)
    }

    /// A subscriber that will be given every event after `seq`, which may be older than the
    /// reader's start (a position kept in the database): the events in between are read
    /// from the store first, page by page.
    pub(crate) fn subscribe_from(&self, seq: i64) -> Subscription {
        Subscription {
            follow: self.store.follow(seq),
            batches: self.batches.subscribe(),
            failing: self.failing.subscribe(),
            health_open: true,
            held: None,
            catch_up_to: self.start,
            kick: self.kick.clone(),
        }
    }

    /// Follows the feed, reading every `every` or at once when a subscriber asks
    /// ([`Subscription::read_now`]), and publishes what it finds, until shutdown starts. It
    /// also reads as soon as the store's change signal wakes it, and while that signal is
    /// live reads on its own only as a safety net; when the signal is lost (PostgreSQL's
    /// listener disconnected, SQLite's watch closed) it is back to `every` until the
    /// signal is back ([`Follow::wait`]).
    pub(crate) async fn run(self, every: Duration, shutdown: Shutdown) {
        let mut follow = self.store.follow(self.start).every(every);
        let stop = shutdown.started();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                woken = follow.wait() => if woken == Woken::Signal {
                    tracing::debug!("change feed woken by a notification");
                },
                () = self.kick.notified() => {}
                () = &mut stop => return,
            }
            loop {
                let after = follow.position();
                match follow.read_page().await {
                    Ok(events) => {
                        if self.set_failing(false) {
                            tracing::info!("change feed readable again");
                        }
                        if !events.is_empty() {
                            // No subscriber is not an error: nothing to tell.
                            let _ = self.batches.send(Batch {
                                after,
                                events: events.into(),
                            });
                        }
                        if follow.caught_up() {
                            break;
                        }
                    }
                    Err(e) => {
                        if self.set_failing(true) {
                            tracing::warn!(error = %e, "reading the change feed failed; waiters fall back to periodic checks");
                        }
                        break;
                    }
                }
            }
        }
    }

    /// Records the feed's health, telling subscribers only of a change; returns whether it
    /// changed.
    fn set_failing(&self, failing: bool) -> bool {
        self.failing
            .send_if_modified(|f| std::mem::replace(f, failing) != failing)
    }
}

impl Subscription {
    /// Asks the reader to read the feed now rather than at its next tick: a subscriber
    /// that just acted on a batch (the watcher delivered decisions) wants what arrived
    /// meanwhile without a fixed sleep. At most one read is owed, however often it asks.
    pub(crate) fn read_now(&self) {
        self.kick.notify_one();
    }

    /// The next update; `None` once the reader stopped. Cancel-safe: dropping the future
    /// loses nothing.
    pub(crate) async fn next(&mut self) -> Option<Update> {
        loop {
            if self.follow.position() < self.catch_up_to {
                match self.follow.read_page().await {
                    Ok(events) if !events.is_empty() => {
                        return Some(Update::Events(events.into()));
                    }
                    // Nothing after our position at all: the batches carry on from here.
                    Ok(_) => self.catch_up_to = self.follow.position(),
                    Err(e) => {
                        tracing::warn!(error = %e, "a feed subscriber could not read its backlog; retrying");
                        tokio::time::sleep(RETRY).await;
                    }
                }
                continue;
            }
            let batch = match self.held.take() {
                Some(b) => b,
                None => tokio::select! {
                    biased;
                    changed = self.failing.changed(), if self.health_open => {
                        match changed {
                            Ok(()) => return Some(Update::Failing(*self.failing.borrow_and_update())),
                            Err(_) => self.health_open = false,
                        }
                        continue;
                    }
                    got = self.batches.recv() => match got {
                        Ok(b) => b,
                        // The next batch shows the gap, which is then read from the store.
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            tracing::debug!(batches = n, "a feed subscriber fell behind; reading the gap from the store");
                            continue;
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                },
            };
            if batch.after > self.follow.position() {
                // Held before the read, so a caller that drops this future meanwhile
                // finds the batch again on its next call.
                self.held = Some(batch);
                match self.follow.read_page().await {
                    Ok(events) if !events.is_empty() => {
                        return Some(Update::Events(events.into()));
                    }
                    Ok(_) => {
                        // Nothing there after all: the batch follows on directly.
                        if let Some(b) = &self.held {
                            self.follow.skip_to(b.after);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "a feed subscriber could not read its gap; retrying");
                        tokio::time::sleep(RETRY).await;
                    }
                }
                continue;
            }
            let Some(last) = batch.events.last().map(|e| e.seq) else {
                continue;
            };
            let seen = self.follow.position();
            if last <= seen {
                continue;
            }
            let events = if batch.after == seen {
                batch.events
            } else {
                // Partly read while catching up: only the rest is new.
                batch
                    .events
                    .iter()
                    .filter(|e| e.seq > seen)
                    .cloned()
                    .collect()
            };
            self.follow.skip_to(last);
            return Some(Update::Events(events));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use supervise_store::{Actor, Kind, NewProposal, StoreOptions};

    async fn next_events(sub: &mut Subscription) -> Vec<i64> {
        loop {
            let update = tokio::time::timeout(Duration::from_secs(5), sub.next())
                .await
                .expect("an update in time")
                .expect("the reader runs");
            if let Update::Events(e) = update {
                return e.iter().map(|e| e.seq).collect();
            }
        }
    }

    #[tokio::test]
    async fn a_batch_taken_while_its_gap_is_read_survives_a_dropped_next() {
        use futures_util::FutureExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("g.db"), StoreOptions::default())
            .await
            .unwrap();
        let bottle_id = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap()
            .id;
        let start = store.last_seq().await.unwrap();
        let feed = Feed::new(store.clone(), start);
        let mut sub = feed.subscribe();
        let p = store
            .propose(NewProposal {
                bottle_id,
                kind: Kind::Egress,
                change: json!({ "host": "a.example" }),
                justification: "test".into(),
                quorum: None,
            })
            .await
            .unwrap();
        store.withdraw(bottle_id, &p.proposal().id).await.unwrap();
        let all = store.follow(start).read_page().await.unwrap();
        assert!(all.len() >= 2, "{all:?}");
        // A batch that starts after the first event: the subscriber has a gap to read
        // first. Its first `next` is dropped while that read is under way, as the watcher
        // does when it only takes what is ready.
        let _ = feed.batches.send(Batch {
            after: all[0].seq,
            events: all[1..].to_vec().into(),
        });
        // (The read usually takes a turn of sqlx's worker thread; when it does not, the
        // update is simply the first one seen.)
        let mut seen = Vec::new();
        if let Some(Some(Update::Events(e))) = sub.next().now_or_never() {
            seen.extend(e.iter().map(|e| e.seq));
        }
        // Nothing else is sent: the batch must come from the subscriber itself.
        while seen.len() < all.len() {
            seen.extend(next_events(&mut sub).await);
        }
        let want: Vec<i64> = all.iter().map(|e| e.seq).collect();
        assert_eq!(seen, want);
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event_once_in_order_even_one_that_lags() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("f.db"), StoreOptions::default())
            .await
            .unwrap();
        let bottle_id = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap()
            .id;
        let start = store.last_seq().await.unwrap();
        let feed = Feed::new(store.clone(), start);
        let mut prompt = feed.subscribe();
        let mut slow = feed.subscribe();
        let (trigger, shutdown) = crate::shutdown::channel();
        let reader = tokio::spawn(feed.run(Duration::from_millis(5), shutdown));
        let mut seen = Vec::new();
        // More batches than the channel keeps (at least one per round), while `slow` takes
        // none. Withdrawing keeps the bottle under its pending cap.
        for i in 0..(CAPACITY + 8) {
            let p = store
                .propose(NewProposal {
                    bottle_id,
                    kind: Kind::Egress,
                    change: json!({ "host": format!("h{i}.example") }),
                    justification: "test".into(),
                    quorum: None,
                })
                .await
                .unwrap();
            store.withdraw(bottle_id, &p.proposal().id).await.unwrap();
            let end = store.last_seq().await.unwrap();
            while seen.last() != Some(&end) {
                seen.extend(next_events(&mut prompt).await);
            }
        }
        let want: Vec<i64> = store
            .follow(start)
            .read_page()
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seen, want);
        let mut got = Vec::new();
        while got.len() < want.len() {
            got.extend(next_events(&mut slow).await);
        }
        assert_eq!(got, want);
        trigger.start();
        reader.await.unwrap();
        assert!(prompt.next().await.is_none());
    }
}
