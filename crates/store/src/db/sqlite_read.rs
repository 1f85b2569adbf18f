//! A read-only connection of its own to a SQLite file through SQLite's C API, whose rows
//! are read in place (each column borrowed until the next step), with no copy, channel or
//! allocation per row: what checking the hash chain over every event row reads through
//! (`verify_sqlite.rs`).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};

use libsqlite3_sys as sys;

use crate::error::{StoreError, StoreResult};

/// A connection opened on this thread, used by it alone (never `Send`: it holds raw
/// pointers), closed on drop.
pub(super) struct ReadConn {
    db: NonNull<sys::sqlite3>,
}

/// A column's value as stored, borrowed from the statement until its next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value<'s> {
    Null,
    Integer(i64),
    Text(&'s [u8]),
    /// A REAL or a BLOB: never a value of the columns read here.
    Other,
}

impl ReadConn {
    /// Opens `path` (which the store has open, in WAL mode) with the default VFS, as sqlx
    /// and the watch connection (`fresh.rs`) do, refusing every write on it.
    pub(super) fn open(path: &Path, busy_timeout_ms: c_int) -> StoreResult<ReadConn> {
        let name = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| StoreError::Database("the database path has a NUL byte".into()))?;
        let flags =
            sys::SQLITE_OPEN_READWRITE | sys::SQLITE_OPEN_NOMUTEX | sys::SQLITE_OPEN_PRIVATECACHE;
        let mut db: *mut sys::sqlite3 = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `db` is a valid
        // out-pointer; a null VFS name selects the default VFS (one instance of the library
        // in the process, so one lock table per inode with sqlx's connections).
        let rc = unsafe { sys::sqlite3_open_v2(name.as_ptr(), &mut db, flags, ptr::null()) };
        let Some(db) = NonNull::new(db) else {
            return Err(StoreError::Database(format!(
                "sqlite3_open_v2 failed ({rc})"
            )));
        };
        // From here `Drop` closes the handle, on every path.
        let conn = ReadConn { db };
        if rc != sys::SQLITE_OK {
            return Err(conn.error(rc));
        }
        // SAFETY: `db` is open and used by this thread alone.
        unsafe { sys::sqlite3_busy_timeout(conn.db.as_ptr(), busy_timeout_ms) };
        conn.exec(c"PRAGMA query_only = 1")?;
        Ok(conn)
    }

    /// Runs statements that return no rows (`BEGIN`, `COMMIT`).
    pub(super) fn exec(&self, sql: &CStr) -> StoreResult<()> {
        // SAFETY: `db` is open and used by this thread alone; `sql` is NUL-terminated; no
        // callback and no error-message out-pointer.
        let rc = unsafe {
            sys::sqlite3_exec(
                self.db.as_ptr(),
                sql.as_ptr(),
                None,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if rc == sys::SQLITE_OK {
            Ok(())
        } else {
            Err(self.error(rc))
        }
    }

    /// Prepares one statement.
    pub(super) fn prepare(&self, sql: &str) -> StoreResult<Stmt<'_>> {
        let len = c_int::try_from(sql.len())
            .map_err(|_| StoreError::Database("a statement too long to prepare".into()))?;
        let mut stmt: *mut sys::sqlite3_stmt = ptr::null_mut();
        // SAFETY: `sql` is valid for `len` bytes (no NUL needed with an explicit length);
        // `stmt` is a valid out-pointer; the tail pointer is not wanted.
        let rc = unsafe {
            sys::sqlite3_prepare_v2(
                self.db.as_ptr(),
                sql.as_ptr().cast::<c_char>(),
                len,
                &mut stmt,
                ptr::null_mut(),
            )
        };
        match NonNull::new(stmt) {
            Some(stmt) if rc == sys::SQLITE_OK => Ok(Stmt { conn: self, stmt }),
            Some(stmt) => {
                // SAFETY: a statement prepared on this connection, finalised once.
                unsafe { sys::sqlite3_finalize(stmt.as_ptr()) };
                Err(self.error(rc))
            }
            None if rc == sys::SQLITE_OK => Err(StoreError::Database("an empty statement".into())),
            None => Err(self.error(rc)),
        }
    }

    /// The store's error for a failed call: [`StoreError::Busy`] for a lock held too long,
    /// else the library's message.
    fn error(&self, rc: c_int) -> StoreError {
        if rc & 0xff == sys::SQLITE_BUSY {
            return StoreError::Busy;
        }
        // SAFETY: `db` is a live handle (even after a failed open); the message is a
        // NUL-terminated string SQLite owns, copied before any other call.
        let message = unsafe { CStr::from_ptr(sys::sqlite3_errmsg(self.db.as_ptr())) };
        StoreError::Database(format!(
            "reading the database failed: {}",
            message.to_string_lossy()
        ))
    }
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        // SAFETY: every statement borrows the connection, so all were finalised before it
        // drops; the handle is closed once and never used again.
        unsafe { sys::sqlite3_close(self.db.as_ptr()) };
    }
}

/// A prepared statement of a [`ReadConn`], finalised on drop.
pub(super) struct Stmt<'c> {
    conn: &'c ReadConn,
    stmt: NonNull<sys::sqlite3_stmt>,
}

impl Stmt<'_> {
    /// How many parameters the statement has.
    pub(super) fn parameters(&self) -> c_int {
        // SAFETY: a live statement used by this thread alone.
        unsafe { sys::sqlite3_bind_parameter_count(self.stmt.as_ptr()) }
    }

    /// Binds parameter `index` (from 1) to an integer.
    pub(super) fn bind_i64(&mut self, index: c_int, value: i64) -> StoreResult<()> {
        // SAFETY: a live statement used by this thread alone, not stepping.
        let rc = unsafe { sys::sqlite3_bind_int64(self.stmt.as_ptr(), index, value) };
        self.check(rc)
    }

    /// Binds parameter `index` (from 1) to a text, which SQLite copies.
    pub(super) fn bind_text(&mut self, index: c_int, value: &str) -> StoreResult<()> {
        let len = c_int::try_from(value.len())
            .map_err(|_| StoreError::Database("a parameter too long to bind".into()))?;
        // SAFETY: a live statement; `value` is valid for `len` bytes through the call, and
        // SQLITE_TRANSIENT makes SQLite copy it before returning.
        let rc = unsafe {
            sys::sqlite3_bind_text(
                self.stmt.as_ptr(),
                index,
                value.as_ptr().cast::<c_char>(),
                len,
                sys::SQLITE_TRANSIENT(),
            )
        };
        self.check(rc)
    }

    /// Steps to the next row: `true` while there is one (its columns readable until the
    /// next step, which the `&mut self` borrow enforces), `false` at the end.
    pub(super) fn step(&mut self) -> StoreResult<bool> {
        // SAFETY: a live statement used by this thread alone.
        match unsafe { sys::sqlite3_step(self.stmt.as_ptr()) } {
            sys::SQLITE_ROW => Ok(true),
            sys::SQLITE_DONE => Ok(false),
            rc => Err(self.conn.error(rc)),
        }
    }

    /// Column `index` (from 0) of the current row.
    pub(super) fn value(&self, index: c_int) -> Value<'_> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: called only between a step that returned a row and the next step (every
        // caller holds `&self`, and `step` needs `&mut self`); the type is read before the
        // value, so no conversion changes it; a text's pointer and length come from the
        // same column, `sqlite3_column_bytes` after `sqlite3_column_text` as SQLite
        // requires, and stay valid until the next step, which the borrow outlives not.
        unsafe {
            match sys::sqlite3_column_type(stmt, index) {
                sys::SQLITE_NULL => Value::Null,
                sys::SQLITE_INTEGER => Value::Integer(sys::sqlite3_column_int64(stmt, index)),
                sys::SQLITE_TEXT => {
                    let text = sys::sqlite3_column_text(stmt, index);
                    let len = sys::sqlite3_column_bytes(stmt, index);
                    match usize::try_from(len) {
                        Ok(len) if !text.is_null() => {
                            Value::Text(std::slice::from_raw_parts(text, len))
                        }
                        _ => Value::Text(&[]),
                    }
                }
                _ => Value::Other,
            }
        }
    }

    fn check(&self, rc: c_int) -> StoreResult<()> {
        if rc == sys::SQLITE_OK {
            Ok(())
        } else {
            Err(self.conn.error(rc))
        }
    }
}

impl Drop for Stmt<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement is live, owned by `self` alone, and finalised once.
        unsafe { sys::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}
