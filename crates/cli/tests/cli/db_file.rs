//! The database named through a file (`--db-file`, `SUPERVISE_DB_FILE`), for a PostgreSQL
//! URL with a password: a file others can read is refused, and `gate install` never
//! writes a password into the hook, which works through the file on a real PostgreSQL.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::gate::{git_in, ok, printed_id};
use crate::util::{Env, Run, clean_command};

fn db_file(dir: &Path, location: &str, mode: u32) -> PathBuf {
    let path = dir.join("db-url");
    std::fs::write(&path, format!("{location}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn supervise(args: &[&str]) -> Run {
    Run::from(clean_command().args(args).output().unwrap())
}

#[test]
fn a_db_file_readable_by_others_is_refused() {
    let env = Env::new();
    env.egress("pypi.org", 443);
    let file = db_file(env.dir.path(), env.db.to_str().unwrap(), 0o644);
    let path = file.to_str().unwrap();
    let r = supervise(&["--db-file", path, "list", "--json"]);
    r.assert_refused(path);
    assert!(r.stderr.contains("chmod o-rwx"), "{r:#?}");
    assert!(r.stdout.is_empty(), "{r:#?}");

    for mode in [0o600, 0o640, 0o660] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = supervise(&["--db-file", path, "list", "--json"]);
        r.assert_ok();
        assert!(r.stdout.contains("pypi.org"), "{mode:o}: {r:#?}");
    }
    let r = Run::from(
        clean_command()
            .env("SUPERVISE_DB_FILE", &file)
            .args(["list", "--json"])
            .output()
            .unwrap(),
    );
    r.assert_ok();
    assert!(r.stdout.contains("pypi.org"), "{r:#?}");
    let r = supervise(&["--db", "x.db", "--db-file", path, "list"]);
    assert_eq!(r.code, 2, "--db and --db-file together: {r:#?}");
}

/// On PostgreSQL (trust authentication, so the URL's password is carried but not needed):
/// `gate install` refuses a URL with a password given directly, writes `--db-file PATH`
/// when given one, and the hook then decides pushes through the file.
#[test]
fn gate_install_never_writes_a_password_and_the_hook_reads_the_db_file() {
    let Some(cluster) = supervise_testpg::cluster() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let secret = "s3cret-in-the-url";
    let url = rt.block_on(cluster.fresh_database()).replacen(
        "://postgres@",
        &format!("://postgres:{secret}@"),
        1,
    );
    assert!(url.contains(secret), "{url}");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    ok(git_in(
        root,
        &home,
        &["init", "-q", "--bare", "-b", "main", "gate.git"],
    ));
    ok(git_in(root, &home, &["init", "-q", "-b", "main", "work"]));
    let bare = root.join("gate.git");
    let bare_arg = bare.to_str().unwrap();
    let work = root.join("work");
    let hook = bare.join("hooks").join("pre-receive");
    supervise(&[
        "--db",
        &url,
        "--host-id",
        "h1",
        "bottle",
        "add",
        "demo",
        "--ip",
        "10.9.0.2",
    ])
    .assert_ok();

    // Given directly (flag or environment), the URL is refused for a hook.
    let r = supervise(&[
        "--db",
        &url,
        "--host-id",
        "h1",
        "gate",
        "install",
        bare_arg,
        "--bottle",
        "demo",
    ]);
    r.assert_refused("--db-file");
    assert!(!r.stderr.contains(secret), "{r:#?}");
    let r = Run::from(
        clean_command()
            .env("SUPERVISE_DB", &url)
            .args(["--host-id", "h1", "gate", "install", bare_arg])
            .args(["--bottle", "demo"])
            .output()
            .unwrap(),
    );
    r.assert_refused("--db-file");
    assert!(!hook.exists(), "nothing written");

    // Through a file: the hook names the file, never the password.
    let file = db_file(root, &url, 0o600);
    let file_arg = file.to_str().unwrap();
    supervise(&[
        "--db-file",
        file_arg,
        "--host-id",
        "h1",
        "gate",
        "install",
        bare_arg,
        "--bottle",
        "demo",
    ])
    .assert_ok();
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(!text.contains("postgres://"), "{text}");
    assert!(text.contains(&format!("--db-file '{file_arg}'")), "{text}");

    // The hook decides the push from the database the file names.
    let url_remote = format!("file://{}", bare.display());
    ok(git_in(
        &work,
        &home,
        &["remote", "add", "origin", &url_remote],
    ));
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    ok(git_in(&work, &home, &["add", "a.txt"]));
    ok(git_in(&work, &home, &["commit", "-q", "-m", "work"]));
    let push = || {
        Run::from(git_in(
            &work,
            &home,
            &["push", "origin", "HEAD:refs/heads/feature"],
        ))
    };
    let r = push();
    assert_ne!(r.code, 0, "{r:#?}");
    let id = printed_id(&r);
    supervise(&["--db-file", file_arg, "approve", &id]).assert_ok();
    push().assert_ok();
}
