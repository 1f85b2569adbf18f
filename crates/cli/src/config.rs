//! Settings shared with the server: the database path (default, then `SUPERVISE_DB`, then
//! `--db`) and the operator's name (`--as`, default the login user).

use std::path::{Path, PathBuf};

/// Resolves the database path exactly as the server does: `--db`, else a non-empty
/// `SUPERVISE_DB`, else `./supervise.db` (`supervise_store::paths`).
pub fn db_path(flag: Option<&Path>) -> PathBuf {
    supervise_store::paths::db_path(flag)
}

/// The operator recorded on decisions when `--as` is not given: `$USER`, else `$LOGNAME`,
/// else `unknown`.
pub fn login_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .map(|name| name.trim().to_string())
        .find(|name| valid_operator(name).is_ok())
        .unwrap_or_else(|| "unknown".to_string())
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
