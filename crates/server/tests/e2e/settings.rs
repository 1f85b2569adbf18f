//! `supervise-server --config FILE`: it starts from the file alone, flags and environment
//! win over it (`SUPERVISE_BOTTLES` included), `--print-config` masks passwords, and its
//! logs in a file carry no colour codes (`--log-format text|json`); the systemd unit's
//! open-file limit leaves the default waiting caps whole.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::BIN;

fn server() -> Command {
    let mut c = Command::new(BIN);
    for var in [
        "SUPERVISE_DB",
        "SUPERVISE_DB_FILE",
        "SUPERVISE_LISTEN",
        "SUPERVISE_BOTTLES",
        "SUPERVISE_RESPONSE_TIMEOUT_SECONDS",
        "SUPERVISE_HOST_ID",
    ] {
        c.env_remove(var);
    }
    c.env("SUPERVISE_LOG", "info").stdin(Stdio::null());
    c
}

/// Runs the server with stderr into a file until it logs that it listens, stops it with
/// SIGTERM, and returns the log.
fn run_until_listening(mut command: Command, log_path: &Path) -> String {
    let log = std::fs::File::create(log_path).unwrap();
    let mut child = command.stdout(Stdio::null()).stderr(log).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log_path).unwrap();
        if text.contains("listening on http://") {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("server exited ({status:?}):\n{text}");
        }
        assert!(Instant::now() < deadline, "server did not start:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(log_path).unwrap();
    assert!(status.success(), "{status:?}\n{text}");
    text
}

#[test]
fn the_server_starts_from_a_config_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from-file.db");
    let file = dir.path().join("server.toml");
    std::fs::write(
        &file,
        format!(
            "db = {:?}\nlisten = \"127.0.0.1:0\"\ngrace = \"0s\"\nbottle = [\"demo=127.0.0.7\"]\n",
            db.to_str().unwrap()
        ),
    )
    .unwrap();
    let mut c = server();
    c.arg("--config").arg(&file);
    let log = run_until_listening(c, &dir.path().join("server.log"));
    assert!(db.exists(), "the file's database was not created:\n{log}");
    assert!(log.contains("bottle=demo"), "{log}");
    assert!(log.contains("grace_s=0"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file: {log:?}"
    );
}

#[test]
fn flags_beat_the_environment_which_beats_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    std::fs::write(
        &file,
        "db = \"postgres://supervise:hunter2@db.internal/supervise\"\n\
         listen = \"127.0.0.1:7600\"\ngrace = 45\nproposal-ttl = \"2h\"\n\
         bottle = [\"a=10.0.0.1\", \"b=10.0.0.2\"]\n",
    )
    .unwrap();
    // It holds a password: readable by its owner only, or it is refused.
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let print = |c: &mut Command| {
        let out = c
            .arg("--config")
            .arg(&file)
            .arg("--print-config")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = print(
        server()
            .env("SUPERVISE_RESPONSE_TIMEOUT_SECONDS", "20")
            .env("SUPERVISE_LISTEN", "127.0.0.1:7601")
            .args(["--listen", "127.0.0.1:7602"]),
    );
    assert!(
        text.contains("listen = \"127.0.0.1:7602\"  # flag --listen"),
        "{text}"
    );
    assert!(
        text.contains("grace = \"20\"  # environment SUPERVISE_RESPONSE_TIMEOUT_SECONDS"),
        "{text}"
    );
    assert!(
        text.contains("proposal-ttl = \"2h\"  # config file"),
        "{text}"
    );
    assert!(
        text.contains("max-pending-per-bottle = \"64\"  # default"),
        "{text}"
    );
    assert!(
        text.contains("db = \"postgres://supervise:****@db.internal/supervise\""),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("bottle = [\"a=10.0.0.1\", \"b=10.0.0.2\"]  # config file"),
        "{text}"
    );

    // A list: SUPERVISE_BOTTLES replaces the file's, and a flag replaces both.
    let text = print(server().env("SUPERVISE_BOTTLES", "c=10.0.0.3,d=10.0.0.4"));
    assert!(
        text.contains("bottle = [\"c=10.0.0.3\", \"d=10.0.0.4\"]  # environment SUPERVISE_BOTTLES"),
        "{text}"
    );
    let text = print(
        server()
            .env("SUPERVISE_BOTTLES", "c=10.0.0.3")
            .args(["--bottle", "e=10.0.0.5"]),
    );
    assert!(
        text.contains("bottle = [\"e=10.0.0.5\"]  # flag --bottle"),
        "{text}"
    );

    // SUPERVISE_DB_FILE beats the file's `db` (they conflict; the environment wins).
    let text = print(server().env("SUPERVISE_DB_FILE", "/etc/supervise/db-url"));
    assert!(text.contains("# db =  # not set"), "{text}");
    assert!(
        text.contains("db-file = \"/etc/supervise/db-url\"  # environment SUPERVISE_DB_FILE"),
        "{text}"
    );
}

#[test]
fn a_bad_config_file_is_refused_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    for (text, expect) in [
        (
            "listen = \"127.0.0.1:0\"\nbottles = [\"a=10.0.0.1\"]\n",
            "unknown key `bottles`",
        ),
        ("listen = \n", "not valid TOML"),
        ("grace = \"soon\"\n", "invalid value 'soon' for '--grace"),
        ("listen = [\"127.0.0.1:0\"]\n", "takes one value"),
        (
            "db = \"postgres://u:hunter2@db.internal/s\"\n",
            "holds a password and users outside its owner and group can read it",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let out = server().arg("--config").arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{text}: {err}");
    }
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = server();
    c.arg("--db").arg(dir.path().join("s.db")).args([
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
    ]);
    let log = run_until_listening(c, &dir.path().join("server.log"));
    assert!(!log.contains('\u{1b}'), "{log:?}");
    let mut messages = Vec::new();
    for line in log.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        messages.push(
            v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("supervise-server listening on http://127.0.0.1:")),
        "{messages:?}"
    );
}

#[test]
fn the_systemd_units_open_file_limit_keeps_the_default_waiting_caps() {
    let unit = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/systemd/supervise-server.service");
    let text = std::fs::read_to_string(unit).unwrap();
    let limit: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("LimitNOFILE="))
        .and_then(|v| v.trim().parse().ok())
        .expect("LimitNOFILE= in the server unit");
    let (caps, clamped) = supervise_server::open_files::WaitCaps::resolve(limit, None, None);
    assert!(clamped.is_empty());
    let full = supervise_server::Config::default();
    assert_eq!(
        (caps.total, caps.per_bottle),
        (full.max_waiting, full.max_waiting_per_bottle),
        "LimitNOFILE={limit} shrinks the default waiting caps"
    );
}
