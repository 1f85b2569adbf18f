//! The closed-loop driver: every connection sends its next call as soon as the previous one
//! answers, for a warm-up and then a measured window (or until its work runs out), while
//! the server's and the generator's CPU time are read from /proc at the window's edges.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::sync::Semaphore;

use crate::client::{Conn, Style, Target};
use crate::stats::{Latency, Row, rate};
use crate::sys;

/// What connection `conn` sends as its `seq`-th call: a tool name and its arguments'
/// JSON text; `None` when that connection has no more work.
pub type Plan = Arc<dyn Fn(usize, u64) -> Option<(&'static str, String)> + Send + Sync>;

/// Opens `n` connections, the i-th from `ips[i % ips.len()]`, at most `parallel` at a time.
pub async fn open_conns(
    target: &Target,
    n: usize,
    style: Style,
    ips: &[Ipv4Addr],
    parallel: usize,
) -> Result<Vec<Conn>> {
    let gate = Arc::new(Semaphore::new(parallel.max(1)));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let ip = ips.get(i % ips.len().max(1)).copied();
        let target = target.clone();
        let gate = gate.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await?;
            Conn::open(&target, ip.map(IpAddr::V4), style).await
        }));
    }
    let mut conns = Vec::with_capacity(n);
    for t in tasks {
        conns.push(t.await??);
    }
    Ok(conns)
}

/// How long to run and what a good answer is.
#[derive(Clone)]
pub struct LoadOpts {
    pub warmup: Duration,
    /// `None`: run until every connection's plan returns `None`, measuring all of it.
    pub duration: Option<Duration>,
    /// The `status` every answer must carry.
    pub expect: &'static str,
    pub server_pid: Option<u32>,
}

/// What a run measured.
#[derive(Debug, Default)]
pub struct LoadOut {
    pub ok: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub latency: Latency,
    pub server_cpu: Option<Duration>,
    pub client_cpu: Option<Duration>,
    pub first_error: Option<String>,
}

impl LoadOut {
    /// The report row for this run.
    pub fn row(&self, scenario: &str, style: &str, connections: usize) -> Row {
        let requests = self.ok + self.errors;
        let secs = self.elapsed.as_secs_f64();
        Row {
            scenario: scenario.into(),
            style: style.into(),
            connections,
            requests,
            errors: self.errors,
            seconds: secs,
            throughput: rate(self.ok, self.elapsed),
            latency: self.latency,
            server_cpu_us: self
                .server_cpu
                .filter(|_| requests > 0)
                .map(|c| c.as_secs_f64() * 1e6 / requests as f64),
            client_cores: self
                .client_cpu
                .filter(|_| secs > 0.0)
                .map(|c| c.as_secs_f64() / secs),
            note: self
                .first_error
                .as_ref()
                .map(|e| format!("first error: {e}"))
                .unwrap_or_default(),
            ..Default::default()
        }
    }
}

struct WorkerOut {
    ok: u64,
    errors: u64,
    samples: Vec<u64>,
    first_error: Option<String>,
}

fn cpu_of(pid: Option<u32>) -> Option<Duration> {
    pid.and_then(sys::process_cpu)
}

/// Runs every connection in a closed loop under `plan`.
pub async fn run(conns: Vec<Conn>, plan: Plan, opts: LoadOpts) -> LoadOut {
    let start = Instant::now();
    let measure_from = start + opts.warmup;
    let until = opts.duration.map(|d| measure_from + d);
    let n = conns.len();
    let mut tasks = Vec::with_capacity(n);
    for (i, mut conn) in conns.into_iter().enumerate() {
        let plan = plan.clone();
        let expect = opts.expect;
        tasks.push(tokio::spawn(async move {
            let mut out = WorkerOut {
                ok: 0,
                errors: 0,
                samples: Vec::new(),
                first_error: None,
            };
            let mut seq = 0u64;
            loop {
                if until.is_some_and(|u| Instant::now() >= u) {
                    break;
                }
                let Some((tool, args)) = plan(i, seq) else {
                    break;
                };
                seq += 1;
                let t0 = Instant::now();
                let result = conn.call_tool(tool, &args).await;
                let done = Instant::now();
                let counted = done >= measure_from && until.is_none_or(|u| done < u);
                let good = match &result {
                    Ok(reply) if reply.status() == Some(expect) => true,
                    Ok(reply) => {
                        if out.first_error.is_none() {
                            out.first_error = Some(reply.describe());
                        }
                        false
                    }
                    Err(e) => {
                        if out.first_error.is_none() {
                            out.first_error = Some(format!("{e:#}"));
                        }
                        false
                    }
                };
                if counted {
                    if good {
                        out.ok += 1;
                        out.samples.push((done - t0).as_nanos() as u64);
                    } else {
                        out.errors += 1;
                    }
                }
                if result.is_err() {
                    // The connection is gone; this worker stops.
                    break;
                }
            }
            out
        }));
    }

    tokio::time::sleep_until(measure_from.into()).await;
    let s0 = cpu_of(opts.server_pid);
    let c0 = sys::process_cpu(0);
    let t_from = Instant::now();
    let mut s1 = None;
    let mut c1 = None;
    let mut t_to = None;
    if let Some(u) = until {
        tokio::time::sleep_until(u.into()).await;
        s1 = cpu_of(opts.server_pid);
        c1 = sys::process_cpu(0);
        t_to = Some(Instant::now());
    }

    let mut out = LoadOut::default();
    let mut samples = Vec::new();
    for t in tasks {
        if let Ok(w) = t.await {
            out.ok += w.ok;
            out.errors += w.errors;
            samples.extend(w.samples);
            if out.first_error.is_none() {
                out.first_error = w.first_error;
            }
        }
    }
    if until.is_none() {
        s1 = cpu_of(opts.server_pid);
        c1 = sys::process_cpu(0);
        t_to = Some(Instant::now());
    }
    out.elapsed = t_to.unwrap_or_else(Instant::now) - t_from;
    out.latency = Latency::from_ns(&mut samples);
    out.server_cpu = match (s0, s1) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    out.client_cpu = match (c0, c1) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    out
}
