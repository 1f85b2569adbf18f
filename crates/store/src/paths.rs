//! Where the database is: the one rule the server and the CLI share, so both always open
//! the same file (the `--db` flag, else a non-empty `SUPERVISE_DB`, else `./supervise.db`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The database file used when neither `--db` nor `SUPERVISE_DB` names one, relative to the
/// working directory (SPEC "Server").
pub const DEFAULT_DB: &str = "./supervise.db";

/// The environment variable naming the database file.
pub const DB_ENV: &str = "SUPERVISE_DB";

/// Resolves the database path: `flag`, else a non-empty `SUPERVISE_DB`, else [`DEFAULT_DB`].
pub fn db_path(flag: Option<&Path>) -> PathBuf {
    resolve(flag, std::env::var_os(DB_ENV))
}

fn resolve(flag: Option<&Path>, env: Option<OsString>) -> PathBuf {
    if let Some(path) = flag {
        return path.to_path_buf();
    }
    match env {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => PathBuf::from(DEFAULT_DB),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_then_env_then_default() {
        let env = Some(OsString::from("/env.db"));
        assert_eq!(
            resolve(Some(Path::new("/f.db")), env.clone()),
            PathBuf::from("/f.db")
        );
        assert_eq!(resolve(None, env), PathBuf::from("/env.db"));
        assert_eq!(
            resolve(None, Some(OsString::new())),
            PathBuf::from(DEFAULT_DB)
        );
        assert_eq!(resolve(None, None), PathBuf::from(DEFAULT_DB));
    }
}
