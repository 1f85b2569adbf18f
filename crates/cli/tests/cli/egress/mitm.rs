//! The mitmproxy addon (`contrib/mitmproxy/supervise_addon.py`) under a real `mitmdump` on a
//! loopback port: a throwaway confdir (so a throwaway CA) per test, an origin of the
//! test's own speaking HTTP and HTTPS (a python3 server with a certificate made by
//! openssl), names under `.test` sent to it by a small resolver script, and
//! `curl --interface` from 127.0.0.2 and 127.0.0.3 as two bottles. mitmdump comes from
//! `SUPERVISE_TEST_MITMDUMP`, else `/work/py/bin/mitmdump`; without it (or python3, openssl,
//! curl) each test prints `SKIPPED: ...` and passes, except under `CI=true`, where it fails.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{BIN, Run, command};

const ORIGIN: &str = r#"
import http.server, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        body = ("hello " + self.command + " " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_DELETE = answer
    def log_message(self, *a):
        pass
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1], sys.argv[2])
tls.socket = c.wrap_socket(tls.socket, server_side=True)
print(plain.server_address[1], tls.server_address[1], flush=True)
threading.Thread(target=plain.serve_forever, daemon=True).start()
tls.serve_forever()
"#;

/// Sends every `.test` name to the origin on 127.0.0.1 (the port stays the one asked for).
const RESOLVER: &str = r#"
class Resolve:
    def server_connect(self, data):
        host, port = data.server.address
        if host.endswith(".test"):
            data.server.address = ("127.0.0.1", port)
addons = [Resolve()]
"#;

fn mitmdump() -> Option<PathBuf> {
    let found = std::env::var_os("SUPERVISE_TEST_MITMDUMP")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/work/py/bin/mitmdump")))
        .filter(|p| p.exists());
    let others = ["python3", "openssl", "curl"]
        .iter()
        .all(|p| crate::util::have(p));
    match found {
        Some(m) if others => Some(m),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "mitmdump must be installed in CI: set SUPERVISE_TEST_MITMDUMP to the venv's \
                 bin/mitmdump (pip install mitmproxy==11.0.2); python3, openssl and curl too"
            );
            eprintln!(
                "SKIPPED: mitmdump not found (SUPERVISE_TEST_MITMDUMP, /work/py/bin/mitmdump) \
                 or python3/openssl/curl missing"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Proxy {
    dir: tempfile::TempDir,
    db: PathBuf,
    mitm: Child,
    origin: Child,
    port: u16,
    http: u16,
    https: u16,
}

impl Proxy {
    fn start() -> Option<Proxy> {
        let mitmdump = mitmdump()?;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let db = p.join("supervise.db");
        for (slug, ip) in [("a", "127.0.0.2"), ("b", "127.0.0.3")] {
            Run::from(
                command(&db)
                    .args(["bottle", "add", slug, "--ip", ip])
                    .output()
                    .unwrap(),
            )
            .assert_ok();
        }
        let ok = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args([
                "-subj",
                "/CN=pypi.test",
                "-addext",
                "subjectAltName=DNS:pypi.test",
            ])
            .arg("-keyout")
            .arg(p.join("key.pem"))
            .arg("-out")
            .arg(p.join("cert.pem"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success(), "openssl made no certificate");
        std::fs::write(p.join("origin.py"), ORIGIN).unwrap();
        std::fs::write(p.join("resolve.py"), RESOLVER).unwrap();
        let mut origin = Command::new("python3")
            .arg(p.join("origin.py"))
            .arg(p.join("cert.pem"))
            .arg(p.join("key.pem"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(origin.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: Vec<u16> = line
            .split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect();
        let wrapper = p.join("supervise");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec {BIN} \"$@\"\n")).unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let addon = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../contrib/mitmproxy/supervise_addon.py");
        let mut attempts = 0;
        let (mitm, port) = loop {
            attempts += 1;
            let port = free_port();
            let mut child = Command::new(&mitmdump)
                .args(["--listen-host", "127.0.0.1", "-p", &port.to_string()])
                .arg("--set")
                .arg(format!("confdir={}", p.join("conf").display()))
                .args(["--set", "ssl_insecure=true", "-q"])
                .arg("-s")
                .arg(p.join("resolve.py"))
                .arg("-s")
                .arg(&addon)
                .arg("--set")
                .arg(format!("supervise_bin={}", wrapper.display()))
                .env("SUPERVISE_DB", &db)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(p.join("mitm.log")).unwrap())
                .spawn()
                .expect("start mitmdump");
            let deadline = Instant::now() + Duration::from_secs(30);
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let listening = loop {
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                    && p.join("conf/mitmproxy-ca-cert.pem").exists()
                {
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
            let log = std::fs::read_to_string(p.join("mitm.log")).unwrap_or_default();
            assert!(attempts < 3, "mitmdump did not start:\n{log}");
        };
        Some(Proxy {
            dir,
            db,
            mitm,
            origin,
            port,
            http: ports[0],
            https: ports[1],
        })
    }

    /// Status, and headers then body, of `METHOD URL` through the proxy from `src` (for a
    /// refused CONNECT: its status and headers).
    fn send(&self, src: &str, method: &str, url: &str) -> (u16, String) {
        let body = self.dir.path().join("body");
        let head = self.dir.path().join("head");
        let _ = std::fs::remove_file(&body);
        let _ = std::fs::remove_file(&head);
        let out = Command::new("curl")
            .args(["-s", "--max-time", "20", "-X", method])
            .arg("-o")
            .arg(&body)
            .arg("-D")
            .arg(&head)
            .args(["-w", "%{http_code} %{http_connect}"])
            .args(["--interface", src])
            .args(["--proxy", &format!("http://127.0.0.1:{}", self.port)])
            .arg("--cacert")
            .arg(self.dir.path().join("conf/mitmproxy-ca-cert.pem"))
            .arg(url)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let code = text
            .split_whitespace()
            .filter_map(|c| c.parse::<u16>().ok())
            .find(|c| *c != 0)
            .unwrap_or(0);
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (code, read(&head) + &read(&body))
    }

    fn http(&self, path: &str) -> String {
        format!("http://pypi.test:{}{path}", self.http)
    }

    fn https(&self, path: &str) -> String {
        format!("https://pypi.test:{}{path}", self.https)
    }

    fn cli(&self, args: &[&str]) -> Run {
        Run::from(command(&self.db).args(args).output().unwrap())
    }

    /// The ids of the pending proposals for `port`.
    fn pending_for(&self, port: u16) -> Vec<String> {
        let r = self.cli(&["list", "--json"]);
        r.assert_ok();
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        doc["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["change"]["port"] == port)
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// A refusal whose body names a pending `observed` proposal for `port`: its id.
    fn refused_naming_proposal(&self, src: &str, method: &str, url: &str, port: u16) -> String {
        let (code, body) = self.send(src, method, url);
        assert_eq!(
            code,
            403,
            "{method} {url} from {src}: {body}\n{}",
            self.log()
        );
        let pending = self.pending_for(port);
        let id = pending
            .iter()
            .find(|id| body.contains(id.as_str()))
            .unwrap_or_else(|| panic!("the body names a pending proposal {pending:?}: {body}"));
        assert!(body.contains("check-proposal"), "{body}");
        id.clone()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mitm.log")).unwrap_or_default()
    }

    /// The pid of the addon's `supervise decide` child.
    fn helper_pid(&self) -> Option<String> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.mitm.id())).ok()?;
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|c| c.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .next()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for child in [&mut self.mitm, &mut self.origin] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn mitmproxy_refuses_with_the_proposal_then_enforces_methods_and_paths() {
    let Some(px) = Proxy::start() else {
        return;
    };
    let id = px.refused_naming_proposal("127.0.0.2", "GET", &px.http("/simple/x"), px.http);
    let doc: Value = serde_json::from_str(&px.cli(&["show", &id, "--json"]).stdout).unwrap();
    assert!(doc.to_string().contains("observed"), "{doc}");
    let limits = r#"{"methods": ["GET"], "path_prefix": "/simple/"}"#;
    px.cli(&["modify", "--yes", &id, "--change", limits])
        .assert_ok();

    let (code, body) = px.send("127.0.0.2", "GET", &px.http("/simple/x?q=1"));
    assert_eq!(code, 200);
    assert!(body.ends_with("hello GET /simple/x?q=1"), "{body}");
    px.refused_naming_proposal("127.0.0.2", "POST", &px.http("/simple/x"), px.http);
    px.refused_naming_proposal("127.0.0.2", "GET", &px.http("/other"), px.http);
    let (code, _) = px.send("127.0.0.2", "GET", &px.http("/simple/%2e%2e/other"));
    assert_eq!(code, 403, "a dot segment climbs out of the prefix");
    px.refused_naming_proposal("127.0.0.3", "GET", &px.http("/simple/x"), px.http);

    // HTTPS: the CONNECT is refused first, then approved limited, then intercepted.
    let tls = px.refused_naming_proposal("127.0.0.2", "GET", &px.https("/simple/x"), px.https);
    px.cli(&["modify", "--yes", &tls, "--change", limits])
        .assert_ok();
    let (code, body) = px.send("127.0.0.2", "GET", &px.https("/simple/y"));
    assert_eq!(code, 200, "{body}\n{}", px.log());
    assert!(body.ends_with("hello GET /simple/y"), "{body}");
    px.refused_naming_proposal("127.0.0.2", "POST", &px.https("/simple/y"), px.https);
    px.refused_naming_proposal("127.0.0.2", "GET", &px.https("/elsewhere"), px.https);

    // A revoke is in effect for the next request.
    let grants = px.cli(&["policy", "a", "--json"]);
    let doc: Value = serde_json::from_str(&grants.stdout).unwrap();
    for g in doc["grants"].as_array().unwrap() {
        px.cli(&["revoke", g["id"].as_str().unwrap()]).assert_ok();
    }
    let (code, _) = px.send("127.0.0.2", "GET", &px.http("/simple/x"));
    assert_eq!(code, 403);
    let (code, _) = px.send("127.0.0.2", "GET", &px.https("/simple/x"));
    assert_eq!(code, 403);
}

#[test]
fn mitmproxy_fails_closed_while_the_helper_cannot_run_and_recovers() {
    let Some(px) = Proxy::start() else {
        return;
    };
    let id = px.refused_naming_proposal("127.0.0.2", "GET", &px.http("/"), px.http);
    px.cli(&["approve", "--yes", &id]).assert_ok();
    assert_eq!(px.send("127.0.0.2", "GET", &px.http("/")).0, 200);

    // The helper dies and cannot be started again: every request is refused.
    let wrapper = px.dir.path().join("supervise");
    let aside = px.dir.path().join("supervise.aside");
    std::fs::rename(&wrapper, &aside).unwrap();
    let pid = px.helper_pid().expect("the addon runs supervise decide");
    Command::new("kill").arg(&pid).status().unwrap();
    let (code, body) = px.send("127.0.0.2", "GET", &px.http("/"));
    assert_eq!(code, 403, "fails closed: {body}");
    assert!(body.contains("unavailable"), "{body}");

    // It can start again: the next request is answered by a new helper.
    std::fs::rename(&aside, &wrapper).unwrap();
    assert_eq!(px.send("127.0.0.2", "GET", &px.http("/")).0, 200);
    assert_ne!(px.helper_pid().as_deref(), Some(pid.as_str()));
}
