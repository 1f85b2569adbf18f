//! `supervise doctor --console-url`: a real console on loopback, over https with a
//! certificate from a CA made at test time (openssl): the right name passes with its expiry,
//! one expiring within 14 days warns, an expired one, another name or an untrusted CA
//! fails, and a console that is down fails naming the URL (exit 1).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::util::{Env, Run, command};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`ca.pem`) and a certificate for `localhost` signed by it, valid `days` days:
/// returns (certificate, key) paths.
fn certificate(dir: &Path, name: &str, days: u32) -> (PathBuf, PathBuf) {
    if !dir.join("ca.pem").exists() {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "365",
                "-subj",
                "/CN=doctor test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ],
        );
    }
    std::fs::write(
        dir.join(format!("{name}.ext")),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
    )
    .unwrap();
    let (key, csr, pem) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            "/CN=localhost",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            &days.to_string(),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
    (dir.join(pem), dir.join(key))
}

/// A certificate for `localhost` from the same CA that ended on 2025-02-01 (`openssl ca`
/// takes explicit dates where `x509 -days` cannot go back).
fn expired_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    certificate(dir, "unused", 1);
    std::fs::write(dir.join("index.txt"), "").unwrap();
    std::fs::write(dir.join("serial"), "1000\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = c\n[c]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\n\
         default_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-cert",
            "ca.pem",
            "-keyfile",
            "ca.key",
            "-in",
            "unused.csr",
            "-out",
            "old.pem",
            "-notext",
            "-startdate",
            "20250101000000Z",
            "-enddate",
            "20250201000000Z",
            "-extfile",
            "unused.ext",
        ],
    );
    (dir.join("old.pem"), dir.join("unused.key"))
}

/// `supervise console` on 127.0.0.1 with the certificate; the child and its port.
fn console(env: &Env, cert: &Path, key: &Path) -> (Child, u16) {
    let mut child = command(&env.db)
        .args(["console", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .env("SUPERVISE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim_start_matches("supervise console listening on https://127.0.0.1:")
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    (child, port)
}

fn doctor(env: &Env, url: &str, ca: Option<&Path>) -> Run {
    let mut c = command(&env.db);
    c.args(["doctor", "--console-url", url]);
    match ca {
        Some(ca) => c.env("SSL_CERT_FILE", ca),
        // An empty trust store: the test CA is unknown.
        None => c.env("SSL_CERT_FILE", env.dir.path().join("no-such-bundle.pem")),
    };
    Run::from(c.output().unwrap())
}

fn line<'a>(r: &'a Run, start: &str) -> &'a str {
    r.stdout
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?}: {r:#?}"))
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_console_with_a_good_certificate_passes_and_another_name_or_an_unknown_ca_fails() {
    let env = Env::new();
    let dir = env.dir.path();
    let (cert, key) = certificate(dir, "leaf", 90);
    let ca = dir.join("ca.pem");
    let (child, port) = console(&env, &cert, &key);

    let url = format!("https://localhost:{port}");
    let r = doctor(&env, &url, Some(&ca));
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(
        line(&r, "ok   console:"),
        format!("ok   console: {url} answers /healthz: ok")
    );
    let cert_line = line(&r, "ok   console certificate");
    assert!(
        cert_line.contains("valid for localhost until "),
        "{cert_line}"
    );
    assert!(
        cert_line.ends_with("(89 days)") || cert_line.ends_with("(90 days)"),
        "{cert_line}"
    );

    // The certificate names localhost, not the address.
    let by_ip = format!("https://127.0.0.1:{port}/");
    let r = doctor(&env, &by_ip, Some(&ca));
    assert_eq!(r.code, 1, "{r:#?}");
    let wrong = line(&r, "FAIL console certificate");
    assert!(
        wrong.contains("the certificate for 127.0.0.1 names localhost, not 127.0.0.1"),
        "{wrong}"
    );
    assert!(
        wrong.contains("fix: serve a certificate for the URL's host"),
        "{wrong}"
    );

    // This host does not trust the CA.
    let r = doctor(&env, &url, None);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        line(&r, "FAIL console certificate")
            .contains("the certificate for localhost is not signed by a CA this host trusts"),
        "{r:#?}"
    );
    stop(child);

    // Down: the URL is named, with how to start it.
    let r = doctor(&env, &url, Some(&ca));
    assert_eq!(r.code, 1, "{r:#?}");
    let down = line(&r, "FAIL console:");
    assert!(
        down.starts_with(&format!(
            "FAIL console: {url} does not answer: cannot connect to localhost:{port}"
        )),
        "{down}"
    );
    assert!(down.contains("fix: start the console"), "{down}");
}

#[test]
fn a_certificate_expiring_within_two_weeks_warns_without_failing() {
    let env = Env::new();
    let (cert, key) = certificate(env.dir.path(), "soon", 5);
    let (child, port) = console(&env, &cert, &key);
    let r = doctor(
        &env,
        &format!("https://localhost:{port}"),
        Some(&env.dir.path().join("ca.pem")),
    );
    stop(child);
    assert_eq!(r.code, 0, "{r:#?}");
    let soon = line(&r, "warn console certificate");
    assert!(
        soon.contains("expires in 4 days") || soon.contains("expires in 5 days"),
        "{soon}"
    );
    assert!(soon.contains("fix: renew it"), "{soon}");
}

#[test]
fn an_expired_certificate_fails_with_the_day_it_ended() {
    let env = Env::new();
    let (cert, key) = expired_certificate(env.dir.path());
    let (child, port) = console(&env, &cert, &key);
    let r = doctor(
        &env,
        &format!("https://localhost:{port}"),
        Some(&env.dir.path().join("ca.pem")),
    );
    stop(child);
    assert_eq!(r.code, 1, "{r:#?}");
    let expired = line(&r, "FAIL console certificate");
    assert!(
        expired.contains("the certificate for localhost expired on 2025-02-01T00:00:00Z"),
        "{expired}"
    );
    assert!(expired.contains("fix: renew it"), "{expired}");
    // The console itself answers: only the certificate fails.
    assert!(
        line(&r, "ok   console:").contains("answers /healthz"),
        "{r:#?}"
    );
}

#[test]
fn without_a_console_url_the_console_is_not_checked() {
    let env = Env::new();
    let r = Run::from(command(&env.db).arg("doctor").output().unwrap());
    assert_eq!(r.code, 0, "{r:#?}");
    assert!(
        r.stdout.contains(
            "ok   console: not checked: no console URL (--console-url or SUPERVISE_CONSOLE_URL)"
        ),
        "{r:#?}"
    );
}
