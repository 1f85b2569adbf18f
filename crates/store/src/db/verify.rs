//! Checking the audit trail: recomputing the hash chain page by page, the head an auditor
//! keeps, the cross-checks of proposal, decision and grant rows against the events that
//! created and ended them, and the one-time hashing of rows older than the chain.

use std::fmt::Write;

use serde::Serialize;
use sqlx::{AnyConnection, AnyPool};

use super::backend::Backend;
use super::chain::{self, Link};
use super::{Store, trail};
use crate::error::StoreResult;

/// Rows read per page while checking.
const PAGE: i64 = 5000;

/// The columns of an event row the chain covers, then its stored hash.
pub(super) const ROW_COLUMNS: &str =
    "seq, at, event, actor, via, bottle_id, proposal_id, grant_id, kind, change, note, hash";

/// An event row as stored.
pub(super) type RawEvent = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The chain's link of a stored row.
pub(super) fn link_of(prev: &str, r: &RawEvent) -> String {
    chain::link(
        prev,
        &Link {
            at: &r.1,
            event: &r.2,
            actor: &r.3,
            via: r.4.as_deref(),
            bottle_id: r.5,
            proposal_id: r.6.as_deref(),
            grant_id: r.7.as_deref(),
            kind: r.8.as_deref(),
            change: r.9.as_deref(),
            note: r.10.as_deref(),
        },
    )
}

/// Where the chain in the database starts: after the rows the newest `archived-trail`
/// checkpoint took out, or at the genesis.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Checkpoint {
    /// Events before this time were archived.
    pub before: String,
    /// The last archived row's seq and hash: the first row left chains from this hash.
    pub through_seq: i64,
    pub through_hash: String,
    /// How many events, proposals, grants and tasks rows left.
    pub events: u64,
    pub proposals: u64,
    pub grants: u64,
    pub tasks: u64,
    /// The archive file's SHA-256 (lowercase hex), as written.
    pub file_sha256: String,
}

/// The first row of the chain that does not follow from the row before it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TrailBreak {
    pub seq: i64,
    pub reason: String,
}

/// What `audit verify` found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TrailCheck {
    /// Event rows checked.
    pub events: u64,
    /// The hash the first row chains from: the genesis, or the archive checkpoint's.
    pub start: String,
    /// The newest row's hash (the start on an empty trail).
    pub head: String,
    /// The first broken link (`None`: the chain holds).
    pub broken: Option<TrailBreak>,
    /// With a head to look for: whether it is a hash of the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_found: Option<bool>,
    /// Proposal, decision and grant rows that disagree with the trail.
    pub mismatches: Vec<String>,
}

impl TrailCheck {
    /// Whether everything checked holds.
    pub fn ok(&self) -> bool {
        self.broken.is_none() && self.head_found != Some(false) && self.mismatches.is_empty()
    }
}

/// The genesis value.
pub(super) const GENESIS: &str = "SELECT hash FROM trail_genesis WHERE id = 1";
/// The newest `archived-trail` checkpoint row: its seq and note.
pub(super) const CHECKPOINT: &str =
    "SELECT seq, note FROM events WHERE event = 'archived-trail' ORDER BY seq DESC LIMIT 1";
/// The oldest row at or below the checkpoint's cut (`$1`): one that was not archived.
pub(super) const LEFT_BEHIND: &str = "SELECT MIN(seq) FROM events WHERE seq <= $1";

/// The genesis value.
pub(super) async fn genesis(conn: &mut AnyConnection) -> sqlx::Result<String> {
    sqlx::query_scalar(GENESIS).fetch_one(&mut *conn).await
}

/// A checkpoint row's note read as the checkpoint (`None`: no note, or not one).
pub(super) fn parse_checkpoint(seq: i64, note: Option<&str>) -> Option<(i64, Checkpoint)> {
    serde_json::from_str(note?).ok().map(|c| (seq, c))
}

/// The newest `archived-trail` checkpoint, and its seq.
pub(super) async fn checkpoint(conn: &mut AnyConnection) -> StoreResult<Option<(i64, Checkpoint)>> {
    let row: Option<(i64, Option<String>)> = sqlx::query_as(CHECKPOINT)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.and_then(|(seq, note)| parse_checkpoint(seq, note.as_deref())))
}

/// A page of rows after `after`, oldest first.
pub(super) async fn page(
    conn: &mut AnyConnection,
    after: i64,
    below: Option<i64>,
) -> sqlx::Result<Vec<RawEvent>> {
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM events WHERE seq > $1 AND seq < $2 ORDER BY seq LIMIT {PAGE}"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(after)
        .bind(below.unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await
}

/// Why a row's link fails: its hash is not the one its fields and the row before give.
fn broken(seq: i64, hashed: bool) -> TrailBreak {
    let reason = if hashed {
        "the row's hash does not follow from its fields and the row before it: \
         this row was edited, or a row before it was deleted, inserted or moved"
    } else {
        "the row has no hash"
    };
    TrailBreak {
        seq,
        reason: reason.to_string(),
    }
}

/// Where the chain starts, from the genesis and the newest checkpoint: the hash the first
/// row left chains from, the cut (events before it were archived; `""`: none), and the
/// seq the rows left start after.
pub(super) fn start_of(genesis: String, cp: Option<&(i64, Checkpoint)>) -> (String, String, i64) {
    match cp {
        Some((_, c)) => (c.through_hash.clone(), c.before.clone(), c.through_seq),
        None => (genesis, String::new(), 0),
    }
}

/// The break of a row older than the archive checkpoint that took it out.
pub(super) fn left_behind(seq: i64) -> TrailBreak {
    TrailBreak {
        seq,
        reason: "the row is older than the archive checkpoint that took it out".into(),
    }
}

/// The walk along the chain in `seq` order, one row at a time, whoever reads the rows:
/// each row's link recomputed from the row before, the first that does not follow kept,
/// and the head looked for. Its two buffers are reused for every row.
pub(super) struct Walk<'h> {
    head: Option<&'h str>,
    found: Option<bool>,
    prev: Vec<u8>,
    msg: Vec<u8>,
    events: u64,
    broken: Option<TrailBreak>,
}

impl<'h> Walk<'h> {
    /// A walk from `start`; `broken` is a break found before the first row.
    pub(super) fn new(start: &str, head: Option<&'h str>, broken: Option<TrailBreak>) -> Self {
        Walk {
            head,
            found: head.map(|h| h == start),
            prev: start.as_bytes().to_vec(),
            msg: Vec::with_capacity(512),
            events: 0,
            broken,
        }
    }

    /// Checks one row (its ten hashed fields as the canonical form takes them, and its
    /// stored hash); `false` once the rest need not be read (broken, with no head to find).
    pub(super) fn row(
        &mut self,
        seq: i64,
        fields: [Option<&[u8]>; 10],
        stored: Option<&[u8]>,
    ) -> bool {
        self.events += 1;
        if self.broken.is_none() {
            self.msg.clear();
            chain::canonical(&mut self.msg, &self.prev, fields);
            if stored != Some(&chain::hex_digest(&self.msg)[..]) {
                self.broken = Some(broken(seq, stored.is_some()));
                if self.head.is_none() {
                    return false;
                }
            }
        }
        if let Some(h) = stored {
            if self.found == Some(false) && self.head.map(str::as_bytes) == Some(h) {
                self.found = Some(self.broken.is_none());
            }
            self.prev.clear();
            self.prev.extend_from_slice(h);
        }
        true
    }

    /// A row whose fields are not of their columns' types: a break at it, as an edit is.
    pub(super) fn bad_row(&mut self, seq: i64, what: &str) -> bool {
        self.events += 1;
        if self.broken.is_none() {
            self.broken = Some(TrailBreak {
                seq,
                reason: format!("the row's {what} is not of its column's type"),
            });
        }
        self.head.is_some()
    }

    /// What the walk found, with the cross-checks' mismatches.
    pub(super) fn finish(self, start: String, mismatches: Vec<String>) -> TrailCheck {
        TrailCheck {
            events: self.events,
            start,
            head: String::from_utf8_lossy(&self.prev).into_owned(),
            broken: self.broken,
            head_found: self.found,
            mismatches,
        }
    }
}

/// The cross-checks: each query names the first row that disagrees with the trail, for
/// rows newer than the archive cut (older ones left with their events).
pub(super) const CROSS_CHECKS: &[(&str, &str)] = &[
    (
        "proposal {} has no `proposed` event",
        "SELECT p.id FROM proposals p WHERE p.created_at >= $1 AND NOT EXISTS (SELECT 1 \
         FROM events e WHERE e.proposal_id = p.id AND e.event = 'proposed') \
         ORDER BY p.id LIMIT 1",
    ),
    (
        "proposal {} is decided with no event of its decision",
        "SELECT p.id FROM proposals p WHERE p.decided_at >= $1 \
         AND p.status IN ('approved', 'modified', 'rejected', 'expired', 'withdrawn') \
         AND NOT EXISTS (SELECT 1 FROM events e WHERE e.proposal_id = p.id \
         AND e.event = p.status) ORDER BY p.id LIMIT 1",
    ),
    (
        "proposal {} does not say what its decision event says",
        "SELECT p.id FROM events e JOIN proposals p ON p.id = e.proposal_id \
         WHERE e.event IN ('approved', 'modified', 'rejected') AND e.at >= $1 \
         AND (p.status <> e.event OR (e.event <> 'rejected' \
         AND (p.decision_change IS NULL OR e.change IS NULL \
         OR p.decision_change <> e.change))) ORDER BY e.seq LIMIT 1",
    ),
    (
        "grant {} has no decision event",
        "SELECT g.id FROM grants g WHERE g.created_at >= $1 AND NOT EXISTS (SELECT 1 \
         FROM events e WHERE e.grant_id = g.id AND e.event IN ('approved', 'modified')) \
         ORDER BY g.id LIMIT 1",
    ),
    (
        "grant {} ended with no event",
        "SELECT g.id FROM grants g WHERE g.ended_at >= $1 AND NOT EXISTS (SELECT 1 \
         FROM events e WHERE e.grant_id = g.id \
         AND e.event IN ('grant-revoked', 'grant-expired')) ORDER BY g.id LIMIT 1",
    ),
    (
        "grant {} is in force although the trail ended it",
        "SELECT g.id FROM events e JOIN grants g ON g.id = e.grant_id \
         WHERE e.event IN ('grant-revoked', 'grant-expired') AND g.ended_at IS NULL \
         ORDER BY e.seq LIMIT 1",
    ),
];

impl Store {
    /// The hash of the newest event (the start of the chain while it has none): what an
    /// auditor keeps elsewhere and later hands to [`Store::verify_trail`].
    pub async fn trail_head(&self) -> StoreResult<String> {
        let mut tx = self.read().await?;
        let head = trail::tail(&mut tx).await?;
        tx.commit().await?;
        Ok(head)
    }

    /// [`Store::verify_trail`] on PostgreSQL: the rows a page at a time through the pool,
    /// in one read snapshot.
    pub(super) async fn verify_trail_pooled(&self, head: Option<&str>) -> StoreResult<TrailCheck> {
        let mut tx = self.read().await?;
        let cp = checkpoint(&mut tx).await?;
        let (start, cut, mut after) = start_of(genesis(&mut tx).await?, cp.as_ref());
        // Rows at or below the checkpoint's cut that are still there were not archived.
        let mut left = None;
        if let Some((_, c)) = &cp {
            let seq: Option<i64> = sqlx::query_scalar(LEFT_BEHIND)
                .bind(c.through_seq)
                .fetch_one(&mut *tx)
                .await?;
            left = seq.map(left_behind);
        }
        let mut walk = Walk::new(&start, head, left);
        let mut bottle = String::new();
        'pages: loop {
            let rows = page(&mut tx, after, None).await?;
            let Some(last) = rows.last() else { break };
            after = last.0;
            for r in &rows {
                bottle.clear();
                if let Some(b) = r.5 {
                    let _ = write!(bottle, "{b}");
                }
                let fields = [
                    Some(r.1.as_str()),
                    Some(r.2.as_str()),
                    Some(r.3.as_str()),
                    r.4.as_deref(),
                    r.5.map(|_| bottle.as_str()),
                    r.6.as_deref(),
                    r.7.as_deref(),
                    r.8.as_deref(),
                    r.9.as_deref(),
                    r.10.as_deref(),
                ]
                .map(|v| v.map(str::as_bytes));
                if !walk.row(r.0, fields, r.11.as_deref().map(str::as_bytes)) {
                    break 'pages;
                }
            }
        }
        let mut mismatches = Vec::new();
        for (what, sql) in CROSS_CHECKS {
            let id: Option<String> = sqlx::query_scalar(*sql)
                .bind(&cut)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(id) = id {
                mismatches.push(what.replace("{}", &id));
            }
        }
        tx.commit().await?;
        Ok(walk.finish(start, mismatches))
    }
}

/// Hashes the rows written before the chain (their `hash` is NULL), oldest first, in one
/// write transaction at open; a no-op once the oldest row has its hash.
pub(super) async fn hash_older_rows(pool: &AnyPool, backend: Backend) -> StoreResult<()> {
    // Rows older than the chain are a prefix of the trail: one look at the oldest row (a
    // primary-key lookup, whatever the trail's size) tells whether any is left.
    let oldest: Option<Option<String>> =
        sqlx::query_scalar("SELECT hash FROM events ORDER BY seq LIMIT 1")
            .fetch_optional(pool)
            .await?;
    if !matches!(oldest, Some(None)) {
        return Ok(());
    }
    let mut conn = pool.acquire().await?;
    sqlx::raw_sql(backend.begin_write())
        .execute(&mut *conn)
        .await?;
    let done = async {
        sqlx::raw_sql(backend.unlock_trail())
            .execute(&mut *conn)
            .await?;
        let mut prev = genesis(&mut conn).await?;
        let mut after = 0;
        loop {
            let rows = page(&mut conn, after, None).await?;
            let Some(last) = rows.last() else { break };
            after = last.0;
            for r in &rows {
                let h = match &r.11 {
                    Some(h) => h.clone(),
                    None => {
                        let h = link_of(&prev, r);
                        sqlx::query("UPDATE events SET hash = $1 WHERE seq = $2")
                            .bind(&h)
                            .bind(r.0)
                            .execute(&mut *conn)
                            .await?;
                        h
                    }
                };
                prev = h;
            }
        }
        sqlx::raw_sql(backend.relock_trail())
            .execute(&mut *conn)
            .await?;
        sqlx::query("COMMIT").execute(&mut *conn).await?;
        Ok::<_, sqlx::Error>(())
    }
    .await;
    if let Err(e) = done {
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        return Err(e.into());
    }
    Ok(())
}
