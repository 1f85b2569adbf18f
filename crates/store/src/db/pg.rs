//! What only PostgreSQL has: the per-host server claim (a session advisory lock on a
//! connection of its own).

use std::path::PathBuf;

use sqlx::{Connection, PgConnection};

use super::backend::HOST_LOCK_CLASS;
use crate::error::{StoreError, StoreResult};

/// Takes the session advisory lock `(HOST_LOCK_CLASS, hashtext(host))` on a connection of
/// its own, without waiting: held while the connection lives, released by PostgreSQL when
/// the session ends, however the process ends. Another server holding it is
/// [`StoreError::AlreadyServed`], with its backend's pid.
pub(super) async fn claim_host(url: &str, host: &str, shown: PathBuf) -> StoreResult<PgConnection> {
    let mut conn = PgConnection::connect(url).await?;
    let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
        .bind(HOST_LOCK_CLASS)
        .bind(host)
        .fetch_one(&mut conn)
        .await?;
    if got {
        let _ = sqlx::query("SELECT set_config('application_name', $1, false)")
            .bind(format!("supervise-server {host}"))
            .execute(&mut conn)
            .await;
        return Ok(conn);
    }
    let holder: Option<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int::oid \
         AND objid = hashtext($2)::oid AND objsubid = 2 AND granted LIMIT 1",
    )
    .bind(HOST_LOCK_CLASS)
    .bind(host)
    .fetch_optional(&mut conn)
    .await
    .unwrap_or(None);
    let _ = conn.close().await;
    Err(StoreError::AlreadyServed {
        path: PathBuf::from(format!("{} (host {host})", shown.display())),
        pid: holder.map(|p| p as u32),
    })
}
