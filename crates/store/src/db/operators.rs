//! Console operators: adding one (with its first sign-in link), more links, its API token,
//! listing, and removing one (which ends its sessions, token and unspent links at once).
//! Only an admin of every bottle manages operators, so no admin hands out more than it
//! holds; the host's CLI is one ([`Actor::cli`]).

use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::rows::{self, OPERATOR_COLUMNS, OperatorRow};
use super::secrets::{SIGN_IN_LINK_TTL, TOKEN_PREFIX, hash, new_secret};
use super::trail::{NewEvent, actor_of, record};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, EventKind, Operator, Role, Secret, SignInLink, Timestamp};

/// Checks an operator name: 1-64 characters of ASCII letters, digits, `.`, `_`, `@` and
/// `-`, starting with a letter or digit (it appears in URLs, cookies and audit lines).
fn validate_name(name: &str) -> StoreResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "operator".into(),
            message: format!(
                "{name:?} must be 1-64 characters of letters, digits, '.', '_', '@' and '-', \
                 starting with a letter or digit"
            ),
        })
    }
}

/// Checks a bottle glob: a slug's characters plus `*` and `?`.
fn validate_glob(glob: &str) -> StoreResult<()> {
    let ok = !glob.is_empty()
        && glob.len() <= 63
        && glob.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'*' | b'?')
        });
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "bottles".into(),
            message: format!(
                "{glob:?} must be 1-63 characters of a-z, 0-9, '-', and the wildcards '*' and '?'"
            ),
        })
    }
}

/// The live operator named `name`, with its row id.
async fn live_operator(
    conn: &mut AnyConnection,
    name: &str,
) -> StoreResult<Option<(i64, Operator)>> {
    let row: Option<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{OPERATOR_COLUMNS} WHERE o.name = $1 AND o.removed_at IS NULL"
    )))
    .bind(name)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| {
        let id = r.id;
        Operator::try_from(r).map(|o| (id, o))
    })
    .transpose()
}

/// The operator with this row id (live or not), for a session or token already checked.
pub(super) async fn operator_by_id(conn: &mut AnyConnection, id: i64) -> StoreResult<Operator> {
    let row: OperatorRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{OPERATOR_COLUMNS} WHERE o.id = $1"
    )))
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    Operator::try_from(row)
}

/// Records a fresh sign-in link for operator `id`, valid for [`SIGN_IN_LINK_TTL`].
async fn insert_link(
    conn: &mut AnyConnection,
    id: i64,
    name: &str,
    now: &Timestamp,
) -> StoreResult<SignInLink> {
    let secret = new_secret("")?;
    let expires_at = now.plus(SIGN_IN_LINK_TTL);
    sqlx::query(
        "INSERT INTO sign_in_links (hash, operator_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(hash(secret.expose()))
    .bind(id)
    .bind(now.as_str())
    .bind(expires_at.as_str())
    .execute(&mut *conn)
    .await?;
    Ok(SignInLink {
        operator: name.to_string(),
        secret,
        expires_at,
    })
}

impl Store {
    /// Adds an operator with a role and bottle globs (empty: every bottle) and returns its
    /// first sign-in link. Records `operator-added`. Refused when a live operator has the
    /// name, and ([`StoreError::Forbidden`]) unless `by` manages operators.
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn add_operator(
        &self,
        name: &str,
        role: Role,
        bottles: &[String],
        by: &Actor,
    ) -> StoreResult<(Operator, SignInLink)> {
        validate_name(name)?;
        bottles.iter().try_for_each(|g| validate_glob(g))?;
        if !by.manages_operators() {
            return Err(StoreError::forbidden(by, "manage operators"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        if live_operator(w.conn(), name).await?.is_some() {
            return Err(StoreError::OperatorExists(name.into()));
        }
        let actor = actor_of(by);
        let globs = serde_json::to_string(bottles).expect("strings serialise");
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO operators (name, role, bottles, created_at, created_by) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(name)
        .bind(role.as_str())
        .bind(&globs)
        .bind(now.as_str())
        .bind(&actor)
        .fetch_one(w.conn())
        .await?;
        let link = insert_link(w.conn(), id, name, &now).await?;
        let note = match bottles {
            [] => format!("{name} as {role}"),
            globs => format!("{name} as {role} of {}", globs.join(", ")),
        };
        record(
            w.conn(),
            &now,
            NewEvent {
                note: Some(&note),
                via: Some(by.via),
                ..NewEvent::new(EventKind::OperatorAdded, &actor)
            },
        )
        .await?;
        let operator = operator_by_id(w.conn(), id).await?;
        w.commit().await?;
        tracing::info!(added = name, %role, "operator added");
        Ok((operator, link))
    }

    /// A fresh sign-in link for a live operator. Older unspent links stay valid until they
    /// expire.
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn operator_link(&self, name: &str, by: &Actor) -> StoreResult<SignInLink> {
        if !by.manages_operators() {
            return Err(StoreError::forbidden(by, "manage operators"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let (id, _) = live_operator(w.conn(), name)
            .await?
            .ok_or_else(|| StoreError::OperatorNotFound(name.into()))?;
        let link = insert_link(w.conn(), id, name, &now).await?;
        w.commit().await?;
        Ok(link)
    }

    /// A fresh API token (`sv_...`) for a live operator; the old one stops working at once.
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn operator_token(&self, name: &str, by: &Actor) -> StoreResult<Secret> {
        if !by.manages_operators() {
            return Err(StoreError::forbidden(by, "manage operators"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let (id, _) = live_operator(w.conn(), name)
            .await?
            .ok_or_else(|| StoreError::OperatorNotFound(name.into()))?;
        sqlx::query(
            "UPDATE api_tokens SET ended_at = $1 WHERE operator_id = $2 AND ended_at IS NULL",
        )
        .bind(now.as_str())
        .bind(id)
        .execute(w.conn())
        .await?;
        let token = new_secret(TOKEN_PREFIX)?;
        sqlx::query("INSERT INTO api_tokens (hash, operator_id, created_at) VALUES ($1, $2, $3)")
            .bind(hash(token.expose()))
            .bind(id)
            .bind(now.as_str())
            .execute(w.conn())
            .await?;
        w.commit().await?;
        tracing::info!(token_for = name, "operator token issued");
        Ok(token)
    }

    /// Live operators, by name.
    pub async fn list_operators(&self) -> StoreResult<Vec<Operator>> {
        let rows: Vec<OperatorRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{OPERATOR_COLUMNS} WHERE o.removed_at IS NULL ORDER BY o.name"
        )))
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The live operator with this name, if any.
    pub async fn operator(&self, name: &str) -> StoreResult<Option<Operator>> {
        let mut conn = self.inner.pool.acquire().await?;
        Ok(live_operator(&mut conn, name).await?.map(|(_, o)| o))
    }

    /// Removes an operator: its sessions and token end and its unspent links are deleted,
    /// in the same transaction, so nothing of it works a moment later. Records
    /// `operator-removed`.
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn remove_operator(&self, name: &str, by: &Actor) -> StoreResult<Operator> {
        if !by.manages_operators() {
            return Err(StoreError::forbidden(by, "manage operators"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let (id, operator) = live_operator(w.conn(), name)
            .await?
            .ok_or_else(|| StoreError::OperatorNotFound(name.into()))?;
        sqlx::query("UPDATE operators SET removed_at = $1 WHERE id = $2")
            .bind(now.as_str())
            .bind(id)
            .execute(w.conn())
            .await?;
        sqlx::query(
            "UPDATE sessions SET ended_at = $1 WHERE operator_id = $2 AND ended_at IS NULL",
        )
        .bind(now.as_str())
        .bind(id)
        .execute(w.conn())
        .await?;
        sqlx::query(
            "UPDATE api_tokens SET ended_at = $1 WHERE operator_id = $2 AND ended_at IS NULL",
        )
        .bind(now.as_str())
        .bind(id)
        .execute(w.conn())
        .await?;
        sqlx::query("DELETE FROM sign_in_links WHERE operator_id = $1 AND spent_at IS NULL")
            .bind(id)
            .execute(w.conn())
            .await?;
        let actor = actor_of(by);
        record(
            w.conn(),
            &now,
            NewEvent {
                note: Some(name),
                via: Some(by.via),
                ..NewEvent::new(EventKind::OperatorRemoved, &actor)
            },
        )
        .await?;
        w.commit().await?;
        tracing::info!(removed = name, "operator removed");
        Ok(operator)
    }
}
