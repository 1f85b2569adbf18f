//! `refs/supervise/ID` in the gate repository: the objects of a push filed as proposal ID,
//! kept for review until the proposal ends (git deletes a refused push's quarantine). The
//! new objects are copied out of the quarantine (`rev-list --objects | pack-objects` inside
//! it, `index-pack` into the repository's own object store) and the ref is written with the
//! quarantine's variables removed, as git forbids ref updates from inside it.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::git::Git;

/// The namespace of the kept refs; the gate refuses pushes into it.
pub const PREFIX: &str = "refs/supervise/";

/// git in the repository proper, outside the push's quarantine.
fn outside(args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.args(args)
        .env_remove("GIT_QUARANTINE_PATH")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
    c
}

fn run(mut c: Command, what: &str) -> Result<Vec<u8>> {
    let out = c
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run git {what}"))?;
    if !out.status.success() {
        bail!(
            "git {what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// Keeps the objects of `new` under `refs/supervise/ID`.
pub fn keep(git: &Git, id: &str, new: &str) -> Result<()> {
    let objects = git.bytes(&["rev-list", "--objects", new, "--not", "--all"])?;
    if !objects.is_empty() {
        let mut pack = git.spawn_with_stdin(&["pack-objects", "--stdout", "-q"])?;
        let mut stdin = pack.stdin.take().context("pack-objects has no stdin")?;
        let writer = std::thread::spawn(move || stdin.write_all(&objects));
        let stdout = pack.stdout.take().context("pack-objects has no stdout")?;
        let mut index = outside(&["index-pack", "--stdin"]);
        let out = index
            .stdin(stdout)
            .output()
            .context("cannot run git index-pack")?;
        let _ = writer.join();
        let status = pack.wait()?;
        if !status.success() || !out.status.success() {
            bail!(
                "cannot copy the pushed objects: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    let name = format!("{PREFIX}{id}");
    run(outside(&["update-ref", &name, new]), "update-ref")?;
    Ok(())
}

/// The proposal ids that have a kept ref.
pub fn kept() -> Result<Vec<String>> {
    let out = run(
        outside(&["for-each-ref", "--format=%(refname)", PREFIX]),
        "for-each-ref",
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.strip_prefix(PREFIX))
        .map(str::to_string)
        .collect())
}

/// Removes the kept ref of proposal `id`.
pub fn drop_ref(id: &str) -> Result<()> {
    run(
        outside(&["update-ref", "-d", &format!("{PREFIX}{id}")]),
        "update-ref -d",
    )?;
    Ok(())
}
