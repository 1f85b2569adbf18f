//! The bottle registry: adding, registering at server start, removing (which withdraws the
//! bottle's undecided proposals and ends its grants), and looking bottles up.

use std::net::IpAddr;

use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::rows::{self, BOTTLE_COLUMNS, BottleRow};
use super::trail::{NewEvent, SYSTEM, actor_of, record};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, Bottle, BottleId, EventKind, Kind, Registered, Timestamp, Via};

/// Checks a bottle slug: `[a-z0-9][a-z0-9-]{0,62}`.
fn validate_slug(slug: &str) -> StoreResult<()> {
    let ok = !slug.is_empty()
        && slug.len() <= 63
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "slug".into(),
            message: format!(
                "{slug:?} must be 1-63 characters of a-z, 0-9 and '-', not starting with '-'"
            ),
        })
    }
}

impl Store {
    /// Adds a bottle. Refused when the slug or the address is already live, and
    /// ([`StoreError::Forbidden`]) unless `by` is an admin whose scope covers the slug.
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn add_bottle(&self, slug: &str, ip: IpAddr, by: &Actor) -> StoreResult<Bottle> {
        validate_slug(slug)?;
        if !by.is_admin() || !by.sees(slug) {
            return Err(StoreError::forbidden(by, "add bottles"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        if live_bottle_by_slug(w.conn(), &self.inner.host, slug)
            .await?
            .is_some()
        {
            return Err(StoreError::BottleExists(slug.into()));
        }
        if let Some(other) = live_bottle_by_ip(w.conn(), &self.inner.host, ip).await? {
            return Err(StoreError::IpTaken {
                ip: ip.to_string(),
                slug: other.slug,
            });
        }
        let actor = actor_of(by);
        let bottle = insert_bottle(
            w.conn(),
            &self.inner.host,
            slug,
            ip,
            &now,
            &actor,
            Some(by.via),
        )
        .await?;
        w.commit().await?;
        tracing::info!(bottle = slug, %ip, "bottle added");
        Ok(bottle)
    }

    /// Registers a bottle at server start: adds it, or moves an existing slug to `ip`.
    /// Refused when `ip` belongs to another live bottle.
    #[instrument(skip(self), err)]
    pub async fn register_bottle(
        &self,
        slug: &str,
        ip: IpAddr,
    ) -> StoreResult<(Bottle, Registered)> {
        validate_slug(slug)?;
        let mut w = self.write().await?;
        let now = Timestamp::now();
        if let Some(other) = live_bottle_by_ip(w.conn(), &self.inner.host, ip).await?
            && other.slug != slug
        {
            return Err(StoreError::IpTaken {
                ip: ip.to_string(),
                slug: other.slug,
            });
        }
        let result = match live_bottle_by_slug(w.conn(), &self.inner.host, slug).await? {
            Some(b) if b.ip == ip => (b, Registered::Unchanged),
            Some(mut b) => {
                sqlx::query("UPDATE bottles SET ip = $1 WHERE id = $2")
                    .bind(ip.to_string())
                    .bind(b.id.get())
                    .execute(w.conn())
                    .await?;
                let note = format!("{} -> {ip}", b.ip);
                record(
                    w.conn(),
                    &now,
                    NewEvent {
                        bottle_id: Some(b.id),
                        note: Some(&note),
                        ..NewEvent::new(EventKind::BottleUpdated, SYSTEM)
                    },
                )
                .await?;
                b.ip = ip;
                (b, Registered::Updated)
            }
            None => (
                insert_bottle(w.conn(), &self.inner.host, slug, ip, &now, SYSTEM, None).await?,
                Registered::Added,
            ),
        };
        w.commit().await?;
        Ok(result)
    }

    /// Removes a bottle: withdraws its undecided proposals and ends its grants. The slug and
    /// address are free again; a bottle added later under either is a new bottle. `by` must
    /// be an admin ([`StoreError::Forbidden`]) that sees the bottle (otherwise
    /// [`StoreError::BottleNotFound`]).
    #[instrument(skip(self, by), fields(operator = %by.name, via = %by.via), err)]
    pub async fn remove_bottle(&self, slug: &str, by: &Actor) -> StoreResult<Bottle> {
        if !by.is_admin() {
            return Err(StoreError::forbidden(by, "remove bottles"));
        }
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let actor = actor_of(by);
        let via = Some(by.via);
        let bottle = live_bottle_by_slug(w.conn(), &self.inner.host, slug)
            .await?
            .filter(|b| by.sees(&b.slug))
            .ok_or_else(|| StoreError::BottleNotFound(slug.into()))?;
        sqlx::query("UPDATE bottles SET removed_at = $1 WHERE id = $2")
            .bind(now.as_str())
            .bind(bottle.id.get())
            .execute(w.conn())
            .await?;
        let withdrawn: Vec<(String, String, String)> = sqlx::query_as(
            "UPDATE proposals SET status = 'withdrawn', archived_at = $1 \
             WHERE bottle_id = $2 AND status = 'pending' RETURNING id, kind, change",
        )
        .bind(now.as_str())
        .bind(bottle.id.get())
        .fetch_all(w.conn())
        .await?;
        for (id, kind, change) in &withdrawn {
            let kind: Kind = rows::word("proposals", id, "kind", kind)?;
            record(
                w.conn(),
                &now,
                NewEvent {
                    bottle_id: Some(bottle.id),
                    proposal_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    note: Some("bottle removed"),
                    via,
                    ..NewEvent::new(EventKind::Withdrawn, &actor)
                },
            )
            .await?;
        }
        let ended: Vec<(String, String, String, String)> = sqlx::query_as(
            "UPDATE grants SET ended_at = $1, end_reason = 'bottle-removed', ended_by = $2 \
             WHERE bottle_id = $3 AND ended_at IS NULL RETURNING id, proposal_id, kind, change",
        )
        .bind(now.as_str())
        .bind(&actor)
        .bind(bottle.id.get())
        .fetch_all(w.conn())
        .await?;
        for (id, proposal_id, kind, change) in &ended {
            let kind: Kind = rows::word("grants", id, "kind", kind)?;
            record(
                w.conn(),
                &now,
                NewEvent {
                    bottle_id: Some(bottle.id),
                    proposal_id: Some(proposal_id),
                    grant_id: Some(id),
                    kind: Some(kind),
                    change: Some(change),
                    note: Some("bottle removed"),
                    via,
                    ..NewEvent::new(EventKind::GrantRevoked, &actor)
                },
            )
            .await?;
        }
        let note = bottle.ip.to_string();
        record(
            w.conn(),
            &now,
            NewEvent {
                bottle_id: Some(bottle.id),
                note: Some(&note),
                via,
                ..NewEvent::new(EventKind::BottleRemoved, &actor)
            },
        )
        .await?;
        w.commit().await?;
        tracing::info!(
            bottle = slug,
            withdrawn = withdrawn.len(),
            grants_ended = ended.len(),
            "bottle removed"
        );
        Ok(bottle)
    }

    /// This host's live bottles, by slug (the console's bottles page).
    pub async fn list_bottles(&self) -> StoreResult<Vec<Bottle>> {
        let rows: Vec<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{BOTTLE_COLUMNS} WHERE host = $1 AND removed_at IS NULL ORDER BY slug"
        )))
        .bind(&self.inner.host)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The live bottles of `host`, or of every host (`None`, by host then slug): what
    /// `supervise bottle list [--host NAME]` shows.
    pub async fn list_bottles_on(&self, host: Option<&str>) -> StoreResult<Vec<Bottle>> {
        let rows: Vec<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{BOTTLE_COLUMNS} WHERE ($1 IS NULL OR host = $1) AND removed_at IS NULL \
             ORDER BY host, slug"
        )))
        .bind(host)
        .fetch_all(&self.inner.pool)
        .await?;
        rows::all(rows)
    }

    /// The live bottle an operator names, on any host: `HOST/SLUG`, or `SLUG` when one host
    /// has a live bottle by that slug ([`StoreError::AmbiguousBottle`] when several do).
    pub async fn named_bottle(&self, name: &str) -> StoreResult<Bottle> {
        let mut conn = self.inner.pool.acquire().await?;
        live_bottle_named(&mut conn, name)
            .await?
            .ok_or_else(|| StoreError::BottleNotFound(name.into()))
    }

    /// The hosts that have (or had) a bottle of this slug, in order: more than one, and the
    /// slug alone does not name a bottle ([`crate::model::bottle_name`]).
    pub async fn slug_hosts(&self, slug: &str) -> StoreResult<Vec<String>> {
        Ok(
            sqlx::query_scalar("SELECT DISTINCT host FROM bottles WHERE slug = $1 ORDER BY host")
                .bind(slug)
                .fetch_all(&self.inner.pool)
                .await?,
        )
    }

    /// The live bottle registered for a source address, if any.
    pub async fn bottle_for_ip(&self, ip: IpAddr) -> StoreResult<Option<Bottle>> {
        let mut conn = self.inner.pool.acquire().await?;
        live_bottle_by_ip(&mut conn, &self.inner.host, ip).await
    }

    /// The live bottle with this slug, if any.
    pub async fn bottle(&self, slug: &str) -> StoreResult<Option<Bottle>> {
        let mut conn = self.inner.pool.acquire().await?;
        live_bottle_by_slug(&mut conn, &self.inner.host, slug).await
    }

    /// A listing's filter, checked: `bottle` is `SLUG` or `HOST/SLUG` (the host part wins
    /// over `host`). Refuses a slug no bottle of the host (or of any host), live or removed,
    /// ever had, and a host no bottle was ever registered on. Returns (host, slug).
    pub(super) async fn bottle_filter<'a>(
        &self,
        host: Option<&'a str>,
        bottle: Option<&'a str>,
    ) -> StoreResult<(Option<&'a str>, Option<&'a str>)> {
        let (host, slug) = match bottle.and_then(|b| b.split_once('/')) {
            Some((h, s)) => (Some(h), Some(s)),
            None => (host, bottle),
        };
        let known: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM bottles WHERE ($1 IS NULL OR slug = $1) \
             AND ($2 IS NULL OR host = $2) LIMIT 1",
        )
        .bind(slug)
        .bind(host)
        .fetch_optional(&self.inner.pool)
        .await?;
        match (known, slug, host) {
            (Some(_), _, _) | (None, None, None) => Ok((host, slug)),
            (None, Some(_), _) => Err(StoreError::BottleNotFound(bottle.unwrap_or("").into())),
            (None, None, Some(h)) => Err(StoreError::Invalid {
                field: "host".into(),
                message: format!("no bottle was ever registered on host {h:?}"),
            }),
        }
    }
}

/// Refuses a caller whose bottle generation is no longer live: one primary-key read, made
/// inside the caller's own transaction, so an agent-side method never serves a removed
/// generation (whatever a cache in front of it still believes). Returns the live slug.
pub(super) async fn live_generation(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
) -> StoreResult<String> {
    live_names(conn, bottle_id).await.map(|(_, slug)| slug)
}

/// [`live_generation`], returning the bottle's (host, slug).
pub(super) async fn live_names(
    conn: &mut AnyConnection,
    bottle_id: BottleId,
) -> StoreResult<(String, String)> {
    // The live flag as 1/0: the same integer on both backends (sqlx's Any driver reads no
    // SQLite integer as a bool).
    let row: Option<(String, String, i32)> = sqlx::query_as(
        "SELECT host, slug, CASE WHEN removed_at IS NULL THEN 1 ELSE 0 END \
         FROM bottles WHERE id = $1",
    )
    .bind(bottle_id.get())
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        Some((host, slug, 1)) => Ok((host, slug)),
        Some(_) => Err(StoreError::BottleGone(bottle_id)),
        None => Err(StoreError::BottleNotFound(format!("#{bottle_id}"))),
    }
}

/// The live bottle of `host` with this slug.
pub(super) async fn live_bottle_by_slug(
    conn: &mut AnyConnection,
    host: &str,
    slug: &str,
) -> StoreResult<Option<Bottle>> {
    let row: Option<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{BOTTLE_COLUMNS} WHERE host = $1 AND slug = $2 AND removed_at IS NULL"
    )))
    .bind(host)
    .bind(slug)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(Bottle::try_from).transpose()
}

/// The live bottle `name` names on any host ([`Store::named_bottle`]); `None` when none.
pub(super) async fn live_bottle_named(
    conn: &mut AnyConnection,
    name: &str,
) -> StoreResult<Option<Bottle>> {
    if let Some((host, slug)) = name.split_once('/') {
        return live_bottle_by_slug(conn, host, slug).await;
    }
    let rows: Vec<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{BOTTLE_COLUMNS} WHERE slug = $1 AND removed_at IS NULL ORDER BY host"
    )))
    .bind(name)
    .fetch_all(&mut *conn)
    .await?;
    let mut found: Vec<Bottle> = rows::all(rows)?;
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => Err(StoreError::AmbiguousBottle {
            slug: name.into(),
            hosts: found
                .iter()
                .map(|b| b.host.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The live bottle of `host` at this address: a server attributes only to its own host's.
pub(super) async fn live_bottle_by_ip(
    conn: &mut AnyConnection,
    host: &str,
    ip: IpAddr,
) -> StoreResult<Option<Bottle>> {
    let row: Option<BottleRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{BOTTLE_COLUMNS} WHERE host = $1 AND ip = $2 AND removed_at IS NULL"
    )))
    .bind(host)
    .bind(canonical_ip(ip).to_string())
    .fetch_optional(&mut *conn)
    .await?;
    row.map(Bottle::try_from).transpose()
}

/// IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`, as a dual-stack socket reports them)
/// are the IPv4 address they carry.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

async fn insert_bottle(
    conn: &mut AnyConnection,
    host: &str,
    slug: &str,
    ip: IpAddr,
    now: &Timestamp,
    actor: &str,
    via: Option<Via>,
) -> StoreResult<Bottle> {
    let ip = canonical_ip(ip);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO bottles (host, slug, ip, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(host)
    .bind(slug)
    .bind(ip.to_string())
    .bind(now.as_str())
    .fetch_one(&mut *conn)
    .await?;
    let id = BottleId::from_row(id);
    let note = ip.to_string();
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(id),
            note: Some(&note),
            via,
            ..NewEvent::new(EventKind::BottleAdded, actor)
        },
    )
    .await?;
    Ok(Bottle {
        id,
        host: host.into(),
        slug: slug.into(),
        ip,
        created_at: now.clone(),
    })
}
