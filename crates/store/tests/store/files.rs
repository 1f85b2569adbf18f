//! The database as a file: a full disk, a deleted or replaced file, planted links, modes
//! others can write, an empty file, and the one server that may claim it.

use std::io::{Read, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use supervise_store::{ProposalLimits, Store, StoreError, StoreOptions};

use crate::common::{TestDb, bottle, egress, open_with};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

async fn open(path: &Path, create: bool) -> Result<Store, StoreError> {
    Store::open(
        path,
        StoreOptions {
            create,
            ..StoreOptions::default()
        },
    )
    .await
}

fn no_cap() -> ProposalLimits {
    ProposalLimits {
        max_pending_per_bottle: None,
        ..ProposalLimits::default()
    }
}

/// A small tmpfs, unmounted on drop (a panic included). `None` after a loud `SKIPPED` line
/// when this user may not mount; under `CI=true` not mounting fails the test instead.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("cannot mount a tmpfs in CI, where the tests run as root: {why}");
                }
                eprintln!(
                    "SKIPPED: disk-full test: cannot mount a tmpfs ({why}) (needs root to mount tmpfs)"
                );
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Still busy (a pool closing): detach it now, freed when the last file closes.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Fills the file system holding `dir` with one file, until the disk refuses more.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).and_then(|()| f.sync_all()).is_ok() {}
    path
}

#[tokio::test]
async fn full_disk_names_the_cause_and_writes_succeed_once_space_is_back() {
    let Some(fs) = Tmpfs::mount("2M") else {
        return;
    };
    let path = fs.path().join("supervise.db");
    let store = open_with(&path, no_cap()).await;
    let b = bottle(&store, "alpha", "10.0.0.1").await;
    store.health().await.expect("healthy before the disk fills");

    let filler = fill(fs.path());
    let mut refusal = None;
    for i in 0..2000 {
        if let Err(e) = store.propose(egress(&b, &format!("h{i}.example"))).await {
            refusal = Some(e);
            break;
        }
    }
    let refusal = refusal.expect("a write fails once the disk is full");
    eprintln!("full disk: the refusal: {refusal}");
    assert!(
        refusal.to_string().contains("full"),
        "the error names the full disk: {refusal}"
    );
    let health = store
        .health()
        .await
        .expect_err("health reports the full disk");
    assert!(health.to_string().contains("full"), "{health}");

    std::fs::remove_file(&filler).unwrap();
    let mut failed = Vec::new();
    for i in 0..20 {
        if let Err(e) = store
            .propose(egress(&b, &format!("after{i}.example")))
            .await
        {
            failed.push(e.to_string());
        }
    }
    eprintln!(
        "full disk: {} of 20 writes failed after space came back",
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} of 20 writes failed after space came back: {failed:?}",
        failed.len()
    );
    store.health().await.expect("healthy again");
    store.close().await;
}

#[tokio::test]
async fn a_deleted_file_refuses_the_next_write() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "alpha", "10.0.0.1").await;
    std::fs::remove_file(&db.path).unwrap();

    let err = store
        .propose(egress(&b, "a.example"))
        .await
        .expect_err("a write into an unlinked file is never acknowledged");
    assert!(matches!(err, StoreError::FileReplaced(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("deleted or replaced") && text.contains("restart"),
        "{text}"
    );
    assert!(text.contains(&db.path.display().to_string()), "{text}");
    let health = store.health().await.expect_err("unhealthy");
    assert!(matches!(health, StoreError::FileReplaced(_)), "{health:?}");
}

#[tokio::test]
async fn a_replaced_file_refuses_the_next_write() {
    let db = TestDb::new();
    let store = db.open().await;
    let b = bottle(&store, "alpha", "10.0.0.1").await;
    // Another supervise database moved into place (a restore over a running server).
    let other = db.dir.path().join("other.db");
    open(&other, true).await.unwrap().close().await;
    std::fs::rename(&other, &db.path).unwrap();

    let err = store
        .propose(egress(&b, "a.example"))
        .await
        .expect_err("refused");
    assert!(matches!(err, StoreError::FileReplaced(_)), "{err:?}");
}

#[tokio::test]
async fn a_dangling_symlink_is_never_followed() {
    let db = TestDb::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("planted.db");
    symlink(&target, &db.path).unwrap();

    let err = open(&db.path, true).await.expect_err("refused");
    assert!(matches!(err, StoreError::Symlink(_)), "{err:?}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!target.exists(), "nothing was created at the link's target");
    assert!(open(&db.path, false).await.is_err());
    assert!(!target.exists());
}

#[tokio::test]
async fn a_symlink_to_an_existing_database_is_refused() {
    let db = TestDb::new();
    db.open().await.close().await;
    let link = db.dir.path().join("link.db");
    symlink(&db.path, &link).unwrap();
    let err = open(&link, false).await.expect_err("refused");
    assert!(matches!(err, StoreError::Symlink(_)), "{err:?}");
}

#[tokio::test]
async fn a_new_database_is_private_or_group_shared_in_a_setgid_directory() {
    let db = TestDb::new();
    db.open().await.close().await;
    assert_eq!(mode(&db.path), 0o600);

    let shared = tempfile::tempdir().unwrap();
    chmod(shared.path(), 0o2770);
    let path = shared.path().join("supervise.db");
    let store = open(&path, true).await.unwrap();
    assert_eq!(
        mode(&path),
        0o660,
        "the group shares a database in a setgid directory"
    );
    let claim = store.claim_server().await.unwrap();
    assert_eq!(mode(&path.with_extension("db.server-lock")), 0o660);
    drop(claim);
    store.close().await;
}

#[tokio::test]
async fn a_file_others_can_write_is_refused_naming_the_fix() {
    let db = TestDb::new();
    db.open().await.close().await;
    chmod(&db.path, 0o666);
    for create in [true, false] {
        let err = open(&db.path, create).await.expect_err("refused");
        assert!(matches!(err, StoreError::WorldWritable(_)), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("chmod o-w {}", db.path.display())),
            "{text}"
        );
    }
    // Group write is how a shared database works (SPEC): accepted.
    chmod(&db.path, 0o660);
    open(&db.path, false)
        .await
        .expect("a group-writable file opens")
        .close()
        .await;
}

#[tokio::test]
async fn a_directory_others_can_write_is_refused_sticky_or_not() {
    for dir_mode in [0o777, 0o1777] {
        let db = TestDb::new();
        db.open().await.close().await;
        chmod(db.dir.path(), dir_mode);
        let err = open(&db.path, false).await.expect_err("refused");
        assert!(
            matches!(err, StoreError::WorldWritable(_)),
            "{dir_mode:o}: {err:?}"
        );
        assert!(
            err.to_string()
                .contains(&format!("chmod o-w {}", db.dir.path().display())),
            "{err}"
        );
        // Nor is a new database created there.
        let err = open(&db.dir.path().join("new.db"), true)
            .await
            .expect_err("refused");
        assert!(matches!(err, StoreError::WorldWritable(_)), "{err:?}");
        chmod(db.dir.path(), 0o700);
    }
}

#[tokio::test]
async fn an_empty_file_is_not_a_database_to_a_read_command() {
    let db = TestDb::new();
    std::fs::File::create(&db.path).unwrap();
    let err = open(&db.path, false).await.expect_err("refused");
    assert!(matches!(err, StoreError::NotSupervise(_)), "{err:?}");
    assert!(
        err.to_string().contains("not a supervise database"),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&db.path).unwrap().len(),
        0,
        "left untouched"
    );
    // A creating open takes it: it holds nothing, and it is what a concurrent first open
    // sees between another process creating the file and migrating it.
    open(&db.path, true)
        .await
        .expect("created in place")
        .close()
        .await;
    open(&db.path, false)
        .await
        .expect("now a database")
        .close()
        .await;
}

/// Whether this process runs as root (`/proc/self` belongs to the effective user).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
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
        chmod(path, if on { 0o400 } else { 0o600 });
    }
}

#[tokio::test]
async fn a_read_only_file_fails_health_naming_it() {
    let db = TestDb::new();
    let store = db.open().await;
    store.health().await.unwrap();
    read_only(&db.path, true);
    let health = store.health().await;
    read_only(&db.path, false);
    let err = health.expect_err("read-only");
    assert!(matches!(err, StoreError::ReadOnly(_)), "{err:?}");
    assert!(err.to_string().contains("read-only"), "{err}");
    store.health().await.unwrap();
}

#[tokio::test]
async fn a_root_process_is_healthy_on_another_users_private_file() {
    if !running_as_root() {
        eprintln!("skipped: only root can give the database to another user");
        return;
    }
    let db = TestDb::new();
    let store = db.open().await;
    // The proxy-user layout: the file belongs to another user, mode 0600.
    std::os::unix::fs::chown(&db.path, Some(65_534), Some(65_534)).unwrap();
    chmod(&db.path, 0o600);
    store.health().await.expect("healthy");
    store
        .register_bottle("after-chown", "10.9.0.1".parse().unwrap())
        .await
        .expect("the write succeeds");
    store.health().await.expect("still healthy");
}

#[tokio::test]
async fn one_server_claim_per_database() {
    let db = TestDb::new();
    let first = db.open().await;
    let second = db.open().await;
    let claim = first.claim_server().await.expect("the first claim");
    let err = second
        .claim_server()
        .await
        .expect_err("a second claim is refused");
    match &err {
        StoreError::AlreadyServed { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("already served"), "{err}");
    // The CLI never claims, so it works beside a server.
    let b = bottle(&second, "alpha", "10.0.0.1").await;
    second.propose(egress(&b, "a.example")).await.unwrap();
    drop(claim);
    second
        .claim_server()
        .await
        .expect("free again once the first lets go");
}

/// A child being spawned holds a copy of every descriptor from its fork until its exec;
/// a dropped claim must be free at once all the same. The child here waits 1 s between
/// its fork and its exec, on a thread of its own, while the claim is dropped and taken.
#[tokio::test]
#[allow(unsafe_code)] // `pre_exec`, to hold the child between its fork and its exec
async fn a_dropped_claim_is_free_while_a_child_is_being_spawned() {
    use std::os::unix::process::CommandExt;
    let db = TestDb::new();
    let first = db.open().await;
    let second = db.open().await;
    let claim = first.claim_server().await.expect("the first claim");
    let (mut reader, writer) = std::io::pipe().unwrap();
    let spawner = std::thread::spawn(move || {
        let mut command = Command::new("true");
        // SAFETY: the closure only writes one byte to a pipe and sleeps, both
        // async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                (&writer).write_all(b"f")?;
                std::thread::sleep(Duration::from_secs(1));
                Ok(())
            });
        }
        command.status().expect("true runs")
    });
    // The byte comes from the child, so the fork has happened.
    let mut byte = [0u8];
    reader.read_exact(&mut byte).unwrap();
    drop(claim);
    second
        .claim_server()
        .await
        .expect("free at once, though the child still holds a copy");
    assert!(spawner.join().unwrap().success());
}
