//! The two physical limits every figure is quoted against: how many durable one-row SQLite
//! commits this disk takes per second through the C library (`baseline-sqlite`; through
//! sqlx, the server's driver, `baseline-sqlx`), and how many requests a bare
//! hyper server answers over the same connections (`baseline-http`, served by this binary
//! in a child process so it is pinned and measured like the real server).

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection};

use crate::stats::{Latency, Row, rate};
use crate::sys;

/// A fixed answer the size and shape of a `check-proposal` result.
pub const FIXED_BODY: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"proposal 019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11 is still pending: egress to mirror.example.com:443.\nPoll check-proposal with this id in a minute; do not propose again."}],"#,
    r#""structuredContent":{"proposal_id":"019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11","status":"pending","kind":"egress","#,
    r#""proposal":{"host":"mirror.example.com","port":443,"justification":"bench"}},"isError":false}}"#
);

/// Runs the bare server until killed: every request on every path gets [`FIXED_BODY`],
/// after `hold` when given (except `/healthz`): the bare cost of a held request.
pub async fn serve_fixed(listen: SocketAddr, hold: Option<Duration>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| async move {
                if let Some(hold) = hold
                    && req.uri().path() != "/healthz"
                {
                    tokio::time::sleep(hold).await;
                }
                let mut resp = Response::new(Full::new(Bytes::from_static(FIXED_BODY.as_bytes())));
                resp.headers_mut()
                    .insert(CONTENT_TYPE, "application/json".parse().expect("static"));
                Ok::<_, Infallible>(resp)
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// One-row `BEGIN IMMEDIATE … COMMIT` transactions in a loop for `duration`, on a new file
/// in `dir`, with the server's settings (WAL, `synchronous=FULL`), through the C library
/// with the thinnest binding (`rusqlite`, one prepared statement, on this thread): the
/// disk's limit, with no driver in between.
pub async fn sqlite_commits(dir: &Path, duration: Duration) -> Result<Row> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || sqlite_commits_sync(&dir, duration)).await?
}

fn sqlite_commits_sync(dir: &Path, duration: Duration) -> Result<Row> {
    let path = dir.join("baseline-sqlite.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    anyhow::ensure!(mode == "wal", "journal_mode is {mode}, not wal");
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")?;
    let mut begin = conn.prepare("BEGIN IMMEDIATE")?;
    let mut insert = conn.prepare("INSERT INTO t (v) VALUES (?1)")?;
    let mut commit = conn.prepare("COMMIT")?;
    let mut samples = Vec::new();
    let cpu0 = sys::process_cpu(0);
    let start = Instant::now();
    let mut n: u64 = 0;
    let mut v = String::new();
    while start.elapsed() < duration {
        let t0 = Instant::now();
        v.clear();
        write!(v, "row {n}")?;
        begin.execute([])?;
        insert.execute([&v])?;
        commit.execute([])?;
        samples.push(t0.elapsed().as_nanos() as u64);
        n += 1;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_since(cpu0);
    drop((begin, insert, commit));
    conn.close().map_err(|(_, e)| e)?;
    let _ = std::fs::remove_file(&path);
    Ok(commit_row(
        "baseline-sqlite",
        n,
        elapsed,
        &mut samples,
        cpu,
        "one-row commits/s through the C library (rusqlite), WAL, synchronous=FULL",
    ))
}

/// The same loop through sqlx, the server's driver: beside `baseline-sqlite`, what the
/// driver's hand-off to its worker thread costs one connection.
pub async fn sqlx_commits(dir: &Path, duration: Duration) -> Result<Row> {
    let path = dir.join("baseline-sqlx.db");
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(5));
    let mut conn = SqliteConnection::connect_with(&options).await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .execute(&mut conn)
        .await?;
    let mut samples = Vec::new();
    let cpu0 = sys::process_cpu(0);
    let start = Instant::now();
    let mut n: u64 = 0;
    while start.elapsed() < duration {
        let t0 = Instant::now();
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query("INSERT INTO t (v) VALUES (?)")
            .bind(format!("row {n}"))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        samples.push(t0.elapsed().as_nanos() as u64);
        n += 1;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_since(cpu0);
    conn.close().await?;
    let _ = std::fs::remove_file(&path);
    Ok(commit_row(
        "baseline-sqlx",
        n,
        elapsed,
        &mut samples,
        cpu,
        "one-row commits/s through sqlx, WAL, synchronous=FULL",
    ))
}

fn cpu_since(cpu0: Option<Duration>) -> Option<Duration> {
    match (cpu0, sys::process_cpu(0)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    }
}

fn commit_row(
    scenario: &str,
    n: u64,
    elapsed: Duration,
    samples: &mut [u64],
    cpu: Option<Duration>,
    note: &str,
) -> Row {
    Row {
        scenario: scenario.into(),
        style: "-".into(),
        connections: 1,
        requests: n,
        errors: 0,
        seconds: elapsed.as_secs_f64(),
        throughput: rate(n, elapsed),
        latency: Latency::from_ns(samples),
        server_cpu_us: None,
        client_cores: cpu.map(|c| c.as_secs_f64() / elapsed.as_secs_f64()),
        note: note.into(),
        ..Default::default()
    }
}
