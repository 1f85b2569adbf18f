//! `supervise rules set|show|check|test`: operator rules in Cedar (docs/RULES.md). `check`
//! needs no database; `test` replays the proposals filed in a window through a candidate
//! file and exits 0 whatever it finds.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use supervise_store::rules::{Replay, Rule, RuleSet, replay};
use supervise_store::{Store, Timestamp, clock};

use super::{Ctx, print_json};
use crate::render::{self, Color};

fn read(file: &Path) -> Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))
}

/// A rules file read and checked, or every problem in it.
fn parse(file: &Path) -> Result<(String, RuleSet)> {
    let text = read(file)?;
    match RuleSet::parse(&text) {
        Ok(set) => Ok((text, set)),
        Err(e) => bail!(
            "{} is not a valid rules file; fix these and run `supervise rules check` again:\n  {}",
            file.display(),
            e.problems.join("\n  ")
        ),
    }
}

/// One policy as a line: `pypi: permit, grant 1h`.
fn summary(r: &Rule) -> String {
    let mut parts = vec![if r.permit { "permit" } else { "forbid" }.to_string()];
    if let Some(d) = r.grant {
        parts.push(format!("grant {}", clock::humanize(d.as_secs() as i64)));
    }
    if let Some(n) = r.quorum {
        parts.push(format!("quorum {n}"));
    }
    if r.shadow {
        parts.push("shadow".into());
    }
    if let Some(n) = &r.note {
        parts.push(format!("note \"{}\"", render::one_line(n)));
    }
    format!("{}: {}", r.id, parts.join(", "))
}

pub fn check(file: &Path, out: &mut dyn Write) -> Result<()> {
    let (_, set) = parse(file)?;
    writeln!(
        out,
        "{}: {} policies, all well formed",
        file.display(),
        set.rules().len()
    )?;
    for r in set.rules() {
        writeln!(out, "  {}", summary(r))?;
    }
    out.flush()?;
    Ok(())
}

pub async fn set(ctx: &Ctx, store: &Store, file: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let (text, count) = match file {
        Some(file) => {
            let (text, set) = parse(file)?;
            (text, set.rules().len())
        }
        None => (String::new(), 0),
    };
    let v = store.set_rules(&text, &ctx.actor()?).await?;
    let what = if count == 0 {
        "no rules: a human decides every proposal".to_string()
    } else {
        format!("{count} policies")
    };
    writeln!(
        out,
        "rules v{} set ({what}), sha256 {}",
        ctx.style.paint(Color::Cyan, &v.version.to_string()),
        v.sha256
    )?;
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct RuleView<'a> {
    id: &'a str,
    effect: &'static str,
    note: Option<&'a str>,
    grant_seconds: Option<u64>,
    quorum: Option<u32>,
    shadow: bool,
}

#[derive(Serialize)]
struct ShowView<'a> {
    version: i64,
    sha256: &'a str,
    set_by: &'a str,
    set_at: &'a str,
    rules: Vec<RuleView<'a>>,
    text: &'a str,
}

pub async fn show(
    ctx: &Ctx,
    store: &Store,
    version: Option<i64>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(v) = store.rules_version(version).await? else {
        match version {
            Some(n) => bail!("no rules version {n}; `supervise rules show` prints the newest"),
            None if json => {
                print_json(out, &serde_json::json!({ "version": null, "rules": [] }))?;
                return Ok(());
            }
            None => {
                writeln!(out, "no rules set: a human decides every proposal")?;
                return Ok(());
            }
        }
    };
    // Stored versions were checked when set; one this build cannot read shows its problems.
    let parsed = RuleSet::parse(&v.text);
    if json {
        let rules = parsed.as_ref().map(RuleSet::rules).unwrap_or_default();
        let view = ShowView {
            version: v.version,
            sha256: &v.sha256,
            set_by: &v.set_by,
            set_at: v.set_at.as_str(),
            rules: rules
                .iter()
                .map(|r| RuleView {
                    id: &r.id,
                    effect: if r.permit { "permit" } else { "forbid" },
                    note: r.note.as_deref(),
                    grant_seconds: r.grant.map(|d| d.as_secs()),
                    quorum: r.quorum,
                    shadow: r.shadow,
                })
                .collect(),
            text: &v.text,
        };
        return print_json(out, &view);
    }
    writeln!(
        out,
        "rules v{} set by {} at {} ({} ago), sha256 {}",
        ctx.style.paint(Color::Cyan, &v.version.to_string()),
        render::one_line(&v.set_by),
        v.set_at,
        render::age(v.set_at.as_str()),
        v.sha256
    )?;
    match &parsed {
        Ok(set) if set.rules().is_empty() => {
            writeln!(out, "no rules: a human decides every proposal")?
        }
        Ok(set) => {
            for r in set.rules() {
                writeln!(out, "  {}", summary(r))?;
            }
        }
        Err(e) => writeln!(
            out,
            "this build cannot read it (humans decide every proposal):\n  {}",
            e.problems.join("\n  ")
        )?,
    }
    writeln!(out)?;
    for line in v.text.lines() {
        writeln!(out, "{}", render::one_line(line))?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct TestView<'a> {
    file: String,
    since: Option<&'a str>,
    #[serde(flatten)]
    replay: &'a Replay,
}

pub async fn test(
    ctx: &Ctx,
    store: &Store,
    file: &Path,
    since: Option<Duration>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let (_, set) = parse(file)?;
    let since = since.map(Timestamp::before);
    let window = store.filed_since(since.as_ref()).await?;
    let r = replay(&set, &window);
    if json {
        return print_json(
            out,
            &TestView {
                file: file.display().to_string(),
                since: since.as_ref().map(Timestamp::as_str),
                replay: &r,
            },
        );
    }
    let window = match &since {
        Some(s) => format!("filed since {s}"),
        None => "filed".into(),
    };
    let quorum = if r.quorum > 0 {
        format!(" ({} of them needing a quorum)", r.quorum)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{} proposals {window}: {} auto-approved, {} auto-rejected, {} left to a human{quorum}",
        r.proposals, r.auto_approved, r.auto_rejected, r.human
    )?;
    if r.disagreements.is_empty() {
        writeln!(out, "no disagreement with a human's decision")?;
    } else {
        writeln!(
            out,
            "{} disagreements with a human's decision:",
            ctx.style
                .paint(Color::Yellow, &r.disagreements.len().to_string())
        )?;
        for d in &r.disagreements {
            writeln!(
                out,
                "  {}  {}  {}  human: {} by {}  rule {}: would {}",
                d.id,
                render::one_line(&d.bottle),
                render::change_text(d.kind, &d.change),
                d.human,
                render::one_line(&d.decided_by),
                d.rule,
                render::one_line(&d.would)
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
