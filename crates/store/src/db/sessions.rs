//! Signing in to the console and staying signed in: spending a one-time link for a
//! session, looking a session or an API token up, and ending a session. Every secret is
//! 32 bytes from the OS as unpadded base64url, and only its SHA-256 is ever stored.

use std::time::Duration;

use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::operators::operator_by_id;
use super::secrets::{SESSION_IDLE, SESSION_MAX, TOKEN_PREFIX, hash, new_secret};
use super::trail::{NewEvent, actor_operator, record};
use crate::error::{StoreError, StoreResult};
use crate::model::{EventKind, NewSession, Operator, Session, SignInRefusal, Timestamp, Via};

/// A session's (or token's) last use is written at most this often.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// A live session's row: (operator id, csrf, expires_at, last_seen_at).
type SessionRow = (i64, String, String, String);

async fn live_session(
    conn: &mut AnyConnection,
    hashed: &str,
    now: &Timestamp,
) -> StoreResult<Option<SessionRow>> {
    let idle_since = now.minus(SESSION_IDLE);
    Ok(sqlx::query_as(
        "SELECT s.operator_id, s.csrf, s.expires_at, s.last_seen_at FROM sessions s \
         JOIN operators o ON o.id = s.operator_id \
         WHERE s.hash = $1 AND s.ended_at IS NULL AND o.removed_at IS NULL \
         AND s.expires_at > $2 AND s.last_seen_at > $3",
    )
    .bind(hashed)
    .bind(now.as_str())
    .bind(idle_since.as_str())
    .fetch_optional(&mut *conn)
    .await?)
}

/// The operator a sign-in link would sign in at `now`; refused when the link is unknown (or
/// its operator was removed), spent, or expired.
async fn link_usable(conn: &mut AnyConnection, hashed: &str, now: &Timestamp) -> StoreResult<i64> {
    // The live flag as 1/0: the same integer on both backends (sqlx's Any driver reads
    // no SQLite integer as a bool).
    let link: Option<(i64, String, Option<String>, i32)> = sqlx::query_as(
        "SELECT l.operator_id, l.expires_at, l.spent_at, \
         CASE WHEN o.removed_at IS NULL THEN 1 ELSE 0 END \
         FROM sign_in_links l JOIN operators o ON o.id = l.operator_id WHERE l.hash = $1",
    )
    .bind(hashed)
    .fetch_optional(&mut *conn)
    .await?;
    match link {
        None | Some((_, _, _, 0)) => Err(StoreError::SignInRefused(SignInRefusal::Unknown)),
        Some((_, _, Some(_), _)) => Err(StoreError::SignInRefused(SignInRefusal::Spent)),
        Some((_, expires_at, None, _)) if expires_at.as_str() <= now.as_str() => {
            Err(StoreError::SignInRefused(SignInRefusal::Expired))
        }
        Some((id, ..)) => Ok(id),
    }
}

impl Store {
    /// Spends a sign-in link and starts a session, in one transaction: of two sign-ins with
    /// the same link exactly one succeeds. Refused ([`StoreError::SignInRefused`]) when the
    /// link is unknown (or its operator was removed), spent, or expired; a refusal is read
    /// without the write lock, so guessing links slows no writer. Records `signed-in`
    /// (actor `operator:NAME`, via console).
    #[instrument(skip_all, err)]
    pub async fn sign_in(&self, link_secret: &str) -> StoreResult<NewSession> {
        let hashed = hash(link_secret.trim());
        {
            let mut conn = self.inner.pool.acquire().await?;
            link_usable(&mut conn, &hashed, &Timestamp::now()).await?;
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        // Again under the lock: another sign-in may have spent it since.
        let operator_id = link_usable(w.conn(), &hashed, &now).await?;
        sqlx::query("UPDATE sign_in_links SET spent_at = $1 WHERE hash = $2")
            .bind(now.as_str())
            .bind(&hashed)
            .execute(w.conn())
            .await?;
        let secret = new_secret("")?;
        let csrf = new_secret("")?.expose().to_string();
        let expires_at = now.plus(SESSION_MAX);
        sqlx::query(
            "INSERT INTO sessions (hash, operator_id, csrf, created_at, last_seen_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(hash(secret.expose()))
        .bind(operator_id)
        .bind(&csrf)
        .bind(now.as_str())
        .bind(now.as_str())
        .bind(expires_at.as_str())
        .execute(w.conn())
        .await?;
        let operator = operator_by_id(w.conn(), operator_id).await?;
        let actor = actor_operator(&operator.name);
        record(
            w.conn(),
            &now,
            NewEvent {
                via: Some(Via::Console),
                ..NewEvent::new(EventKind::SignedIn, &actor)
            },
        )
        .await?;
        w.commit().await?;
        tracing::info!(operator = %operator.name, "signed in");
        Ok(NewSession {
            operator,
            secret,
            csrf,
            expires_at,
        })
    }

    /// The live session with this cookie value: `None` when unknown, ended, idle longer
    /// than [`SESSION_IDLE`], older than [`SESSION_MAX`], or its operator was removed.
    /// Refreshes the session's last use (a write, at most once a minute per session).
    pub async fn session(&self, secret: &str) -> StoreResult<Option<Session>> {
        let hashed = hash(secret.trim());
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let Some((operator_id, csrf, expires_at, last_seen)) =
            live_session(&mut conn, &hashed, &now).await?
        else {
            return Ok(None);
        };
        let stale = now.minus(TOUCH_EVERY);
        let operator = if last_seen.as_str() <= stale.as_str() {
            drop(conn);
            let mut w = self.write().await?;
            let now = Timestamp::now();
            if live_session(w.conn(), &hashed, &now).await?.is_none() {
                return Ok(None);
            }
            sqlx::query("UPDATE sessions SET last_seen_at = $1 WHERE hash = $2")
                .bind(now.as_str())
                .bind(&hashed)
                .execute(w.conn())
                .await?;
            let operator = operator_by_id(w.conn(), operator_id).await?;
            w.commit().await?;
            operator
        } else {
            operator_by_id(&mut conn, operator_id).await?
        };
        Ok(Some(Session {
            operator,
            csrf,
            expires_at: super::rows::stored_time("sessions", &hashed, "expires_at", expires_at)?,
        }))
    }

    /// Ends a session (signing out). Unknown or already ended: nothing to do.
    #[instrument(skip_all, err)]
    pub async fn sign_out(&self, secret: &str) -> StoreResult<()> {
        let hashed = hash(secret.trim());
        let mut w = self.write().await?;
        let now = Timestamp::now();
        sqlx::query("UPDATE sessions SET ended_at = $1 WHERE hash = $2 AND ended_at IS NULL")
            .bind(now.as_str())
            .bind(&hashed)
            .execute(w.conn())
            .await?;
        w.commit().await
    }

    /// The live operator an API token belongs to (`None`: unknown, replaced, or its
    /// operator removed). Refreshes the token's last use at most once a minute.
    pub async fn token_operator(&self, token: &str) -> StoreResult<Option<Operator>> {
        let token = token.trim();
        if !token.starts_with(TOKEN_PREFIX) {
            return Ok(None);
        }
        let hashed = hash(token);
        const LIVE: &str = "SELECT t.operator_id, t.last_used_at FROM api_tokens t \
             JOIN operators o ON o.id = t.operator_id \
             WHERE t.hash = $1 AND t.ended_at IS NULL AND o.removed_at IS NULL";
        let mut conn = self.inner.pool.acquire().await?;
        let found: Option<(i64, Option<String>)> = sqlx::query_as(LIVE)
            .bind(&hashed)
            .fetch_optional(&mut *conn)
            .await?;
        let Some((operator_id, last_used)) = found else {
            return Ok(None);
        };
        let now = Timestamp::now();
        let stale = now.minus(TOUCH_EVERY);
        if last_used.is_some_and(|at| at.as_str() > stale.as_str()) {
            return Ok(Some(operator_by_id(&mut conn, operator_id).await?));
        }
        drop(conn);
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let still: Option<(i64, Option<String>)> = sqlx::query_as(LIVE)
            .bind(&hashed)
            .fetch_optional(w.conn())
            .await?;
        if still.is_none() {
            return Ok(None);
        }
        sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE hash = $2")
            .bind(now.as_str())
            .bind(&hashed)
            .execute(w.conn())
            .await?;
        let operator = operator_by_id(w.conn(), operator_id).await?;
        w.commit().await?;
        Ok(Some(operator))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_43_base64url_characters_and_differ() {
        let a = new_secret("").unwrap();
        let b = new_secret(TOKEN_PREFIX).unwrap();
        assert_eq!(a.expose().len(), 43);
        assert!(
            a.expose()
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert!(b.expose().starts_with("sv_") && b.expose().len() == 46);
        assert_ne!(a.expose(), &b.expose()[3..]);
        assert_eq!(hash("abc").len(), 64);
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
