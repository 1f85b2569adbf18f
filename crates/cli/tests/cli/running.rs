//! `supervise console` as a daemon: `--config FILE` under flags and environment,
//! `--print-config` with the password masked, and logs without colour codes off a terminal
//! (`--log-format text|json`); `backup` copies the database.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use crate::util::{Env, clean_command, command};

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn console_settings_come_from_flags_then_environment_then_the_file() {
    let env = Env::new();
    let file = env.dir.path().join("console.toml");
    write(
        &file,
        "listen = \"127.0.0.1:7500\"\npublic-url = \"https://file.example\"\n\
         db = \"postgres://app:s3cret@db.internal/supervise\"\nlog-format = \"json\"\n",
    );
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let out = clean_command()
        .args(["console", "--config"])
        .arg(&file)
        .args(["--listen", "127.0.0.1:7501", "--print-config"])
        .env("SUPERVISE_CONSOLE_URL", "https://env.example")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("listen = \"127.0.0.1:7501\"  # flag --listen"),
        "{text}"
    );
    assert!(
        text.contains("public-url = \"https://env.example\"  # environment SUPERVISE_CONSOLE_URL"),
        "{text}"
    );
    assert!(
        text.contains("log-format = \"json\"  # config file"),
        "{text}"
    );
    assert!(
        text.contains("db = \"postgres://app:****@db.internal/supervise\"  # config file"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");

    // SUPERVISE_DB beats the file's `db` (the CLI reads it itself, not through clap).
    let out = clean_command()
        .args(["console", "--config"])
        .arg(&file)
        .arg("--print-config")
        .env("SUPERVISE_DB", "/srv/from-env.db")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("db = \"/srv/from-env.db\"  # environment SUPERVISE_DB"),
        "{text}"
    );
}

#[test]
fn a_console_config_file_with_an_unknown_key_is_refused_naming_it() {
    let env = Env::new();
    let file = env.dir.path().join("console.toml");
    write(&file, "listen = \"127.0.0.1:7500\"\npublic_url = \"x\"\n");
    let out = command(&env.db)
        .args(["console", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown key `public_url`"), "{err}");
}

/// Runs the console with stderr into a file until it serves, stops it, and returns the log.
fn console_log(env: &Env, format: &str) -> String {
    env.ok(&["operator", "add", "olga", "--role", "viewer"]);
    let log_path = env.dir.path().join(format!("console-{format}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = command(&env.db)
        .args(["console", "--listen", "127.0.0.1:0", "--log-format", format])
        .env("SUPERVISE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening"), "{line}");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(status.success(), "{status:?}: {log}");
    log
}

#[test]
fn the_console_log_in_a_file_has_no_colour_codes() {
    let env = Env::new();
    let log = console_log(&env, "text");
    assert!(log.contains("supervise console serving"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file: {log:?}"
    );
}

#[test]
fn the_console_json_log_is_one_object_per_line() {
    let env = Env::new();
    let log = console_log(&env, "json");
    assert!(!log.contains('\u{1b}'), "{log:?}");
    let messages: Vec<String> = log
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(
        messages.iter().any(|m| m == "supervise console serving"),
        "{messages:?}"
    );
}

#[test]
fn backup_writes_a_private_copy_and_never_overwrites_a_file() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    env.ok(&["bottle", "add", "solo", "--ip", "10.0.0.42"]);
    let copy = env.dir.path().join("copy.db");
    let out = env.ok(&["backup", copy.to_str().unwrap()]);
    assert!(out.contains("backed up"), "{out}");
    assert_eq!(std::fs::metadata(&copy).unwrap().mode() & 0o077, 0);
    let check = std::process::Command::new("sqlite3")
        .arg(&copy)
        .arg("PRAGMA integrity_check; SELECT slug FROM bottles WHERE slug = 'solo';")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout), "ok\nsolo\n");

    let before = std::fs::read(&copy).unwrap();
    let again = command(&env.db)
        .args(["backup", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(std::fs::read(&copy).unwrap(), before);
}
