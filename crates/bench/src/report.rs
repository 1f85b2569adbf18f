//! The report: one table of median rows, the ratios against the performance targets, and the
//! JSON file with every run.

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::{Row, fmt_us, median};

/// The row with the median throughput of each (scenario, style), in first-seen order.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let k = (r.scenario.clone(), r.style.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(s, st)| {
            let mut group: Vec<&Row> = rows
                .iter()
                .filter(|r| r.scenario == s && r.style == st)
                .collect();
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

/// The table as printed.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "scenario",
        "style",
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
            r.connections.to_string(),
            r.requests.to_string(),
            r.errors.to_string(),
            if r.throughput > 0.0 {
                format!("{:.0}", r.throughput)
            } else {
                "-".into()
            },
            fmt_us(r.latency.p50_us),
            fmt_us(r.latency.p99_us),
            fmt_us(r.latency.p999_us),
            r.server_cpu_us
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "-".into()),
            r.client_cores
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".into()),
            format!("{}{runs}", r.note),
        ]);
    }
    let cols = header.len();
    let widths: Vec<usize> = (0..cols - 1)
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
                let pad = widths[c] - row[c].chars().count();
                let right = (2..=10).contains(&c);
                if right {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(&row[c]);
                } else {
                    line.push_str(&row[c]);
                    line.push_str(&" ".repeat(pad));
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

/// One performance target and how this run did against it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    pub goal: String,
    pub value: Option<f64>,
    pub met: Option<bool>,
    pub detail: String,
}

fn find<'a>(rows: &'a [Row], scenario: &str, style: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.scenario == scenario && (style.is_empty() || r.style == style))
}

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// The ratios the performance targets name, from the median rows.
pub fn targets(rows: &[Row], runs: &[Row]) -> Vec<Target> {
    let mut out = Vec::new();
    // Each round's own ratio (the rounds interleave, so a slow spell hits both sides).
    let per_round = |scenario: &str, style: &str, base: &str| -> String {
        let round = |r: &Row| r.extra.get("round").and_then(|v| v.as_u64());
        let ratios: Vec<String> = runs
            .iter()
            .filter(|r| r.scenario == scenario && r.style == style)
            .filter_map(|r| {
                let b = runs
                    .iter()
                    .find(|b| b.scenario == base && round(b) == round(r) && round(r).is_some())?;
                (b.throughput > 0.0).then(|| format!("{:.2}", r.throughput / b.throughput))
            })
            .collect();
        if ratios.len() > 1 {
            format!("; per round {}", ratios.join(", "))
        } else {
            String::new()
        }
    };
    let sqlite = find(rows, "baseline-sqlite", "").map(|r| r.throughput);
    let http = find(rows, "baseline-http", "").map(|r| r.throughput);
    for style in [LEGACY, MODERN] {
        if let (Some(p), Some(b)) = (find(rows, "propose", style), sqlite) {
            let v = p.throughput / b;
            out.push(Target {
                name: format!("propose {style} / baseline-sqlite"),
                goal: "≥ 2.0×".into(),
                value: Some(v),
                met: Some(v >= 2.0 && p.errors == 0),
                detail: format!(
                    "{:.0} vs {:.0} commits/s{}",
                    p.throughput,
                    b,
                    per_round("propose", style, "baseline-sqlite")
                ),
            });
        }
    }
    if let (Some(x), Some(b)) = (find(rows, "baseline-sqlx", ""), sqlite) {
        out.push(Target {
            name: "baseline-sqlx / baseline-sqlite".into(),
            goal: "the driver's share".into(),
            value: Some(x.throughput / b),
            met: None,
            detail: format!("{:.0} vs {:.0} commits/s", x.throughput, b),
        });
    }
    for style in [LEGACY, MODERN] {
        if let (Some(c), Some(b)) = (find(rows, "check-pending", style), http) {
            let v = c.throughput / b;
            out.push(Target {
                name: format!("check-pending {style} / baseline-http"),
                goal: "≥ 0.5×".into(),
                value: Some(v),
                met: Some(v >= 0.5 && c.errors == 0),
                detail: format!(
                    "{:.0} vs {:.0} req/s{}",
                    c.throughput,
                    b,
                    per_round("check-pending", style, "baseline-http")
                ),
            });
        }
    }
    for scenario in ["check-pending", "propose"] {
        if let (Some(l), Some(m)) = (find(rows, scenario, LEGACY), find(rows, scenario, MODERN))
            && let (Some(a), Some(b)) = (l.server_cpu_us, m.server_cpu_us)
        {
            let v = b / a;
            out.push(Target {
                name: format!("{scenario}: CPU/request 2026-07-28 / 2025-11-25"),
                goal: "≤ 1.1×".into(),
                value: Some(v),
                met: Some(v <= 1.1),
                detail: format!("{b:.1} vs {a:.1} µs/request"),
            });
        }
    }
    if let Some(h) = find(rows, "hold", "") {
        let per = h
            .extra
            .get("rss_per_held_call_bytes")
            .and_then(|v| v.as_f64())
            .map(|b| b / 1024.0);
        out.push(Target {
            name: format!("hold: server RSS per held call at {}", h.connections),
            goal: "≤ 16 KiB, no errors".into(),
            value: per,
            met: per.map(|p| p <= 16.0 && h.errors == 0 && h.connections >= 10_000),
            detail: format!(
                "{} errors{}{}",
                h.errors,
                find(rows, "hold-bare", "")
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
        });
    }
    for name in ["wake", "wake-burst"] {
        let Some(w) = find(rows, name, "") else {
            continue;
        };
        let ms = |us: f64| us / 1000.0;
        // The burst shows saturation; the paced run is the one held to the target.
        let judge = |ok: bool| (name == "wake").then_some(ok && w.errors == 0);
        out.push(Target {
            name: format!("{name} p99 (ms)"),
            goal: "≤ 50 ms".into(),
            value: Some(ms(w.latency.p99_us)),
            met: judge(ms(w.latency.p99_us) <= 50.0 && w.latency.p99_us > 0.0),
            detail: format!(
                "{} held, {} errors, decisions at {:.0}/s",
                w.connections, w.errors, w.throughput
            ),
        });
        out.push(Target {
            name: format!("{name} p50 (ms)"),
            goal: "≤ 20 ms".into(),
            value: Some(ms(w.latency.p50_us)),
            met: judge(ms(w.latency.p50_us) <= 20.0 && w.latency.p50_us > 0.0),
            detail: format!("max {}", fmt_us(w.latency.max_us)),
        });
    }
    // Flat with history: the preloaded rows against the plain ones.
    for (base, pre) in rows
        .iter()
        .filter(|r| r.scenario.contains('@'))
        .filter_map(|pre| {
            let base_name = pre.scenario.split('@').next()?;
            find(rows, base_name, &pre.style).map(|b| (b, pre))
        })
    {
        let v = pre.latency.p50_us / base.latency.p50_us;
        out.push(Target {
            name: format!("{} {}: p50 with history / without", pre.scenario, pre.style),
            goal: "flat (≈ 1×)".into(),
            value: Some(v),
            met: Some(v <= 1.5),
            detail: format!(
                "p50 {} vs {}",
                fmt_us(pre.latency.p50_us),
                fmt_us(base.latency.p50_us)
            ),
        });
    }
    out
}

/// The targets as printed under the table.
pub fn targets_text(targets: &[Target]) -> String {
    let mut out = String::new();
    for t in targets {
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
            "  {:<52} {:>8}  (target {}) {verdict}: {}",
            t.name, value, t.goal, t.detail
        );
    }
    out
}
