//! The rules scenarios (docs/RULES.md): `rules-eval` (one proposal through 1, 10 and 100
//! policies, in process, by the store's own [`RuleSet::evaluate`], the function filing
//! calls), `propose-rules` (`propose` on a server whose 100 policies match none of its
//! proposals), `rules-auto` (proposals one of 100 policies approves, sent open loop at a
//! fixed rate, each answered `approved` on its own call) and `rules-test` (`supervise rules
//! test` over archived history).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use supervise_store::rules::{Facts, Outcome, RuleSet};
use supervise_store::{Actor, Kind, Store, StoreOptions};

use super::ctx::{Ctx, Under, propose_args};
use crate::client::Style;
use crate::db;
use crate::load;
use crate::stats::{Latency, Row, fmt_us, rate};

/// Policies in the rules of `propose-rules`, `rules-auto` and `rules-test`.
pub const POLICIES: usize = 100;

/// Proposals per second `rules-auto` sends.
pub const AUTO_RATE: f64 = 100.0;

/// The one permit of `rules-auto`'s rules: the hosts it proposes.
const AUTO_SUFFIX: &str = "auto.example.com";

/// `n - 1` policies none of which matches an `*.example.com` proposal, as an operator would
/// write them (host equality, `like` patterns, port and bottle conditions, forbids with
/// notes, git-push rules), then `last` as the n-th.
pub fn policies(n: usize, last: &str) -> String {
    let mut out = String::new();
    for i in 0..n.saturating_sub(1) {
        let p = match i % 6 {
            0 => format!(
                "@id(\"pkg-{i}\") @grant(\"8h\")\npermit (principal, action == Action::\"egress\", resource)\nwhen {{ resource.host == \"pkg{i}.internal.test\" && resource.port == 443 }};\n"
            ),
            1 => format!(
                "@id(\"mirror-{i}\")\npermit (principal, action == Action::\"egress\", resource)\nwhen {{ resource.host like \"*.mirror{i}.internal.test\" && (resource.port == 443 || resource.port == 80) }};\n"
            ),
            2 => format!(
                "@id(\"no-ssh-{i}\") @note(\"no shell access to team {i}'s hosts\")\nforbid (principal, action == Action::\"egress\", resource)\nwhen {{ resource.host like \"*.team{i}.corp.test\" && resource.port == 22 }};\n"
            ),
            3 => format!(
                "@id(\"bottle-{i}\")\npermit (principal, action == Action::\"egress\", resource)\nwhen {{ principal.slug == \"ci-{i}\" && resource.host like \"*.registry{i}.test\" && !resource.wildcard }};\n"
            ),
            4 => format!(
                "@id(\"high-ports-{i}\") @note(\"ask for a proxy instead\")\nforbid (principal, action == Action::\"egress\", resource)\nwhen {{ resource.host like \"*.lab{i}.test\" && resource.port > 8000 && context.hits < 3 }};\n"
            ),
            _ => format!(
                "@id(\"push-{i}\") @grant(\"1h\")\npermit (principal, action == Action::\"git-push\", resource)\nwhen {{ resource.ref == \"refs/heads/bot-{i}\" && !resource.force && resource.files < 50 }};\n"
            ),
        };
        out.push_str(&p);
        out.push('\n');
    }
    out.push_str(last);
    out
}

/// A permit for every `*.SUFFIX` host on 443, granted for an hour.
fn permit_suffix(suffix: &str) -> String {
    format!(
        "@id(\"auto\") @grant(\"1h\")\npermit (principal, action == Action::\"egress\", resource)\nwhen {{ resource.host like \"*.{suffix}\" && resource.port == 443 }};\n"
    )
}

/// A policy that matches nothing the load proposes.
fn matches_nothing() -> String {
    "@id(\"last\")\npermit (principal, action == Action::\"egress\", resource)\nwhen { resource.host == \"never.internal.test\" };\n".into()
}

/// `rules-eval-N` for N in 1, 10, 100: one egress proposal through N policies of which
/// only the last permits it, timed call by call for the measured window.
pub fn rules_eval(ctx: &Ctx) -> Vec<Result<Row>> {
    [1, 10, POLICIES]
        .into_iter()
        .map(|n| eval_one(ctx, n))
        .collect()
}

fn eval_one(ctx: &Ctx, n: usize) -> Result<Row> {
    let set = RuleSet::parse(&policies(n, &permit_suffix("example.com")))
        .map_err(|e| anyhow::anyhow!("the generated rules do not parse: {e}"))?;
    let change = json!({ "host": "files.example.com", "port": 443 });
    let facts = Facts {
        slug: "b2",
        host: "local",
        kind: Kind::Egress,
        change: &change,
        flags: &[],
        hits: 1,
        justification: "supervise-bench load",
        time: 1_780_000_000,
    };
    match set.evaluate(&facts).outcome {
        Outcome::Permit { ref rule, .. } if rule == "auto" => {}
        other => bail!("{n} policies: expected the last one to permit, got {other:?}"),
    }
    let warm_until = Instant::now() + ctx.warmup;
    while Instant::now() < warm_until {
        std::hint::black_box(set.evaluate(std::hint::black_box(&facts)));
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    let until = start + ctx.duration;
    loop {
        let t0 = Instant::now();
        if t0 >= until {
            break;
        }
        std::hint::black_box(set.evaluate(std::hint::black_box(&facts)));
        samples.push(t0.elapsed().as_nanos() as u64);
    }
    let elapsed = start.elapsed();
    let calls = samples.len() as u64;
    let mean_us = elapsed.as_secs_f64() * 1e6 / calls.max(1) as f64;
    let mut row = Row {
        scenario: format!("rules-eval-{n}"),
        style: "-".into(),
        connections: 1,
        requests: calls,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(calls, elapsed),
        latency: Latency::from_ns(&mut samples),
        note: format!("{n} policies, the last permits; mean {mean_us:.1} µs per evaluation"),
        ..Default::default()
    };
    row.extra.insert("policies".into(), n.into());
    row.extra.insert("mean_us".into(), mean_us.into());
    Ok(row)
}

/// Sets `text` as the rules of the server's database, as `rules set` does.
async fn set_rules(under: &Under, text: &str) -> Result<()> {
    let store = db::open_store(under.db()?, true).await?;
    store
        .set_rules(text, &Actor::cli("bench"))
        .await
        .context("setting the bench's rules")?;
    store.close().await;
    Ok(())
}

/// The `propose-rules` server: grace 0, no pending cap, [`POLICIES`] policies none of which
/// matches what `propose` files.
pub async fn start_propose_rules(ctx: &Ctx) -> Result<Under> {
    let under = Under::start(ctx, "propose-rules", 0).await?;
    set_rules(&under, &policies(POLICIES, &matches_nothing())).await?;
    Ok(under)
}

/// `rules-auto`: [`POLICIES`] policies, the last permitting `*.auto.example.com:443`;
/// proposals for new hosts there sent open loop at `per_sec` over `connections`
/// connections for the warm-up and the measured window, each expected `approved` on its
/// own call. Latency is from each call's scheduled start, so a late send counts.
pub async fn rules_auto(ctx: &Ctx, style: Style, per_sec: f64) -> Result<Row> {
    let under = Under::start(ctx, "rules-auto", 0).await?;
    set_rules(&under, &policies(POLICIES, &permit_suffix(AUTO_SUFFIX))).await?;
    let conns_n = ctx.connections.clamp(1, 8);
    let conns = load::open_conns(&under.target, conns_n, style, &ctx.ips(), conns_n).await?;
    let total = ((ctx.warmup + ctx.duration).as_secs_f64() * per_sec).ceil() as u64;
    let warm = (ctx.warmup.as_secs_f64() * per_sec).ceil() as u64;
    let cpu0 = Arc::new(std::sync::Mutex::new(None));
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let at = move |j: u64| start + Duration::from_secs_f64(j as f64 / per_sec);
    let mut tasks = Vec::new();
    for (k, mut conn) in conns.into_iter().enumerate() {
        let pid = under.pid;
        let cpu0 = cpu0.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let (mut errors, mut first_error) = (0u64, None);
            let mut j = k as u64;
            while j < total {
                tokio::time::sleep_until(at(j)).await;
                if j == warm {
                    *cpu0.lock().expect("not poisoned") =
                        Some((pid.and_then(crate::sys::process_cpu), Instant::now()));
                }
                let host = format!("r{j}.{AUTO_SUFFIX}");
                let reply = conn.call_tool("propose-egress", &propose_args(&host)).await;
                let took = at(j).elapsed().as_nanos() as u64;
                let good = matches!(&reply, Ok(r) if r.status() == Some("approved"));
                if j >= warm {
                    if good {
                        samples.push(took);
                    } else {
                        errors += 1;
                    }
                }
                if !good && first_error.is_none() {
                    first_error = Some(match &reply {
                        Ok(r) => r.describe(),
                        Err(e) => format!("{e:#}"),
                    });
                }
                if reply.is_err() {
                    break;
                }
                j += conns_n as u64;
            }
            (samples, errors, first_error)
        }));
    }
    let mut samples = Vec::new();
    let (mut errors, mut first_error) = (0u64, None);
    for t in tasks {
        let (s, e, f) = t.await?;
        samples.extend(s);
        errors += e;
        first_error = first_error.or(f);
    }
    let (cpu_from, from) = cpu0
        .lock()
        .expect("not poisoned")
        .take()
        .unwrap_or((None, Instant::now()));
    let elapsed = from.elapsed();
    let cpu = match (cpu_from, under.pid.and_then(crate::sys::process_cpu)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let ok = samples.len() as u64;
    let latency = Latency::from_ns(&mut samples);
    let mut row = Row {
        scenario: "rules-auto".into(),
        style: style.version().into(),
        connections: conns_n,
        requests: ok + errors,
        errors,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(ok, elapsed),
        latency,
        server_cpu_us: cpu
            .filter(|_| ok > 0)
            .map(|c| c.as_secs_f64() * 1e6 / ok as f64),
        note: format!(
            "open loop at {per_sec:.0}/s, {POLICIES} policies, the last permits; {ok} approved on the call; max {}",
            fmt_us(latency.max_us)
        ),
        ..Default::default()
    };
    if let Some(e) = first_error {
        row.note.push_str(&format!("; first error: {e}"));
    }
    row.extra.insert("rate".into(), per_sec.into());
    Ok(row)
}

/// `rules-test`: `n` decided, archived proposals filed over the last 20 days on a database
/// of its own, then `supervise rules test FILE --since 30d` with [`POLICIES`] policies of
/// which the last forbids 1% of them (each a disagreement with the human who approved
/// it), timed from start to exit. The CLI is the one next to `supervise-server`.
pub async fn rules_test(ctx: &Ctx, n: u64) -> Result<Row> {
    let bin = ctx.cli_bin()?;
    let path = ctx.dir.join("rules-test.db");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(
        &path,
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .await?;
    for (slug, ip) in ctx.bottles.iter().take(4) {
        store
            .add_bottle(slug, (*ip).into(), &Actor::cli("bench"))
            .await?;
    }
    store.close().await;
    let since = supervise_store::Timestamp::before(Duration::from_secs(20 * 86_400));
    let from = since
        .as_str()
        .get(..19)
        .unwrap_or_default()
        .replace('T', " ");
    let filled = db::preload_from(&path, n, &from).await?;
    let rules = ctx.dir.join("rules-test.cedar");
    let forbid = "@id(\"no-99\") @note(\"hosts ending in 99 are retired\")\nforbid (principal, action == Action::\"egress\", resource)\nwhen { resource.host like \"pre*99.example.com\" };\n";
    std::fs::write(&rules, policies(POLICIES, forbid))?;

    let started = Instant::now();
    let out = tokio::process::Command::new(&bin)
        .arg("--db")
        .arg(&path)
        .args(["rules", "test"])
        .arg(&rules)
        .args(["--since", "30d"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {} rules test", bin.display()))?;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "rules test failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let summary = stdout.lines().next().unwrap_or_default().to_string();
    let replayed = summary
        .split_whitespace()
        .next()
        .and_then(|w| w.parse::<u64>().ok());
    let want_disagree = n / 100;
    let disagreements = stdout.lines().filter(|l| l.contains("rule no-99")).count() as u64;
    let errors = u64::from(replayed != Some(n)) + u64::from(disagreements != want_disagree);
    let mut row = Row {
        scenario: "rules-test".into(),
        style: "-".into(),
        connections: 1,
        requests: n,
        errors,
        seconds: took.as_secs_f64(),
        throughput: rate(n, took),
        note: format!(
            "{:.2}s for {n} archived proposals ({POLICIES} policies); {disagreements} disagreements; filled in {:.1}s; \"{summary}\"",
            took.as_secs_f64(),
            filled.as_secs_f64()
        ),
        ..Default::default()
    };
    row.extra
        .insert("wall_seconds".into(), took.as_secs_f64().into());
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn egress(host: &str, port: u16) -> Outcome {
        let set = RuleSet::parse(&policies(POLICIES, &permit_suffix(AUTO_SUFFIX))).unwrap();
        let change = json!({ "host": host, "port": port });
        let facts = Facts {
            slug: "b2",
            host: "local",
            kind: Kind::Egress,
            change: &change,
            flags: &[],
            hits: 1,
            justification: "test",
            time: 0,
        };
        set.evaluate(&facts).outcome
    }

    #[test]
    fn the_generated_rules_check_and_only_the_last_decides_the_loads_hosts() {
        assert_eq!(
            RuleSet::parse(&policies(POLICIES, &matches_nothing()))
                .unwrap()
                .rules()
                .len(),
            POLICIES
        );
        assert!(matches!(
            egress("r1.auto.example.com", 443),
            Outcome::Permit { ref rule, .. } if rule == "auto"
        ));
        // What `propose` files, and the others' own hosts off their ports.
        assert_eq!(egress("p-c0-1.example.com", 443), Outcome::Human);
        assert_eq!(egress("a.team2.corp.test", 443), Outcome::Human);
        assert!(matches!(
            egress("a.team2.corp.test", 22),
            Outcome::Forbid { ref rule, .. } if rule == "no-ssh-2"
        ));
    }
}
