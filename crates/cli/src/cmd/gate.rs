//! `supervise gate install` writes a bare repository's `pre-receive` hook; `supervise gate
//! pre-receive` is that hook. A push is never held for a person: it is accepted when every
//! ref update is covered, and otherwise refused at once with the proposal id to approve and
//! the command to repeat. Everything the pusher reads is on stderr (git shows it as
//! `remote:` lines), agent text escaped.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use supervise_store::change::is_zero;
use supervise_store::{GateRef, GateVerdict, Proposed, RefUpdate, Status, Store, StoreError};

use super::Ctx;
use crate::gate::git::{Git, push_options};
use crate::gate::keep;
use crate::gate::push::{self, Line};
use crate::render;

/// The line that marks a hook as ours, so `install` never overwrites someone else's.
pub const MARKER: &str = "# written by `supervise gate install`";

/// Writes `REPO/hooks/pre-receive` and turns on push options.
pub async fn install(
    ctx: &Ctx,
    repo: &Path,
    bottle: &str,
    remote: &str,
    force: bool,
    out: &mut dyn Write,
) -> Result<()> {
    supervise_store::change::validate_remote(remote)
        .map_err(|e| anyhow!("--remote {remote:?}: {}", crate::exit::message(&e.into())))?;
    let git = Git {
        dir: Some(repo.to_path_buf()),
    };
    let bare = git
        .run(&["rev-parse", "--is-bare-repository"])
        .with_context(|| format!("{} is not a git repository", repo.display()))?;
    if bare.trim() != "true" {
        bail!(
            "{} is not a bare repository (make one with `git init --bare`)",
            repo.display()
        );
    }
    // Refused before anything is touched: a password never goes into the hook.
    refuse_password_in_hook(ctx)?;
    let store = ctx.open().await?;
    let known = store.bottle(bottle).await;
    // The hook names the host when it may differ from the store's default there (a given
    // --host-id, or a shared PostgreSQL database whose default is the hostname).
    let host_flag = match (&ctx.host, ctx.shown_db()) {
        (Some(_), _) | (None, supervise_store::Location::Postgres(_)) => {
            format!(" --host-id {}", quote(store.host()))
        }
        _ => String::new(),
    };
    if known?.is_none() {
        bail!("no bottle {bottle:?} (register it with `supervise bottle add {bottle} --ip IP`)");
    }
    let db = hook_db_flag(ctx)?;
    let exe = std::env::current_exe().context("cannot find the supervise binary")?;
    let hook = repo.join("hooks").join("pre-receive");
    if let Ok(existing) = std::fs::read_to_string(&hook)
        && !existing.contains(MARKER)
        && !force
    {
        bail!(
            "{} exists and was not written by supervise; --force replaces it",
            hook.display()
        );
    }
    let text = format!(
        "#!/bin/sh\n{MARKER}: every push is decided by supervise.\nexec {} {db}{host_flag} gate pre-receive --bottle {} --remote {}\n",
        quote(&exe.to_string_lossy()),
        quote(bottle),
        quote(remote),
    );
    std::fs::create_dir_all(hook.parent().expect("hooks/ has a parent"))?;
    std::fs::write(&hook, text).with_context(|| format!("cannot write {}", hook.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))?;
    }
    git.run(&["config", "receive.advertisePushOptions", "true"])?;
    // Recorded for `supervise doctor`, by absolute path (it checks the file later).
    let recorded = std::path::absolute(&hook).unwrap_or_else(|_| hook.clone());
    store.record_gate_install(&recorded, bottle, remote).await?;
    store.close().await;
    writeln!(
        out,
        "installed the gate in {} for bottle {bottle} (upstream {remote})",
        repo.display()
    )?;
    writeln!(
        out,
        "point the bottle's remote at it: git remote set-url {remote} <URL of {}>",
        repo.display()
    )?;
    Ok(())
}

/// How the hook names the database: `--db-file PATH` when the location came from one (the
/// hook then holds no secret), else `--db` with a file's absolute path (the hook runs
/// elsewhere) or a URL without a password. A URL with a password is refused: the hook is a
/// file others may read, and git runs it with its line as the command line.
fn hook_db_flag(ctx: &Ctx) -> Result<String> {
    if let Some(file) = &ctx.db_file {
        let file = std::path::absolute(file)
            .with_context(|| format!("cannot resolve {}", file.display()))?;
        return Ok(format!("--db-file {}", quote(&file.to_string_lossy())));
    }
    refuse_password_in_hook(ctx)?;
    let db = match ctx.shown_db() {
        supervise_store::Location::File(_) => std::fs::canonicalize(&ctx.db)
            .with_context(|| format!("cannot resolve {}", ctx.db.display()))?,
        supervise_store::Location::Postgres(_) => ctx.db.clone(),
    };
    Ok(format!("--db {}", quote(&db.to_string_lossy())))
}

/// A database URL with a password, given directly (`--db`, `SUPERVISE_DB`), is refused
/// for a hook: the hook is a file others may read, and git runs its line as a command line.
fn refuse_password_in_hook(ctx: &Ctx) -> Result<()> {
    let location = ctx.shown_db();
    if ctx.db_file.is_none() && location.has_password() {
        bail!(
            "the database URL ({location}) carries a password, which the hook would hold in a \
             file others may read and pass on its command line: put the URL in a file only \
             the service's users can read (chmod 600, or 640 with a shared group) and run \
             `supervise --db-file FILE gate install ...`"
        );
    }
    Ok(())
}

/// One word or path for `sh`, single-quoted.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The hook: reads git's lines on stdin, decides the whole push, says why on stderr.
pub async fn pre_receive(ctx: &Ctx, bottle: &str, remote: &str, grace: u64) -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("push refused: cannot read the ref updates from git")?;
    let lines = push::parse_lines(&input)?;
    if let Some(l) = lines.iter().find(|l| l.reference.starts_with(keep::PREFIX)) {
        bail!(
            "push refused: {} is where the gate keeps pushed objects for review; push to \
             another ref",
            render::one_line(&l.reference)
        );
    }
    // The database first: a missing one refuses before any git runs.
    let store = ctx.open().await.map_err(refusal)?;
    let verdict = match summarise(&lines) {
        Ok(updates) => decide(&store, bottle, remote, updates, grace).await,
        Err(e) => Err(e),
    };
    if let Ok(v) = &verdict {
        keep_objects(&store, &lines, v).await;
    }
    store.close().await;
    let verdict = verdict.map_err(refusal)?;
    let err = std::io::stderr();
    tell(&mut err.lock(), &lines, remote, &verdict)?;
    if verdict.accepted {
        return Ok(());
    }
    let waiting = verdict
        .refs
        .iter()
        .filter(|r| !matches!(r, GateRef::Approved(_) | GateRef::Granted(_)))
        .count();
    bail!(
        "push refused: {waiting} of {} ref updates need an operator's decision",
        lines.len()
    )
}

/// Each update with its summary and justification, computed with git.
fn summarise(lines: &[Line]) -> Result<Vec<RefUpdate>> {
    let git = Git::default();
    let options = push_options();
    let mut updates = Vec::with_capacity(lines.len());
    for line in lines {
        let mut summary = push::summarise(&git, line).context("cannot read the pushed commits")?;
        let content = push::content(&git, line).context("cannot read the pushed content")?;
        let diff = content.map(|c| {
            if !c.flags.is_empty() {
                let names: Vec<&str> = c.flags.iter().map(|f| f.as_str()).collect();
                summary["content"] = names.into();
            }
            c.diff
        });
        let why = push::justification(&options, &summary, line);
        updates.push(push::ref_update(line, summary, why, diff));
    }
    Ok(updates)
}

/// Keeps the objects of each update filed for review under `refs/supervise/ID`, and drops
/// the refs of proposals that have ended. A failure here is told, not a refusal: the
/// decision stands and the record is in the database.
async fn keep_objects(store: &Store, lines: &[Line], verdict: &GateVerdict) {
    let git = Git::default();
    let mut kept = Vec::new();
    for (line, r) in lines.iter().zip(&verdict.refs) {
        if let GateRef::Proposed(Proposed::Created(p) | Proposed::Repeated(p)) = r
            && !is_zero(&line.new)
        {
            kept.push(p.id.to_string());
            if let Err(e) = keep::keep(&git, &p.id, &line.new) {
                eprintln!("supervise gate: cannot keep the pushed objects: {e:#}");
            }
        }
    }
    let ended = match keep::kept() {
        Ok(ids) => {
            let ids: Vec<String> = ids.into_iter().filter(|i| !kept.contains(i)).collect();
            store.ended_proposals(&ids).await.unwrap_or_default()
        }
        Err(_) => Vec::new(),
    };
    for id in ended {
        if let Err(e) = keep::drop_ref(&id) {
            eprintln!("supervise gate: cannot remove {}{id}: {e:#}", keep::PREFIX);
        }
    }
}

/// Asks the store; with a grace period, waits that long for decisions and asks again.
async fn decide(
    store: &Store,
    bottle: &str,
    remote: &str,
    updates: Vec<RefUpdate>,
    grace: u64,
) -> Result<GateVerdict> {
    let deadline = Instant::now() + Duration::from_secs(grace);
    let mut verdict = store.gate_push(bottle, remote, updates.clone()).await?;
    while !verdict.accepted && Instant::now() < deadline {
        let pending: Vec<String> = verdict
            .refs
            .iter()
            .filter_map(|r| match r {
                GateRef::Proposed(Proposed::Created(p) | Proposed::Repeated(p)) => {
                    Some(p.id.to_string())
                }
                _ => None,
            })
            .collect();
        if pending.len() != verdict.refs.iter().filter(|r| needs(r)).count() {
            break; // a rejection or a refusal: waiting cannot help
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut decided = true;
        for id in &pending {
            decided &= store.show(id).await?.0.status != Status::Pending;
        }
        if decided {
            verdict = store.gate_push(bottle, remote, updates).await?;
            break;
        }
    }
    Ok(verdict)
}

fn needs(r: &GateRef) -> bool {
    !matches!(r, GateRef::Approved(_) | GateRef::Granted(_))
}

/// A store error as the pusher's reason; nothing was recorded.
fn refusal(err: anyhow::Error) -> anyhow::Error {
    let why = match err.downcast_ref::<StoreError>() {
        Some(StoreError::Busy) => "the supervise database is busy (another process holds its \
             write lock); nothing was recorded, push again in a moment"
            .to_string(),
        _ => format!("{}; nothing was recorded", crate::exit::message(&err)),
    };
    anyhow!("push refused: {why}")
}

/// What each ref update got, as `supervise gate:` lines.
fn tell(err: &mut dyn Write, lines: &[Line], remote: &str, verdict: &GateVerdict) -> Result<()> {
    let say = |err: &mut dyn Write, text: String| writeln!(err, "supervise gate: {text}");
    for (line, r) in lines.iter().zip(&verdict.refs) {
        let what = format!(
            "{} {}..{}",
            render::one_line(&line.reference),
            short(&line.old),
            short(&line.new)
        );
        match r {
            GateRef::Approved(p) if verdict.accepted => {
                say(err, format!("{what}: accepted, approval {} used", p.id))?
            }
            GateRef::Granted(g) if verdict.accepted => {
                say(err, format!("{what}: accepted by grant {}", g.id))?
            }
            GateRef::Approved(_) | GateRef::Granted(_) => say(
                err,
                format!("{what}: covered, but not used: the rest of the push is refused"),
            )?,
            GateRef::Proposed(Proposed::AutoRejected(p) | Proposed::Ruled(p))
                if p.status == Status::Rejected =>
            {
                let d = p.decision.as_ref();
                let by = d.map_or("an operator", |d| d.decided_by.as_str());
                let note = d
                    .and_then(|d| d.note.as_deref())
                    .map_or("(no note)".to_string(), render::one_line);
                say(
                    err,
                    format!("{what}: rejected by {}: {note}", render::one_line(by)),
                )?;
                say(
                    err,
                    format!("  proposal {}; do not push the same commits again", p.id),
                )?;
            }
            GateRef::Proposed(proposed) => {
                let p = proposed.proposal();
                say(err, format!("{what}: waiting for an operator's approval"))?;
                say(err, format!("  proposal {}", p.id))?;
                say(
                    err,
                    format!("  the operator runs: supervise approve {}", p.id),
                )?;
                say(
                    err,
                    format!(
                        "  after approval, repeat the same push: {}",
                        repeat_command(remote, line, p.change["summary"]["force"] == true)
                    ),
                )?;
                say(
                    err,
                    format!(
                        "  (check-proposal {} tells the bottle when it is decided)",
                        p.id
                    ),
                )?;
            }
            GateRef::Refused(why) => {
                say(err, format!("{what}: refused: {}", render::one_line(why)))?
            }
        }
    }
    err.flush()?;
    Ok(())
}

/// The exact push that repeats this ref update.
fn repeat_command(remote: &str, line: &Line, force: bool) -> String {
    let reference = render::one_line(&line.reference);
    if is_zero(&line.new) {
        format!("git push {remote} :{reference}")
    } else if force {
        format!(
            "git push --force-with-lease={reference}:{} {remote} {}:{reference}",
            line.old, line.new
        )
    } else {
        format!("git push {remote} {}:{reference}", line.new)
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(7)]
}
