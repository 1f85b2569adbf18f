//! Settings shared with the server: the database (`--db`, `--db-file`, `SUPERVISE_DB`,
//! `SUPERVISE_DB_FILE`, default `./supervise.db`) and the operator's name (`--as`, default
//! the login user).

use std::path::Path;

use supervise_store::paths::{DbFileError, DbSetting};

/// Resolves the database exactly as the server does (`supervise_store::paths`): `--db`,
/// else `--db-file`, else a non-empty `SUPERVISE_DB`, else a non-empty
/// `SUPERVISE_DB_FILE`, else `./supervise.db`. A database file open to other users is
/// refused.
pub fn db_setting(flag: Option<&Path>, file_flag: Option<&Path>) -> Result<DbSetting, DbFileError> {
    supervise_store::paths::db_setting(flag, file_flag)
}

/// The operator recorded on decisions when `--as` is not given: `$USER`, else `$LOGNAME`,
/// else the user database's name for the real user id (a cron job or a service has
/// neither variable). `None` when none of them names anyone: the caller asks for `--as`,
/// and nothing is ever recorded as decided by a made-up name.
pub fn login_user() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .map(|name| name.trim().to_string())
        .find(|name| valid_operator(name).is_ok())
        .or_else(|| account_name().filter(|name| valid_operator(name).is_ok()))
}

/// The login name of the real user id, from the user database (`getpwuid_r`, so NSS
/// sources such as LDAP count too).
#[cfg(unix)]
#[allow(unsafe_code)]
fn account_name() -> Option<String> {
    use std::ffi::CStr;
    // SAFETY: getuid has no preconditions. getpwuid_r writes only into `pwd`, `buf` (of the
    // length passed) and `found`, all owned here; `pw_name` points into `buf`, which
    // outlives the read of it below.
    unsafe {
        let uid = libc::getuid();
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let mut buf = vec![0 as libc::c_char; 1024];
        loop {
            let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found);
            if rc == libc::ERANGE && buf.len() < 1 << 20 {
                buf.resize(buf.len() * 2, 0);
                continue;
            }
            if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
                return None;
            }
            let name = CStr::from_ptr(pwd.pw_name).to_str().ok()?.to_string();
            return Some(name).filter(|n| !n.is_empty());
        }
    }
}

#[cfg(not(unix))]
fn account_name() -> Option<String> {
    None
}

/// Checks an operator name given with `--as`: 1 to 64 characters, no control characters
/// or spaces at either end (it is printed in audit lines).
pub fn valid_operator(name: &str) -> Result<String, String> {
    if name.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if name.trim() != name {
        return Err("must not start or end with white space".into());
    }
    if name.chars().count() > 64 {
        return Err("must be at most 64 characters".into());
    }
    if name.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_names() {
        assert!(valid_operator("alice").is_ok());
        assert!(valid_operator("Alice Smith").is_ok());
        for bad in ["", "  ", " alice", "a\u{1b}[31m", &"x".repeat(65)] {
            assert!(valid_operator(bad).is_err(), "{bad:?}");
        }
    }
}
