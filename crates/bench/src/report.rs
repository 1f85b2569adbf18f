//! The report: one table of median rows, the ratios against the performance targets, and the
//! JSON file with every run.

use std::fmt::Write as _;

use serde::Serialize;

use crate::scenarios::Backend;
use crate::stats::{Row, fmt_us, median};

mod rules;
mod verdicts;
pub use verdicts::{Line, verdict_table};

/// The row with the median throughput of each (scenario, style, backend), in first-seen
/// order.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    let key = |r: &Row| (r.scenario.clone(), r.style.clone(), r.backend.clone());
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|k| {
            let mut group: Vec<&Row> = rows.iter().filter(|r| key(r) == k).collect();
            let m = median(group.iter().map(|r| r.throughput).collect());
            group.sort_by(|a, b| a.throughput.total_cmp(&b.throughput));
            let mut row = group
                .iter()
                .find(|r| r.throughput == m)
                .copied()
                .unwrap_or(group[0])
                .clone();
            if group.len() > 1 {
                row.extra
                    .insert("runs".into(), serde_json::Value::from(group.len()));
                let all: Vec<f64> = group.iter().map(|r| r.throughput).collect();
                row.extra
                    .insert("throughput_runs".into(), serde_json::Value::from(all));
            }
            row
        })
        .collect()
}

/// Lays out cells in columns two spaces apart, a rule under the header; the columns
/// `right` says are right-aligned, the last one is left as it is.
fn render(cells: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let cols = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols.saturating_sub(1))
        .map(|c| {
            cells
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let mut line = String::new();
        for c in 0..cols {
            if c + 1 == cols {
                line.push_str(&row[c]);
            } else {
                let pad = " ".repeat(widths[c] - row[c].chars().count());
                if right(c) {
                    line.push_str(&pad);
                    line.push_str(&row[c]);
                } else {
                    line.push_str(&row[c]);
                    line.push_str(&pad);
                }
                line.push_str("  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if i == 0 {
            let total: usize = widths.iter().map(|w| w + 2).sum::<usize>() + 4;
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    out
}

fn rate_cell(r: &Row) -> String {
    if r.throughput > 0.0 {
        format!("{:.0}", r.throughput)
    } else {
        "-".into()
    }
}

fn cpu_cell(r: &Row) -> String {
    r.server_cpu_us
        .map(|c| format!("{c:.1}"))
        .unwrap_or_else(|| "-".into())
}

/// The table as printed.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "scenario",
        "style",
        "backend",
        "conns",
        "requests",
        "errors",
        "req/s",
        "p50",
        "p99",
        "p99.9",
        "srv µs/req",
        "gen cores",
        "note",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let runs = r
            .extra
            .get("runs")
            .and_then(|v| v.as_u64())
            .map(|n| format!(" (median of {n})"))
            .unwrap_or_default();
        cells.push(vec![
            r.scenario.clone(),
            r.style.clone(),
            r.backend.clone(),
            r.connections.to_string(),
            r.requests.to_string(),
            r.errors.to_string(),
            rate_cell(r),
            fmt_us(r.latency.p50_us),
            fmt_us(r.latency.p99_us),
            fmt_us(r.latency.p999_us),
            cpu_cell(r),
            r.client_cores
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".into()),
            format!("{}{runs}", r.note),
        ]);
    }
    render(&cells, |c| (3..=11).contains(&c))
}

/// The rows of both backends side by side, one line per (scenario, style) that ran on
/// either (the rows without a backend, bare hyper's, are only in [`table`]); empty unless
/// both ran.
pub fn side_by_side(rows: &[Row]) -> String {
    let on = |b: &str| rows.iter().any(|r| r.backend == b);
    if !(on(SQLITE) && on(POSTGRES)) {
        return String::new();
    }
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.backend == SQLITE || r.backend == POSTGRES)
    {
        let k = (r.scenario.as_str(), r.style.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // The databases' own limits first, then the scenarios in the order they ran.
    keys.sort_by_key(|(s, _)| !s.starts_with("baseline"));
    let header = [
        "scenario",
        "style",
        "sqlite req/s",
        "p99",
        "srv µs/req",
        "postgres req/s",
        "p99",
        "srv µs/req",
        "pg / sqlite",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for (scenario, style) in keys {
        let get = |b: &str| {
            rows.iter()
                .find(|r| r.scenario == scenario && r.style == style && r.backend == b)
        };
        let (s, p) = (get(SQLITE), get(POSTGRES));
        // A held call has no rate: its memory stands in the rate's column.
        let side = |r: Option<&Row>| match r {
            Some(r) => match r
                .extra
                .get("rss_per_held_call_bytes")
                .and_then(|v| v.as_f64())
            {
                Some(b) if r.throughput <= 0.0 => [
                    format!("{:.1} KiB/held", b / 1024.0),
                    "-".into(),
                    "-".into(),
                ],
                _ => [rate_cell(r), fmt_us(r.latency.p99_us), cpu_cell(r)],
            },
            None => ["".into(), "".into(), "".into()],
        };
        let shown = |c: &[String; 3]| c.iter().any(|x| !x.is_empty() && x != "-");
        if !shown(&side(s)) && !shown(&side(p)) {
            continue;
        }
        let ratio = match (s, p) {
            (Some(s), Some(p)) if s.throughput > 0.0 && p.throughput > 0.0 => {
                format!("{:.2}×", p.throughput / s.throughput)
            }
            _ => String::new(),
        };
        let mut line = vec![scenario.to_string(), style.to_string()];
        line.extend(side(s));
        line.extend(side(p));
        line.push(ratio);
        cells.push(line);
    }
    render(&cells, |c| c >= 2)
}

/// One performance target and how this run did against it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// `sqlite` or `postgres`: the pass the figure is from.
    pub backend: String,
    pub name: String,
    pub goal: String,
    pub value: Option<f64>,
    pub met: Option<bool>,
    pub detail: String,
    /// The line of the verdict table this figure counts towards, if any.
    pub line: Option<Line>,
}

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const SQLITE: &str = Backend::Sqlite.name();
const POSTGRES: &str = Backend::Postgres.name();

/// The targets per backend that ran, SQLite's first, from the median rows (`runs`: every
/// run, for the ratios per round).
pub fn targets(rows: &[Row], runs: &[Row]) -> Vec<Target> {
    [SQLITE, POSTGRES]
        .into_iter()
        .filter(|b| {
            rows.iter()
                .any(|r| r.backend == *b && !r.scenario.starts_with("baseline"))
        })
        .flat_map(|b| targets_for(b, rows, runs))
        .collect()
}

/// The rows a backend's targets read: its own and the bare hyper ones (`-`).
fn of<'a>(rows: &'a [Row], backend: &str) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.backend == backend || r.backend == "-")
        .collect()
}

fn find<'a>(rows: &[&'a Row], scenario: &str, style: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.scenario == scenario && (style.is_empty() || r.style == style))
        .copied()
}

/// Each round's own ratio of `scenario` to `base` (the rounds interleave, so a slow spell
/// hits both sides), when both ran in the same pass and there is more than one round.
fn per_round(runs: &[&Row], scenario: &str, style: &str, base: &str) -> String {
    let at = |r: &Row, k: &str| r.extra.get(k).and_then(|v| v.as_u64());
    let ratios: Vec<String> = runs
        .iter()
        .filter(|r| r.scenario == scenario && r.style == style)
        .filter_map(|r| {
            let b = runs.iter().find(|b| {
                b.scenario == base
                    && at(r, "round").is_some()
                    && at(b, "round") == at(r, "round")
                    && at(b, "pass") == at(r, "pass")
            })?;
            (b.throughput > 0.0).then(|| format!("{:.2}", r.throughput / b.throughput))
        })
        .collect();
    if ratios.len() > 1 {
        format!("; per round {}", ratios.join(", "))
    } else {
        String::new()
    }
}

/// The table for one backend, in its order, then the figures beside it.
fn targets_for(backend: &str, rows: &[Row], runs: &[Row]) -> Vec<Target> {
    let rows = of(rows, backend);
    let runs = of(runs, backend);
    let mut out = Vec::new();
    let mut push = |line: Option<Line>,
                    name: String,
                    goal: &str,
                    value: Option<f64>,
                    met: Option<bool>,
                    detail| {
        out.push(Target {
            backend: backend.into(),
            name,
            goal: goal.into(),
            value,
            met,
            detail,
            line,
        })
    };
    // Durable propose against the database's own one-row commit rate.
    let (base, goal, want) = if backend == SQLITE {
        ("baseline-sqlite", "≥ 2.0×", 2.0)
    } else {
        ("baseline-pg", "≥ 1.0×", 1.0)
    };
    let cpu_note = if backend == POSTGRES {
        " (supervise-server's CPU; PostgreSQL's own processes not counted)"
    } else {
        ""
    };
    // Propose, then the pending poll: each era's rate against its baseline, then each
    // era's server CPU per call.
    for (scenario, base, goal, want, unit, cpu_limit, lines) in [
        (
            "propose",
            base,
            goal,
            want,
            "commits/s",
            40.0,
            [Line::ProposeRate, Line::ProposeCpu],
        ),
        (
            "check-pending",
            "baseline-http",
            "≥ 0.5×",
            0.5,
            "req/s",
            20.0,
            [Line::PollRate, Line::PollCpu],
        ),
    ] {
        for style in [LEGACY, MODERN] {
            if let (Some(s), Some(b)) = (find(&rows, scenario, style), find(&rows, base, "")) {
                let v = s.throughput / b.throughput;
                push(
                    Some(lines[0]),
                    format!("{scenario} {style} / {base}"),
                    goal,
                    Some(v),
                    Some(v >= want && s.errors == 0),
                    format!(
                        "{:.0} vs {:.0} {unit}{}",
                        s.throughput,
                        b.throughput,
                        per_round(&runs, scenario, style, base)
                    ),
                );
            }
        }
        for style in [LEGACY, MODERN] {
            if let Some(c) = find(&rows, scenario, style).and_then(|p| p.server_cpu_us) {
                push(
                    Some(lines[1]),
                    format!("{scenario} {style}: server CPU per call (µs)"),
                    &format!("≤ {cpu_limit:.0} µs"),
                    Some(c),
                    Some(c <= cpu_limit),
                    format!("{c:.1} µs{cpu_note}"),
                );
            }
        }
    }
    if let Some(h) = find(&rows, "hold", "") {
        let per = h
            .extra
            .get("rss_per_held_call_bytes")
            .and_then(|v| v.as_f64())
            .map(|b| b / 1024.0);
        push(
            Some(Line::HeldRss),
            format!("hold: server RSS per held call at {} (KiB)", h.connections),
            "≤ 16 KiB, no errors",
            per,
            per.filter(|_| h.connections >= 10_000)
                .map(|p| p <= 16.0 && h.errors == 0),
            format!(
                "{} errors{}{}",
                h.errors,
                find(&rows, "hold-bare", "")
                    .and_then(|b| b.extra.get("rss_per_held_call_bytes"))
                    .and_then(|v| v.as_f64())
                    .map(|b| format!("; bare hyper here: {:.1} KiB", b / 1024.0))
                    .unwrap_or_default(),
                if h.connections < 10_000 {
                    " (fewer than 10,000 held: not a verdict)"
                } else {
                    ""
                }
            ),
        );
    }
    let ms = |us: f64| us / 1000.0;
    // The figure is the burst; the paced run keeps its earlier p50/p99 targets.
    for name in ["wake-burst", "wake"] {
        let Some(w) = find(&rows, name, "") else {
            continue;
        };
        let p99 = ms(w.latency.p99_us);
        push(
            None,
            format!("{name} p99 (ms)"),
            "≤ 50 ms",
            Some(p99),
            Some(p99 <= 50.0 && w.latency.p99_us > 0.0 && w.errors == 0),
            format!(
                "{} held, {} errors, decisions at {:.0}/s",
                w.connections, w.errors, w.throughput
            ),
        );
        let p50 = ms(w.latency.p50_us);
        push(
            None,
            format!("{name} p50 (ms)"),
            "≤ 20 ms",
            Some(p50),
            (name == "wake").then_some(p50 <= 20.0 && w.latency.p50_us > 0.0 && w.errors == 0),
            format!("max {}", fmt_us(w.latency.max_us)),
        );
    }
    if let Some(t) = find(&rows, "tasks", "") {
        let p99 = ms(t.latency.p99_us);
        push(
            None,
            format!(
                "tasks: decision → notifications/tasks p99 at {} open (ms)",
                t.requests
            ),
            "≤ 50 ms",
            Some(p99),
            Some(p99 <= 50.0 && t.latency.p99_us > 0.0 && t.errors == 0 && t.requests >= 1000),
            format!(
                "{} missed{}",
                t.errors,
                if t.requests < 1000 {
                    " (fewer than 1,000 open: not a verdict)"
                } else {
                    ""
                }
            ),
        );
    }
    // The fleet's writes against PostgreSQL's own group commit with 8 clients.
    if let Some(b8) = find(&rows, "baseline-pg-c8", "") {
        for style in [LEGACY, MODERN] {
            if let Some(p) = find(&rows, "propose", style) {
                let v = p.throughput / b8.throughput;
                push(
                    Some(Line::FleetRate),
                    format!("propose {style} / baseline-pg-c8"),
                    "≥ 0.5×",
                    Some(v),
                    Some(v >= 0.5 && p.errors == 0),
                    format!("{:.0} vs {:.0} commits/s", p.throughput, b8.throughput),
                );
            }
        }
    }
    // Beside the table: what explains it.
    if let (Some(b), Some(x)) = (
        find(&rows, "baseline-sqlite", ""),
        find(&rows, "baseline-sqlx", ""),
    ) {
        push(
            None,
            "baseline-sqlx / baseline-sqlite".into(),
            "the driver's share",
            Some(x.throughput / b.throughput),
            None,
            format!("{:.0} vs {:.0} commits/s", x.throughput, b.throughput),
        );
    }
    for scenario in ["check-pending", "propose"] {
        if let (Some(l), Some(m)) = (find(&rows, scenario, LEGACY), find(&rows, scenario, MODERN))
            && let (Some(a), Some(b)) = (l.server_cpu_us, m.server_cpu_us)
        {
            let v = b / a;
            push(
                None,
                format!("{scenario}: CPU/request 2026-07-28 / 2025-11-25"),
                "≤ 1.1×",
                Some(v),
                Some(v <= 1.1),
                format!("{b:.1} vs {a:.1} µs/request"),
            );
        }
    }
    // Flat with history: the preloaded rows against the plain ones.
    for pre in rows.iter().filter(|r| r.scenario.contains('@')) {
        let Some(base) = pre
            .scenario
            .split('@')
            .next()
            .and_then(|n| find(&rows, n, &pre.style))
        else {
            continue;
        };
        let v = pre.latency.p50_us / base.latency.p50_us;
        push(
            None,
            format!("{} {}: p50 with history / without", pre.scenario, pre.style),
            "flat (≈ 1×)",
            Some(v),
            Some(v <= 1.5),
            format!(
                "p50 {} vs {}",
                fmt_us(pre.latency.p50_us),
                fmt_us(base.latency.p50_us)
            ),
        );
    }
    out.extend(rules::targets(backend, &rows, &runs));
    out
}

/// The targets as printed under the table: a `targets (BACKEND):` block per backend.
pub fn targets_text(targets: &[Target]) -> String {
    let mut out = String::new();
    let mut last = "";
    for t in targets {
        if t.backend != last {
            if !last.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "targets ({}):", t.backend);
            last = &t.backend;
        }
        let verdict = match t.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "for information",
        };
        let value = t
            .value
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "  {:<56} {:>8}  (target {}) {verdict}: {}",
            t.name, value, t.goal, t.detail
        );
    }
    out
}

#[cfg(test)]
mod tests;
