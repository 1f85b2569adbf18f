//! `tasks`: proposals filed as tasks (2026-07-28, tasks extension). Measures the task
//! creation rate (task-returning `propose-egress` calls, one connection per bottle), then,
//! with every task open, the latency from each decision committed by another process (this
//! binary's `decide`, one transaction each, as the CLI does) to its `notifications/tasks` on
//! the bottle's `subscriptions/listen` stream. Sized like `wake` (`--wake`, `--wake-rate`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

use super::ctx::{Ctx, Under, propose_args, run_decider};
use crate::client::{Target, tcp_connect};
use crate::stats::{Latency, Row, fmt_us, rate};
use crate::sys;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"supervise-bench","version":"0.1.0"}}"#;

/// One keep-alive connection from a bottle's address.
async fn connect(target: &Target, ip: IpAddr) -> Result<SendRequest<Full<Bytes>>> {
    let stream = tcp_connect(target, Some(ip)).await?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &Target,
    method: &str,
    name: Option<&str>,
    body: String,
) -> Result<http::Response<Incoming>> {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(HOST, target.addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        req = req.header("mcp-name", n);
    }
    sender.ready().await.context("connection closed")?;
    Ok(sender
        .send_request(req.body(Full::new(Bytes::from(body)))?)
        .await?)
}

/// Files `n` tasks from `ip`, one after another; returns their ids.
async fn create(target: Target, ip: IpAddr, n: usize, tag: String) -> Result<Vec<String>> {
    let mut sender = connect(&target, ip).await?;
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let args = propose_args(&format!("{tag}-{i}.example.com"));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"propose-egress","arguments":{args},{META}}}}}"#
        );
        let resp = post(
            &mut sender,
            &target,
            "tools/call",
            Some("propose-egress"),
            body,
        )
        .await?;
        let bytes = resp.into_body().collect().await?.to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&bytes)?;
        match v["result"]["taskId"].as_str() {
            Some(id) if v["result"]["resultType"] == "task" => ids.push(id.to_owned()),
            _ => bail!("not a task: {v}"),
        }
    }
    Ok(ids)
}

/// Holds a `subscriptions/listen` stream for `ids` and records when each task's
/// notification arrives (monotonic ns), until the stream ends.
async fn listen(target: Target, ip: IpAddr, ids: Vec<String>) -> Result<HashMap<String, u64>> {
    let mut sender = connect(&target, ip).await?;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"notifications":{{"taskIds":{}}},{META}}}}}"#,
        serde_json::to_string(&ids)?
    );
    let resp = post(&mut sender, &target, "subscriptions/listen", None, body).await?;
    if resp.status() != StatusCode::OK {
        let bytes = resp.into_body().collect().await?.to_bytes();
        bail!("listen refused: {}", String::from_utf8_lossy(&bytes));
    }
    let mut body = resp.into_body();
    let mut buf = String::new();
    let mut heard = HashMap::with_capacity(ids.len());
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        let at = sys::monotonic_ns();
        buf.push_str(std::str::from_utf8(&data)?);
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if let Some(json) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                let v: serde_json::Value = serde_json::from_str(json)?;
                if let Some(id) = v["params"]["taskId"].as_str() {
                    heard.insert(id.to_owned(), at);
                }
            }
        }
    }
    Ok(heard)
}

pub async fn tasks(ctx: &Ctx, n: usize, decide_rate: f64) -> Result<Row> {
    let under = Under::start(ctx, "tasks", 0).await?;
    let db_path = under.db()?.to_path_buf();
    let ips = ctx.ips();
    let per = n.div_ceil(ips.len()).max(1);
    let started = Instant::now();
    let creators: Vec<_> = ips
        .iter()
        .enumerate()
        .map(|(k, ip)| {
            let left = n.saturating_sub(k * per).min(per);
            tokio::spawn(create(
                under.target.clone(),
                IpAddr::V4(*ip),
                left,
                format!("tasks-{k}"),
            ))
        })
        .collect();
    let mut by_bottle = Vec::new();
    for c in creators {
        by_bottle.push(c.await??);
    }
    let create_time = started.elapsed();
    let created: usize = by_bottle.iter().map(Vec::len).sum();

    let listeners: Vec<_> = ips
        .iter()
        .zip(&by_bottle)
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(ip, ids)| tokio::spawn(listen(under.target.clone(), IpAddr::V4(*ip), ids.clone())))
        .collect();
    // Let every stream make its first read before deciding.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let ids_file = ctx.dir.join("tasks-ids.txt");
    std::fs::write(&ids_file, by_bottle.concat().join("\n"))?;
    let decided_at = Instant::now();
    let committed = run_decider(&db_path, &ids_file, decide_rate, n).await?;
    let decide_time = decided_at.elapsed();
    let mut heard = HashMap::with_capacity(n);
    for l in listeners {
        match tokio::time::timeout(Duration::from_secs(30), l).await {
            Ok(Ok(Ok(h))) => heard.extend(h),
            Ok(Ok(Err(e))) => bail!("a listen stream failed: {e:#}"),
            _ => bail!("a listen stream did not end"),
        }
    }
    let mut samples: Vec<u64> = committed
        .iter()
        .filter_map(|(id, c)| heard.get(id).map(|h| h.saturating_sub(*c)))
        .collect();
    let missed = committed.len() - samples.len();
    let latency = Latency::from_ns(&mut samples);
    let creation_rate = rate(created as u64, create_time);
    let mut row = Row {
        scenario: "tasks".into(),
        style: "2026-07-28".into(),
        connections: ips.len(),
        requests: created as u64,
        errors: missed as u64,
        seconds: create_time.as_secs_f64(),
        throughput: creation_rate,
        latency,
        note: format!(
            "{created} tasks created at {creation_rate:.0}/s ({} connections); decision→notifications/tasks with all {created} open, {} decisions from another process at {:.0}/s{}: {missed} missed; max {}",
            ips.len(),
            committed.len(),
            rate(committed.len() as u64, decide_time),
            if decide_rate > 0.0 { " (paced)" } else { "" },
            fmt_us(latency.max_us),
        ),
        ..Default::default()
    };
    row.extra
        .insert("creation_per_s".into(), creation_rate.into());
    Ok(row)
}
