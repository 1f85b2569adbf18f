//! `--on-event CMD`: runs the operator's command once per audit event, with the event as one
//! JSON document on stdin. A subscriber of the store's change feed ([`crate::feed`]), so
//! decisions written by the CLI in another process are seen too, and never in a request's
//! path: a slow or failing hook is logged and killed after a timeout, and while every slot is
//! busy the backlog waits in the database, not in memory (the subscription falls behind and
//! later reads the gap from the store).

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use supervise_store::Event;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::Semaphore;

use crate::feed::{Subscription, Update};
use crate::shutdown::Shutdown;

/// How hooks run.
#[derive(Debug, Clone)]
pub(crate) struct HookConfig {
    /// Run with `sh -c`.
    pub(crate) command: String,
    /// A hook still running after this is killed (with its process group).
    pub(crate) timeout: Duration,
    /// Hooks running at once; further events wait in the feed.
    pub(crate) concurrency: usize,
}

impl HookConfig {
    /// The defaults for a command: 10 s timeout, 4 at once.
    pub(crate) fn new(command: impl Into<String>) -> HookConfig {
        HookConfig {
            command: command.into(),
            timeout: Duration::from_secs(10),
            concurrency: 4,
        }
    }
}

/// The JSON document a hook reads on stdin (SPEC "Events").
pub(crate) fn event_document(ev: &Event) -> serde_json::Value {
    json!({
        "event": ev.event,
        "at": ev.at,
        "actor": ev.actor,
        "bottle": ev.bottle,
        "proposal_id": ev.proposal_id,
        "grant_id": ev.grant_id,
        "kind": ev.kind,
        "change": ev.change,
        "note": ev.note,
        "seq": ev.seq,
    })
}

/// Runs hooks for every event `feed` gives (every event after the position it was
/// subscribed at) until shutdown starts. Hooks still running at shutdown are killed with
/// their process group when the runtime drops them.
pub(crate) async fn run(config: HookConfig, mut feed: Subscription, shutdown: Shutdown) {
    let stop = shutdown.started();
    tokio::pin!(stop);
    // A semaphore bounds the hooks running at once; waiting for a slot holds up only this
    // task, never a request.
    let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let config = Arc::new(config);
    loop {
        let events = tokio::select! {
            () = &mut stop => return,
            update = feed.next() => match update {
                Some(Update::Events(events)) => events,
                // The feed's reader logs its failures; the backlog waits in the database.
                Some(Update::Failing(_)) => continue,
                None => return,
            },
        };
        for ev in events.iter() {
            let slot = tokio::select! {
                () = &mut stop => return,
                slot = slots.clone().acquire_owned() => slot.expect("semaphore never closed"),
            };
            let (config, ev) = (config.clone(), ev.clone());
            tokio::spawn(async move {
                run_one(&config, &ev).await;
                drop(slot);
            });
        }
    }
}

async fn run_one(config: &HookConfig, ev: &Event) {
    let doc = event_document(ev).to_string();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&config.command)
        .env("SUPERVISE_EVENT", ev.event.as_str())
        .env(
            "SUPERVISE_PROPOSAL_ID",
            ev.proposal_id.as_deref().unwrap_or(""),
        )
        .env("SUPERVISE_BOTTLE", ev.bottle.as_deref().unwrap_or(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(event = %ev.event, seq = ev.seq, error = %e, "hook could not start");
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that ignores stdin may close it early; that is not a failure.
        let _ = stdin.write_all(doc.as_bytes()).await;
        let _ = stdin.write_all(b"\n").await;
    }
    let mut group = GroupGuard(child.id());
    match tokio::time::timeout(config.timeout, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => {
            group.disarm();
            tracing::debug!(event = %ev.event, seq = ev.seq, "hook ran");
        }
        Ok(Ok(out)) => {
            group.disarm();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stderr: String = stderr.trim().chars().take(300).collect();
            tracing::warn!(event = %ev.event, seq = ev.seq, status = %out.status, stderr, "hook failed");
        }
        Ok(Err(e)) => {
            group.disarm();
            tracing::warn!(event = %ev.event, seq = ev.seq, error = %e, "hook failed")
        }
        Err(_) => {
            // The child itself is killed on drop; the guard below kills the rest of its group.
            tracing::warn!(
                event = %ev.event,
                seq = ev.seq,
                timeout_s = config.timeout.as_secs_f64(),
                "hook timed out and was killed"
            );
        }
    }
}

/// Kills a hook's process group when dropped: on timeout, and when the task is dropped
/// mid-run (server shutdown), so no hook outlives the server. A hook that exited by itself
/// disarms it: its group is gone or belongs to children it chose to leave running.
struct GroupGuard(Option<u32>);

impl GroupGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_group(pid);
        }
    }
}

/// Kills the process group a hook leads (it was started with `process_group(0)`, so its
/// group id is its pid). Refuses anything that is not a plain child's group.
#[cfg(unix)]
fn kill_group(pid: u32) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|&p| p > 1)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use supervise_store::{BottleId, Kind, NewProposal, Store, StoreOptions, Verdict};

    async fn store_with_bottle(dir: &std::path::Path) -> (Store, BottleId) {
        let store = Store::open(dir.join("s.db"), StoreOptions::default())
            .await
            .unwrap();
        let b = store
            .add_bottle("demo", "127.0.0.1".parse().unwrap(), "test")
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
        }
    }

    /// The hook runner on a feed read every 20 ms from the store's current end.
    async fn start_runner(
        store: &Store,
        config: HookConfig,
    ) -> (crate::shutdown::Trigger, tokio::task::JoinHandle<()>) {
        let (trigger, shutdown) = crate::shutdown::channel();
        let feed = crate::feed::Feed::new(store.clone(), store.last_seq().await.unwrap());
        let runner = tokio::spawn(run(config, feed.subscribe(), shutdown.clone()));
        tokio::spawn(feed.run(Duration::from_millis(20), shutdown));
        (trigger, runner)
    }

    async fn wait_for_lines(path: &std::path::Path, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
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
        let (stop, runner) = start_runner(&store, config).await;
        tokio::time::sleep(Duration::from_millis(100)).await;

        let p = store.propose(proposal(bottle, "a.example")).await.unwrap();
        let id = p.proposal().id.clone();
        // A second process (the CLI) deciding is seen through the feed too.
        let cli = Store::open(store.path(), StoreOptions::default())
            .await
            .unwrap();
        cli.decide(&id, Verdict::Reject, "alice", Some("no"), None)
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
}
