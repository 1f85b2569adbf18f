//! `approve`, `modify` and `reject`: one proposal by id, or in bulk every pending proposal
//! of a bottle whose change matches a glob. Each decision prints one confirming line (for
//! an approval counted toward a quorum not yet reached, how many of how many).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Map, Value};
use supervise_store::{
    Flag, Kind, Proposal, Status, StatusFilter, Store, StoreError, Verdict, change, clock, glob,
};

use super::{Ctx, bottle_name};
use crate::cli::BulkArgs;
use crate::render::{self, Color};

/// What to decide, as the operator typed it.
#[derive(Debug, Clone)]
pub enum Action {
    Approve,
    Modify(Map<String, Value>),
    Reject,
}

impl Action {
    fn verb(&self) -> &'static str {
        match self {
            Action::Approve => "approve",
            Action::Modify(_) => "modify",
            Action::Reject => "reject",
        }
    }

    fn verdict(&self) -> Verdict {
        match self {
            Action::Approve => Verdict::Approve,
            Action::Modify(patch) => Verdict::Modify(patch.clone()),
            Action::Reject => Verdict::Reject,
        }
    }
}

/// How to decide: the note for the agent, the grant's length, and `--yes`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Decide<'a> {
    pub note: Option<&'a str>,
    pub grant_for: Option<Duration>,
    /// The operator confirmed flagged changes on the command line.
    pub yes: bool,
}

/// Asks for the confirmation a flagged change needs ([`Proposal::needs_confirmation`]):
/// `--yes`, else a prompt when stdin and stderr are a terminal; refused otherwise, before
/// anything is decided.
fn confirm(how: &Decide<'_>, verb: &str, what: &str, flags: &[Flag]) -> Result<()> {
    if how.yes {
        return Ok(());
    }
    let names = super::queue::flag_names(flags, ", ");
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        let mut err = std::io::stderr();
        write!(err, "{what} is flagged ({names}). {verb} it anyway? [y/N] ")?;
        err.flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            return Ok(());
        }
        bail!("{what} was not {verb}d: not confirmed");
    }
    bail!("{what} is flagged ({names}): confirm with --yes to {verb} it (nothing was decided)");
}

/// Decides one proposal and prints what happened.
pub async fn one(
    ctx: &Ctx,
    store: &Store,
    id: &str,
    action: Action,
    how: Decide<'_>,
    out: &mut dyn Write,
) -> Result<()> {
    let actor = ctx.actor()?;
    let verdict = action.verdict();
    if verdict != Verdict::Reject {
        let p = match store.show_for(id, &actor).await {
            Ok((p, _)) => p,
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot {} proposal {id}", action.verb())));
            }
        };
        let flags = p.flags_to_confirm(&verdict);
        if !flags.is_empty() {
            confirm(&how, action.verb(), &format!("proposal {}", p.id), &flags)?;
        }
    }
    let grant_for = how.grant_for;
    let decided = match store.decide(id, verdict, &actor, how.note, grant_for).await {
        Ok(p) => p,
        Err(e @ StoreError::Invalid { .. }) => {
            return Err(
                anyhow::Error::new(e).context(format!("cannot {} proposal {id}", action.verb()))
            );
        }
        Err(e) => return Err(e.into()),
    };
    let name = bottle_name(store, &decided.host, &decided.bottle).await?;
    let line = confirmation(ctx, &decided, &name, grant_for);
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// `approved 019a… (demo: egress a.com:443); grant 019b… for 30m 0s [flags: …]`, the
/// bottle `HOST/SLUG` when several hosts have its slug ([`bottle_name`], `name`).
///
/// Built from the decided proposal, its bottle's name and the operator's `--for` alone,
/// with no further read: a bulk decision prints one of these per line, so its cost must
/// not grow with the bottle's grants.
fn confirmation(ctx: &Ctx, p: &Proposal, name: &str, grant_for: Option<Duration>) -> String {
    let s = ctx.style;
    let kind = p.kind.as_str();
    let mut what = render::change_text(p.kind, &p.change);
    let changed = match p.status {
        Status::Pending => p.quorum.change.as_ref(),
        _ => p.decision.as_ref().and_then(|d| d.change.as_ref()),
    };
    if let Some(granted) = changed
        && granted != &p.change
    {
        what = format!("{what} -> {}", render::change_text(p.kind, granted));
    }
    if p.status == Status::Pending {
        // An approval counted toward a quorum that is not yet reached.
        return format!(
            "approval {} of {} recorded for {} ({}: {kind} {what}); another operator must approve it",
            p.quorum.given,
            p.quorum.needed,
            s.paint(Color::Cyan, &p.id),
            name
        );
    }
    let mut line = format!(
        "{} {} ({}: {kind} {what})",
        super::queue::paint_status(s, p.status),
        s.paint(Color::Cyan, &p.id),
        name
    );
    if let Some(grant_id) = p.decision.as_ref().and_then(|d| d.grant_id.as_ref()) {
        line.push_str(&grant_text(grant_id.as_str(), grant_for));
    }
    if !p.flags.is_empty() {
        line.push_str(&format!(
            " {}",
            s.paint(
                Color::Red,
                &format!("[flags: {}]", super::queue::flag_names(&p.flags, ", "))
            )
        ));
    }
    line
}

/// `; grant ID until revoked` or `; grant ID for 30m 0s`: the grant was written in the
/// decision's transaction with exactly this length, so there is nothing to look up.
fn grant_text(grant_id: &str, grant_for: Option<Duration>) -> String {
    match grant_for {
        Some(d) => format!(
            "; grant {grant_id} for {}",
            clock::humanize(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        ),
        None => format!("; grant {grant_id} until revoked"),
    }
}

/// Decides every pending proposal of `--bottle` of `--kind` whose host (egress) or ref
/// (git-push) matches `--match`, skipping flagged ones unless `--include-flagged`.
/// Exits 1 when nothing matched or any decision was refused (the others still happen).
pub async fn bulk(
    ctx: &Ctx,
    store: &Store,
    bulk: &BulkArgs,
    action: Action,
    how: Decide<'_>,
    out: &mut dyn Write,
) -> Result<()> {
    let (note, grant_for) = (how.note, how.grant_for);
    let (Some(slug), Some(kind), Some(pattern)) = (&bulk.bottle, bulk.kind, &bulk.pattern) else {
        bail!("--bottle, --kind and --match go together");
    };
    let kind = Kind::parse(kind.as_str()).expect("KindArg names a store kind");
    let matching: Vec<Proposal> = store
        .list(Some(slug), StatusFilter::Pending)
        .await?
        .into_iter()
        .filter(|p| p.kind == kind && matches(pattern, p))
        .collect();
    if matching.is_empty() {
        bail!("no pending {kind} proposal of bottle {slug} matches {pattern:?}");
    }
    let s = ctx.style;
    let verb = action.verb();
    let verdict = action.verdict();
    let to_confirm: Vec<Flag> = if bulk.include_flagged && !bulk.dry_run {
        matching
            .iter()
            .flat_map(|p| p.flags_to_confirm(&verdict))
            .collect()
    } else {
        Vec::new()
    };
    if !to_confirm.is_empty() {
        let mut flags = to_confirm;
        flags.sort_by_key(|f| f.as_str());
        flags.dedup();
        confirm(&how, verb, "a matching proposal", &flags)?;
    }
    let (mut done, mut skipped, mut failed) = (0, 0, 0);
    // Each bottle's name, read once: `SLUG` alone may match bottles of several hosts.
    let mut names: HashMap<(&str, &str), String> = HashMap::new();
    for p in &matching {
        let key = (p.host.as_str(), p.bottle.as_str());
        if let Entry::Vacant(slot) = names.entry(key) {
            slot.insert(bottle_name(store, key.0, key.1).await?);
        }
        let name = &names[&key];
        let what = format!("{name}: {} {}", kind, render::change_text(kind, &p.change));
        let risky = change::needs_confirmation(&p.flags);
        if risky && !bulk.include_flagged {
            skipped += 1;
            writeln!(
                out,
                "skipped {} ({what}) {}: flagged, decide it alone or add --include-flagged",
                s.paint(Color::Cyan, &p.id),
                s.paint(
                    Color::Red,
                    &format!("[flags: {}]", super::queue::flag_names(&p.flags, ", "))
                )
            )?;
            continue;
        }
        if bulk.dry_run {
            done += 1;
            writeln!(out, "would {verb} {} ({what})", s.paint(Color::Cyan, &p.id))?;
            continue;
        }
        match store
            .decide(&p.id, action.verdict(), &ctx.actor()?, note, grant_for)
            .await
        {
            Ok(decided) => {
                done += 1;
                writeln!(out, "{}", confirmation(ctx, &decided, name, grant_for))?;
            }
            Err(
                e @ (StoreError::NotPending { .. }
                | StoreError::ProposalNotFound(_)
                | StoreError::AlreadyApproved { .. }),
            ) => {
                failed += 1;
                writeln!(out, "refused {} ({what}): {e}", s.paint(Color::Cyan, &p.id))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let past = match action {
        Action::Approve => "approved",
        Action::Modify(_) => "modified",
        Action::Reject => "rejected",
    };
    let summary = if bulk.dry_run {
        format!("dry run: would {verb} {done}, skip {skipped} flagged; nothing was changed")
    } else {
        format!("{past} {done}, skipped {skipped} flagged, refused {failed}")
    };
    writeln!(out, "{summary}")?;
    out.flush()?;
    if failed > 0 {
        bail!(
            "{failed} of {} matching proposals could not be {past}",
            matching.len()
        );
    }
    Ok(())
}

/// The glob is matched against the host for egress, and for git-push against the full
/// ref or, for a branch, its short name (`feature/*` matches `refs/heads/feature/x`).
fn matches(pattern: &str, p: &Proposal) -> bool {
    let field = |name: &str| p.change.get(name).and_then(Value::as_str).unwrap_or("");
    match p.kind {
        Kind::Egress => glob::matches(&pattern.to_ascii_lowercase(), field("host")),
        Kind::GitPush => {
            let reference = field("ref");
            glob::matches(pattern, reference)
                || reference
                    .strip_prefix("refs/heads/")
                    .is_some_and(|short| glob::matches(pattern, short))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_text_needs_no_lookup() {
        assert_eq!(grant_text("g1", None), "; grant g1 until revoked");
        assert_eq!(
            grant_text("g1", Some(Duration::from_secs(1800))),
            "; grant g1 for 30m 0s"
        );
        assert_eq!(
            grant_text("g1", Some(Duration::from_secs(2))),
            "; grant g1 for 2s"
        );
    }
}
