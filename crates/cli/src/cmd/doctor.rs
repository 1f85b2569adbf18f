//! `supervise doctor [--json] [--proxy-user USER] [--console-url URL]`: checks a set-up and
//! prints one line per check, each failure with its fix; exit 1 when any fails. The
//! database: reachable, schema (opening migrates it and refuses a newer one), every hook
//! `gate install` recorded (present, still ours, its binary there, no password in it), and
//! for a SQLite file its mode, its directory's, the group they share, and whether
//! `--proxy-user` can open it (from that user's uid and groups against the modes, as the
//! kernel decides). On PostgreSQL, the server's version and the role's powers
//! ([`postgres`]); with a console URL, that the console answers and its certificate
//! ([`console`]).

mod console;
mod postgres;

use std::ffi::CString;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use supervise_store::{GateInstall, Location};

use super::Ctx;
use super::gate::MARKER;
use crate::exit::NotAllowed;
use crate::render;

#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    ok: bool,
    /// Passes, but wants attention soon (a certificate about to expire): printed `warn`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    warn: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn pass(check: &'static str, detail: String) -> Check {
    Check {
        check,
        ok: true,
        warn: false,
        detail,
        fix: None,
    }
}

fn warn(check: &'static str, detail: String, fix: String) -> Check {
    Check {
        check,
        ok: true,
        warn: true,
        detail,
        fix: Some(fix),
    }
}

fn fail(check: &'static str, detail: String, fix: String) -> Check {
    Check {
        check,
        ok: false,
        warn: false,
        detail,
        fix: Some(fix),
    }
}

pub async fn run(
    ctx: &Ctx,
    json: bool,
    proxy_user: Option<&str>,
    console_url: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    let mut checks = Vec::new();
    let shown = ctx.shown_db();
    match ctx.open().await {
        Ok(store) => {
            checks.push(pass(
                "database",
                format!("{shown} answers ({:?})", store.backend()),
            ));
            checks.push(pass(
                "schema",
                "migrated to this binary's schema (a newer one is refused)".into(),
            ));
            let installs = store.gate_installs().await;
            store.close().await;
            match installs {
                Ok(installs) => checks.extend(installs.iter().map(gate_check)),
                Err(e) => checks.push(fail(
                    "gate",
                    "cannot read the recorded gate installs".into(),
                    crate::exit::message(&e.into()),
                )),
            }
        }
        Err(e) => checks.push(fail(
            "database",
            format!("cannot open {shown}"),
            crate::exit::message(&e),
        )),
    }
    postgres::checks(&shown, &mut checks).await;
    if let Location::File(path) = Location::parse(&ctx.db) {
        file_checks(&path, proxy_user, &mut checks);
    }
    console::checks(console_url, &mut checks).await;
    let ok = checks.iter().all(|c| c.ok);
    if json {
        serde_json::to_writer_pretty(
            &mut *out,
            &serde_json::json!({ "ok": ok, "checks": checks }),
        )?;
        writeln!(out)?;
    } else {
        for c in &checks {
            let mark = match (c.ok, c.warn) {
                (false, _) => "FAIL",
                (true, true) => "warn",
                (true, false) => "ok  ",
            };
            let line = match &c.fix {
                Some(fix) => format!("{mark} {}: {}; fix: {fix}", c.check, c.detail),
                None => format!("{mark} {}: {}", c.check, c.detail),
            };
            writeln!(out, "{}", render::one_line(&line))?;
        }
    }
    out.flush()?;
    if ok { Ok(()) } else { Err(NotAllowed.into()) }
}

/// One hook `gate install` recorded: still ours, its binary still there, no secret in it.
fn gate_check(install: &GateInstall) -> Check {
    let hook = install.hook.display();
    let what = format!(
        "the hook {hook} (bottle {}, upstream {})",
        install.bottle, install.remote
    );
    let reinstall = format!(
        "supervise --db-file FILE gate install {} --bottle {} --remote {}",
        install
            .hook
            .parent()
            .and_then(Path::parent)
            .map(|r| r.display().to_string())
            .unwrap_or_default(),
        install.bottle,
        install.remote
    );
    let text = match std::fs::read_to_string(&install.hook) {
        Ok(t) => t,
        Err(e) => return fail("gate", format!("{what} is missing ({e})"), reinstall),
    };
    if !text.contains(MARKER) {
        return fail(
            "gate",
            format!("{what} was replaced by another hook"),
            reinstall,
        );
    }
    if supervise_settings::mask(&text) != text {
        return fail(
            "gate",
            format!("{what} holds a database password"),
            format!("put the URL in a 0640 file and reinstall: {reinstall}"),
        );
    }
    let binary = text
        .lines()
        .find_map(|l| l.strip_prefix("exec "))
        .and_then(|rest| match rest.strip_prefix('\'') {
            Some(quoted) => quoted.split('\'').next(),
            None => rest.split_whitespace().next(),
        })
        .map(std::path::PathBuf::from);
    match binary {
        Some(b) if b.is_file() => pass("gate", format!("{what} runs {}", b.display())),
        Some(b) => fail(
            "gate",
            format!("{what} runs {}, which is gone", b.display()),
            format!("install supervise there again, or reinstall the hook: {reinstall}"),
        ),
        None => fail("gate", format!("{what} has no exec line"), reinstall),
    }
}

/// The database file's and its directory's modes and group, and `--proxy-user`'s access.
fn file_checks(path: &Path, proxy_user: Option<&str>, checks: &mut Vec<Check>) {
    let Ok(file) = std::fs::symlink_metadata(path) else {
        return;
    };
    let dir_path = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let p = path.display();
    let mode = file.mode() & 0o7777;
    if mode & 0o007 != 0 {
        checks.push(fail(
            "file mode",
            format!("{p} is mode {mode:04o}: users outside its owner and group can read or change the decisions"),
            format!("chmod o-rwx {p} (0600, or 0660 shared with the supervise group)"),
        ));
    } else {
        checks.push(pass("file mode", format!("{p} is mode {mode:04o}")));
    }
    let Ok(dir) = std::fs::metadata(&dir_path) else {
        return;
    };
    let d = dir_path.display();
    let dmode = dir.mode() & 0o7777;
    if dmode & 0o002 != 0 {
        checks.push(fail(
            "directory mode",
            format!(
                "{d} is mode {dmode:04o}: any user can replace the database or plant a -wal file"
            ),
            format!("chmod o-w {d} (2770 for a shared directory)"),
        ));
    } else {
        checks.push(pass("directory mode", format!("{d} is mode {dmode:04o}")));
    }
    if mode & 0o060 != 0 && file.gid() != dir.gid() {
        checks.push(fail(
            "group",
            format!(
                "{p} is shared with group {} but its directory's group is {}",
                file.gid(),
                dir.gid()
            ),
            format!(
                "chgrp {} {p}, and chmod g+s {d} so new files get the group",
                dir.gid()
            ),
        ));
    } else {
        checks.push(pass(
            "group",
            format!("{p} belongs to group {}", file.gid()),
        ));
    }
    if let Some(user) = proxy_user {
        checks.push(user_access(user, path, &file, &dir_path, &dir));
    }
}

/// Whether `user` may open the database for writing: search and write on the directory
/// (SQLite creates the -wal and -shm files there), read and write on the file.
fn user_access(
    user: &str,
    path: &Path,
    file: &std::fs::Metadata,
    dir_path: &Path,
    dir: &std::fs::Metadata,
) -> Check {
    let Some((uid, gids)) = user_ids(user) else {
        return fail(
            "proxy user",
            format!("no user named {user}"),
            "give --proxy-user the proxy's account (e.g. proxy for Squid)".into(),
        );
    };
    let allowed = |m: &std::fs::Metadata, want: u32| {
        if uid == 0 {
            return true;
        }
        let bits = if m.uid() == uid {
            (m.mode() >> 6) & 7
        } else if gids.contains(&m.gid()) {
            (m.mode() >> 3) & 7
        } else {
            m.mode() & 7
        };
        bits & want == want
    };
    let d = dir_path.display();
    let p = path.display();
    if !allowed(dir, 0o3) {
        return fail(
            "proxy user",
            format!("{user} cannot create files in {d} (SQLite's -wal and -shm)"),
            format!("usermod -aG {} {user}, and chmod 2770 {d}", dir.gid()),
        );
    }
    if !allowed(file, 0o6) {
        return fail(
            "proxy user",
            format!("{user} cannot read and write {p}"),
            format!("usermod -aG {} {user}, and chmod 0660 {p}", file.gid()),
        );
    }
    pass("proxy user", format!("{user} can open {p}"))
}

/// The uid and every group id (primary and supplementary) of the account `name`.
#[allow(unsafe_code)]
fn user_ids(name: &str) -> Option<(u32, Vec<u32>)> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam_r writes only into `pwd`, `buf` (of the length passed) and `found`,
    // all owned here; getgrouplist writes at most `n` entries into `groups`, sized to `n`.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let mut buf = vec![0 as libc::c_char; 16 * 1024];
        let rc = libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        );
        if rc != 0 || found.is_null() {
            return None;
        }
        let (uid, gid) = (pwd.pw_uid, pwd.pw_gid);
        let mut n: libc::c_int = 256;
        let mut groups: Vec<libc::gid_t> = vec![0; n as usize];
        if libc::getgrouplist(cname.as_ptr(), gid, groups.as_mut_ptr(), &mut n) < 0 {
            groups.resize(n.max(0) as usize, 0);
            if libc::getgrouplist(cname.as_ptr(), gid, groups.as_mut_ptr(), &mut n) < 0 {
                return Some((uid, vec![gid]));
            }
        }
        groups.truncate(n.max(0) as usize);
        Some((uid, groups))
    }
}
