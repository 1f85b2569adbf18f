//! The one shutdown signal every task and every waiting call listens to, in two steps:
//! *started* (stop accepting, answer waiting calls `pending`, stop the background readers)
//! and *drained* (the drain time is over: drop the connections still open, file what the
//! writer has queued and stop it).

use tokio::sync::watch;

/// Where the server is in its shutdown. Ordered: each step implies the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Serving,
    Started,
    Drained,
}

/// A handle on the shutdown signal; cheap to clone, one per task or call that listens.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown {
    /// A `watch` and not a `broadcast` or a `Notify`: a listener that subscribes late, or
    /// looks only now and then, still sees the latest step, and any number of listeners
    /// cost one shared value.
    step: watch::Receiver<Step>,
}

/// The side that moves the shutdown forward; owned by `serve`. Dropping it counts as
/// *drained*, so no task outlives a `serve` that returned early.
#[derive(Debug)]
pub(crate) struct Trigger {
    step: watch::Sender<Step>,
}

/// A new signal, not started.
pub(crate) fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(Step::Serving);
    (Trigger { step: tx }, Shutdown { step: rx })
}

impl Trigger {
    /// Shutdown begins: waiting calls answer `pending` and background readers stop.
    pub(crate) fn start(&self) {
        self.advance(Step::Started);
    }

    /// The drain time is over: connections still open are dropped and the writer stops.
    pub(crate) fn drained(&self) {
        self.advance(Step::Drained);
    }

    fn advance(&self, to: Step) {
        self.step.send_if_modified(|s| {
            let moved = *s < to;
            *s = (*s).max(to);
            moved
        });
    }
}

impl Shutdown {
    /// Whether shutdown has begun.
    pub(crate) fn is_started(&self) -> bool {
        *self.step.borrow() >= Step::Started || self.step.has_changed().is_err()
    }

    /// Resolves once shutdown has begun (at once if it already has).
    pub(crate) async fn started(&self) {
        self.reached(Step::Started).await;
    }

    /// Resolves once the drain time is over (at once if it already is).
    pub(crate) async fn drained(&self) {
        self.reached(Step::Drained).await;
    }

    async fn reached(&self, step: Step) {
        let mut rx = self.step.clone();
        // An error means the trigger is gone, which counts as every step reached.
        let _ = rx.wait_for(|s| *s >= step).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::timeout;

    const SOON: Duration = Duration::from_millis(100);

    #[tokio::test]
    async fn steps_are_seen_in_order_by_early_and_late_listeners() {
        let (trigger, early) = channel();
        assert!(!early.is_started());
        assert!(timeout(SOON, early.started()).await.is_err());
        trigger.start();
        let late = early.clone();
        assert!(late.is_started());
        timeout(SOON, early.started()).await.unwrap();
        assert!(timeout(SOON, late.drained()).await.is_err());
        trigger.drained();
        timeout(SOON, late.drained()).await.unwrap();
        // Going back is not a thing.
        trigger.start();
        timeout(SOON, early.drained()).await.unwrap();
    }

    #[tokio::test]
    async fn a_dropped_trigger_means_drained() {
        let (trigger, shutdown) = channel();
        drop(trigger);
        assert!(shutdown.is_started());
        timeout(SOON, shutdown.drained()).await.unwrap();
    }
}
