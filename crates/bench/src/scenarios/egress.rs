//! `squid-acl` and `decide`: the proxy helpers' lookups per second against one helper
//! process (what one Squid child, or the mitmproxy addon, gets), on a database with one
//! bottle and 10 egress grants, half the lookups covered by a grant and half refused. The
//! helpers are the real `supervise squid-acl` and `supervise decide`, found next to
//! `supervise-server`; lines are written as fast as the helper reads them. `decide` asks
//! with `GET` and `POST` requests, and one grant is limited to `GET` under `/simple/`, as
//! `scripts/bench-squid-acl.sh` does.

use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;
use supervise_store::{Actor, Kind, NewProposal, Store, StoreOptions, Verdict};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::Ctx;
use crate::stats::{Row, rate};
use crate::sys;

/// Lookups per measured second asked for (the run stops at this count, whatever the rate).
const LOOKUPS_PER_SECOND: f64 = 50_000.0;

/// The bottle's address in every lookup.
const SRC: &str = "10.255.0.2";

/// Which helper a run drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Helper {
    /// `squid-acl`: `CHANNEL SRC HOST PORT`, hosts 1-10 granted, 11-20 not.
    Squid,
    /// `decide`: `ID SRC HOST PORT METHOD PATH`, hosts 1-9 granted, host 11 granted `GET`
    /// under `/simple/` only (`GET` lines pass, `POST` lines are refused), 10 and 12-20 not.
    Decide,
}

impl Helper {
    fn name(self) -> &'static str {
        match self {
            Helper::Squid => "squid-acl",
            Helper::Decide => "decide",
        }
    }

    /// Lookup `i`'s line.
    fn line(self, i: usize) -> String {
        let h = i % 20 + 1;
        match self {
            Helper::Squid => format!("{} {SRC} host{h}.example.test 443\n", i % 8),
            Helper::Decide => {
                let method = if Helper::post(i) { "POST" } else { "GET" };
                format!(
                    "{i} {SRC} host{h}.example.test 443 {method} /simple/pkg{}/\n",
                    i % 7
                )
            }
        }
    }

    /// Whether lookup `i` of `decide` is a `POST`: half of host 11's.
    fn post(i: usize) -> bool {
        i % 20 + 1 == 11 && i % 40 >= 20
    }

    /// Whether a grant lets lookup `i` through.
    fn allowed(self, i: usize) -> bool {
        let h = i % 20 + 1;
        match self {
            Helper::Squid => h <= 10,
            Helper::Decide => h <= 9 || (h == 11 && !Helper::post(i)),
        }
    }

    /// Whether `answer` (the line after its channel or id) is the one expected.
    fn right(self, answer: &str, allowed: bool) -> bool {
        match (self, allowed) {
            (Helper::Squid, true) => answer == "OK",
            (Helper::Decide, true) => answer.starts_with("OK "),
            (_, false) => answer.starts_with("ERR "),
        }
    }
}

pub async fn squid_acl(ctx: &Ctx) -> Result<Row> {
    lookups(ctx, Helper::Squid).await
}

pub async fn decide(ctx: &Ctx) -> Result<Row> {
    lookups(ctx, Helper::Decide).await
}

/// The database of a run: bottle `SRC`, hosts 1-10 proposed and approved, except that for
/// `decide` host 10 stays pending and host 11 is approved limited to `GET` under `/simple/`.
async fn prepare(ctx: &Ctx, helper: Helper) -> Result<std::path::PathBuf> {
    let db = ctx.dir.join(format!("{}.db", helper.name()));
    let store = Store::open(
        &db,
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .await?;
    let bottle = store
        .add_bottle("squid", SRC.parse()?, &Actor::cli("bench"))
        .await?;
    let hosts = match helper {
        Helper::Squid => 10,
        Helper::Decide => 11,
    };
    for i in 1..=hosts {
        let p = store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({ "host": format!("host{i}.example.test"), "port": 443 }),
                justification: "bench".into(),
                quorum: None,
            })
            .await?;
        let verdict = match (helper, i) {
            (Helper::Decide, 10) => continue,
            (Helper::Decide, 11) => {
                let patch = json!({ "methods": ["GET"], "path_prefix": "/simple/" });
                Verdict::Modify(patch.as_object().expect("an object").clone())
            }
            _ => Verdict::Approve,
        };
        store
            .decide(&p.proposal().id, verdict, &Actor::cli("bench"), None, None)
            .await?;
    }
    store.close().await;
    Ok(db)
}

async fn lookups(ctx: &Ctx, helper: Helper) -> Result<Row> {
    let bin = ctx.cli_bin()?;
    let db = prepare(ctx, helper).await?;
    let n = ((ctx.duration.as_secs_f64() * LOOKUPS_PER_SECOND) as usize).max(1000);
    // Pinned like the server under --pin: the helper is what is measured.
    let mut command = match ctx.server_cpu {
        Some(cpu) => {
            let mut c = tokio::process::Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(&bin);
            c
        }
        None => tokio::process::Command::new(&bin),
    };
    let mut child = command
        .arg("--db")
        .arg(&db)
        .arg(helper.name())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut stdin = child.stdin.take().context("helper stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("helper stdout")?).lines();
    // One warm-up lookup opens the database, as the first lookup in the proxy would.
    stdin.write_all(helper.line(0).as_bytes()).await?;
    lines.next_line().await?;

    // taskset execs the helper, so the pid is the helper's.
    let pid = child.id().context("the helper's pid")?;
    let cpu_before = sys::process_cpu(pid);
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        let mut buf = Vec::with_capacity(64 * 1024);
        for i in 0..n {
            buf.extend_from_slice(helper.line(i).as_bytes());
            if buf.len() > 60 * 1024 {
                stdin.write_all(&buf).await?;
                buf.clear();
            }
        }
        stdin.write_all(&buf).await?;
        stdin.shutdown().await?;
        anyhow::Ok(())
    });
    let (mut ok, mut refused, mut wrong) = (0u64, 0u64, 0u64);
    for i in 0..n {
        let Some(line) = lines.next_line().await? else {
            bail!("the helper stopped after {i} of {n} answers");
        };
        let allowed = helper.allowed(i);
        match line.split_once(' ').map(|(_, v)| v) {
            Some(v) if helper.right(v, allowed) => {
                if allowed {
                    ok += 1;
                } else {
                    refused += 1;
                }
            }
            _ => wrong += 1,
        }
    }
    let elapsed = start.elapsed();
    let cpu = cpu_before.zip(sys::process_cpu(pid)).map(|(a, b)| b - a);
    writer.await??;
    let _ = child.wait().await;
    Ok(Row {
        scenario: helper.name().into(),
        style: "-".into(),
        connections: 1,
        requests: n as u64,
        errors: wrong,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(n as u64, elapsed),
        server_cpu_us: cpu.map(|c| c.as_secs_f64() * 1e6 / n as f64),
        note: format!(
            "one helper process; {ok} OK, {refused} ERR; {:.1} us per lookup",
            elapsed.as_secs_f64() * 1e6 / n as f64
        ),
        ..Default::default()
    })
}
