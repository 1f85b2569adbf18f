//! `squid-acl`: the Squid helper's lookups per second against one helper process (what one
//! Squid child serves), on a database with one bottle and 10 egress grants, half the
//! lookups covered by a grant and half refused. The helper is the real `supervise
//! squid-acl`, found next to `supervise-server`; lines are written as fast as it reads them.

use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;
use supervise_store::{Actor, Kind, NewProposal, Store, StoreOptions, Verdict};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::Ctx;
use crate::stats::{Row, rate};

/// Lookups per measured second asked for (the run stops at this count, whatever the rate).
const LOOKUPS_PER_SECOND: f64 = 5000.0;

pub async fn squid_acl(ctx: &Ctx) -> Result<Row> {
    let bin = ctx
        .server_bin
        .as_ref()
        .and_then(|s| s.parent())
        .map(|d| d.join(format!("supervise{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file())
        .context("the supervise CLI was not found next to supervise-server")?;
    let db = ctx.dir.join("squid-acl.db");
    let store = Store::open(
        &db,
        StoreOptions {
            durable: false,
            ..StoreOptions::default()
        },
    )
    .await?;
    let bottle = store
        .add_bottle("squid", "10.255.0.2".parse()?, &Actor::cli("bench"))
        .await?;
    for i in 1..=10 {
        let p = store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({ "host": format!("host{i}.example.test"), "port": 443 }),
                justification: "bench".into(),
                quorum: None,
            })
            .await?;
        store
            .decide(
                &p.proposal().id,
                Verdict::Approve,
                &Actor::cli("bench"),
                None,
                None,
            )
            .await?;
    }
    store.close().await;

    let n = ((ctx.duration.as_secs_f64() * LOOKUPS_PER_SECOND) as usize).max(1000);
    let mut child = tokio::process::Command::new(&bin)
        .arg("--db")
        .arg(&db)
        .arg("squid-acl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut stdin = child.stdin.take().context("helper stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("helper stdout")?).lines();
    // One warm-up lookup opens the database, as the first lookup in Squid would.
    stdin
        .write_all(b"10.255.0.2 host1.example.test 443\n")
        .await?;
    lines.next_line().await?;

    let start = Instant::now();
    let writer = tokio::spawn(async move {
        let mut buf = Vec::with_capacity(64 * 1024);
        for i in 0..n {
            buf.extend_from_slice(
                format!("{} 10.255.0.2 host{}.example.test 443\n", i % 8, i % 20 + 1).as_bytes(),
            );
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
        let allowed = i % 20 < 10;
        match (line.split_once(' ').map(|(_, v)| v), allowed) {
            (Some("OK"), true) => ok += 1,
            (Some(v), false) if v.starts_with("ERR ") => refused += 1,
            _ => wrong += 1,
        }
    }
    let elapsed = start.elapsed();
    writer.await??;
    let _ = child.wait().await;
    Ok(Row {
        scenario: "squid-acl".into(),
        style: "-".into(),
        connections: 1,
        requests: n as u64,
        errors: wrong,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(n as u64, elapsed),
        note: format!(
            "one helper process; {ok} OK, {refused} ERR; {:.0} us per lookup",
            elapsed.as_secs_f64() * 1e6 / n as f64
        ),
        ..Default::default()
    })
}
