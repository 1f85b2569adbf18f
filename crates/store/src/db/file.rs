//! The database file as a file: the checks before SQLite sees the path (no symlink, not
//! writable by outsiders, not empty for a read command), creating it without following a
//! link, the identity (device, inode) that tells whether the path still names the file
//! open, whether this process can write it, and the server's claim on it.
//!
//! SPEC "File safety and sharing": the server, the operators' CLI and the proxy's helper
//! may be different users sharing one group, so a file owned by another user of the group
//! is normal. What is refused is a file or directory that users *outside* owner and group
//! can write: such a user could plant a link, a `-wal` file or a whole database there. The
//! directory check is what makes the file checks hold until SQLite opens the path: nobody
//! outside the group can swap the file in between.
//!
//! Nothing here opens the database file itself once a pool is open: closing any descriptor
//! on it would drop this process's SQLite (POSIX) locks. The claim uses a sidecar file.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{ErrorKind, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{StoreError, StoreResult};

/// `O_NOFOLLOW` (std sets `O_CLOEXEC` itself), and the errno a link at the path gives.
const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();

/// Which file a path named when it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    pub(super) fn of(path: &Path) -> std::io::Result<Identity> {
        let m = std::fs::symlink_metadata(path)?;
        Ok(Identity {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// What [`prepare`] found at the path.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Nothing was there; this call created an empty private file.
    Created,
    /// A file is there (possibly empty: another process is creating it right now).
    Existing { empty: bool },
}

/// Checks the path before SQLite opens it and, with `create`, creates a missing file
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, or 0660 in a setgid directory).
pub(super) fn prepare(path: &Path, create: bool) -> StoreResult<Found> {
    check_directory(path)?;
    let found = match std::fs::symlink_metadata(path) {
        Ok(meta) => check_existing(path, &meta)?,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if !create {
                return Err(StoreError::Missing(path.to_path_buf()));
            }
            match create_new(path) {
                Ok(_) => Found::Created,
                // Another process (the CLI, a server) created it a moment ago, or someone
                // planted a link since the look above: check what is there now.
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let meta = std::fs::symlink_metadata(path).map_err(|e| io(path, e))?;
                    check_existing(path, &meta)?
                }
                Err(e) => return Err(io(path, e)),
            }
        }
        Err(e) => return Err(io(path, e)),
    };
    if found == (Found::Existing { empty: true }) && !create {
        // A read command never turns a stray empty file into a database.
        return Err(StoreError::NotSupervise(path.to_path_buf()));
    }
    Ok(found)
}

fn check_existing(path: &Path, meta: &Metadata) -> StoreResult<Found> {
    if meta.file_type().is_symlink() {
        return Err(StoreError::Symlink(path.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(StoreError::NotSupervise(path.to_path_buf()));
    }
    if meta.mode() & 0o002 != 0 {
        return Err(StoreError::WorldWritable(path.to_path_buf()));
    }
    Ok(Found::Existing {
        empty: meta.len() == 0,
    })
}

/// The directory holding `path`.
fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Refuses a directory others can write, sticky bit or not: the sticky bit stops them
/// removing the database, not creating its `-wal` or lock file before this process does.
fn check_directory(path: &Path) -> StoreResult<()> {
    let dir = directory(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.mode() & 0o002 != 0 => Err(StoreError::WorldWritable(dir.to_path_buf())),
        Ok(_) => Ok(()),
        // A missing directory: SQLite's own error says so when it tries to open the file.
        Err(_) => Ok(()),
    }
}

/// The mode for files supervise creates next to the database: 0660 when the directory is
/// set up for sharing (setgid: new files get its group), else 0600.
fn mode_for(path: &Path) -> u32 {
    match std::fs::metadata(directory(path)) {
        Ok(m) if m.mode() & 0o2000 != 0 => 0o660,
        _ => 0o600,
    }
}

/// Creates `path` (never through a link, never over an existing file) with the sharing
/// mode, set explicitly so the umask cannot widen or narrow it.
fn create_new(path: &Path) -> std::io::Result<File> {
    let mode = mode_for(path);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(NOFOLLOW)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(file)
}

/// Whether this process may write the file: the kernel's own answer for the effective ids
/// (`faccessat` with `AT_EACCESS`), so the mode bits, a root process's override, ACLs, an
/// immutable file and a read-only mount all count as they do for a write.
pub(super) fn writable(path: &Path) -> StoreResult<()> {
    use rustix::fs::{Access, AtFlags, CWD, accessat};
    use rustix::io::Errno;
    match accessat(CWD, path, Access::WRITE_OK, AtFlags::EACCESS) {
        Err(Errno::ACCESS | Errno::PERM | Errno::ROFS | Errno::TXTBSY) => {
            Err(StoreError::ReadOnly(path.to_path_buf()))
        }
        // A missing file is the identity check's to report, anything else the next query's.
        Ok(()) | Err(_) => Ok(()),
    }
}

/// The file system holding `path`: free bytes for this user.
pub(super) struct FsStat {
    pub(super) free: u64,
}

pub(super) fn statvfs(path: &Path) -> Option<FsStat> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(FsStat {
        free: s.f_bavail.saturating_mul(s.f_frsize),
    })
}

/// The sidecar file whose lock marks a database as served.
pub(super) fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".server-lock");
    PathBuf::from(name)
}

/// A held `flock` on `<db>.server-lock`, released when dropped.
#[derive(Debug)]
pub(super) struct Claim(File);

impl Drop for Claim {
    /// Unlocks before the descriptor closes. Closing alone is not enough: a child that
    /// another thread is spawning holds a copy of every descriptor from its fork until its
    /// exec, and a `flock` lasts until the last copy closes. Unlocking acts on the shared
    /// open file, so the next claim is free at once.
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, rustix::fs::FlockOperation::Unlock);
    }
}

/// Takes the exclusive, non-blocking `flock` on `<db>.server-lock` (created by the same
/// rules as the database) and writes this process's pid in it. The lock lasts until the
/// returned claim is dropped, and goes with the process however it ends.
pub(super) fn claim(db: &Path) -> StoreResult<Claim> {
    let path = lock_path(db);
    let mut file = match create_new(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => open_existing_lock(&path)?,
        Err(e) => return Err(io(&path, e)),
    };
    if let Err(errno) =
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
    {
        let err = std::io::Error::from(errno);
        if err.kind() == ErrorKind::WouldBlock {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(StoreError::AlreadyServed {
                path: db.to_path_buf(),
                pid: text.trim().parse().ok(),
            });
        }
        return Err(io(&path, err));
    }
    // The pid is for the next server's message only; failing to write it changes nothing.
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    Ok(Claim(file))
}

fn open_existing_lock(path: &Path) -> StoreResult<File> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| io(path, e))?;
    check_existing(path, &meta)?;
    let open = |write: bool| {
        OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(NOFOLLOW)
            .open(path)
    };
    // A lock file another group member created 0600 can still be locked read-only.
    match open(true) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => open(false).map_err(|e| io(path, e)),
        Err(e) if e.raw_os_error() == Some(ELOOP) => Err(StoreError::Symlink(path.to_path_buf())),
        Err(e) => Err(io(path, e)),
    }
}

fn io(path: &Path, e: std::io::Error) -> StoreError {
    if e.raw_os_error() == Some(ELOOP) {
        return StoreError::Symlink(path.to_path_buf());
    }
    StoreError::Database(format!("cannot open {}: {e}", path.display()))
}
