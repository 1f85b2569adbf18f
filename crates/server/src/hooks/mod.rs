//! `--on-event CMD`: runs the operator's command once per audit event, with the event as one
//! JSON document on stdin. A subscriber of the store's change feed ([`crate::feed`]), so
//! decisions written by the CLI in another process are seen too, and never in a request's
//! path: a slow or failing hook is logged and killed after a timeout.
//!
//! Fair: events wait in one lane per bottle generation (and one for events of no bottle),
//! and free slots take the lanes round-robin, one run per lane at a time. So a bottle's
//! events run in order, and one bottle's backlog delays another bottle's next event by at
//! most one hook run per other busy lane, however long that backlog is. A lane keeps at
//! most [`LANE`] events in memory; the rest of its backlog waits in the database and is read
//! again (through the `(bottle_id, seq)` index) when the lane has room.
//!
//! Durable: the runner's position, the highest `seq` at or below which every event is done
//! (a low-water mark), is kept in the store after each run. A run is done when the hook
//! exited (successfully or not), could not be started, or was killed at its timeout; a run
//! cut short by shutdown is not, and runs again after the restart. A restarted server
//! resumes from the stored position, so every event reaches the hook at least once, also
//! those written while no server ran.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use supervise_store::{BottleId, Event, Store};
use tokio::task::JoinSet;

use crate::feed::{Subscription, Update};

mod process;

use crate::shutdown::Shutdown;
use process::run_one;

/// How hooks run.
#[derive(Debug, Clone)]
pub(crate) struct HookConfig {
    /// Run with `sh -c`.
    pub(crate) command: String,
    /// A hook still running after this is killed (with its process group).
    pub(crate) timeout: Duration,
    /// Hooks running at once (at most one per lane); further events wait in their lane.
    pub(crate) concurrency: usize,
    /// The console's public URL (`SUPERVISE_CONSOLE_URL`): each document then carries its
    /// proposal's page as `url`.
    pub(crate) console_url: Option<String>,
    /// Moved once per run, and once more per failed run (`supervise_hook_*_total`).
    pub(crate) counted: crate::metrics::HookCounters,
}

impl HookConfig {
    /// The defaults for a command: 10 s timeout, 4 at once.
    pub(crate) fn new(command: impl Into<String>) -> HookConfig {
        HookConfig {
            command: command.into(),
            timeout: Duration::from_secs(10),
            concurrency: 4,
            console_url: None,
            counted: crate::metrics::HookCounters::default(),
        }
    }
}

/// Events one lane keeps in memory; the rest of its backlog is read again from the store.
const LANE: usize = 64;
/// How long the runner waits before retrying a store read or write that failed.
const RETRY: Duration = Duration::from_millis(500);

/// The lane an event waits in: its bottle generation, or `None` for events of no bottle.
type LaneKey = Option<BottleId>;

/// One bottle generation's events not yet done.
#[derive(Debug, Default)]
struct Lane {
    /// Events in `seq` order, at most [`LANE`].
    queue: VecDeque<Event>,
    /// `Some(r)`: the lane's events after `r` (up to the scanned position) are not in
    /// memory and are read again from the store; later events of the lane are skipped.
    behind: Option<i64>,
    /// The event whose hook is running (one per lane at a time: per-bottle order).
    running: Option<i64>,
    /// Whether the lane is in the round-robin ring.
    queued: bool,
}

impl Lane {
    fn has_work(&self) -> bool {
        !self.queue.is_empty() || self.behind.is_some()
    }
}

/// The runner's state: lanes, the round-robin ring of lanes ready to run, and positions.
#[derive(Debug)]
struct Fair {
    lanes: HashMap<LaneKey, Lane>,
    /// Lanes with work and no run in progress, in turn order.
    ring: VecDeque<LaneKey>,
    /// Every event at or below this has been taken from the feed (into a lane, or left in
    /// the database behind a full lane).
    scanned: i64,
    /// The position last recorded in the store.
    recorded: i64,
}

impl Fair {
    fn new(from: i64) -> Fair {
        Fair {
            lanes: HashMap::new(),
            ring: VecDeque::new(),
            scanned: from,
            recorded: from,
        }
    }

    /// Takes events from the feed into their lanes.
    fn take(&mut self, events: &[Event]) {
        for ev in events {
            if ev.seq <= self.scanned {
                continue;
            }
            self.scanned = ev.seq;
            let key = ev.bottle_id;
            let lane = self.lanes.entry(key).or_default();
            if lane.behind.is_none() {
                if lane.queue.len() < LANE {
                    lane.queue.push_back(ev.clone());
                } else {
                    // Full: this event and the lane's later ones stay in the database.
                    lane.behind = lane.queue.back().map(|e| e.seq);
                }
            }
            self.ready(key);
        }
    }

    /// Puts a lane with work and no run in the ring, once.
    fn ready(&mut self, key: LaneKey) {
        if let Some(lane) = self.lanes.get_mut(&key)
            && lane.has_work()
            && lane.running.is_none()
            && !lane.queued
        {
            lane.queued = true;
            self.ring.push_back(key);
        }
    }

    /// A finished run: the lane may take its next turn, at the back of the ring.
    fn finished(&mut self, key: LaneKey) {
        if let Some(lane) = self.lanes.get_mut(&key) {
            lane.running = None;
            if lane.has_work() {
                self.ready(key);
            } else {
                self.lanes.remove(&key);
            }
        }
    }

    /// The low-water mark: every event at or below it is done.
    fn done_through(&self) -> i64 {
        let mut mark = self.scanned;
        for lane in self.lanes.values() {
            let pending = [
                lane.running.map(|s| s - 1),
                lane.queue.front().map(|e| e.seq - 1),
                lane.behind,
            ];
            for p in pending.into_iter().flatten() {
                mark = mark.min(p);
            }
        }
        mark
    }
}

/// Runs hooks for every event after `from` (the stored position, or the end of the feed on
/// a first start), fairly across bottles, recording the position as runs finish, until
/// shutdown starts. Hooks still running then are killed with their process group.
pub(crate) async fn run(
    config: HookConfig,
    store: Store,
    mut feed: Subscription,
    from: i64,
    shutdown: Shutdown,
) {
    let stop = shutdown.started();
    tokio::pin!(stop);
    let config = Arc::new(config);
    let slots = config.concurrency.max(1);
    let mut fair = Fair::new(from);
    // Dropping the set (on shutdown) aborts the runs, which kills their processes.
    let mut runs: JoinSet<()> = JoinSet::new();
    let mut lane_of: HashMap<tokio::task::Id, LaneKey> = HashMap::new();
    loop {
        // Start runs while slots are free, taking the lanes in turn.
        while runs.len() < slots {
            let Some(key) = fair.ring.pop_front() else {
                break;
            };
            match next_of_lane(&store, &mut fair, key).await {
                Ok(Some(ev)) => {
                    let config = config.clone();
                    let id = runs.spawn(async move { run_one(&config, &ev).await }).id();
                    lane_of.insert(id, key);
                }
                Ok(None) => fair.finished(key),
                Err(e) => {
                    tracing::warn!(error = %e, "reading a hook backlog failed; retrying");
                    fair.ready(key);
                    tokio::time::sleep(RETRY).await;
                    break;
                }
            }
        }
        tokio::select! {
            () = &mut stop => return,
            Some(done) = runs.join_next_with_id(), if !runs.is_empty() => {
                let id = match &done {
                    Ok((id, ())) => *id,
                    Err(e) => {
                        tracing::warn!(error = %e, "a hook run panicked; counted as done");
                        e.id()
                    }
                };
                if let Some(key) = lane_of.remove(&id) {
                    fair.finished(key);
                }
                let mark = fair.done_through();
                if mark > fair.recorded {
                    match store.advance_hook_position(mark).await {
                        Ok(()) => fair.recorded = mark,
                        // Kept in memory; the next run's end records it again.
                        Err(e) => tracing::warn!(error = %e, seq = mark, "recording the hook position failed"),
                    }
                }
            }
            update = feed.next() => match update {
                Some(Update::Events(events)) => fair.take(&events),
                // The feed's reader logs its failures; the backlog waits in the database.
                Some(Update::Failing(_)) => {}
                None => return,
            },
        }
    }
}

/// Takes the next event of a lane whose turn it is, reading the lane's backlog from the
/// store first when only the database holds it, and marks it running.
async fn next_of_lane(
    store: &Store,
    fair: &mut Fair,
    key: LaneKey,
) -> supervise_store::StoreResult<Option<Event>> {
    let scanned = fair.scanned;
    let Some(lane) = fair.lanes.get_mut(&key) else {
        return Ok(None);
    };
    lane.queued = false;
    if lane.queue.is_empty()
        && let Some(after) = lane.behind
    {
        let events = store
            .bottle_events_between(key, after, scanned, LANE as u32)
            .await?;
        lane.behind = match events.last() {
            Some(last) if events.len() == LANE => Some(last.seq),
            _ => None,
        };
        lane.queue.extend(events);
    }
    let ev = lane.queue.pop_front();
    lane.running = ev.as_ref().map(|e| e.seq);
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant;
    use supervise_store::{Actor, BottleId, Kind, NewProposal, Store, StoreOptions, Verdict};

    async fn store_with_bottle(dir: &std::path::Path) -> (Store, BottleId) {
        let store = Store::open(dir.join("s.db"), StoreOptions::default())
            .await
            .unwrap();
        let b = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), &Actor::cli("test"))
            .await
            .unwrap();
        (store, b.id)
    }

    fn proposal(bottle_id: BottleId, host: &str) -> NewProposal {
        NewProposal {
            bottle_id,
            kind: Kind::Egress,
            change: json!({ "host": host }),
            justification: "test".into(),
            quorum: None,
        }
    }

    /// The hook runner on a feed read every 20 ms from the store's current end.
    async fn start_runner(
        store: &Store,
        config: HookConfig,
    ) -> (crate::shutdown::Trigger, tokio::task::JoinHandle<()>) {
        let (trigger, shutdown) = crate::shutdown::channel();
        let from = store.last_seq().await.unwrap();
        let feed = crate::feed::Feed::new(store.clone(), from);
        let runner = tokio::spawn(run(
            config,
            store.clone(),
            feed.subscribe(),
            from,
            shutdown.clone(),
        ));
        tokio::spawn(feed.run(Duration::from_millis(20), shutdown));
        (trigger, runner)
    }

    async fn wait_for_lines(path: &std::path::Path, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(String::from).collect();
            if lines.len() >= n || Instant::now() > deadline {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn hook_gets_each_event_as_json_with_env() {
        let dir = tempfile::tempdir().unwrap();
        let (store, bottle) = store_with_bottle(dir.path()).await;
        let out = dir.path().join("events.jsonl");
        let mut config = HookConfig::new(format!(
            "read -r doc; printf '%s\\t%s\\t%s\\n' \"$SUPERVISE_EVENT\" \"$SUPERVISE_PROPOSAL_ID\" \"$doc\" >> {}",
            out.display()
        ));
        config.concurrency = 1; // keep the file's lines in event order
        config.console_url = Some("https://console.internal:8443/".into());
        let (stop, runner) = start_runner(&store, config).await;
        tokio::time::sleep(Duration::from_millis(100)).await;

        let p = store.propose(proposal(bottle, "a.example")).await.unwrap();
        let id = p.proposal().id.clone();
        // A second process (the CLI) deciding is seen through the feed too.
        let cli = Store::open(store.path(), StoreOptions::default())
            .await
            .unwrap();
        cli.decide(&id, Verdict::Reject, &Actor::cli("alice"), Some("no"), None)
            .await
            .unwrap();

        let lines = wait_for_lines(&out, 2).await;
        assert_eq!(lines.len(), 2, "{lines:?}");
        let fields: Vec<Vec<&str>> = lines.iter().map(|l| l.split('\t').collect()).collect();
        assert_eq!(fields[0][0], "proposed");
        assert_eq!(fields[0][1], id);
        assert_eq!(fields[1][0], "rejected");
        let doc: serde_json::Value = serde_json::from_str(fields[1][2]).unwrap();
        assert_eq!(doc["event"], "rejected");
        assert_eq!(doc["actor"], "operator:alice");
        assert_eq!(doc["bottle"], "demo");
        assert_eq!(doc["proposal_id"], id.as_str());
        assert_eq!(doc["note"], "no");
        assert_eq!(doc["kind"], "egress");
        assert_eq!(doc["via"], "cli");
        assert_eq!(
            doc["url"],
            format!("https://console.internal:8443/proposals/{id}")
        );
        let proposed: serde_json::Value = serde_json::from_str(fields[0][2]).unwrap();
        assert!(proposed["via"].is_null(), "{proposed}");
        let mut keys: Vec<&str> = proposed
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut fields = supervise_store::EventDoc::FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        assert_eq!(
            keys, fields,
            "the hook reads the store's one event document"
        );
        stop.start();
        runner.await.unwrap();
    }

    #[tokio::test]
    async fn slow_hook_is_killed_and_does_not_stop_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let (store, bottle) = store_with_bottle(dir.path()).await;
        let out = dir.path().join("seen");
        let config = HookConfig {
            command: format!(
                "read -r doc; echo \"$SUPERVISE_EVENT\" >> {}; sleep 30",
                out.display()
            ),
            timeout: Duration::from_millis(300),
            concurrency: 2,
            console_url: None,
            counted: Default::default(),
        };
        let (stop, runner) = start_runner(&store, config).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        for host in ["a.example", "b.example", "c.example", "d.example"] {
            store.propose(proposal(bottle, host)).await.unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "filing is never held up by hooks"
        );
        // Four events, two slots, 300 ms each before the kill: all run within seconds.
        let lines = wait_for_lines(&out, 4).await;
        assert_eq!(lines, vec!["proposed"; 4]);
        assert!(started.elapsed() < Duration::from_secs(10));
        stop.start();
        runner.await.unwrap();
    }

    fn event(seq: i64, bottle: i64) -> Event {
        Event {
            seq,
            at: supervise_store::Timestamp::now(),
            event: supervise_store::EventKind::Proposed,
            actor: "bottle:x".into(),
            via: None,
            host: None,
            bottle: Some("x".into()),
            bottle_id: Some(BottleId::from_row(bottle)),
            proposal_id: None,
            grant_id: None,
            kind: None,
            change: None,
            note: None,
        }
    }

    /// Takes the next lane's next event from memory (no store in these tests).
    fn turn(fair: &mut Fair) -> Option<(LaneKey, i64)> {
        let key = fair.ring.pop_front()?;
        let lane = fair.lanes.get_mut(&key)?;
        lane.queued = false;
        let ev = lane.queue.pop_front()?;
        lane.running = Some(ev.seq);
        Some((key, ev.seq))
    }

    #[test]
    fn one_bottles_backlog_delays_anothers_event_by_one_run_at_most() {
        let mut fair = Fair::new(0);
        // Bottle 1 floods 200 events; then bottle 2 files one.
        let flood: Vec<Event> = (1..=200).map(|s| event(s, 1)).collect();
        fair.take(&flood);
        let (key, seq) = turn(&mut fair).unwrap();
        assert_eq!(seq, 1);
        fair.take(&[event(201, 2)]);
        // Bottle 1's run ends; the next turn is bottle 2's, not bottle 1's second event.
        fair.finished(key);
        assert_eq!(turn(&mut fair).map(|(_, s)| s), Some(201));
        // Memory holds one lane's worth; the rest of the flood waits in the database.
        assert_eq!(
            fair.lanes[&Some(BottleId::from_row(1))].queue.len(),
            LANE - 1
        );
        assert_eq!(
            fair.lanes[&Some(BottleId::from_row(1))].behind,
            Some(LANE as i64)
        );
    }

    #[test]
    fn the_position_is_the_low_water_mark_of_what_is_done() {
        let mut fair = Fair::new(10);
        fair.take(&[event(11, 1), event(12, 2), event(13, 1)]);
        let (a, _) = turn(&mut fair).unwrap(); // 11 runs
        let (b, _) = turn(&mut fair).unwrap(); // 12 runs
        assert_eq!(fair.done_through(), 10);
        fair.finished(b); // 12 done, 11 still running
        assert_eq!(fair.done_through(), 10);
        fair.finished(a); // 11 done; 13 waits
        assert_eq!(fair.done_through(), 12);
        let (a, _) = turn(&mut fair).unwrap();
        fair.finished(a);
        assert_eq!(fair.done_through(), 13);
        assert!(fair.lanes.is_empty(), "finished lanes are dropped");
    }

    #[tokio::test]
    async fn a_backlog_older_than_the_feed_and_longer_than_a_lane_runs_in_order_and_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let (store, bottle) = store_with_bottle(dir.path()).await;
        let from = store.last_seq().await.unwrap();
        // Written "while no server ran": before the feed's start, more than a lane holds.
        for i in 0..(LANE + 10) {
            let p = store
                .propose(proposal(bottle, &format!("h{i}.example")))
                .await
                .unwrap();
            store.withdraw(bottle, &p.proposal().id).await.unwrap();
        }
        let end = store.last_seq().await.unwrap();
        let out = dir.path().join("seqs");
        let config = HookConfig::new(format!(
            "read -r doc; printf '%s\\n' \"$doc\" >> {}",
            out.display()
        ));
        let (trigger, shutdown) = crate::shutdown::channel();
        let feed = crate::feed::Feed::new(store.clone(), end);
        let runner = tokio::spawn(run(
            config,
            store.clone(),
            feed.subscribe_from(from),
            from,
            shutdown.clone(),
        ));
        tokio::spawn(feed.run(Duration::from_millis(20), shutdown));
        let want: Vec<i64> = ((from + 1)..=end).collect();
        let lines = wait_for_lines(&out, want.len()).await;
        let got: Vec<i64> = lines
            .iter()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(got, want, "every event once, in order");
        let deadline = Instant::now() + Duration::from_secs(5);
        while store.hook_position().await.unwrap() != Some(end) {
            assert!(Instant::now() < deadline, "the position reaches the end");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.start();
        runner.await.unwrap();
    }
}
