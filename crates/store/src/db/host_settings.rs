//! What a host's server records of its own limits for the other processes on that host
//! (`host_settings`): its `--reject-cooldown`, written at its start ([`Store::record_limits`])
//! and read by a store opened with [`StoreOptions::server_limits`](super::StoreOptions)
//! inside each filing transaction, so the proxy's helpers and the git gate hold back
//! re-filing for as long as the server does, and follow a server restarted with another
//! value without being restarted themselves.

use std::time::Duration;

use sqlx::AnyConnection;

use super::{ProposalLimits, Store};
use crate::error::{StoreError, StoreResult};
use crate::model::Timestamp;

impl Store {
    /// Records this store's reject cooldown as the one its host's server applies (off as
    /// 0), replacing the host's earlier record. The server calls it at start.
    pub async fn record_limits(&self) -> StoreResult<()> {
        let ms = self
            .inner
            .limits
            .reject_cooldown
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut w = self.write().await?;
        sqlx::query(
            "INSERT INTO host_settings (host, reject_cooldown_ms, recorded_at) \
             VALUES ($1, $2, $3) ON CONFLICT (host) DO UPDATE SET \
             reject_cooldown_ms = excluded.reject_cooldown_ms, recorded_at = excluded.recorded_at",
        )
        .bind(self.inner.host.clone())
        .bind(ms)
        .bind(Timestamp::now().as_str().to_owned())
        .execute(w.conn())
        .await?;
        w.commit().await
    }

    /// The reject cooldown this host's server recorded: `None` when no server of this host
    /// has recorded one, `Some(None)` when it runs with the cooldown off.
    pub async fn recorded_reject_cooldown(&self) -> StoreResult<Option<Option<Duration>>> {
        let mut conn = self.inner.pool.acquire().await?;
        recorded(&mut conn, &self.inner.host).await
    }

    /// The limits a filing applies, read inside its transaction: this store's own, with
    /// the reject cooldown of this host's server when the store follows it and one is
    /// recorded.
    pub(super) async fn limits_in(&self, conn: &mut AnyConnection) -> StoreResult<ProposalLimits> {
        let mut limits = self.inner.limits;
        if self.inner.options.server_limits
            && let Some(cooldown) = recorded(conn, &self.inner.host).await?
        {
            limits.reject_cooldown = cooldown;
        }
        Ok(limits)
    }
}

async fn recorded(conn: &mut AnyConnection, host: &str) -> StoreResult<Option<Option<Duration>>> {
    let ms: Option<i64> =
        sqlx::query_scalar("SELECT reject_cooldown_ms FROM host_settings WHERE host = $1")
            .bind(host.to_owned())
            .fetch_optional(conn)
            .await?;
    ms.map(|ms| {
        let ms = u64::try_from(ms)
            .map_err(|_| StoreError::Database(format!("host_settings: cooldown {ms} ms")))?;
        Ok((ms > 0).then(|| Duration::from_millis(ms)))
    })
    .transpose()
}
