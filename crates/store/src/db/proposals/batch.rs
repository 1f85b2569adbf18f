//! Filing a batch of proposals (the group commit's transaction) in a few statements in all:
//! the batch's bottles are read once (names, liveness, pending counts), the identical
//! undecided proposals and the recent rejections of all its changes once, and the fresh
//! proposals, their `proposed` events and their tasks are written with multi-row inserts.
//! An item that is not plainly fresh (an identical proposal waits, or was just rejected, or
//! an earlier item of the batch asked for the same change, or its bottle is at the cap)
//! goes through [`propose_in`], one item at a time, after what was buffered before it is
//! written, so the results, the rows and the order of the events are those of filing the
//! items one by one.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::LazyLock;

use sqlx::AnyConnection;

use super::{FiledAs, Filing, Prepared, pending_count, propose_in};
use crate::change;
use crate::db::ProposalLimits;
use crate::db::multirow::{CHUNKS, insert_chunked, rows_sql};
use crate::db::rules::{apply, facts};
use crate::db::task_rows::open_task_in;
use crate::db::trail::{NewEvent, SYSTEM, actor_bottle, record_many};
use crate::error::{StoreError, StoreResult};
use crate::model::{
    EventKind, Flag, Kind, Proposal, ProposalId, Proposed, Quorum, Status, Task, Timestamp,
};
use crate::rules::Outcome;

/// Sizes of the `IN` and `VALUES` lists of the lookups, padded up by repeating their last
/// entry (a repeat changes no answer). A lookup of one is plain equalities: SQLite builds a
/// temporary B-tree for a longer `IN` list or a `VALUES` table on every execution.
const LOOKUPS: [usize; 4] = [1, 4, 16, 64];

/// Items that share one set of lookups: the lookups' largest size.
const PART: usize = LOOKUPS[LOOKUPS.len() - 1];

const PROPOSAL_INSERT: &str = "INSERT INTO proposals (id, bottle_id, kind, change, change_key, \
    justification, flags, created_at, expires_at, quorum) VALUES ";
const PROPOSAL_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
const TASK_INSERT: &str =
    "INSERT INTO tasks (proposal_id, bottle_id, created_at, readable_until) VALUES ";
const TASK_ROW: &str = "(?, ?, ?, ?)";

static PROPOSALS: LazyLock<[String; 4]> =
    LazyLock::new(|| CHUNKS.map(|n| rows_sql(PROPOSAL_INSERT, PROPOSAL_ROW, n, 1, "")));
static TASKS: LazyLock<[String; 4]> = LazyLock::new(|| {
    CHUNKS.map(|n| {
        rows_sql(
            TASK_INSERT,
            TASK_ROW,
            n,
            1,
            " ON CONFLICT (proposal_id) DO NOTHING",
        )
    })
});
static BOTTLES: LazyLock<[String; 4]> = LazyLock::new(|| {
    LOOKUPS.map(|n| {
        format!(
            "SELECT id, host, slug, CASE WHEN removed_at IS NULL THEN 1 ELSE 0 END, pending_count \
             FROM bottles WHERE id IN ({})",
            rows_sql("", "?", n, 1, "")
        )
    })
});
/// The changes of the batch that have an undecided proposal of their own (and, with the
/// cooldown, a rejection decided after `$1`): each branch through its partial index.
static TAKEN: LazyLock<[String; 4]> = LazyLock::new(|| LOOKUPS.map(|n| taken_sql(n, false)));
static TAKEN_OR_REJECTED: LazyLock<[String; 4]> =
    LazyLock::new(|| LOOKUPS.map(|n| taken_sql(n, true)));

fn taken_sql(n: usize, rejected: bool) -> String {
    let first = if rejected { 2 } else { 1 };
    if n == 1 {
        let (b, k, c) = (first, first + 1, first + 2);
        let select = format!(
            "SELECT p.bottle_id, p.kind, p.change_key FROM proposals p \
             WHERE p.bottle_id = ${b} AND p.kind = ${k} AND p.change_key = ${c}"
        );
        let mut sql = format!("{select} AND p.status = 'pending'");
        if rejected {
            let _ = write!(
                sql,
                " UNION ALL {select} AND p.status = 'rejected' AND p.decided_at > $1"
            );
        }
        return sql;
    }
    let values = rows_sql("", "(?, ?, ?)", n, first, "");
    let select = "SELECT p.bottle_id, p.kind, p.change_key FROM v JOIN proposals p \
                  ON p.bottle_id = v.b AND p.kind = v.k AND p.change_key = v.c";
    let mut sql =
        format!("WITH v (b, k, c) AS (VALUES {values}) {select} WHERE p.status = 'pending'");
    if rejected {
        let _ = write!(
            sql,
            " UNION ALL {select} WHERE p.status = 'rejected' AND p.decided_at > $1"
        );
    }
    sql
}

/// The smallest lookup size that holds `n`, and its index.
fn lookup_size(n: usize) -> usize {
    LOOKUPS.iter().position(|&s| s >= n).expect("at most PART")
}

/// A created proposal waiting to be written: the proposal as its caller reads it, and the
/// texts its row and its `proposed` event hold.
pub(super) struct NewRow {
    pub(super) proposal: Proposal,
    key: String,
    change_text: String,
    flags_text: String,
    actor: String,
    as_task: bool,
}

impl NewRow {
    /// The pending proposal `p` becomes, filed `now` by `actor` for the bottle `names`.
    pub(super) fn new(
        limits: &ProposalLimits,
        p: Prepared,
        (host, slug): (String, String),
        actor: String,
        change_text: String,
        now: &Timestamp,
    ) -> NewRow {
        let mut flags = change::flags(p.kind, &p.change);
        if p.observed {
            flags.push(Flag::Observed);
        }
        let flags_text = serde_json::to_string(&flags).unwrap_or_else(|_| "[]".into());
        // From the same reading as `created_at` (and the task's), so a task's `ttlMs` is
        // exactly the time left.
        let expires_at = limits
            .proposal_ttl
            .filter(|d| !d.is_zero())
            .map(|ttl| now.plus(ttl));
        NewRow {
            proposal: Proposal {
                id: ProposalId::generate(),
                host,
                bottle: slug,
                bottle_id: p.bottle_id,
                kind: p.kind,
                change: p.change,
                justification: p.justification,
                status: Status::Pending,
                flags,
                hits: 1,
                created_at: now.clone(),
                expires_at,
                decision: None,
                archived_at: None,
                quorum: Quorum {
                    needed: p.quorum,
                    ..Quorum::single()
                },
            },
            key: p.key,
            change_text,
            flags_text,
            actor,
            as_task: false,
        }
    }

    /// The task a fresh proposal's task row reads back as.
    fn task(&self, now: &Timestamp) -> Task {
        Task {
            proposal_id: self.proposal.id.clone(),
            bottle_id: self.proposal.bottle_id,
            created_at: now.clone(),
            readable_until: self.proposal.expires_at.clone(),
            cancelled_at: None,
        }
    }
}

/// Writes created proposals, in order: their rows, their `proposed` events (so the
/// events' `seq` follow the rows' order), then the tasks of those asked as tasks.
pub(super) async fn insert_rows(
    conn: &mut AnyConnection,
    rows: &[NewRow],
    now: &Timestamp,
) -> sqlx::Result<()> {
    insert_chunked(conn, &PROPOSALS, rows, |q, r| {
        let p = &r.proposal;
        q.bind(p.id.as_str())
            .bind(p.bottle_id.get())
            .bind(p.kind.as_str())
            .bind(r.change_text.as_str())
            .bind(r.key.as_str())
            .bind(p.justification.as_str())
            .bind(r.flags_text.as_str())
            .bind(now.as_str())
            .bind(p.expires_at.as_ref().map(Timestamp::as_str))
            .bind(i64::from(p.quorum.needed))
    })
    .await?;
    let events: Vec<NewEvent> = rows
        .iter()
        .map(|r| {
            let p = &r.proposal;
            NewEvent {
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(p.id.as_str()),
                kind: Some(p.kind),
                change: Some(&r.change_text),
                note: Some(&p.justification),
                ..NewEvent::new(EventKind::Proposed, &r.actor)
            }
        })
        .collect();
    record_many(conn, now, &events).await?;
    let tasks: Vec<&NewRow> = rows.iter().filter(|r| r.as_task).collect();
    insert_chunked(conn, &TASKS, &tasks, |q, r| {
        let p = &r.proposal;
        q.bind(p.id.as_str())
            .bind(p.bottle_id.get())
            .bind(now.as_str())
            .bind(p.expires_at.as_ref().map(Timestamp::as_str))
    })
    .await
}

/// A bottle as the batch found it.
enum Found {
    Live {
        host: String,
        slug: String,
        pending: i64,
    },
    Gone,
}

/// (bottle id, kind, change key): what makes two proposals identical.
type Key = (i64, &'static str, String);

/// Files a batch in the caller's write transaction, each item as filing them one by one
/// in order would. The outer error aborts the whole batch.
pub(super) async fn file_batch(
    conn: &mut AnyConnection,
    filing: &Filing<'_>,
    items: Vec<(StoreResult<Prepared>, bool)>,
    now: &Timestamp,
) -> StoreResult<Vec<StoreResult<FiledAs>>> {
    let mut out = Vec::with_capacity(items.len());
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let part: Vec<_> = items.by_ref().take(PART).collect();
        file_part(conn, filing, part, now, &mut out).await?;
    }
    Ok(out)
}

/// Files up to [`PART`] items, writing everything they file before it returns.
async fn file_part(
    conn: &mut AnyConnection,
    filing: &Filing<'_>,
    items: Vec<(StoreResult<Prepared>, bool)>,
    now: &Timestamp,
    out: &mut Vec<StoreResult<FiledAs>>,
) -> StoreResult<()> {
    let limits = filing.limits;
    let cap = limits.max_pending_per_bottle.filter(|&n| n > 0);
    let mut bottles = read_bottles(conn, &items).await?;
    let mut taken = read_taken(conn, limits, &items, &bottles).await?;
    let mut buffer: Vec<NewRow> = Vec::new();
    for (item, as_task) in items {
        let p = match item {
            Err(e) => {
                out.push(Err(e));
                continue;
            }
            Ok(p) => p,
        };
        let id = p.bottle_id;
        let (host, slug, pending) = match bottles.get(&id.get()) {
            Some(Found::Live {
                host,
                slug,
                pending,
            }) => (host, slug, *pending),
            Some(Found::Gone) => {
                out.push(Err(StoreError::BottleGone(id)));
                continue;
            }
            None => {
                out.push(Err(StoreError::BottleNotFound(format!("#{id}"))));
                continue;
            }
        };
        // Whatever happens to this item, a later one asking the same is no longer fresh.
        let fresh = taken.insert((id.get(), p.kind.as_str(), p.key.clone()));
        if fresh && cap.is_none_or(|limit| pending < i64::from(limit)) {
            let actor = if p.observed {
                SYSTEM.to_string()
            } else {
                actor_bottle(slug)
            };
            let change_text = p.change.to_string();
            let names = (host.clone(), slug.clone());
            let mut row = NewRow::new(limits, p, names, actor, change_text, now);
            let ruled = filing
                .rules
                .map(|r| (r, r.rules.evaluate(&facts(&row.proposal, now))))
                .filter(|(_, e)| e.outcome != Outcome::Human || !e.shadow.is_empty());
            // A proposal a rule matched is written and ruled at once, in order.
            if let Some((in_force, eval)) = ruled {
                insert_rows(conn, &buffer, now).await?;
                buffer.clear();
                row.as_task = as_task && !eval.outcome.is_automatic();
                let task = row.as_task.then(|| row.task(now));
                insert_rows(conn, std::slice::from_ref(&row), now).await?;
                let filed =
                    match apply(conn, now, row.proposal, in_force, &eval, filing.deliver).await? {
                        (p, true) => Proposed::Ruled(p),
                        (p, false) => Proposed::Created(p),
                    };
                if let (Proposed::Created(_), Some(Found::Live { pending, .. })) =
                    (&filed, bottles.get_mut(&id.get()))
                {
                    *pending += 1;
                }
                out.push(Ok((filed, task)));
                continue;
            }
            row.as_task = as_task;
            let task = as_task.then(|| row.task(now));
            out.push(Ok((Proposed::Created(row.proposal.clone()), task)));
            buffer.push(row);
            if let Some(Found::Live { pending, .. }) = bottles.get_mut(&id.get()) {
                *pending += 1;
            }
            continue;
        }
        // The slow path reads the database: it must see every item before it.
        insert_rows(conn, &buffer, now).await?;
        buffer.clear();
        out.push(match propose_in(conn, filing, p, now).await? {
            Ok(filed @ (Proposed::Created(_) | Proposed::Repeated(_))) if as_task => {
                let task = open_task_in(conn, filed.proposal(), now).await?;
                Ok((filed, Some(task)))
            }
            other => other.map(|filed| (filed, None)),
        });
        // Filing it may have expired some of the bottle's proposals: count again.
        if cap.is_some()
            && let Some(Found::Live { pending, .. }) = bottles.get_mut(&id.get())
        {
            *pending = pending_count(conn, id).await?;
        }
    }
    insert_rows(conn, &buffer, now).await?;
    Ok(())
}

/// The batch's bottles, one statement: names, liveness and pending counts.
async fn read_bottles(
    conn: &mut AnyConnection,
    items: &[(StoreResult<Prepared>, bool)],
) -> StoreResult<HashMap<i64, Found>> {
    let mut ids: Vec<i64> = items
        .iter()
        .filter_map(|(p, _)| p.as_ref().ok().map(|p| p.bottle_id.get()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut found = HashMap::with_capacity(ids.len());
    let Some(&last) = ids.last() else {
        return Ok(found);
    };
    let i = lookup_size(ids.len());
    let mut q = sqlx::query_as::<_, (i64, String, String, i32, i64)>(BOTTLES[i].as_str());
    for k in 0..LOOKUPS[i] {
        q = q.bind(ids.get(k).copied().unwrap_or(last));
    }
    for (id, host, slug, live, pending) in q.fetch_all(&mut *conn).await? {
        let f = if live == 1 {
            Found::Live {
                host,
                slug,
                pending,
            }
        } else {
            Found::Gone
        };
        found.insert(id, f);
    }
    Ok(found)
}

/// The changes of the batch (of live bottles) that are not fresh: an identical proposal
/// is undecided, or (with the cooldown) was rejected within it. One statement.
async fn read_taken(
    conn: &mut AnyConnection,
    limits: &ProposalLimits,
    items: &[(StoreResult<Prepared>, bool)],
    bottles: &HashMap<i64, Found>,
) -> StoreResult<HashSet<Key>> {
    let mut keys: Vec<Key> = items
        .iter()
        .filter_map(|(p, _)| p.as_ref().ok())
        .filter(|p| matches!(bottles.get(&p.bottle_id.get()), Some(Found::Live { .. })))
        .map(|p| (p.bottle_id.get(), p.kind.as_str(), p.key.clone()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut taken = HashSet::new();
    let Some(last) = keys.last().cloned() else {
        return Ok(taken);
    };
    let i = lookup_size(keys.len());
    let cooldown = limits.reject_cooldown.filter(|d| !d.is_zero());
    let since = cooldown.map(Timestamp::before);
    let sql = match since {
        Some(_) => TAKEN_OR_REJECTED[i].as_str(),
        None => TAKEN[i].as_str(),
    };
    let mut q = sqlx::query_as::<_, (i64, String, String)>(sql);
    if let Some(since) = &since {
        q = q.bind(since.as_str());
    }
    for k in 0..LOOKUPS[i] {
        let (b, kind, key) = keys.get(k).unwrap_or(&last);
        q = q.bind(*b).bind(*kind).bind(key.as_str());
    }
    let rows = q.fetch_all(&mut *conn).await?;
    for (b, kind, key) in rows {
        if let Ok(kind) = kind.parse::<Kind>() {
            taken.insert((b, kind.as_str(), key));
        }
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookups_number_their_parameters_in_order() {
        assert!(BOTTLES[0].ends_with("WHERE id IN ($1)"));
        assert!(BOTTLES[1].ends_with("WHERE id IN ($1, $2, $3, $4)"));
        assert!(taken_sql(1, true).contains("p.bottle_id = $2 AND p.kind = $3"));
        assert!(taken_sql(1, false).ends_with("p.change_key = $3 AND p.status = 'pending'"));
        assert!(taken_sql(4, true).contains("($2, $3, $4)"));
        assert!(taken_sql(4, false).starts_with("WITH v (b, k, c) AS (VALUES ($1, $2, $3)"));
    }

    #[test]
    fn a_lookup_takes_the_smallest_size_that_holds_it() {
        assert_eq!(lookup_size(1), 0);
        assert_eq!(lookup_size(2), 1);
        assert_eq!(lookup_size(17), 3);
    }
}
