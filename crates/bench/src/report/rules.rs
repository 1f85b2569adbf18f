//! The rules figures of docs/PERFORMANCE.md "Rules" against their targets: evaluation cost
//! at 100 policies, `propose` with 100 non-matching policies against `propose` without, an
//! auto-approved answer's p99 at 100/s, and `rules test` over 100,000 archived proposals.

use super::{LEGACY, MODERN, Target, find, per_round};
use crate::stats::{Row, fmt_us};

/// Proposals `rules-test` must replay for its time to be a verdict.
const RULES_TEST_ROWS: u64 = 100_000;

pub(super) fn targets(backend: &str, rows: &[&Row], runs: &[&Row]) -> Vec<Target> {
    let mut out = Vec::new();
    let mut push = |name: String, goal: &str, value: Option<f64>, met: Option<bool>, detail| {
        out.push(Target {
            backend: backend.into(),
            name,
            goal: goal.into(),
            value,
            met,
            detail,
            line: None,
        })
    };
    for n in [1, 10, 100] {
        let Some(r) = find(rows, &format!("rules-eval-{n}"), "") else {
            continue;
        };
        let p50 = r.latency.p50_us;
        push(
            format!("rules-eval: one evaluation, {n} policies, p50 (µs)"),
            "≤ 50 µs at 100",
            Some(p50),
            (n == 100).then_some(p50 <= 50.0 && r.errors == 0 && p50 > 0.0),
            format!("p99 {}; {}", fmt_us(r.latency.p99_us), r.note),
        );
    }
    for style in [LEGACY, MODERN] {
        if let (Some(s), Some(b)) = (
            find(rows, "propose-rules", style),
            find(rows, "propose", style),
        ) {
            let v = s.throughput / b.throughput;
            push(
                format!("propose-rules {style} / propose"),
                "≥ 0.9×",
                Some(v),
                Some(v >= 0.9 && s.errors == 0),
                format!(
                    "{:.0} vs {:.0} commits/s{}",
                    s.throughput,
                    b.throughput,
                    per_round(runs, "propose-rules", style, "propose")
                ),
            );
        }
    }
    if let Some(a) = find(rows, "rules-auto", "") {
        let p99 = a.latency.p99_us / 1000.0;
        push(
            "rules-auto: auto-approved answer p99 at 100/s (ms)".into(),
            "≤ 20 ms",
            Some(p99),
            Some(p99 <= 20.0 && a.latency.p99_us > 0.0 && a.errors == 0),
            format!(
                "p50 {}, max {}; {} errors",
                fmt_us(a.latency.p50_us),
                fmt_us(a.latency.max_us),
                a.errors
            ),
        );
    }
    if let Some(t) = find(rows, "rules-test", "") {
        push(
            format!("rules-test: rules test over {} archived (s)", t.requests),
            "≤ 10 s at 100,000",
            Some(t.seconds),
            (t.requests >= RULES_TEST_ROWS).then_some(t.seconds <= 10.0 && t.errors == 0),
            format!("{} errors; {}", t.errors, t.note),
        );
    }
    out
}
