//! `Store::backup`: a consistent copy of a SQLite database while servers write to it.
//! `VACUUM INTO` runs in one read transaction on a pool connection, so the copy is the
//! database as of one commit (WAL readers never block writers nor wait for them), compacted.
//! The copy is created first, empty, without following a link and never over an existing
//! file, mode 0600 plus the database's group bits (0660 in a shared directory gives 0660);
//! it is synced before the call returns. PostgreSQL is copied with `pg_dump`.

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::Store;
use crate::Backend;
use crate::error::{StoreError, StoreResult};

/// `O_NOFOLLOW`: a link planted at the copy's path is refused, not written through.
const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

impl Store {
    /// Copies the database into the new file `dest` and returns the copy's size in bytes.
    /// Refused on PostgreSQL ([`StoreError::BackupPostgres`]) and when `dest` exists
    /// ([`StoreError::BackupExists`]); on any failure the partial copy is removed.
    pub async fn backup(&self, dest: &Path) -> StoreResult<u64> {
        if self.backend() == Backend::Postgres {
            return Err(StoreError::BackupPostgres);
        }
        let group_bits = std::fs::metadata(self.path())
            .map(|m| m.mode() & 0o060)
            .unwrap_or(0);
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600 | group_bits)
            .custom_flags(NOFOLLOW)
            .open(dest);
        match created {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::BackupExists(dest.to_path_buf()));
            }
            Err(e) => {
                return Err(StoreError::Database(format!(
                    "cannot create the backup file {}: {e}",
                    dest.display()
                )));
            }
        }
        let result = self.vacuum_into(dest).await;
        match result {
            Ok(size) => Ok(size),
            Err(e) => {
                let _ = std::fs::remove_file(dest);
                Err(e)
            }
        }
    }

    async fn vacuum_into(&self, dest: &Path) -> StoreResult<u64> {
        let target = dest.to_str().ok_or_else(|| StoreError::Invalid {
            field: "file".into(),
            message: "the backup path must be valid UTF-8".into(),
        })?;
        sqlx::query("VACUUM INTO ?")
            .bind(target.to_owned())
            .execute(&self.inner.pool)
            .await?;
        let file = std::fs::File::open(dest)
            .and_then(|f| f.sync_all().map(|()| f))
            .map_err(|e| StoreError::Database(format!("syncing {}: {e}", dest.display())))?;
        let size = file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| StoreError::Database(e.to_string()))?;
        Ok(size)
    }
}
