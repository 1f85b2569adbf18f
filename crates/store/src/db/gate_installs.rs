//! The record of `supervise gate install`: which hook files this host's gates wrote, for
//! `supervise doctor` to check.

use std::path::PathBuf;

use super::Store;
use crate::error::StoreResult;
use crate::model::Timestamp;

/// One hook `gate install` wrote on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateInstall {
    /// The hook file's absolute path (`REPO/hooks/pre-receive`).
    pub hook: PathBuf,
    pub bottle: String,
    pub remote: String,
    pub installed_at: Timestamp,
}

impl Store {
    /// Records that `gate install` wrote `hook` for `bottle` and `remote` on this host
    /// (replacing an earlier record of the same hook).
    pub async fn record_gate_install(
        &self,
        hook: &std::path::Path,
        bottle: &str,
        remote: &str,
    ) -> StoreResult<()> {
        let mut w = self.write().await?;
        let hook = hook.to_string_lossy().into_owned();
        sqlx::query("DELETE FROM gate_installs WHERE host = $1 AND hook = $2")
            .bind(self.inner.host.clone())
            .bind(hook.clone())
            .execute(w.conn())
            .await?;
        sqlx::query(
            "INSERT INTO gate_installs (host, hook, bottle, remote, installed_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(self.inner.host.clone())
        .bind(hook)
        .bind(bottle.to_owned())
        .bind(remote.to_owned())
        .bind(Timestamp::now().as_str().to_owned())
        .execute(w.conn())
        .await?;
        w.commit().await
    }

    /// The hooks `gate install` wrote on this host, by path.
    pub async fn gate_installs(&self) -> StoreResult<Vec<GateInstall>> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT hook, bottle, remote, installed_at FROM gate_installs \
             WHERE host = $1 ORDER BY hook",
        )
        .bind(self.inner.host.clone())
        .fetch_all(&self.inner.pool)
        .await?;
        rows.into_iter()
            .map(|(hook, bottle, remote, at)| {
                Ok(GateInstall {
                    hook: PathBuf::from(hook),
                    bottle,
                    remote,
                    installed_at: at.parse().map_err(|e: crate::model::UnknownName| {
                        crate::error::StoreError::Database(e.to_string())
                    })?,
                })
            })
            .collect()
    }
}
