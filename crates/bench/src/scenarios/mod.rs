//! The scenarios, one family per file, and the dispatch that runs the ones asked for in a
//! fixed order, sharing a server between repeated rounds where the figures allow it.
//!
//! Families: [`baseline`] (bare hyper), [`propose`], [`poll`] (`check-pending`, `deliver`,
//! `list`), [`hold`] (`hold`, `hold-bare`), [`wake`] (`wake`, `wake-burst`), [`tasks`],
//! [`abuse`] (`garbage-batch`, `sigterm-stalled`: what hostile clients cost the server) and
//! [`egress`] (`squid-acl`, `decide`: the proxy helpers' lookups per second), [`console`]
//! (the console API's decide latency and its events stream) and [`rules`] (`rules-eval`,
//! `propose-rules`, `rules-auto`, `rules-test`: what operator rules cost).

mod abuse;
mod baseline;
mod console;
mod ctx;
mod egress;
mod hold;
mod poll;
mod propose;
mod rules;
mod tasks;
mod wake;

use std::sync::Arc;

use anyhow::Result;

pub use ctx::{Ctx, External, Under};

use crate::client::Style;
use crate::db;
use crate::stats::Row;

/// A database the scenarios run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The name in the table, the targets and the JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Every scenario, in the order they run.
pub const ALL_SCENARIOS: [&str; 21] = [
    "baseline-sqlite",
    "baseline-sqlx",
    "baseline-pg",
    "baseline-http",
    "propose",
    "propose-capped",
    "propose-rules",
    "rules-auto",
    "rules-eval",
    "rules-test",
    "check-pending",
    "list",
    "deliver",
    "hold",
    "wake",
    "tasks",
    "garbage-batch",
    "squid-acl",
    "decide",
    "console",
    "sigterm-stalled",
];

/// Scenarios `--quick` leaves out unless named: it takes the server's write timeout.
pub const NOT_QUICK: [&str; 1] = ["sigterm-stalled"];

/// Scenarios that run once, in the first backend's pass, whatever the backends: the limits
/// that do not depend on the server's database, and the ones that start their servers on
/// SQLite files of their own (`squid-acl`, `decide`, `console`, `rules-test`), and
/// `rules-eval`, which has no database. `hold-bare` (in `hold`) too.
pub const SHARED: [&str; 8] = [
    "baseline-sqlite",
    "baseline-sqlx",
    "baseline-http",
    "squid-acl",
    "decide",
    "console",
    "rules-eval",
    "rules-test",
];

/// The backend a row of `scenario` measured in a pass on `backend`: `-` for the bare
/// hyper rows, `sqlite` for the SQLite baselines and the scenarios on their own SQLite
/// files, `postgres` for the pgbench rows.
pub fn row_backend(scenario: &str, backend: Backend) -> &'static str {
    match scenario {
        "baseline-http" | "hold-bare" => "-",
        s if s.starts_with("rules-eval") => "-",
        "baseline-sqlite" | "baseline-sqlx" | "squid-acl" | "decide" | "console" | "rules-test" => {
            Backend::Sqlite.name()
        }
        s if s.starts_with("baseline-pg") => Backend::Postgres.name(),
        _ => backend.name(),
    }
}

/// The pending cap of the `propose-capped` server: far above what a run files, so every
/// proposal is accepted and only the cost of checking the cap shows.
const PROPOSE_CAP: u64 = 100_000_000;

/// Resolved sizes.
#[derive(Debug, Clone)]
pub struct Plan {
    pub scenarios: Vec<String>,
    /// The database of this pass's servers.
    pub backend: Backend,
    /// Whether this pass runs the [`SHARED`] scenarios and `hold-bare`.
    pub shared: bool,
    pub styles: Vec<Style>,
    /// `--quick`: `garbage-batch` does not wait out the server's write timeout.
    pub quick: bool,
    pub repeat: usize,
    pub hold: usize,
    pub hold_grace: u64,
    pub wake: usize,
    pub wake_grace: u64,
    pub wake_rate: f64,
    pub deliver: usize,
    pub preload: u64,
}

impl Plan {
    /// This plan for one pass on `backend`; `first`: the pass that runs the [`SHARED`]
    /// scenarios. `baseline-pg` runs on postgres only; `--preload` on SQLite only. On
    /// postgres `hold`'s grace window is three times as long: its calls must all be filed
    /// (one durable commit each) within 60% of the window, and PostgreSQL commits them
    /// more slowly than SQLite here.
    pub fn for_backend(&self, backend: Backend, first: bool) -> Plan {
        let scenarios = self
            .scenarios
            .iter()
            .filter(|s| first || !SHARED.contains(&s.as_str()))
            .filter(|s| backend == Backend::Postgres || s.as_str() != "baseline-pg")
            .cloned()
            .collect();
        Plan {
            scenarios,
            backend,
            shared: first,
            preload: if backend == Backend::Sqlite {
                self.preload
            } else {
                0
            },
            hold_grace: if backend == Backend::Sqlite {
                self.hold_grace
            } else {
                self.hold_grace * 3
            },
            ..self.clone()
        }
    }
}

pub fn failed_row(scenario: &str, style: &str, e: &anyhow::Error) -> Row {
    eprintln!("supervise-bench: {scenario} failed: {e:#}");
    Row {
        scenario: scenario.into(),
        style: style.into(),
        note: format!("failed: {e:#}").replace('\n', " "),
        ..Default::default()
    }
}

/// Runs the scenarios of `plan`; a scenario that fails becomes a row saying so.
pub async fn run_all(ctx: &Ctx, plan: &Plan) -> Vec<Row> {
    let want = |s: &str| plan.scenarios.iter().any(|x| x == s);
    let mut rows: Vec<Row> = Vec::new();
    let primary = if plan.styles.contains(&Style::Modern) {
        Style::Modern
    } else {
        Style::Legacy
    };
    let push = |r: Result<Row>, scenario: &str, style: &str| {
        let mut row = r.unwrap_or_else(|e| failed_row(scenario, style, &e));
        row.backend = row_backend(&row.scenario, plan.backend).into();
        eprintln!(
            "  {:<16} {:<10} {:<8} {:>9.0}/s  errors {}  {}",
            row.scenario, row.style, row.backend, row.throughput, row.errors, row.note
        );
        row
    };

    // Servers shared by the repeated scenarios, started on first use.
    let mut propose_server: Option<Result<Under>> = None;
    let mut capped_server: Option<Result<Under>> = None;
    let mut rules_server: Option<Result<Under>> = None;
    let mut check_server: Option<Result<CheckServer>> = None;
    let mut pgbench_db: Option<Result<baseline::PgbenchDb>> = None;

    for rep in 0..plan.repeat {
        let first_of_round = rows.len();
        if plan.repeat > 1 {
            eprintln!("supervise-bench: round {} of {}", rep + 1, plan.repeat);
        }
        if want("baseline-sqlite") {
            let r = crate::baseline::sqlite_commits(&ctx.dir, ctx.duration + ctx.warmup).await;
            rows.push(push(r, "baseline-sqlite", "-"));
        }
        if want("baseline-sqlx") {
            let r = crate::baseline::sqlx_commits(&ctx.dir, ctx.duration + ctx.warmup).await;
            rows.push(push(r, "baseline-sqlx", "-"));
        }
        if want("baseline-pg") {
            if pgbench_db.is_none() {
                pgbench_db = Some(baseline::pgbench_db(ctx).await);
            }
            for clients in [1, 8] {
                let r = match pgbench_db.as_ref().expect("made") {
                    Ok(db) => baseline::baseline_pg(ctx, db, clients).await,
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, &crate::pg::baseline_pg_name(clients), "-"));
            }
        }
        if want("baseline-http") {
            let r = baseline::baseline_http(ctx).await;
            rows.push(push(r, "baseline-http", "bare"));
        }
        if want("propose") {
            if propose_server.is_none() {
                propose_server = Some(Under::start(ctx, "propose", 0).await);
            }
            for &style in &plan.styles {
                let r = match propose_server.as_ref().expect("started") {
                    Ok(u) => {
                        let tag = format!("r{rep}{}", style_tag(style));
                        propose::propose(ctx, u, style, &tag, "propose").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "propose", style.version()));
            }
        }
        if want("propose-capped") {
            if capped_server.is_none() {
                capped_server =
                    Some(Under::start_capped(ctx, "propose-capped", 0, PROPOSE_CAP).await);
            }
            for &style in &plan.styles {
                let r = match capped_server.as_ref().expect("started") {
                    Ok(u) => {
                        let tag = format!("r{rep}{}", style_tag(style));
                        propose::propose(ctx, u, style, &tag, "propose-capped").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "propose-capped", style.version()));
            }
        }
        if want("propose-rules") {
            if rules_server.is_none() {
                rules_server = Some(rules::start_propose_rules(ctx).await);
            }
            for &style in &plan.styles {
                let r = match rules_server.as_ref().expect("started") {
                    Ok(u) => {
                        let tag = format!("r{rep}{}", style_tag(style));
                        propose::propose(ctx, u, style, &tag, "propose-rules").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "propose-rules", style.version()));
            }
        }
        if want("rules-auto") {
            let r = rules::rules_auto(ctx, primary, rules::AUTO_RATE).await;
            rows.push(push(r, "rules-auto", primary.version()));
        }
        if want("rules-eval") {
            for r in rules::rules_eval(ctx) {
                rows.push(push(r, "rules-eval", "-"));
            }
        }
        if want("rules-test") {
            let n = if plan.quick { 2_000 } else { 100_000 };
            rows.push(push(rules::rules_test(ctx, n).await, "rules-test", "-"));
        }
        if (want("check-pending") || want("list") || want("deliver")) && check_server.is_none() {
            check_server = Some(start_check_server(ctx).await);
        }
        if want("check-pending") {
            for &style in &plan.styles {
                let r = match check_server.as_ref().expect("started") {
                    Ok((u, ids)) => {
                        poll::check_pending(ctx, u, style, ids.clone(), "check-pending").await
                    }
                    Err(e) => Err(anyhow::anyhow!("{e:#}")),
                };
                rows.push(push(r, "check-pending", style.version()));
            }
        }
        for row in &mut rows[first_of_round..] {
            row.extra.insert("round".into(), rep.into());
        }
    }
    drop(propose_server);
    drop(capped_server);
    drop(rules_server);

    if let Some(Ok((under, ids))) = &check_server {
        if want("list") {
            rows.push(push(poll::list(ctx, under, "list", 0).await, "list", "-"));
        }
        // Before the preload, so it measures the same database as check-pending.
        if want("deliver") {
            let r = poll::deliver(ctx, under, primary, plan.deliver).await;
            rows.push(push(r, "deliver", primary.version()));
        }
        if plan.preload > 0 && (want("list") || want("check-pending")) {
            let label = if plan.preload.is_multiple_of(1_000_000) {
                format!("{}M", plan.preload / 1_000_000)
            } else if plan.preload.is_multiple_of(1000) {
                format!("{}k", plan.preload / 1000)
            } else {
                plan.preload.to_string()
            };
            eprintln!("supervise-bench: preloading {} archived rows", plan.preload);
            match db::preload(under.db.as_deref().unwrap_or(&ctx.dir), plan.preload).await {
                Ok(took) => {
                    eprintln!("  preloaded in {:.1}s", took.as_secs_f64());
                    if want("list") {
                        let name = format!("list@{label}");
                        let r = poll::list(ctx, under, &name, plan.preload).await;
                        rows.push(push(r, &name, "-"));
                    }
                    if want("check-pending") {
                        let name = format!("check-pending@{label}");
                        for &style in &plan.styles {
                            let r =
                                poll::check_pending(ctx, under, style, ids.clone(), &name).await;
                            rows.push(push(r, &name, style.version()));
                        }
                    }
                }
                Err(e) => rows.push(push(Err(e), "preload", "-")),
            }
        }
    } else if let Some(Err(e)) = &check_server {
        for s in ["list", "deliver"] {
            if want(s) {
                rows.push(push(Err(anyhow::anyhow!("{e:#}")), s, "-"));
            }
        }
    }
    drop(check_server);

    if want("hold") {
        if plan.shared {
            let r = hold::hold_bare(ctx, plan.hold, plan.hold_grace.min(10)).await;
            rows.push(push(r, "hold-bare", "bare"));
        }
        let r = hold::hold(ctx, primary, plan.hold, plan.hold_grace).await;
        rows.push(push(r, "hold", primary.version()));
    }
    if want("wake") {
        let r = wake::wake(
            ctx,
            primary,
            plan.wake,
            plan.wake_grace,
            plan.wake_rate,
            "wake",
        )
        .await;
        rows.push(push(r, "wake", primary.version()));
        let r = wake::wake(ctx, primary, plan.wake, plan.wake_grace, 0.0, "wake-burst").await;
        rows.push(push(r, "wake-burst", primary.version()));
    }
    if want("tasks") {
        let r = tasks::tasks(ctx, plan.wake, plan.wake_rate).await;
        rows.push(push(r, "tasks", "2026-07-28"));
    }
    if want("garbage-batch") {
        match abuse::garbage_batch(ctx, plan.quick).await {
            Ok(found) => rows.extend(found.into_iter().map(|r| push(Ok(r), "", ""))),
            Err(e) => rows.push(push(Err(e), "garbage-batch", "2025-03-26")),
        }
    }
    if want("squid-acl") {
        rows.push(push(egress::squid_acl(ctx).await, "squid-acl", "-"));
    }
    if want("decide") {
        rows.push(push(egress::decide(ctx).await, "decide", "-"));
    }
    if want("console") {
        rows.push(push(console::console(ctx).await, "console", "-"));
    }
    if want("sigterm-stalled") {
        let r = abuse::sigterm_stalled(ctx).await;
        rows.push(push(r, "sigterm-stalled", "2025-03-26"));
    }
    rows
}

fn style_tag(style: Style) -> &'static str {
    match style {
        Style::Legacy => "l",
        Style::Modern => "m",
    }
}

/// The check-pending server and the ids of its undecided proposals, by connection.
type CheckServer = (Under, Arc<Vec<Vec<String>>>);

/// The server for check-pending, list and deliver, with four undecided proposals filed
/// from each connection's bottle.
async fn start_check_server(ctx: &Ctx) -> Result<CheckServer> {
    let under = Under::start(ctx, "check", 0).await?;
    let ids = propose::file_proposals(ctx, &under, ctx.connections, 4, "check").await?;
    Ok((under, Arc::new(ids)))
}
