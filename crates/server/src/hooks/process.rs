//! One run of the operator's hook: the event as a JSON document on stdin, the server-made
//! values in the environment, its own process group, killed with that group at the
//! timeout or when the run is dropped.

use std::process::Stdio;

use supervise_store::Event;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::HookConfig;

/// The JSON document a hook reads on stdin: the event's one document (SPEC "Events"), with
/// the proposal's console page when a console URL is configured.
fn event_document(config: &HookConfig, ev: &Event) -> String {
    let doc = ev.document();
    let doc = match &config.console_url {
        Some(url) => doc.with_console(url),
        None => doc,
    };
    serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into())
}

/// Runs the hook once for `ev`, counting the run, and the failure if it fails.
pub(super) async fn run_one(config: &HookConfig, ev: &Event) {
    config.counted.runs.inc();
    if !run_and_wait(config, ev).await {
        config.counted.failures.inc();
    }
}

/// Runs the hook for `ev`; whether it exited successfully in time.
async fn run_and_wait(config: &HookConfig, ev: &Event) -> bool {
    let doc = event_document(config, ev);
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
            return false;
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
            true
        }
        Ok(Ok(out)) => {
            group.disarm();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stderr: String = stderr.trim().chars().take(300).collect();
            tracing::warn!(event = %ev.event, seq = ev.seq, status = %out.status, stderr, "hook failed");
            false
        }
        Ok(Err(e)) => {
            group.disarm();
            tracing::warn!(event = %ev.event, seq = ev.seq, error = %e, "hook failed");
            false
        }
        Err(_) => {
            // The child itself is killed on drop; the guard below kills the rest of its group.
            tracing::warn!(
                event = %ev.event,
                seq = ev.seq,
                timeout_s = config.timeout.as_secs_f64(),
                "hook timed out and was killed"
            );
            false
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
