//! `console`: the review console's API as a chat bridge uses it. The real `supervise
//! console` (found next to `supervise-server`) on a database of pending proposals; one
//! keep-alive connection approves them one at a time with a bearer token while another
//! holds `GET /api/v1/events` as Server-Sent Events. Reported: the approve call's latency
//! (the row's percentiles) and the time from its answer to the `approved` event on the
//! stream (`extra.event_p50_us`, `extra.event_p99_us`), which the console's change-feed
//! poll (every 250 ms) bounds.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use supervise_store::{Actor, Kind, NewProposal, ProposalLimits, Role, Store, StoreOptions};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::Ctx;
use crate::stats::{Latency, Row, fmt_us, rate};

/// Decisions per measured second asked for; each waits for its event, so the run is paced
/// by the feed and stops at this count.
const DECISIONS_PER_SECOND: f64 = 3.0;

pub async fn console(ctx: &Ctx) -> Result<Row> {
    let bin = ctx.cli_bin()?;
    let n = ((ctx.duration.as_secs_f64() * DECISIONS_PER_SECOND) as usize).max(20);
    let db = ctx.dir.join("console.db");
    let store = Store::open(
        &db,
        StoreOptions {
            limits: ProposalLimits {
                max_pending_per_bottle: None,
                ..ProposalLimits::default()
            },
            ..StoreOptions::default()
        },
    )
    .await?;
    let root = Actor::cli("bench");
    let bottle = store
        .add_bottle("console", "10.255.1.2".parse()?, &root)
        .await?;
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let p = store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: json!({ "host": format!("host{i}.example.test"), "port": 443 }),
                justification: "bench".into(),
                quorum: None,
            })
            .await?;
        ids.push(p.proposal().id.to_string());
    }
    store
        .add_operator("bridge", Role::Approver, &[], &root)
        .await?;
    let token = store.operator_token("bridge", &root).await?;
    let token = token.expose().to_owned();
    store.close().await;

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let addr = format!("127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(&bin)
        .arg("--db")
        .arg(&db)
        .arg("console")
        .arg("--listen")
        .arg(&addr)
        .env("SUPERVISE_LOG", &ctx.log_filter)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} console", bin.display()))?;
    let mut out = BufReader::new(child.stdout.take().context("console stdout")?).lines();
    match tokio::time::timeout(Duration::from_secs(10), out.next_line()).await {
        Ok(Ok(Some(line))) if line.contains("listening on") => {}
        other => bail!("the console did not start: {other:?}"),
    }

    let (events_tx, mut events) = mpsc::unbounded_channel::<(String, Instant)>();
    let stream = open_stream(&addr, &token).await?;
    tokio::spawn(read_events(stream, events_tx));

    let mut conn = BufReader::new(TcpStream::connect(&addr).await?);
    let (mut decide_ns, mut event_ns) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut errors = 0u64;
    let start = Instant::now();
    for (i, id) in ids.iter().enumerate() {
        // Decisions land at spread phases of the console's feed poll, as people's would,
        // rather than each right after the poll that reported the last one.
        tokio::time::sleep(Duration::from_millis((i as u64 * 97) % 250)).await;
        let sent = Instant::now();
        let request = format!(
            "POST /api/v1/proposals/{id}/approve HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {token}\r\nContent-Length: 0\r\n\r\n"
        );
        conn.get_mut().write_all(request.as_bytes()).await?;
        let status = read_response(&mut conn).await?;
        let answered = Instant::now();
        decide_ns.push((answered - sent).as_nanos() as u64);
        if status != 200 {
            errors += 1;
            continue;
        }
        loop {
            let Some((seen, at)) = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await
                .context("no approved event within 10 s")?
            else {
                bail!("the events stream ended");
            };
            if &seen == id {
                event_ns.push(at.saturating_duration_since(answered).as_nanos() as u64);
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    let _ = child.kill().await;
    let latency = Latency::from_ns(&mut decide_ns);
    let event = Latency::from_ns(&mut event_ns);
    let mut row = Row {
        scenario: "console".into(),
        style: "-".into(),
        connections: 1,
        requests: n as u64,
        errors,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(n as u64, elapsed),
        latency,
        note: format!(
            "approve p50 {} p99 {}; answer to SSE event p50 {} p99 {}",
            fmt_us(latency.p50_us),
            fmt_us(latency.p99_us),
            fmt_us(event.p50_us),
            fmt_us(event.p99_us)
        ),
        ..Default::default()
    };
    row.extra.insert("event_p50_us".into(), event.p50_us.into());
    row.extra.insert("event_p99_us".into(), event.p99_us.into());
    Ok(row)
}

async fn open_stream(addr: &str, token: &str) -> Result<BufReader<TcpStream>> {
    let mut s = TcpStream::connect(addr).await?;
    let request = format!(
        "GET /api/v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Accept: text/event-stream\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).await?;
    if !line.starts_with("HTTP/1.1 200") {
        bail!("the events stream was refused: {line}");
    }
    loop {
        line.clear();
        r.read_line(&mut line).await?;
        if line == "\r\n" || line.is_empty() {
            return Ok(r);
        }
    }
}

/// Sends (proposal id, when it was read) for every `approved` event. The body is chunked;
/// the SSE lines inside are found by their prefixes, whatever the chunking.
async fn read_events(mut r: BufReader<TcpStream>, tx: mpsc::UnboundedSender<(String, Instant)>) {
    let mut line = String::new();
    let mut approved = false;
    loop {
        line.clear();
        match r.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = line.trim_end();
        if text == "event: approved" {
            approved = true;
        } else if let Some(data) = text.strip_prefix("data: ") {
            let id = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|v| v["proposal_id"].as_str().map(str::to_owned));
            if approved
                && let Some(id) = id
                && tx.send((id, Instant::now())).is_err()
            {
                return;
            }
            approved = false;
        }
    }
}

/// Reads one response with a Content-Length body; its status.
async fn read_response(r: &mut BufReader<TcpStream>) -> Result<u16> {
    let mut line = String::new();
    r.read_line(&mut line).await?;
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {line:?}"))?;
    let mut length = 0usize;
    loop {
        line.clear();
        r.read_line(&mut line).await?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).await?;
    Ok(status)
}
