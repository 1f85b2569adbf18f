//! The helper under a real Squid: `squid -N` on a loopback port with a throwaway config,
//! `external_acl_type ... ttl=1 negative_ttl=1 %SRC %DST %PORT`, an origin server of the
//! test's own named through a `hosts_file`, and `curl --interface` from 127.0.0.2 and
//! 127.0.0.3 as two bottles. Without Squid (or curl) each test prints `SKIPPED: squid not
//! installed` and passes, except under `CI=true`, where it fails.
//!
//! As root, Squid runs its helpers as `cache_effective_user proxy`, so the temp dir is
//! setgid group `proxy` (mode 2770) and the database, created in it by supervise, is 0660
//! with that group: the sharing SPEC describes for the proxy's user.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{BIN, Run, command};

/// Squid's cache of answers (`ttl`, `negative_ttl`); a change shows within this plus a second.
const TTL: Duration = Duration::from_secs(1);
const WITHIN: Duration = Duration::from_millis(2000 + 500);

fn find(names: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            let name = Path::new(names[0]).file_name()?;
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.exists())
            })
        })
}

/// The squid and curl binaries, or `None` after the loud skip line (a failure under CI).
fn tools() -> Option<(PathBuf, PathBuf)> {
    let squid = find(&["/usr/sbin/squid", "/usr/local/sbin/squid"]);
    let curl = find(&["/usr/bin/curl", "/usr/local/bin/curl"]);
    match (squid, curl) {
        (Some(s), Some(c)) => Some((s, c)),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "squid (and curl) must be installed in CI: apt-get install -y squid curl"
            );
            eprintln!("SKIPPED: squid not installed (or curl missing)");
            None
        }
    }
}

/// A tiny HTTP origin: `200 hello` to every request, on a loopback port of its own.
fn origin() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                );
            });
        }
    });
    port
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The proxy user's group id, when running as root (Squid then drops to `proxy`).
fn proxy_gid() -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == "proxy").then(|| f.nth(1)?.parse().ok())?
    })
}

struct Proxy {
    dir: tempfile::TempDir,
    db: PathBuf,
    squid: Child,
    port: u16,
    origin: u16,
    curl: PathBuf,
}

impl Proxy {
    /// Squid in front of a fresh database with bottles `a` (127.0.0.2) and `b` (127.0.0.3).
    fn start(helper_flags: &str) -> Option<Proxy> {
        Proxy::start_with(helper_flags, "", &|_| {})
    }

    /// [`Proxy::start`] with `access` (squid.conf lines, `{d}` the temp dir) before the
    /// `http_access` rules, and `prepare` run on the temp dir before Squid starts.
    fn start_with(helper_flags: &str, access: &str, prepare: &dyn Fn(&Path)) -> Option<Proxy> {
        let (squid, curl) = tools()?;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        let user = if root {
            let gid = proxy_gid().expect("a proxy group (Debian's squid package makes one)");
            std::os::unix::fs::chown(dir.path(), None, Some(gid)).unwrap();
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o2770)).unwrap();
            "cache_effective_user proxy\n"
        } else {
            ""
        };
        let db = dir.path().join("supervise.db");
        let p = dir.path();
        for (slug, ip) in [("a", "127.0.0.2"), ("b", "127.0.0.3")] {
            let r = Run::from(
                command(&db)
                    .args(["bottle", "add", slug, "--ip", ip])
                    .output()
                    .unwrap(),
            );
            r.assert_ok();
        }
        std::fs::write(p.join("hosts"), "127.0.0.1 a.example.test example.test\n").unwrap();
        prepare(p);
        // A port picked free may be taken again before Squid binds it: try another.
        let mut attempts = 0;
        let (child, port) = loop {
            attempts += 1;
            let port = free_port();
            let conf = format!(
                "http_port 127.0.0.1:{port}\n\
                 pid_filename {d}/squid.pid\n\
                 logformat sup %>a %ru %>Hs %ea\n\
                 access_log stdio:{d}/access.log sup\n\
                 cache_log {d}/cache.log\n\
                 coredump_dir {d}\n\
                 cache deny all\n\
                 cache_mem 8 MB\n\
                 pinger_enable off\n\
                 hosts_file {d}/hosts\n\
                 shutdown_lifetime 0 seconds\n\
                 {user}\
                 external_acl_type supervise ttl={ttl} negative_ttl={ttl} children-max=1 \
                 children-startup=1 %SRC %DST %PORT {bin} --db {db} squid-acl {helper_flags}\n\
                 acl supervised external supervise\n\
                 {access}\
                 http_access allow supervised\n\
                 http_access deny all\n",
                d = p.display(),
                ttl = TTL.as_secs(),
                bin = BIN,
                db = db.display(),
                access = access.replace("{d}", &p.display().to_string()),
            );
            std::fs::write(p.join("squid.conf"), conf).unwrap();
            let mut child = Command::new(&squid)
                .arg("-N")
                .arg("-f")
                .arg(p.join("squid.conf"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start squid");
            let deadline = Instant::now() + Duration::from_secs(20);
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let listening = loop {
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break true;
                }
                if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break false;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            if listening {
                break (child, port);
            }
            let log = std::fs::read_to_string(p.join("cache.log")).unwrap_or_default();
            assert!(attempts < 3, "squid did not start:\n{log}");
        };
        Some(Proxy {
            dir,
            db,
            squid: child,
            port,
            origin: origin(),
            curl,
        })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("cache.log")).unwrap_or_default()
    }

    /// The body of `GET http://HOST:ORIGIN/` through the proxy from `src`.
    fn body(&self, src: &str, host: &str) -> String {
        let out = Command::new(&self.curl)
            .args(["-s", "--max-time", "10", "--interface", src])
            .args(["--proxy", &format!("http://127.0.0.1:{}", self.port)])
            .arg(format!("http://{host}:{}/", self.origin))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The HTTP status of `GET http://HOST:ORIGIN/` through the proxy from `src`.
    fn get(&self, src: &str, host: &str) -> u16 {
        let out = Command::new(&self.curl)
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "10",
            ])
            .args(["--interface", src])
            .args(["--proxy", &format!("http://127.0.0.1:{}", self.port)])
            .arg(format!("http://{host}:{}/", self.origin))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    /// Asks until `want` comes back; panics when that takes longer than `within`.
    fn expect_within(&self, src: &str, host: &str, want: u16, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let got = self.get(src, host);
            if got == want {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "{src} → {host}: still {got} after {:?}, wanted {want}\n{}\n{}",
                start.elapsed(),
                self.access_log(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    fn cli(&self, args: &[&str]) -> Run {
        Run::from(command(&self.db).args(args).output().unwrap())
    }

    fn json(&self, args: &[&str]) -> Value {
        let r = self.cli(args);
        r.assert_ok();
        serde_json::from_str(&r.stdout).unwrap()
    }

    /// The pending proposals' ids and changes.
    fn pending(&self) -> Vec<(String, Value)> {
        self.json(&["list", "--json"])["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap().to_string(), p.clone()))
            .collect()
    }

    fn dest(&self, host: &str) -> String {
        format!("{host}:{}", self.origin)
    }

    /// Files and approves a grant for bottle `a` through the helper's own observed proposal.
    fn grant(&self, host: &str, extra: &[&str]) -> String {
        self.expect_within("127.0.0.2", host, 403, WITHIN);
        let id = self
            .pending()
            .into_iter()
            .find(|(_, p)| p["change"]["host"] == host)
            .unwrap_or_else(|| panic!("an observed proposal for {host}"))
            .0;
        let mut args = vec!["approve", "--yes", id.as_str()];
        args.extend_from_slice(extra);
        let r = self.cli(&args);
        r.assert_ok();
        r.stdout
            .split("grant ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap()
            .to_string()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.squid.kill();
        let _ = self.squid.wait();
    }
}

#[test]
fn refused_then_observed_then_approved_for_that_bottle_only() {
    let Some(px) = Proxy::start("--propose-on-deny --record-use") else {
        return;
    };
    assert_eq!(
        px.get("127.0.0.2", "a.example.test"),
        403,
        "no grant: Squid refuses"
    );
    let pending = px.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let (id, p) = &pending[0];
    assert_eq!(p["bottle"], "a");
    assert_eq!(p["change"]["host"], "a.example.test");
    assert!(
        p["flags"].as_array().unwrap().contains(&"observed".into()),
        "{p}"
    );

    px.cli(&["approve", "--yes", id]).assert_ok();
    let took = px.expect_within("127.0.0.2", "a.example.test", 200, WITHIN);
    eprintln!("approve → first allowed request: {took:?}");
    assert_eq!(
        px.get("127.0.0.3", "a.example.test"),
        403,
        "bottle b has no grant"
    );

    let text = px.cli(&["policy", "a"]).stdout;
    assert!(text.contains(" ago"), "policy shows a last use:\n{text}");
    let doc = px.json(&["policy", "a", "--json"]);
    assert!(doc["grants"][0]["last_used_at"].is_string(), "{doc}");
    let audit = px.json(&["audit", "--bottle", "a", "--json"]);
    let uses = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "grant-used")
        .count();
    assert_eq!(uses, 1, "one grant-used per minute, however many requests");
}

#[test]
fn revoked_and_expired_grants_are_refused_again() {
    let Some(px) = Proxy::start("--propose-on-deny") else {
        return;
    };
    let grant = px.grant("a.example.test", &[]);
    px.expect_within("127.0.0.2", "a.example.test", 200, WITHIN);
    px.cli(&["revoke", &grant]).assert_ok();
    px.expect_within("127.0.0.2", "a.example.test", 403, WITHIN);
    // Revoked within the rejection cooldown: the helper files no new observed proposal.
    assert!(
        px.pending()
            .iter()
            .all(|(_, p)| p["change"]["host"] != "a.example.test"),
        "re-filed after a revoke"
    );

    // A grant that expires (on the other name the proxy resolves).
    px.grant("example.test", &["--for", "2s"]);
    px.expect_within("127.0.0.2", "example.test", 200, WITHIN);
    std::thread::sleep(Duration::from_secs(2));
    px.expect_within("127.0.0.2", "example.test", 403, WITHIN);
    let r = px.cli(&["check", "egress", "--bottle", "a", &px.dest("example.test")]);
    assert_eq!(r.code, 1, "{r:#?}");
}

#[test]
fn a_wildcard_covers_names_under_the_domain_not_the_domain() {
    let Some(px) = Proxy::start("--propose-on-deny") else {
        return;
    };
    assert_eq!(px.get("127.0.0.2", "a.example.test"), 403);
    let (id, _) = px.pending().pop().unwrap();
    px.cli(&[
        "modify",
        "--yes",
        &id,
        "--change",
        r#"{"host": "*.example.test"}"#,
    ])
    .assert_ok();
    px.expect_within("127.0.0.2", "a.example.test", 200, WITHIN);
    assert_eq!(px.get("127.0.0.2", "example.test"), 403);
    assert_eq!(px.get("127.0.0.3", "a.example.test"), 403);
}

/// A `sqlite3` shell holding the write lock (lookups still read, WAL; a refusal cannot file
/// its proposal until the lock is gone), and the file renamed away for a moment: the helper
/// answers ERR, keeps running, and answers from the database again afterwards.
#[test]
fn a_busy_or_missing_database_is_refused_and_recovered_from() {
    let Some(px) = Proxy::start("--propose-on-deny") else {
        return;
    };
    px.grant("a.example.test", &[]);
    px.expect_within("127.0.0.2", "a.example.test", 200, WITHIN);

    // The write lock: lookups still read (WAL); a refusal cannot file its proposal.
    let mut shell = Command::new("sqlite3")
        .arg(&px.db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sqlite3 (apt-get install sqlite3)");
    let mut input = shell.stdin.take().unwrap();
    let mut output = BufReader::new(shell.stdout.take().unwrap());
    let mut sql = |text: &str| {
        writeln!(input, "{text}\nSELECT 'done';").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        while !line.trim_end().ends_with("done") {
            line.clear();
            assert!(output.read_line(&mut line).unwrap() > 0, "sqlite3 ended");
        }
    };
    sql("BEGIN IMMEDIATE; INSERT INTO meta VALUES ('held', 'by a shell');");
    std::thread::sleep(TTL + Duration::from_millis(200));
    assert_eq!(
        px.get("127.0.0.2", "a.example.test"),
        200,
        "a writer never blocks a lookup"
    );
    assert_eq!(px.get("127.0.0.2", "example.test"), 403);
    assert!(
        !px.pending()
            .iter()
            .any(|(_, p)| p["change"]["host"] == "example.test"),
        "nothing can be filed while the lock is held"
    );
    sql("ROLLBACK;");
    let start = Instant::now();
    while !px
        .pending()
        .iter()
        .any(|(_, p)| p["change"]["host"] == "example.test")
    {
        assert!(start.elapsed() < WITHIN, "filed once the lock is gone");
        assert_eq!(px.get("127.0.0.2", "example.test"), 403);
        std::thread::sleep(Duration::from_millis(100));
    }

    drop(input);
    let _ = shell.wait();

    // The file renamed away: ERR (never a new empty database), then OK when it is back.
    let away = px.dir.path().join("moved.db");
    std::fs::rename(&px.db, &away).unwrap();
    px.expect_within("127.0.0.2", "a.example.test", 403, WITHIN);
    assert!(!px.db.exists(), "the helper never creates the database");
    std::fs::rename(&away, &px.db).unwrap();
    px.expect_within("127.0.0.2", "a.example.test", 200, WITHIN);
}

/// `0.0.0.0` through Squid lands on the proxy host's own listeners (the origin here binds
/// 127.0.0.1 only): refused, and never filed for the operator to approve in one command.
#[test]
fn the_unspecified_address_is_refused_and_never_filed_through_squid() {
    let Some(px) = Proxy::start("--propose-on-deny") else {
        return;
    };
    assert_eq!(px.get("127.0.0.2", "0.0.0.0"), 403);
    assert_eq!(px.get("127.0.0.2", "[::]"), 403);
    // A name the helper may file, so the lookups above are known to have reached it.
    assert_eq!(px.get("127.0.0.2", "a.example.test"), 403);
    let hosts: Vec<Value> = px
        .pending()
        .into_iter()
        .map(|(_, p)| p["change"]["host"].clone())
        .collect();
    assert_eq!(
        hosts,
        [Value::from("a.example.test")],
        "{}",
        px.access_log()
    );
}

/// The README's `deny_info` recipe: the refusal page shows the helper's `message=` (`%o`),
/// which names the proposal and says to poll `check-proposal`; a grant limited to methods
/// or paths never lets a connection through Squid, which cannot see requests.
#[test]
fn squids_refusal_page_names_the_proposal_and_limited_grants_do_not_pass() {
    let page = "<html><body><p>supervise: %o</p></body></html>\n";
    let access = "error_directory {d}/errors\ndeny_info ERR_SUPERVISE supervised\n\
                  http_access deny !supervised\n";
    // Squid's own pages, and the recipe's page beside them.
    let prepare = |d: &Path| {
        let errors = d.join("errors");
        std::fs::create_dir(&errors).unwrap();
        let templates = [
            "/usr/share/squid/errors/templates",
            "/usr/share/squid-langpack/templates",
        ]
        .into_iter()
        .find(|t| Path::new(t).is_dir())
        .expect("Squid's error page templates");
        for f in std::fs::read_dir(templates).unwrap().flatten() {
            std::fs::copy(f.path(), errors.join(f.file_name())).unwrap();
        }
        std::fs::write(errors.join("ERR_SUPERVISE"), page).unwrap();
    };
    let Some(px) = Proxy::start_with("--propose-on-deny", access, &prepare) else {
        return;
    };
    let body = px.body("127.0.0.2", "a.example.test");
    let (id, _) = px.pending().pop().expect("an observed proposal");
    assert!(
        body.contains(&format!("poll check-proposal with proposal_id {id}")),
        "{body}\n{}",
        px.log()
    );
    let limits = r#"{"methods": ["GET"], "path_prefix": "/"}"#;
    px.cli(&["modify", "--yes", &id, "--change", limits])
        .assert_ok();
    std::thread::sleep(TTL + Duration::from_millis(500));
    assert_eq!(px.get("127.0.0.2", "a.example.test"), 403);
    let r = px.cli(&[
        "check",
        "egress",
        "--bottle",
        "a",
        &px.dest("a.example.test"),
    ]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stdout.contains("limited to methods or paths"), "{r:#?}");
    let r = px.cli(&[
        "check",
        "egress",
        "--bottle",
        "a",
        &px.dest("a.example.test"),
        "--method",
        "GET",
        "--path",
        "/x",
    ]);
    assert_eq!(r.code, 0, "{r:#?}");
}
