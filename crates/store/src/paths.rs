//! Where the database is: the one rule the server and the CLI share, so both always open
//! the same database. `--db` (a file path or a URL), else `--db-file` (a file holding
//! one), else a non-empty `SUPERVISE_DB`, else a non-empty `SUPERVISE_DB_FILE`, else
//! `./supervise.db`.
//!
//! A PostgreSQL URL may carry a password, so it can be kept out of command lines, hooks and
//! configs in a file of its own: `--db-file PATH` reads the location from PATH, which must
//! be a regular file that users outside its owner and group can neither read nor write
//! (mode 0600, or 0640/0660 in a shared group, as for the database itself).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The database file used when neither `--db` nor `SUPERVISE_DB` names one, relative to the
/// working directory (SPEC "Server").
pub const DEFAULT_DB: &str = "./supervise.db";

/// The environment variable naming the database file.
pub const DB_ENV: &str = "SUPERVISE_DB";

/// The environment variable naming a file that holds the database's location.
pub const DB_FILE_ENV: &str = "SUPERVISE_DB_FILE";

/// Longest database file read: a location is one line.
const MAX_DB_FILE: u64 = 64 * 1024;

/// Where the database is, and the file that said so when it came from one.
#[derive(Clone, PartialEq, Eq)]
pub struct DbSetting {
    /// The location: a file path or a `postgres://` URL (which may carry a password).
    pub db: PathBuf,
    /// The `--db-file` / `SUPERVISE_DB_FILE` the location was read from, if any.
    pub file: Option<PathBuf>,
}

/// Shows the file a location came from, never the location (it may carry a password).
impl std::fmt::Debug for DbSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbSetting")
            .field("db", &crate::Location::parse(&self.db))
            .field("file", &self.file)
            .finish()
    }
}

/// Why a database file could not be used. Its content is never part of a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbFileError {
    /// The file cannot be opened or read.
    #[error("cannot read the database file {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not a regular file (a directory, a device, a pipe).
    #[error("the database file {} is not a regular file", .path.display())]
    NotAFile { path: PathBuf },
    /// Users outside the file's owner and group may read or write it.
    #[error(
        "the database file {p} is open to other users (mode {mode:04o}); it may hold a password: \
         chmod o-rwx {p} (0600, or 0640 with a shared group)",
        p = .path.display()
    )]
    OpenToOthers { path: PathBuf, mode: u32 },
    /// The file holds no location.
    #[error(
        "the database file {} is empty: write the database's path or postgres:// URL in it",
        .path.display()
    )]
    Empty { path: PathBuf },
    /// The file holds more than one line, or more than a location can be.
    #[error(
        "the database file {} must hold one line: the database's path or postgres:// URL",
        .path.display()
    )]
    NotOneLine { path: PathBuf },
}

/// Resolves the database path: `flag`, else a non-empty `SUPERVISE_DB`, else [`DEFAULT_DB`].
/// It reads no file: [`db_setting`] also takes `--db-file` and `SUPERVISE_DB_FILE`.
pub fn db_path(flag: Option<&Path>) -> PathBuf {
    resolve(flag, std::env::var_os(DB_ENV))
}

/// Resolves the database: `--db` (`flag`), else `--db-file` (`file_flag`), else a non-empty
/// `SUPERVISE_DB`, else a non-empty `SUPERVISE_DB_FILE`, else [`DEFAULT_DB`]. A location
/// read from a file is checked as [`read_db_file`] says.
pub fn db_setting(flag: Option<&Path>, file_flag: Option<&Path>) -> Result<DbSetting, DbFileError> {
    setting(
        flag,
        file_flag,
        std::env::var_os(DB_ENV),
        std::env::var_os(DB_FILE_ENV),
    )
}

fn setting(
    flag: Option<&Path>,
    file_flag: Option<&Path>,
    env: Option<OsString>,
    file_env: Option<OsString>,
) -> Result<DbSetting, DbFileError> {
    let from_file = |path: PathBuf| {
        Ok(DbSetting {
            db: read_db_file(&path)?,
            file: Some(path),
        })
    };
    if let Some(path) = flag {
        return Ok(DbSetting {
            db: path.to_path_buf(),
            file: None,
        });
    }
    if let Some(path) = file_flag {
        return from_file(path.to_path_buf());
    }
    if env.as_ref().is_some_and(|v| !v.is_empty()) {
        return Ok(DbSetting {
            db: resolve(None, env),
            file: None,
        });
    }
    match file_env {
        Some(path) if !path.is_empty() => from_file(PathBuf::from(path)),
        _ => Ok(DbSetting {
            db: PathBuf::from(DEFAULT_DB),
            file: None,
        }),
    }
}

/// Reads a database location from `path`: one line (surrounding white space dropped),
/// from a regular file that users outside its owner and group can neither read nor write.
/// The mode is checked on the file opened, so a swap between the check and the read
/// changes nothing.
pub fn read_db_file(path: &Path) -> Result<PathBuf, DbFileError> {
    let unreadable = |source| DbFileError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(DbFileError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o007 != 0 {
            return Err(DbFileError::OpenToOthers {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let mut text = String::new();
    file.take(MAX_DB_FILE + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    let line = text.trim();
    if line.is_empty() {
        return Err(DbFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    if text.len() as u64 > MAX_DB_FILE || line.contains(['\n', '\r']) {
        return Err(DbFileError::NotOneLine {
            path: path.to_path_buf(),
        });
    }
    Ok(PathBuf::from(line))
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
    use std::os::unix::fs::PermissionsExt;

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

    fn db_file(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let path = dir.join("db-url");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn flags_then_environment_then_default_with_db_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = db_file(dir.path(), "postgres://u:secret@127.0.0.1/db\n", 0o600);
        let url = PathBuf::from("postgres://u:secret@127.0.0.1/db");
        let env = || Some(OsString::from("/env.db"));
        let file_env = || Some(file.clone().into_os_string());
        let got = setting(Some(Path::new("/f.db")), Some(&file), env(), file_env()).unwrap();
        assert_eq!((got.db, got.file), (PathBuf::from("/f.db"), None));
        let got = setting(None, Some(&file), env(), None).unwrap();
        assert_eq!((got.db, got.file), (url.clone(), Some(file.clone())));
        let got = setting(None, None, env(), file_env()).unwrap();
        assert_eq!((got.db, got.file), (PathBuf::from("/env.db"), None));
        let got = setting(None, None, Some(OsString::new()), file_env()).unwrap();
        assert_eq!((got.db, got.file), (url, Some(file.clone())));
        let got = setting(None, None, None, Some(OsString::new())).unwrap();
        assert_eq!(got.db, PathBuf::from(DEFAULT_DB));
    }

    #[test]
    fn a_db_file_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o604, 0o602, 0o666] {
            let file = db_file(dir.path(), "postgres://u:secret@127.0.0.1/db", mode);
            let err = read_db_file(&file).unwrap_err();
            assert!(
                matches!(err, DbFileError::OpenToOthers { .. }),
                "{mode:o}: {err}"
            );
            let text = err.to_string();
            assert!(text.contains(&file.display().to_string()), "{text}");
            assert!(text.contains("chmod o-rwx"), "{text}");
            assert!(!text.contains("secret"), "{text}");
        }
        for mode in [0o600, 0o640, 0o660, 0o400] {
            let file = db_file(dir.path(), "  /srv/supervise.db \n", mode);
            assert_eq!(
                read_db_file(&file).unwrap(),
                PathBuf::from("/srv/supervise.db"),
                "{mode:o}"
            );
        }
    }

    #[test]
    fn a_db_file_holds_one_location() {
        let dir = tempfile::tempdir().unwrap();
        let empty = db_file(dir.path(), " \n", 0o600);
        assert!(matches!(
            read_db_file(&empty),
            Err(DbFileError::Empty { .. })
        ));
        let two = db_file(dir.path(), "/a.db\n/b.db\n", 0o600);
        assert!(matches!(
            read_db_file(&two),
            Err(DbFileError::NotOneLine { .. })
        ));
        assert!(matches!(
            read_db_file(dir.path()),
            Err(DbFileError::NotAFile { .. })
        ));
        assert!(matches!(
            read_db_file(&dir.path().join("missing")),
            Err(DbFileError::Unreadable { .. })
        ));
    }
}
