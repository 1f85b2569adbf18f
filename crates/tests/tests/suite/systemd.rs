//! The units in `contrib/systemd/`: `systemd-analyze verify` accepts them (with `ExecStart`
//! pointing at the real built binaries, in a temporary copy), their sandbox scores "OK" in
//! `systemd-analyze security --offline=true` (exposure at most 2.5 of 10).
//! (The server's tests check the unit's open-file limit against the waiting-call caps.)

use std::path::{Path, PathBuf};
use std::process::Command;

use supervise_tests::bin;

const UNITS: [&str; 2] = ["supervise-server.service", "supervise-console.service"];

fn contrib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/systemd")
}

/// The units, each with `/usr/local/bin/NAME` replaced by the built binary, in a new dir.
fn units_with_built_binaries() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for unit in UNITS {
        let text = std::fs::read_to_string(contrib().join(unit)).unwrap();
        assert!(text.contains("ExecStart=/usr/local/bin/"), "{unit}");
        let text = text
            .replace(
                "/usr/local/bin/supervise-server",
                bin("supervise-server").to_str().unwrap(),
            )
            .replace(
                "/usr/local/bin/supervise ",
                &format!("{} ", bin("supervise").to_str().unwrap()),
            );
        std::fs::write(dir.path().join(unit), text).unwrap();
    }
    dir
}

fn analyze(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .current_dir(dir)
        .env("SYSTEMD_LOG_LEVEL", "info")
        .output()
        .expect("systemd-analyze (Debian package systemd) must be installed")
}

#[test]
fn the_units_verify() {
    let dir = units_with_built_binaries();
    let out = analyze(dir.path(), &["verify", UNITS[0], UNITS[1]]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // verify prints problems it does not fail on (unknown settings, missing binaries).
    for bad in [
        "Unknown key",
        "Unknown section",
        "is not executable",
        "Failed",
    ] {
        assert!(!err.contains(bad), "{err}");
    }
}

#[test]
fn the_units_sandbox_scores_ok() {
    let dir = units_with_built_binaries();
    for unit in UNITS {
        let out = analyze(dir.path(), &["security", "--offline=true", unit]);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or_else(|| panic!("{unit}: no score in {text}"));
        let score: f64 = line
            .split(':')
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(
            score <= 2.5,
            "{unit}: exposure {score} (at most 2.5): {line}"
        );
    }
}
