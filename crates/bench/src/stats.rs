//! Latency summaries and the per-scenario result row.

use std::time::Duration;

use serde::Serialize;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    /// Percentiles of samples in nanoseconds (sorted in place).
    pub fn from_ns(samples: &mut [u64]) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples[i.min(samples.len() - 1)] as f64 / 1000.0
        };
        Latency {
            p50_us: at(0.50),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: samples[samples.len() - 1] as f64 / 1000.0,
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub scenario: String,
    /// `2025-11-25`, `2026-07-28` or `-`.
    pub style: String,
    /// The database the server under test ran on: `sqlite`, `postgres`, or `-` for the
    /// bare hyper rows, which have none.
    pub backend: String,
    pub connections: usize,
    pub requests: u64,
    pub errors: u64,
    pub seconds: f64,
    /// Requests (or commits) per second.
    pub throughput: f64,
    pub latency: Latency,
    /// Server (or baseline server) CPU per request, µs; `None` when not measured.
    pub server_cpu_us: Option<f64>,
    /// Load generator CPU over the run, in cores (1.0 = one core busy the whole time).
    pub client_cores: Option<f64>,
    /// Short facts for this scenario (RSS per held call, outcome counts, …).
    pub note: String,
    /// Extra numbers for the JSON file.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Requests per second.
pub fn rate(requests: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 { requests as f64 / s } else { 0.0 }
}

/// Formats microseconds compactly: `85µs`, `1.2ms`, `3.40s`.
pub fn fmt_us(us: f64) -> String {
    if us <= 0.0 {
        "-".into()
    } else if us < 1000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.1}ms", us / 1000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

/// The median of some values (the lower middle one for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() - 1) / 2]
}
