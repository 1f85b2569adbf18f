//! `supervise console`: the real binary serves the console on the database, says where it
//! listens, signs an operator in with the link `operator add` printed, and stops cleanly on
//! SIGTERM; a missing database and half a TLS pair are refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use crate::util::{Env, command};

/// One HTTP/1.1 request on a fresh connection; the whole answer as text.
fn http(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn serves_the_console_signs_in_with_the_printed_link_and_stops_on_sigterm() {
    let env = Env::new();
    let out = env.ok(&["operator", "add", "olga", "--role", "approver"]);
    let secret = out
        .split("/sign-in/")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no link in {out}"))
        .to_owned();

    let mut child = command(&env.db)
        .args(["console", "--listen", "127.0.0.1:0"])
        .env("SUPERVISE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("supervise console listening on http://127.0.0.1:"),
        "{line}"
    );
    let addr = line
        .trim_start_matches("supervise console listening on http://")
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!("public URL http://{addr}")),
        "{line}"
    );

    let page = http(
        &addr,
        &format!("GET /sign-in HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'")
    );

    let signed_in = http(
        &addr,
        &format!(
            "POST /sign-in/{secret} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(signed_in.starts_with("HTTP/1.1 303"), "{signed_in}");
    assert!(signed_in.contains("supervise_session="), "{signed_in}");

    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_missing_database_is_refused_and_half_a_tls_pair_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let out = command(&missing)
        .args(["console", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no supervise database"),
        "{out:?}"
    );
    assert!(!missing.exists(), "the console never creates a database");

    let env = Env::new();
    let r = env.run(&["console", "--tls-cert", "cert.pem"]);
    r.assert_usage();
}
