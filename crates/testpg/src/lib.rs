//! A real PostgreSQL for tests: one throwaway cluster per test process, a fresh database
//! per test. Nothing is mocked: the cluster is Debian's `postgresql` package, started from
//! a temporary directory on a free loopback port.
//!
//! - `SUPERVISE_TEST_PG` set (e.g. by `.ci/run`) to an admin URL such as
//!   `postgres://postgres@127.0.0.1:5433/postgres`: that server is used, no cluster is started.
//! - Otherwise the first call runs `initdb` and `postgres` from `/usr/lib/postgresql/*/bin`
//!   (as the `postgres` user when running as root: the server refuses root), in a
//!   `tempfile` directory with its socket inside, listening on 127.0.0.1 only. A watchdog
//!   shell stops the server and removes the directory when the test process is gone.
//! - PostgreSQL missing: [`cluster`] prints `SKIPPED: ... (apt-get install postgresql)` and
//!   returns `None`, or panics when `CI=true`, so CI never passes on a skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

/// The environment variable naming an already-running server to use.
pub const ENV: &str = "SUPERVISE_TEST_PG";

/// A running PostgreSQL server the tests may create databases on.
#[derive(Debug)]
pub struct Cluster {
    /// `postgres://USER@127.0.0.1:PORT` (no database).
    base: String,
    /// The admin database on it (`postgres`).
    admin_db: String,
}

/// The process's server, started on first use; `None` (after a loud SKIPPED line) when
/// PostgreSQL is not installed and CI is not set.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| match start() {
            Ok(c) => Some(c),
            Err(why) => {
                let line = format!("SKIPPED: PostgreSQL tests: {why} (apt-get install postgresql)");
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    panic!("{line}; CI=true requires PostgreSQL");
                }
                eprintln!("{line}");
                None
            }
        })
        .as_ref()
}

impl Cluster {
    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// Creates an empty database with a name of its own and returns its URL.
    pub async fn fresh_database(&self) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        let mut admin = PgConnection::connect(&self.url(&self.admin_db))
            .await
            .expect("connect to the test cluster");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create a test database");
        let _ = admin.close().await;
        self.url(&name)
    }
}

fn start() -> Result<Cluster, String> {
    if let Ok(url) = std::env::var(ENV)
        && !url.is_empty()
    {
        let (base, db) = url
            .rsplit_once('/')
            .filter(|(b, _)| {
                b.contains("://") && b.split("://").nth(1).is_some_and(|r| !r.is_empty())
            })
            .ok_or_else(|| format!("{ENV}={url} is not postgres://USER@HOST:PORT/DB"))?;
        return Ok(Cluster {
            base: base.to_string(),
            admin_db: db.to_string(),
        });
    }
    let bin = bin_dir().ok_or("no /usr/lib/postgresql/*/bin/initdb")?;
    let dir = tempfile::Builder::new()
        .prefix("supervise-pg")
        .tempdir()
        .map_err(|e| format!("tempdir: {e}"))?
        .keep();
    let root = is_root();
    let port = free_port()?;
    init(root, &bin, &dir)?;
    spawn_watched(
        root,
        &bin,
        &dir,
        port,
        &[
            "listen_addresses=127.0.0.1",
            "fsync=off",
            "max_connections=300",
            "shared_buffers=32MB",
        ],
    )
    .map_err(|e| format!("start postgres: {e}"))?;
    wait_ready(&bin, &dir, port).map_err(|log| format!("the test cluster did not start: {log}"))?;
    Ok(Cluster {
        base: format!("postgres://postgres@127.0.0.1:{port}"),
        admin_db: "postgres".into(),
    })
}

/// Makes a new cluster in `DIR/data` with `BIN/initdb`: trust authentication, superuser
/// `postgres`, UTF8, C locale, and no sync of initdb's own (the server's settings decide
/// how commits are synced). When `root`, `dir` is first given to the `postgres` user, who
/// runs initdb and the server.
pub fn init(root: bool, bin: &Path, dir: &Path) -> Result<(), String> {
    if root {
        run(Command::new("chown").arg("postgres:postgres").arg(dir))?;
    }
    run(as_postgres(root, &bin.join("initdb"))
        .args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "-D",
        ])
        .arg(dir.join("data")))
}

/// Waits up to a minute for the server [`spawn_watched`] started to accept connections;
/// if it does not, the error is its log.
pub fn wait_ready(bin: &Path, dir: &Path, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::fs::read_to_string(dir.join("log")).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `BIN/postgres` on the cluster in `DIR/data`, listening on `port` with its socket
/// in `dir` and each of `settings` as a `-c NAME=VALUE`, under a watchdog shell: when this
/// process is gone, or the server stops, it stops the server (fast shutdown) and removes
/// `dir`. The server's log is `DIR/log`. Returns the watchdog.
pub fn spawn_watched(
    root: bool,
    bin: &Path,
    dir: &Path,
    port: u16,
    settings: &[&str],
) -> std::io::Result<std::process::Child> {
    let settings: String = settings.iter().map(|s| format!(" -c {s}")).collect();
    let script = format!(
        r#"
        "$1/postgres" -D "$2/data" -p "$3" -k "$2"{settings} >"$2/log" 2>&1 &
        pg=$!
        while [ -d "/proc/$4" ] && kill -0 "$pg" 2>/dev/null; do sleep 1; done
        kill -INT "$pg" 2>/dev/null
        wait "$pg"
        rm -rf "$2"
        "#
    );
    as_postgres(root, Path::new("sh"))
        .arg("-c")
        .arg(script)
        .arg("watchdog")
        .arg(bin)
        .arg(dir)
        .arg(port.to_string())
        .arg(std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// The newest installed PostgreSQL's binaries.
pub fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

/// Whether this process runs as root: then initdb and the server run as `postgres`
/// ([`as_postgres`]), as they refuse root.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program` as a command run as the `postgres` user when `root` (initdb and postgres
/// refuse to run as root), else as this user.
pub fn as_postgres(root: bool, program: &Path) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("port: {e}"))
}
