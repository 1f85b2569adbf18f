//! `supervise doctor`: a healthy database passes (exit 0); a database others can read, a
//! directory anyone can write and a proxy user who cannot open the file each fail (exit 1)
//! with a line naming the path and the fix.

use std::os::unix::fs::PermissionsExt;

use crate::util::{Env, command};

fn doctor(env: &Env, extra: &[&str]) -> (Option<i32>, String) {
    let out = command(&env.db).arg("doctor").args(extra).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_healthy_database_passes_every_check() {
    let env = Env::new();
    let (code, out) = doctor(&env, &[]);
    assert_eq!(code, Some(0), "{out}");
    for check in ["database", "schema", "file mode", "directory mode", "group"] {
        assert!(out.contains(&format!("ok   {check}: ")), "{check}: {out}");
    }
    let doc = env.json(&["doctor", "--json"]);
    assert_eq!(doc["ok"], true);
    assert!(doc["checks"].as_array().unwrap().len() >= 5);
}

#[test]
fn a_database_others_can_read_fails_with_the_fix() {
    let env = Env::new();
    std::fs::set_permissions(&env.db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, out) = doctor(&env, &[]);
    assert_eq!(code, Some(1), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("FAIL file mode"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&format!("fix: chmod o-rwx {}", env.db.display())),
        "{line}"
    );
}

#[test]
fn a_directory_anyone_can_write_fails_naming_it() {
    let env = Env::new();
    let dir = env.db.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, out) = doctor(&env, &["--json"]);
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(code, Some(1), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let failed: Vec<&serde_json::Value> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .collect();
    let dir_check = failed
        .iter()
        .find(|c| c["check"] == "directory mode")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        dir_check["fix"],
        format!("chmod o-w {} (2770 for a shared directory)", dir.display())
    );
}

#[test]
fn a_proxy_user_outside_the_group_fails_and_root_passes() {
    let env = Env::new();
    // The test directory is 0700 and the file 0600: `nobody` is neither owner nor in the group.
    let (code, out) = doctor(&env, &["--proxy-user", "nobody"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL proxy user: nobody cannot"), "{out}");
    assert!(out.contains("fix: usermod -aG"), "{out}");
    let (code, out) = doctor(&env, &["--proxy-user", "root"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = doctor(&env, &["--proxy-user", "no-such-user-here"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no user named no-such-user-here"), "{out}");
}

/// A bare repository with the gate installed for bottle `demo`; returns its hook's path.
fn installed_gate(env: &Env) -> std::path::PathBuf {
    let repo = env.dir.path().join("gate.git");
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&repo)
        .status()
        .unwrap();
    assert!(init.success());
    env.ok(&[
        "gate",
        "install",
        repo.to_str().unwrap(),
        "--bottle",
        "demo",
    ]);
    repo.join("hooks").join("pre-receive")
}

#[test]
fn a_recorded_gate_hook_that_is_missing_or_runs_a_gone_binary_fails() {
    let env = Env::new();
    let hook = installed_gate(&env);
    let (code, out) = doctor(&env, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!("ok   gate: the hook {}", hook.display())),
        "{out}"
    );

    // The binary the hook runs is gone (an upgrade moved it).
    let text = std::fs::read_to_string(&hook).unwrap();
    let moved = text.replace(crate::util::BIN, "/opt/gone/supervise");
    assert_ne!(moved, text);
    std::fs::write(&hook, moved).unwrap();
    let (code, out) = doctor(&env, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("runs /opt/gone/supervise, which is gone; fix: "),
        "{out}"
    );

    std::fs::remove_file(&hook).unwrap();
    let (code, out) = doctor(&env, &[]);
    assert_eq!(code, Some(1), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("FAIL gate"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("is missing"), "{line}");
    assert!(
        line.contains("fix: supervise --db-file FILE gate install"),
        "{line}"
    );
}
