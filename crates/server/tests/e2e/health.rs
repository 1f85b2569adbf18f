//! `/healthz` says whether the database can take writes, and why not; a refused write says
//! the same cause; and one database is served by one server on a host.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{ALPHA, BIN, Server, call, http_from, mcp, status, text};

async fn healthz(server: &Server) -> (u16, Value) {
    let r = http_from(ALPHA)
        .get(format!("http://{}/healthz", server.addr))
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    (code, r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_database_refuses_proposals_and_fails_healthz() {
    let server = Server::start(&["--grace", "0"]);
    assert_eq!(healthz(&server).await.0, 200);
    std::fs::remove_file(&server.db).unwrap();

    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "justification": "fetch the API schema"}),
    )
    .await;
    assert_eq!(status(&r), "refused", "{}", text(&r));
    assert!(text(&r).contains("deleted or replaced"), "{}", text(&r));

    let (code, body) = healthz(&server).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["status"], "file-replaced", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("restart"),
        "{body}"
    );
    assert!(
        server.log().contains("deleted or replaced while open"),
        "logged: {}",
        server.log()
    );
}

/// Whether this process runs as root (`/proc/self` belongs to the effective user).
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0)
}

/// Makes `path` read-only for this process: immutable for root (whom no mode bit stops), mode
/// 0400 for anyone else; `false` undoes it.
fn read_only(path: &Path, on: bool) {
    if running_as_root() {
        let ok = Command::new("chattr")
            .arg(if on { "+i" } else { "-i" })
            .arg(path)
            .status()
            .expect("run chattr")
            .success();
        assert!(ok, "chattr on {}", path.display());
    } else {
        let mode = if on { 0o400 } else { 0o600 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_fails_healthz_naming_it() {
    let server = Server::start(&["--grace", "0"]);
    read_only(&server.db, true);
    let (code, body) = healthz(&server).await;
    read_only(&server.db, false);
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["status"], "read-only", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("read-only"),
        "{body}"
    );
    assert_eq!(healthz(&server).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_server_on_another_users_private_database_is_healthy_and_writes() {
    if !running_as_root() {
        eprintln!("skipped: only root can give the database to another user");
        return;
    }
    let server = Server::start(&["--grace", "0"]);
    // The proxy-user layout: the file belongs to another user, mode 0600.
    let nobody = 65_534;
    for suffix in ["", "-wal", "-shm"] {
        let mut path = server.db.clone().into_os_string();
        path.push(suffix);
        if std::path::Path::new(&path).exists() {
            std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).unwrap();
        }
    }
    std::fs::set_permissions(&server.db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, body) = healthz(&server).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "ok", "{body}");
    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "owned-by-nobody.example", "justification": "the write succeeds"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_same_database_refuses_to_start() {
    let server = Server::start(&["--grace", "0"]);
    let mut second = Command::new(BIN)
        .arg("--db")
        .arg(&server.db)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("SUPERVISE_DB")
        .env_remove("SUPERVISE_LISTEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a second supervise-server");
    let start = Instant::now();
    let exit = loop {
        if let Some(exit) = second.try_wait().unwrap() {
            break exit;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = second.kill();
            panic!("the second server is still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    second
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!exit.success(), "{stderr}");
    assert!(stderr.contains("already served"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", server.pid())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&server.db.display().to_string()),
        "{stderr}"
    );

    // The first one never noticed.
    assert_eq!(healthz(&server).await.0, 200);
    let client = mcp(&server).await;
    let r = call(
        &client,
        "propose-egress",
        json!({"host": "api.example.com", "justification": "fetch the API schema"}),
    )
    .await;
    assert_eq!(status(&r), "pending", "{}", text(&r));
}
