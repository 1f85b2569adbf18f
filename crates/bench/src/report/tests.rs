//! The targets' arithmetic per backend and the side-by-side table, on made-up rows.

use super::*;
use crate::stats::Latency;

fn row(scenario: &str, style: &str, backend: &str, throughput: f64) -> Row {
    Row {
        scenario: scenario.into(),
        style: style.into(),
        backend: backend.into(),
        connections: 64,
        requests: 1000,
        throughput,
        ..Default::default()
    }
}

fn with_cpu(mut r: Row, us: f64) -> Row {
    r.server_cpu_us = Some(us);
    r
}

fn with_p99_ms(mut r: Row, ms: f64) -> Row {
    r.latency = Latency {
        p50_us: ms * 500.0,
        p99_us: ms * 1000.0,
        p999_us: ms * 1000.0,
        max_us: ms * 1000.0,
    };
    r
}

fn held(mut r: Row, kib: f64) -> Row {
    r.extra
        .insert("rss_per_held_call_bytes".into(), (kib * 1024.0).into());
    r
}

fn run() -> Vec<Row> {
    vec![
        row("baseline-sqlite", "-", "sqlite", 10_000.0),
        row("baseline-http", "bare", "-", 100_000.0),
        with_cpu(row("propose", MODERN, "sqlite", 25_000.0), 35.0),
        with_cpu(row("check-pending", MODERN, "sqlite", 40_000.0), 22.0),
        with_p99_ms(row("wake-burst", MODERN, "sqlite", 900.0), 60.0),
        with_p99_ms(row("tasks", MODERN, "sqlite", 100.0), 12.0),
        row("baseline-pg", "-", "postgres", 800.0),
        row("baseline-pg-c8", "-", "postgres", 4000.0),
        with_cpu(row("propose", MODERN, "postgres", 1200.0), 90.0),
        with_cpu(row("check-pending", MODERN, "postgres", 60_000.0), 15.0),
        with_p99_ms(row("wake-burst", MODERN, "postgres", 900.0), 30.0),
        row("garbage-batch", "2025-03-26", "postgres", 0.0),
        held(row("hold", MODERN, "sqlite", 0.0), 28.5),
    ]
}

fn get<'a>(ts: &'a [Target], backend: &str, name: &str) -> &'a Target {
    ts.iter()
        .find(|t| t.backend == backend && t.name == name)
        .unwrap_or_else(|| panic!("no {backend} target {name:?} in {ts:#?}"))
}

#[test]
fn each_backend_is_judged_against_its_own_commit_rate() {
    let rows = run();
    let ts = targets(&rows, &rows);
    let s = get(&ts, "sqlite", "propose 2026-07-28 / baseline-sqlite");
    assert_eq!(s.value, Some(2.5));
    assert_eq!(s.met, Some(true));
    let p = get(&ts, "postgres", "propose 2026-07-28 / baseline-pg");
    assert_eq!(p.value, Some(1.5));
    assert_eq!(p.met, Some(true));
    assert!(
        !ts.iter()
            .any(|t| t.backend == "postgres" && t.name.contains("baseline-sqlite"))
    );
    assert!(
        !ts.iter()
            .any(|t| t.backend == "sqlite" && t.name.contains("baseline-pg"))
    );
    let c8 = get(&ts, "postgres", "propose 2026-07-28 / baseline-pg-c8");
    assert_eq!(c8.value, Some(0.3));
    assert_eq!(c8.met, Some(false));
}

#[test]
fn the_bare_hyper_baseline_serves_both_backends() {
    let rows = run();
    let ts = targets(&rows, &rows);
    let s = get(&ts, "sqlite", "check-pending 2026-07-28 / baseline-http");
    assert_eq!((s.value, s.met), (Some(0.4), Some(false)));
    let p = get(&ts, "postgres", "check-pending 2026-07-28 / baseline-http");
    assert_eq!((p.value, p.met), (Some(0.6), Some(true)));
}

#[test]
fn cpu_per_call_targets_per_backend() {
    let rows = run();
    let ts = targets(&rows, &rows);
    let name = "propose 2026-07-28: server CPU per call (µs)";
    assert_eq!(get(&ts, "sqlite", name).met, Some(true));
    assert_eq!(get(&ts, "postgres", name).met, Some(false));
    let name = "check-pending 2026-07-28: server CPU per call (µs)";
    assert_eq!(get(&ts, "sqlite", name).met, Some(false));
    assert_eq!(get(&ts, "postgres", name).value, Some(15.0));
    assert_eq!(get(&ts, "postgres", name).met, Some(true));
}

#[test]
fn wake_burst_and_tasks_are_judged_on_p99() {
    let rows = run();
    let ts = targets(&rows, &rows);
    let s = get(&ts, "sqlite", "wake-burst p99 (ms)");
    assert_eq!((s.value, s.met), (Some(60.0), Some(false)));
    assert_eq!(get(&ts, "postgres", "wake-burst p99 (ms)").met, Some(true));
    assert_eq!(get(&ts, "sqlite", "wake-burst p50 (ms)").met, None);
    // 1000 open tasks is the size the target names.
    let t = get(
        &ts,
        "sqlite",
        "tasks: decision → notifications/tasks p99 at 1000 open (ms)",
    );
    assert_eq!((t.value, t.met), (Some(12.0), Some(true)));
}

#[test]
fn per_round_ratios_pair_rounds_of_the_same_pass() {
    let tag = |mut r: Row, pass: u64, round: u64| {
        r.extra.insert("pass".into(), pass.into());
        r.extra.insert("round".into(), round.into());
        r
    };
    let runs = vec![
        tag(row("baseline-pg", "-", "postgres", 1000.0), 1, 0),
        tag(row("propose", MODERN, "postgres", 1500.0), 1, 0),
        tag(row("baseline-pg", "-", "postgres", 500.0), 1, 1),
        tag(row("propose", MODERN, "postgres", 1000.0), 1, 1),
    ];
    let medians = medians(&runs);
    let ts = targets(&medians, &runs);
    let p = get(&ts, "postgres", "propose 2026-07-28 / baseline-pg");
    assert!(p.detail.ends_with("per round 1.50, 2.00"), "{}", p.detail);
}

#[test]
fn medians_keep_backends_apart() {
    let rows = vec![
        row("propose", MODERN, "sqlite", 3.0),
        row("propose", MODERN, "postgres", 10.0),
        row("propose", MODERN, "sqlite", 1.0),
        row("propose", MODERN, "sqlite", 2.0),
    ];
    let m = medians(&rows);
    assert_eq!(m.len(), 2);
    assert_eq!((m[0].backend.as_str(), m[0].throughput), ("sqlite", 2.0));
    assert_eq!((m[1].backend.as_str(), m[1].throughput), ("postgres", 10.0));
}

#[test]
fn side_by_side_pairs_the_backends_per_scenario() {
    let rows = run();
    let text = side_by_side(&rows);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line in\n{text}"))
            .to_string()
    };
    assert!(line("propose").ends_with("0.05×"), "{}", line("propose"));
    assert!(line("check-pending").ends_with("1.50×"));
    assert!(
        !text.contains("baseline-http"),
        "bare hyper is in the main table only"
    );
    assert!(line("baseline-pg ").contains("800"));
    assert!(
        text.lines().nth(2).unwrap().starts_with("baseline-sqlite"),
        "baselines first:\n{text}"
    );
    assert!(
        !text.contains("garbage"),
        "rows with no figure are left out"
    );
    assert!(line("hold").contains("28.5 KiB/held"), "{}", line("hold"));
    // One backend alone: nothing to put side by side.
    let sqlite: Vec<Row> = rows
        .into_iter()
        .filter(|r| r.backend != "postgres")
        .collect();
    assert_eq!(side_by_side(&sqlite), "");
}

#[test]
fn the_targets_print_one_block_per_backend() {
    let rows = run();
    let text = targets_text(&targets(&rows, &rows));
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("targets")).collect();
    assert_eq!(headers, ["targets (sqlite):", "targets (postgres):"]);
}

/// Both backends' rows with each figure of the verdict table, 10,000 calls held.
fn both_backends() -> Vec<Row> {
    let hold = |backend, kib| {
        let mut r = held(row("hold", MODERN, backend, 0.0), kib);
        r.connections = 10_000;
        r
    };
    vec![
        row("baseline-sqlite", "-", "sqlite", 5_000.0),
        row("baseline-http", "bare", "-", 80_000.0),
        with_cpu(row("propose", LEGACY, "sqlite", 4_000.0), 180.0),
        with_cpu(row("propose", MODERN, "sqlite", 3_500.0), 200.0),
        with_cpu(row("check-pending", LEGACY, "sqlite", 48_000.0), 19.0),
        with_cpu(row("check-pending", MODERN, "sqlite", 40_000.0), 21.0),
        hold("sqlite", 15.5),
        row("baseline-pg", "-", "postgres", 4_000.0),
        row("baseline-pg-c8", "-", "postgres", 20_000.0),
        with_cpu(row("propose", LEGACY, "postgres", 4_000.0), 60.0),
        with_cpu(row("propose", MODERN, "postgres", 2_000.0), 70.0),
        with_cpu(row("check-pending", LEGACY, "postgres", 8_000.0), 88.0),
        with_cpu(row("check-pending", MODERN, "postgres", 8_000.0), 87.0),
        hold("postgres", 19.8),
    ]
}

#[test]
fn the_verdict_table_gives_every_target_its_figure_on_each_backend() {
    let rows = both_backends();
    let text = verdict_table(&targets(&rows, &rows));
    let want = "\
verdicts (pairs are 2025-11-25 / 2026-07-28):
target                                      goal                                 sqlite                       postgres                   verdict
---------------------------------------------------------------------------------------------------------------------------------------------
propose / one-row commit rate               ≥ 2× SQLite FULL, ≥ 1× pgbench -c 1  0.80× / 0.70× not met        1.00× / 0.50× not met      not met
server CPU per propose                      ≤ 40 µs                              180.0 µs / 200.0 µs not met  60.0 µs / 70.0 µs not met  not met
check-pending / bare hyper                  ≥ 0.5× on both                       0.60× / 0.50× met            0.10× / 0.10× not met      not met on postgres
server CPU per pending poll                 ≤ 20 µs on both                      19.0 µs / 21.0 µs not met    88.0 µs / 87.0 µs not met  not met
RSS per held call at 10k                    ≤ 16 KiB (bare hyper)                15.5 KiB met                 19.8 KiB not met           not met on postgres
propose, fleet of 8 writers / pgbench -c 8  ≥ 0.5× (PostgreSQL)                  –                            0.20× / 0.10× not met      not met
";
    assert_eq!(text, want, "got:\n{text}");
}

#[test]
fn the_verdict_table_says_met_only_for_what_was_measured() {
    // SQLite alone, every figure within its goal, but fewer than 10,000 calls held.
    let rows = vec![
        row("baseline-sqlite", "-", "sqlite", 1_000.0),
        row("baseline-http", "bare", "-", 10_000.0),
        with_cpu(row("propose", LEGACY, "sqlite", 2_500.0), 30.0),
        with_cpu(row("propose", MODERN, "sqlite", 2_000.0), 40.0),
        with_cpu(row("check-pending", MODERN, "sqlite", 6_000.0), 15.0),
        held(row("hold", MODERN, "sqlite", 0.0), 12.0),
    ];
    let text = verdict_table(&targets(&rows, &rows));
    let verdict = |label: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line in\n{text}"));
        line.rsplit("  ").next().unwrap().trim().to_string()
    };
    assert!(!text.contains("postgres"), "{text}");
    assert_eq!(verdict("propose / one-row"), "met");
    assert_eq!(verdict("server CPU per propose"), "met");
    assert_eq!(verdict("check-pending / bare hyper"), "met");
    assert_eq!(verdict("RSS per held call"), "no verdict", "64 held");
    assert!(text.contains("12.0 KiB no verdict"), "{text}");
    assert_eq!(verdict("propose, fleet"), "no verdict", "PostgreSQL only");
    // Nothing of the table measured: no table.
    assert_eq!(verdict_table(&[]), "");
}
