//! The verdict table printed last: one line per performance target of docs/PERFORMANCE.md's
//! "Targets and verdicts", with its figure on each backend and whether it is met.

use serde::Serialize;

use super::{POSTGRES, SQLITE, Target, render};

/// A line of the verdict table; each [`Target`] that measures it names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Line {
    /// Durable `propose` against the database's own one-row commit rate.
    ProposeRate,
    /// The server's CPU per `propose`.
    ProposeCpu,
    /// A pending `check-proposal` against bare hyper.
    PollRate,
    /// The server's CPU per pending poll.
    PollCpu,
    /// RSS per held call, 10,000 held.
    HeldRss,
    /// `propose` from the fleet against `pgbench -c 8` (PostgreSQL only).
    FleetRate,
}

impl Line {
    /// Every line, in the table's order.
    pub const ALL: [Line; 6] = [
        Line::ProposeRate,
        Line::ProposeCpu,
        Line::PollRate,
        Line::PollCpu,
        Line::HeldRss,
        Line::FleetRate,
    ];

    fn label(self) -> &'static str {
        match self {
            Line::ProposeRate => "propose / one-row commit rate",
            Line::ProposeCpu => "server CPU per propose",
            Line::PollRate => "check-pending / bare hyper",
            Line::PollCpu => "server CPU per pending poll",
            Line::HeldRss => "RSS per held call at 10k",
            Line::FleetRate => "propose, fleet of 8 writers / pgbench -c 8",
        }
    }

    fn goal(self) -> &'static str {
        match self {
            Line::ProposeRate => "≥ 2× SQLite FULL, ≥ 1× pgbench -c 1",
            Line::ProposeCpu => "≤ 40 µs",
            Line::PollRate => "≥ 0.5× on both",
            Line::PollCpu => "≤ 20 µs on both",
            Line::HeldRss => "≤ 16 KiB (bare hyper)",
            Line::FleetRate => "≥ 0.5× (PostgreSQL)",
        }
    }

    fn figure(self, v: f64) -> String {
        match self {
            Line::ProposeRate | Line::PollRate | Line::FleetRate => format!("{v:.2}×"),
            Line::ProposeCpu | Line::PollCpu => format!("{v:.1} µs"),
            Line::HeldRss => format!("{v:.1} KiB"),
        }
    }

    fn applies_to(self, backend: &str) -> bool {
        self != Line::FleetRate || backend == POSTGRES
    }
}

/// One backend's cell: its figures (both eras where a target has two) and their verdict.
fn cell(line: Line, backend: &str, targets: &[Target]) -> (String, Option<bool>) {
    if !line.applies_to(backend) {
        return ("–".into(), None);
    }
    let mine: Vec<&Target> = targets
        .iter()
        .filter(|t| t.line == Some(line) && t.backend == backend)
        .collect();
    let figures: Vec<String> = mine
        .iter()
        .map(|t| t.value.map_or_else(|| "-".into(), |v| line.figure(v)))
        .collect();
    if figures.is_empty() {
        return ("not run".into(), None);
    }
    let met = if mine.iter().any(|t| t.met == Some(false)) {
        Some(false)
    } else if mine.iter().all(|t| t.met == Some(true)) {
        Some(true)
    } else {
        None
    };
    let word = match met {
        Some(true) => "met",
        Some(false) => "not met",
        None => "no verdict",
    };
    (format!("{} {word}", figures.join(" / ")), met)
}

/// The table: target, goal, the figure and verdict on each backend that ran, and the verdict
/// across them. Empty when no target of the table was measured.
pub fn verdict_table(targets: &[Target]) -> String {
    if !targets.iter().any(|t| t.line.is_some()) {
        return String::new();
    }
    let backends: Vec<&str> = [SQLITE, POSTGRES]
        .into_iter()
        .filter(|b| targets.iter().any(|t| t.backend == *b))
        .collect();
    let mut header = vec!["target".to_string(), "goal".to_string()];
    header.extend(backends.iter().map(|b| b.to_string()));
    header.push("verdict".into());
    let mut cells = vec![header];
    for line_of in Line::ALL {
        let mut cols = vec![line_of.label().to_string(), line_of.goal().to_string()];
        let mut short = Vec::new();
        let mut met_on = 0;
        for b in &backends {
            let (text, met) = cell(line_of, b, targets);
            match met {
                Some(false) => short.push(*b),
                Some(true) => met_on += 1,
                None => {}
            }
            cols.push(text);
        }
        let judged = backends.iter().filter(|b| line_of.applies_to(b)).count();
        cols.push(if !short.is_empty() {
            if short.len() == judged {
                "not met".into()
            } else {
                format!("not met on {}", short.join(", "))
            }
        } else if met_on > 0 && met_on == judged {
            "met".into()
        } else {
            "no verdict".into()
        });
        cells.push(cols);
    }
    let mut out = String::from("verdicts (pairs are 2025-11-25 / 2026-07-28):\n");
    out.push_str(&render(&cells, |_| false));
    out
}
