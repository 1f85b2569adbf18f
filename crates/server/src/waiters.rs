//! Waiting for decisions. One watcher task per server follows the store's change feed (a
//! subscriber of [`crate::feed`]) and wakes the calls waiting on the proposals it names; a
//! waiter holds no database connection while it waits.
//!
//! Calls on the same proposal of the same bottle share one [`Slot`]: the store hands a
//! decision out exactly once (`take_decision` archives it), so the slot keeps the delivered
//! outcome and every call waiting on it receives the same decision.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use supervise_store::{BottleId, Delivery, EventKind, Proposal, Store, StoreError, StoreResult};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::feed::{Subscription, Update};
use crate::shutdown::Shutdown;

type Key = (BottleId, String);

/// The registry of waited-on proposals.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    /// A `std` mutex: held only to look up, add or remove a slot, never across an `.await`.
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
    /// True while the change feed cannot be read: waiters then look at the store every
    /// [`RECHECK`] instead of sleeping until they are woken. An atomic, not a lock: every
    /// waiter reads it on every turn and only the watcher writes it.
    feed_failing: AtomicBool,
}

/// What the calls on one proposal share.
#[derive(Debug)]
struct Slot {
    /// Bumped when the feed mentions the proposal or a decision was delivered. A `watch` of
    /// a counter: any number of calls listen, a wake never queues up, and a call busy
    /// looking at the store when it is bumped still sees the change on its next wait.
    wake: watch::Sender<u64>,
    /// The delivered outcome, once one call has taken it from the store. An async mutex:
    /// it is held across the store's `take_decision`, so of the calls on one proposal one
    /// takes and the others wait for, then share, what it took.
    taken: tokio::sync::Mutex<Option<Delivery>>,
}

/// A registration; dropping it (e.g. when the client disconnects) unregisters.
#[derive(Debug)]
pub(crate) struct Guard<'a> {
    waiters: &'a Waiters,
    key: Key,
    slot: Arc<Slot>,
}

/// How a wait ended.
#[derive(Debug)]
pub(crate) enum Waited {
    /// Decided, expired, or no longer open (another poll took it).
    Delivered(Box<Delivery>),
    /// Withdrawn while the call waited (from another call, or with its bottle).
    Withdrawn(Box<Proposal>),
    /// The grace window ran out.
    TimedOut,
    /// The server is shutting down.
    ShuttingDown,
}

impl Waiters {
    /// Registers interest in a proposal. Register before the first look at the store, so a
    /// decision landing between the look and the wait is not missed.
    pub(crate) fn register(&self, bottle_id: BottleId, id: &str) -> Guard<'_> {
        let key = (bottle_id, id.to_owned());
        let slot = self
            .slots
            .lock()
            .expect("not poisoned")
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    wake: watch::Sender::new(0),
                    taken: tokio::sync::Mutex::new(None),
                })
            })
            .clone();
        Guard {
            waiters: self,
            key,
            slot,
        }
    }

    /// Wakes every waiting call (the feed failed or recovered: each looks at the store).
    fn wake_all(&self) {
        for slot in self.slots.lock().expect("not poisoned").values() {
            slot.wake.send_modify(|n| *n += 1);
        }
    }

    /// Records whether the change feed can be read, waking every waiter on a change.
    pub(crate) fn set_feed_failing(&self, failing: bool) {
        if self.feed_failing.swap(failing, Ordering::SeqCst) != failing {
            self.wake_all();
        }
    }

    /// Delivers, in one store transaction, the outcomes of every waited-on proposal among
    /// `keys` (a feed read's decisions and expiries), hands each to its slot, and wakes the
    /// waiting calls, which then answer without touching the store. A slot a call is taking
    /// from right now is left to that call. Keys nobody waits on are only woken (nothing).
    /// Returns how many outcomes it delivered.
    pub(crate) async fn deliver_batch(&self, store: &Store, keys: Vec<Key>) -> usize {
        let slots: Vec<(Key, Arc<Slot>)> = {
            let map = self.slots.lock().expect("not poisoned");
            keys.iter()
                .filter_map(|k| map.get(k).map(|s| (k.clone(), s.clone())))
                .collect()
        };
        // Hold each slot's outcome while the batch runs, so no call takes it meanwhile. A
        // key named twice in one read fails `try_lock` the second time: no duplicates.
        let mut held = Vec::new();
        for (key, slot) in &slots {
            if let Ok(taken) = slot.taken.try_lock()
                && taken.is_none()
            {
                held.push((key, slot, taken));
            }
        }
        let mut count = 0;
        if !held.is_empty() {
            let items: Vec<Key> = held.iter().map(|(k, _, _)| (*k).clone()).collect();
            match Box::pin(store.take_decisions(&items)).await {
                Ok(delivered) => {
                    for ((_, _, taken), d) in held.iter_mut().zip(delivered) {
                        // A removed generation's item is left to its waiters, who are told.
                        if let Ok(d @ (Delivery::Decided(_) | Delivery::Expired(_))) = d {
                            **taken = Some(d);
                            count += 1;
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "batch delivery failed; waiting calls will take their own")
                }
            }
        }
        drop(held);
        for (b, id) in &keys {
            self.wake(*b, id);
        }
        count
    }

    /// Wakes the calls waiting on this proposal, if any.
    pub(crate) fn wake(&self, bottle_id: BottleId, id: &str) {
        let slots = self.slots.lock().expect("not poisoned");
        if let Some(slot) = slots.get(&(bottle_id, id.to_owned())) {
            slot.wake.send_modify(|n| *n += 1);
        }
    }

    /// A poll (`check-proposal`): takes from the store itself, so of concurrent polls exactly
    /// one gets the decision, and hands what it took to the calls waiting on the same
    /// proposal, which receive it too. A decision the waiting calls already took was
    /// archived then: the poll finds nothing, as it would in the store.
    pub(crate) async fn poll(
        &self,
        store: &Store,
        bottle_id: BottleId,
        id: &str,
    ) -> StoreResult<Delivery> {
        let slot = self
            .slots
            .lock()
            .expect("not poisoned")
            .get(&(bottle_id, id.to_owned()))
            .cloned();
        let Some(slot) = slot else {
            return Box::pin(store.take_decision(bottle_id, id)).await;
        };
        let mut taken = slot.taken.lock().await;
        if taken.is_some() {
            return Ok(Delivery::Unknown);
        }
        let d = Box::pin(store.take_decision(bottle_id, id)).await?;
        if matches!(d, Delivery::Decided(_) | Delivery::Expired(_)) {
            *taken = Some(d.clone());
            slot.wake.send_modify(|n| *n += 1);
        }
        Ok(d)
    }

    /// Waits until `deadline` for the proposal to be decided; returns the delivery as soon as
    /// it is there, and gives up at once when shutdown starts.
    pub(crate) async fn wait(
        &self,
        store: &Store,
        bottle_id: BottleId,
        id: &str,
        deadline: Instant,
        shutdown: &Shutdown,
    ) -> Waited {
        let guard = self.register(bottle_id, id);
        let mut woken = guard.slot.wake.subscribe();
        let stop = shutdown.started();
        tokio::pin!(stop);
        loop {
            if shutdown.is_started() {
                return Waited::ShuttingDown;
            }
            match guard.take(store).await {
                Ok(Delivery::Pending(_)) => {}
                // No longer open, or the bottle is gone: withdrawn is told as such.
                Ok(Delivery::Unknown) | Err(StoreError::BottleGone(_)) => {
                    return match Box::pin(store.withdrawn_proposal(bottle_id, id)).await {
                        Ok(Some(p)) => Waited::Withdrawn(Box::new(p)),
                        Ok(None) => Waited::Delivered(Box::new(Delivery::Unknown)),
                        Err(e) => {
                            tracing::warn!(proposal = id, error = %e, "reading a closed proposal failed");
                            Waited::Delivered(Box::new(Delivery::Unknown))
                        }
                    };
                }
                Ok(other) => return Waited::Delivered(Box::new(other)),
                Err(e) => {
                    tracing::warn!(proposal = id, error = %e, "checking for a decision failed; will retry")
                }
            }
            // The feed wakes us (decisions from any process, and expiries, which the sweep
            // records as events). Only while the feed cannot be read do waiters poll the
            // store, so 10,000 held calls cost no queries while they wait.
            let recheck = if self.feed_failing.load(Ordering::SeqCst) {
                (Instant::now() + RECHECK).min(deadline)
            } else {
                deadline
            };
            tokio::select! {
                changed = woken.changed() => { if changed.is_err() { return Waited::TimedOut; } }
                () = tokio::time::sleep_until(recheck) => {
                    if Instant::now() >= deadline { return Waited::TimedOut; }
                }
                () = &mut stop => return Waited::ShuttingDown,
            }
        }
    }
}

// The store's futures are boxed where a waiting call awaits them: they are kilobytes each
// (sqlx's state machines), and inline they would size every held call's state for the
// moment it talks to the store rather than for the long wait.

/// How often a waiter looks at the store without being woken, while the feed is failing.
const RECHECK: Duration = Duration::from_secs(1);

impl Guard<'_> {
    /// `take_decision` shared by every call on this proposal: the first to find the
    /// decision takes it from the store; the others get the same delivery.
    pub(crate) async fn take(&self, store: &Store) -> StoreResult<Delivery> {
        let mut taken = self.slot.taken.lock().await;
        if let Some(d) = taken.as_ref() {
            return Ok(d.clone());
        }
        let d = Box::pin(store.take_decision(self.key.0, &self.key.1)).await?;
        if matches!(d, Delivery::Decided(_) | Delivery::Expired(_)) {
            *taken = Some(d.clone());
            self.slot.wake.send_modify(|n| *n += 1);
        }
        Ok(d)
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut slots = self.waiters.slots.lock().expect("not poisoned");
        // The map's reference and ours: we are the last one.
        if Arc::strong_count(&self.slot) == 2 {
            slots.remove(&self.key);
        }
    }
}

/// The watcher: for each batch of the feed, wakes the waiters of the proposals it names and
/// delivers the outcomes among them in one transaction, until shutdown starts. Batches that
/// queued up while it delivered are taken together, so one transaction carries everything
/// read since the last; and after a delivery it asks the feed for its next read at once,
/// so while decisions keep arriving they are read and delivered back to back, each batch
/// as large as what arrived during the previous delivery. While the feed cannot be read,
/// waiters look at the store themselves.
pub(crate) async fn watch_feed(
    store: Store,
    waiters: Arc<Waiters>,
    mut feed: Subscription,
    shutdown: Shutdown,
) {
    use futures_util::FutureExt as _;
    let stop = shutdown.started();
    tokio::pin!(stop);
    loop {
        let update = tokio::select! {
            update = feed.next() => update,
            () = &mut stop => return,
        };
        let mut outcomes = Vec::new();
        let mut next = update;
        loop {
            match next {
                None => return,
                Some(Update::Failing(failing)) => waiters.set_feed_failing(failing),
                Some(Update::Events(events)) => {
                    for ev in events.iter() {
                        if let (Some(bottle_id), Some(id)) = (ev.bottle_id, &ev.proposal_id) {
                            if OUTCOMES.contains(&ev.event) {
                                outcomes.push((bottle_id, String::from(id.clone())));
                            } else {
                                waiters.wake(bottle_id, id);
                            }
                        }
                    }
                }
            }
            // Whatever else is already there (`next` is cancel-safe).
            match feed.next().now_or_never() {
                Some(more) => next = more,
                None => break,
            }
        }
        if outcomes.is_empty() {
            continue;
        }
        let named = outcomes.len();
        let delivered = waiters.deliver_batch(&store, outcomes).await;
        tracing::debug!(
            named,
            delivered,
            "feed outcomes delivered in one transaction"
        );
        if delivered > 0 {
            feed.read_now();
        }
    }
}

/// Feed events after which a waited-on proposal can be delivered. (`withdrawn` only wakes
/// its waiters, which then read the withdrawal: there is nothing to deliver.)
const OUTCOMES: [EventKind; 4] = [
    EventKind::Approved,
    EventKind::Modified,
    EventKind::Rejected,
    EventKind::Expired,
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use supervise_store::{Actor, Kind, NewProposal, StoreOptions, Verdict};

    async fn decided_without_wake(feed_failing: bool) -> (Waited, Duration) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("w.db"), StoreOptions::default())
            .await
            .unwrap();
        let b = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap();
        let p = store
            .propose(NewProposal {
                bottle_id: b.id,
                kind: Kind::Egress,
                change: json!({"host": "a.example"}),
                justification: "test".into(),
                quorum: None,
            })
            .await
            .unwrap()
            .into_proposal();
        let waiters = Arc::new(Waiters::default());
        waiters.set_feed_failing(feed_failing);
        let (_stop, shutdown) = crate::shutdown::channel();
        let started = Instant::now();
        let task = {
            let (waiters, store, id) = (waiters.clone(), store.clone(), p.id.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_millis(2500);
                waiters.wait(&store, b.id, &id, deadline, &shutdown).await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Decided, but nobody reads the feed: no wake reaches the waiter.
        store
            .decide(&p.id, Verdict::Approve, &Actor::cli("op"), None, None)
            .await
            .unwrap();
        let waited = task.await.unwrap();
        (waited, started.elapsed())
    }

    #[tokio::test]
    async fn one_batch_delivers_every_waited_on_decision_of_a_feed_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("b.db"), StoreOptions::default())
            .await
            .unwrap();
        let b = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for host in ["a.example", "b.example", "c.example"] {
            let p = store
                .propose(NewProposal {
                    bottle_id: b.id,
                    kind: Kind::Egress,
                    change: json!({ "host": host }),
                    justification: "test".into(),
                    quorum: None,
                })
                .await
                .unwrap()
                .into_proposal();
            ids.push(String::from(p.id));
        }
        let waiters = Waiters::default();
        let guards: Vec<_> = ids.iter().map(|id| waiters.register(b.id, id)).collect();
        let cli = Store::open(store.path(), StoreOptions::default())
            .await
            .unwrap();
        for id in &ids[..2] {
            cli.decide(id, Verdict::Approve, &Actor::cli("op"), None, None)
                .await
                .unwrap();
        }
        // The first proposal is named twice, as a feed read can: delivered once all the same.
        let mut keys: Vec<Key> = ids.iter().map(|id| (b.id, id.clone())).collect();
        keys.push((b.id, ids[0].clone()));
        waiters.deliver_batch(&store, keys).await;
        // The two decided ones were archived by the batch and wait in their slots.
        for (id, guard) in ids[..2].iter().zip(&guards) {
            assert_eq!(
                store.take_decision(b.id, id).await.unwrap(),
                Delivery::Unknown
            );
            assert!(matches!(
                guard.take(&store).await.unwrap(),
                Delivery::Decided(_)
            ));
        }
        assert!(matches!(
            guards[2].take(&store).await.unwrap(),
            Delivery::Pending(_)
        ));
        let delivered = store
            .audit(None)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.event == EventKind::Delivered)
            .count();
        assert_eq!(delivered, 2);
    }

    #[tokio::test]
    async fn a_healthy_feed_means_no_polling_while_waiting() {
        let (waited, took) = decided_without_wake(false).await;
        assert!(matches!(waited, Waited::TimedOut), "{waited:?}");
        assert!(took >= Duration::from_millis(2400), "{took:?}");
    }

    #[tokio::test]
    async fn a_failing_feed_falls_back_to_looking_every_second() {
        let (waited, took) = decided_without_wake(true).await;
        assert!(matches!(waited, Waited::Delivered(_)), "{waited:?}");
        assert!(took < Duration::from_millis(2400), "{took:?}");
    }
}
