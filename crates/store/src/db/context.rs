//! What an operator sees beside an egress proposal before deciding it: the bottle's grants
//! in force, the last decisions on the same destination for any bottle the operator may
//! see, and the proxy's recorded refusals of it (written here, coalesced like `grant-used`).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tracing::instrument;

use super::Store;
use super::rows::{self, EventRow, stored_time};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, Bottle, Event, Grant, Kind, Proposal, Timestamp};

/// At most one refusal is recorded per bottle and destination in this interval.
pub const REFUSAL_EVERY: Duration = Duration::from_secs(60);

/// How many decisions on the same destination [`Store::egress_context`] returns.
pub const CONTEXT_DECISIONS: usize = 10;

/// Decision events read per destination before the operator's scope filters them.
const DECISIONS_SCANNED: i64 = 500;

/// The proxy's refusals of one bottle and destination: how many were recorded (at most
/// one a minute, [`REFUSAL_EVERY`]), the first and the last.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusals {
    pub count: i64,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
}

/// What [`Store::egress_context`] returns for an egress proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct EgressContext {
    /// The destination host (normalised) and port.
    pub host: String,
    pub port: u16,
    /// The bottle's grants in force, oldest first (empty when the bottle was removed).
    pub grants: Vec<Grant>,
    /// The newest decisions (`approved`, `modified`, `rejected`, `grant-revoked`) on the
    /// same host and port, of any bottle the operator sees, newest first, at most
    /// [`CONTEXT_DECISIONS`].
    pub decisions: Vec<Event>,
    /// The proxy's recorded refusals of this bottle and destination, if any.
    pub refusals: Option<Refusals>,
}

/// The host and port of an egress change (443 when the port is absent).
pub fn egress_destination(change: &Value) -> Option<(String, u16)> {
    let host = change.get("host")?.as_str()?.to_string();
    let port = change
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    Some((host, port))
}

impl Store {
    /// The context of egress proposal `id` (id or unique prefix) as `by` may see it: the
    /// proposal, and `None` for a proposal of another kind. A proposal of a bottle out of
    /// `by`'s scope is [`StoreError::ProposalNotFound`], as for [`Store::show_for`].
    #[instrument(skip(self, by), err, level = "debug")]
    pub async fn egress_context(
        &self,
        id: &str,
        by: &Actor,
    ) -> StoreResult<(Proposal, Option<EgressContext>)> {
        let (p, _) = self.show_for(id, by).await?;
        let context = self.context_of(&p, by).await?;
        Ok((p, context))
    }

    /// [`Store::egress_context`] for a proposal already read for `by`.
    pub async fn context_of(&self, p: &Proposal, by: &Actor) -> StoreResult<Option<EgressContext>> {
        if p.kind != Kind::Egress || !by.sees(&p.bottle) {
            return Ok(None);
        }
        let Some((host, port)) = egress_destination(&p.change) else {
            return Ok(None);
        };
        let grants = match self
            .grants_in_force(&format!("{}/{}", p.host, p.bottle))
            .await
        {
            Ok(g) => g,
            Err(StoreError::BottleNotFound(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut tx = self.read().await?;
        // The stored change is compact JSON; the pattern narrows the scan, the exact host
        // and port are compared below.
        let pattern = format!("%\"host\":{}%", Value::from(host.as_str()));
        // A rejection's event names no change: its proposal's is compared.
        let from = "FROM events e LEFT JOIN proposals pr ON pr.id = e.proposal_id \
                    LEFT JOIN bottles b ON b.id = e.bottle_id";
        let filter = format!(
            "WHERE e.kind = 'egress' \
             AND e.event IN ('approved', 'modified', 'rejected', 'grant-revoked') \
             AND COALESCE(e.change, pr.change) LIKE $1 ORDER BY e.seq DESC \
             LIMIT {DECISIONS_SCANNED}"
        );
        let changes: Vec<(i64, Option<String>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT e.seq, COALESCE(e.change, pr.change) {from} {filter}"
        )))
        .bind(&pattern)
        .fetch_all(&mut *tx)
        .await?;
        let same: HashSet<i64> = changes
            .into_iter()
            .filter(|(_, c)| {
                c.as_deref()
                    .and_then(|c| serde_json::from_str::<Value>(c).ok())
                    .and_then(|c| egress_destination(&c))
                    == Some((host.clone(), port))
            })
            .map(|(seq, _)| seq)
            .collect();
        let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT e.seq, e.at, e.event, e.actor, e.via, b.host, b.slug, e.bottle_id, \
             e.proposal_id, e.grant_id, e.kind, e.change, e.note {from} {filter}"
        )))
        .bind(&pattern)
        .fetch_all(&mut *tx)
        .await?;
        let decisions = rows::all::<EventRow, Event>(rows)?
            .into_iter()
            .filter(|e| same.contains(&e.seq) && by.sees_event(e))
            .take(CONTEXT_DECISIONS)
            .collect();
        let row: Option<(i64, String, String)> = sqlx::query_as(
            "SELECT count, first_seen, last_seen FROM egress_refusals \
             WHERE bottle_id = $1 AND host = $2 AND port = $3",
        )
        .bind(p.bottle_id.get())
        .bind(&host)
        .bind(i32::from(port))
        .fetch_optional(&mut *tx)
        .await?;
        drop(tx);
        let refusals = match row {
            Some((count, first, last)) => Some(Refusals {
                count,
                first_seen: stored_time("egress_refusals", &host, "first_seen", first)?,
                last_seen: stored_time("egress_refusals", &host, "last_seen", last)?,
            }),
            None => None,
        };
        Ok(Some(EgressContext {
            host,
            port,
            grants,
            decisions,
            refusals,
        }))
    }

    /// Records that the egress proxy refused `bottle` a connection to `host:port` (host
    /// as the decision normalised it): counted, unless a refusal of the same bottle and
    /// destination was recorded within [`REFUSAL_EVERY`]. Returns whether it wrote. One
    /// write transaction.
    #[instrument(skip(self, bottle), fields(bottle = %bottle.slug), err)]
    pub async fn record_refusal(
        &self,
        bottle: &Bottle,
        host: &str,
        port: u16,
    ) -> StoreResult<bool> {
        let mut w = self.write().await?;
        let last: Option<String> = sqlx::query_scalar(
            "SELECT last_seen FROM egress_refusals \
             WHERE bottle_id = $1 AND host = $2 AND port = $3",
        )
        .bind(bottle.id.get())
        .bind(host)
        .bind(i32::from(port))
        .fetch_optional(w.conn())
        .await?;
        let since = Timestamp::before(REFUSAL_EVERY);
        if last.is_some_and(|at| at.as_str() > since.as_str()) {
            return Ok(false);
        }
        let now = Timestamp::now();
        sqlx::query(
            "INSERT INTO egress_refusals (bottle_id, host, port, count, first_seen, last_seen) \
             VALUES ($1, $2, $3, 1, $4, $4) ON CONFLICT (bottle_id, host, port) \
             DO UPDATE SET count = egress_refusals.count + 1, last_seen = excluded.last_seen",
        )
        .bind(bottle.id.get())
        .bind(host)
        .bind(i32::from(port))
        .bind(now.as_str())
        .execute(w.conn())
        .await?;
        w.commit().await?;
        Ok(true)
    }
}

/// How long [`resolve`] waits for the resolver.
pub const RESOLVE_LIMIT: Duration = Duration::from_secs(1);

/// What a destination's name resolves to from this host, each address with its marks
/// ([`crate::change::address_flags`]), or why it could not be resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    Addresses(Vec<(std::net::IpAddr, Vec<crate::model::Flag>)>),
    Failed(String),
}

/// Resolves `host:port` from this host with the system resolver, waiting at most
/// [`RESOLVE_LIMIT`]. Only on an operator's request: resolving an agent's name sends a
/// query the agent can watch for.
pub async fn resolve(host: &str, port: u16) -> Resolution {
    let lookup = tokio::net::lookup_host((host, port));
    match tokio::time::timeout(RESOLVE_LIMIT, lookup).await {
        Err(_) => Resolution::Failed(format!(
            "no answer within {} second",
            RESOLVE_LIMIT.as_secs()
        )),
        Ok(Err(e)) => Resolution::Failed(e.to_string()),
        Ok(Ok(addrs)) => {
            let mut out: Vec<std::net::IpAddr> = addrs.map(|a| a.ip()).collect();
            out.sort();
            out.dedup();
            Resolution::Addresses(
                out.into_iter()
                    .map(|ip| (ip, crate::change::address_flags(ip)))
                    .collect(),
            )
        }
    }
}
