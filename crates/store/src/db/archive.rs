//! `audit archive`: the one way rows leave the trail. The events before a time, and the
//! proposals, grants and tasks that ended before it, go to a file of versioned JSON lines
//! (with their hashes and a closing checkpoint), written and synced before the transaction
//! that removes them commits; an `archived-trail` event is the checkpoint the rest of the
//! chain starts from. The file verifies on its own ([`verify_archive`]).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;

use super::backend::Backend;
use super::chain::hex;
use super::trail::{NewEvent, actor_of, record};
use super::verify::{Checkpoint, RawEvent, checkpoint, genesis, link_of, page};
use super::{Store, WriteTx};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, EventKind, Timestamp};

/// The version of the archive file's lines (`schema_version` on every line).
pub const ARCHIVE_VERSION: u32 = 1;

/// The proposals that leave with the events through `$2`: delivered (or otherwise
/// terminal) before `$1`, no event left after the cut, every grant ended before `$1`.
const PROPOSALS_LEAVING: &str = "SELECT p.id FROM proposals p WHERE p.archived_at IS NOT NULL \
    AND p.archived_at < $1 \
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.proposal_id = p.id AND e.seq > $2) \
    AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.proposal_id = p.id \
        AND (g.ended_at IS NULL OR g.ended_at >= $1)) \
    AND NOT EXISTS (SELECT 1 FROM grants g JOIN events e ON e.grant_id = g.id \
        WHERE g.proposal_id = p.id AND e.seq > $2) \
    AND NOT EXISTS (SELECT 1 FROM grants g JOIN proposals k ON k.kept_grant_id = g.id \
        WHERE g.proposal_id = p.id AND k.id <> p.id)";

/// What an archive wrote and removed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Archived {
    pub checkpoint: Checkpoint,
}

/// What `audit verify --archive` found in a file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ArchiveCheck {
    pub events: u64,
    /// The first line that does not verify, and why.
    pub broken: Option<(u64, String)>,
    /// The closing checkpoint, when the file verifies.
    pub checkpoint: Option<Value>,
}

/// Writes lines and hashes what it wrote.
struct Out {
    file: BufWriter<File>,
    sha: Sha256,
}

impl Out {
    fn line(&mut self, value: &Value) -> StoreResult<()> {
        let mut text = serde_json::to_string(value).map_err(io)?;
        text.push('\n');
        self.sha.update(text.as_bytes());
        self.file.write_all(text.as_bytes()).map_err(io)
    }
}

fn io(e: impl std::fmt::Display) -> StoreError {
    StoreError::Archive(e.to_string())
}

/// An event row as an archive line: its stored fields (the change as its stored text),
/// its hash, and `seq`.
fn event_line(r: &RawEvent) -> Value {
    json!({
        "schema_version": ARCHIVE_VERSION, "type": "event", "seq": r.0, "at": r.1,
        "event": r.2, "actor": r.3, "via": r.4, "bottle_id": r.5, "proposal_id": r.6,
        "grant_id": r.7, "kind": r.8, "change": r.9, "note": r.10, "hash": r.11,
    })
}

/// The columns of `table` (so an archive keeps every column, whatever later migrations add).
async fn columns(
    conn: &mut AnyConnection,
    backend: Backend,
    table: &str,
) -> StoreResult<Vec<String>> {
    let sql = match backend {
        Backend::Sqlite => format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"),
        Backend::Postgres => format!(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_name = '{table}' AND table_schema = current_schema() \
             ORDER BY ordinal_position"
        ),
    };
    Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_all(&mut *conn)
        .await?)
}

/// Writes every row of `table` matching `filter` as lines, each column as its text (NULL
/// as null). Returns the count.
async fn rows_out(
    conn: &mut AnyConnection,
    backend: Backend,
    table: &str,
    filter: &str,
    before: &str,
    through: i64,
    out: &mut Out,
) -> StoreResult<u64> {
    let cols = columns(conn, backend, table).await?;
    let select: Vec<String> = cols.iter().map(|c| format!("CAST({c} AS TEXT)")).collect();
    let sql = format!("SELECT {} FROM {table} WHERE {filter}", select.join(", "));
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(before)
        .bind(through)
        .fetch_all(&mut *conn)
        .await?;
    for row in &rows {
        use sqlx::Row;
        let mut m = Map::new();
        m.insert("schema_version".into(), json!(ARCHIVE_VERSION));
        m.insert("type".into(), json!(table.trim_end_matches('s')));
        for (i, c) in cols.iter().enumerate() {
            let v: Option<String> = row.try_get(i)?;
            m.insert(c.clone(), json!(v));
        }
        out.line(&Value::Object(m))?;
    }
    Ok(rows.len() as u64)
}

impl Store {
    /// Moves the events before `before` (a prefix of the chain), and the proposals, grants
    /// and tasks that ended before it with no event left, to the new file `to`, then removes
    /// them and appends the `archived-trail` checkpoint, in one write transaction. The file
    /// is written and synced before the commit; it is never overwritten. Refused when
    /// nothing is that old or the archived rows do not verify.
    pub async fn archive_trail(
        &self,
        before: &Timestamp,
        to: &Path,
        by: &Actor,
    ) -> StoreResult<Archived> {
        let mut w = self.write().await?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .map_err(|e| {
                io(format!(
                    "cannot create {}: {e} (it is never overwritten)",
                    to.display()
                ))
            })?;
        let done = self.archive_into(&mut w, before, to, file, by).await;
        match done {
            Ok(a) => {
                w.commit().await.inspect_err(|_| {
                    let _ = std::fs::remove_file(to);
                })?;
                Ok(a)
            }
            Err(e) => {
                let _ = std::fs::remove_file(to);
                Err(e)
            }
        }
    }

    async fn archive_into(
        &self,
        w: &mut WriteTx<'_>,
        before: &Timestamp,
        to: &Path,
        file: File,
        by: &Actor,
    ) -> StoreResult<Archived> {
        let backend = self.backend();
        let conn = w.conn();
        let cp = checkpoint(conn).await?;
        let (start, after) = match &cp {
            Some((_, c)) => (c.through_hash.clone(), c.through_seq),
            None => (genesis(conn).await?, 0),
        };
        let first_kept: Option<i64> =
            sqlx::query_scalar("SELECT MIN(seq) FROM events WHERE at >= $1")
                .bind(before.as_str())
                .fetch_one(&mut *conn)
                .await?;
        let through: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM events WHERE seq > $1 AND seq < $2")
                .bind(after)
                .bind(first_kept.unwrap_or(i64::MAX))
                .fetch_one(&mut *conn)
                .await?;
        let Some(through) = through else {
            return Err(StoreError::Archive(format!(
                "no events before {before} to archive"
            )));
        };
        let mut out = Out {
            file: BufWriter::new(file),
            sha: Sha256::new(),
        };
        out.line(&json!({
            "schema_version": ARCHIVE_VERSION, "type": "archive", "start": start,
            "before": before.as_str(), "created_at": Timestamp::now().as_str(),
        }))?;
        let mut prev = start;
        let mut events = 0u64;
        let mut at = after;
        loop {
            let rows = page(conn, at, Some(through + 1)).await?;
            let Some(last) = rows.last() else { break };
            at = last.0;
            for r in &rows {
                if r.11.as_deref() != Some(link_of(&prev, r).as_str()) {
                    return Err(StoreError::Archive(format!(
                        "the trail does not verify at seq {}; run `supervise audit verify`",
                        r.0
                    )));
                }
                prev = r.11.clone().unwrap_or_default();
                out.line(&event_line(r))?;
                events += 1;
            }
        }
        let leaving = format!("id IN ({PROPOSALS_LEAVING})");
        let of_leaving = format!("proposal_id IN ({PROPOSALS_LEAVING})");
        let b = before.as_str();
        let proposals =
            rows_out(conn, backend, "proposals", &leaving, b, through, &mut out).await?;
        let grants = rows_out(conn, backend, "grants", &of_leaving, b, through, &mut out).await?;
        let tasks = rows_out(conn, backend, "tasks", &of_leaving, b, through, &mut out).await?;
        // A proposal's approvals and recorded push content leave with it (not counted in
        // the checkpoint; the file's SHA-256 covers their lines).
        for table in ["approvals", "push_diffs"] {
            rows_out(conn, backend, table, &of_leaving, b, through, &mut out).await?;
        }
        out.line(&json!({
            "schema_version": ARCHIVE_VERSION, "type": "checkpoint", "events": events,
            "proposals": proposals, "grants": grants, "tasks": tasks,
            "through_seq": through, "through_hash": prev,
            "sha256": hex(&out.sha.clone().finalize()),
        }))?;
        let file_sha256 = hex(&out.sha.clone().finalize());
        let file = out.file.into_inner().map_err(|e| io(e.error()))?;
        file.sync_all().map_err(io)?;
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }

        let checkpoint = Checkpoint {
            before: before.as_str().to_string(),
            through_seq: through,
            through_hash: prev,
            events,
            proposals,
            grants,
            tasks,
            file_sha256,
        };
        let note = serde_json::to_string(&checkpoint).map_err(io)?;
        let actor = actor_of(by);
        record(
            conn,
            &Timestamp::now(),
            NewEvent {
                note: Some(&note),
                via: Some(by.via),
                ..NewEvent::new(EventKind::ArchivedTrail, &actor)
            },
        )
        .await?;
        sqlx::raw_sql(backend.unlock_trail())
            .execute(&mut *conn)
            .await?;
        // The checkpoint is appended while the tail is still there to chain from; then
        // what names a leaving proposal goes (tasks, grants, events), then the proposals.
        for sql in [
            format!("DELETE FROM tasks WHERE {of_leaving}"),
            format!("DELETE FROM approvals WHERE {of_leaving}"),
            format!("DELETE FROM push_diffs WHERE {of_leaving}"),
            format!("DELETE FROM grants WHERE {of_leaving}"),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(b)
                .bind(through)
                .execute(&mut *conn)
                .await?;
        }
        let ids: Vec<String> = sqlx::query_scalar(PROPOSALS_LEAVING)
            .bind(b)
            .bind(through)
            .fetch_all(&mut *conn)
            .await?;
        sqlx::query("DELETE FROM events WHERE seq <= $1")
            .bind(through)
            .execute(&mut *conn)
            .await?;
        for id in &ids {
            sqlx::query("DELETE FROM proposals WHERE id = $1")
                .bind(id)
                .execute(&mut *conn)
                .await?;
        }
        sqlx::raw_sql(backend.relock_trail())
            .execute(&mut *conn)
            .await?;
        Ok(Archived { checkpoint })
    }
}

/// Verifies an archive file on its own: every line is JSON of this version, the events
/// chain from the header's `start` to the checkpoint's `through_hash`, the counts agree,
/// and the checkpoint's `sha256` is that of every line before it.
pub fn verify_archive(path: &Path) -> StoreResult<ArchiveCheck> {
    let file = File::open(path).map_err(|e| io(format!("cannot read {}: {e}", path.display())))?;
    let mut sha = Sha256::new();
    let mut prev: Option<String> = None;
    let mut events = 0u64;
    let mut counts = [0u64; 3];
    let mut n = 0u64;
    let fail = |n: u64, why: String, events: u64| ArchiveCheck {
        events,
        broken: Some((n, why)),
        checkpoint: None,
    };
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(io)?;
        n += 1;
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            return Ok(fail(n, "not a JSON line".into(), events));
        };
        if v["schema_version"] != json!(ARCHIVE_VERSION) {
            return Ok(fail(n, "unknown schema_version".into(), events));
        }
        let kind = v["type"].as_str().unwrap_or("");
        match (kind, &prev) {
            ("archive", None) if n == 1 => {
                prev = v["start"].as_str().map(str::to_string);
            }
            (_, None) => {
                return Ok(fail(
                    n,
                    "the file does not start with its header".into(),
                    events,
                ));
            }
            ("event", Some(p)) => {
                let s = |k: &str| v[k].as_str().map(str::to_string);
                let r: RawEvent = (
                    v["seq"].as_i64().unwrap_or(0),
                    s("at").unwrap_or_default(),
                    s("event").unwrap_or_default(),
                    s("actor").unwrap_or_default(),
                    s("via"),
                    v["bottle_id"].as_i64(),
                    s("proposal_id"),
                    s("grant_id"),
                    s("kind"),
                    s("change"),
                    s("note"),
                    s("hash"),
                );
                let h = link_of(p, &r);
                if r.11.as_deref() != Some(h.as_str()) {
                    return Ok(fail(
                        n,
                        format!("event seq {} does not follow from the one before it", r.0),
                        events,
                    ));
                }
                prev = Some(h);
                events += 1;
            }
            ("proposal", _) => counts[0] += 1,
            ("grant", _) => counts[1] += 1,
            ("task", _) => counts[2] += 1,
            ("approval", _) | ("push_diff", _) => {}
            ("checkpoint", Some(p)) => {
                let digest = hex(&sha.clone().finalize());
                let agrees = v["sha256"].as_str() == Some(digest.as_str())
                    && v["through_hash"].as_str() == Some(p.as_str())
                    && v["events"] == json!(events)
                    && v["proposals"] == json!(counts[0])
                    && v["grants"] == json!(counts[1])
                    && v["tasks"] == json!(counts[2]);
                if !agrees {
                    return Ok(fail(
                        n,
                        "the checkpoint does not match the lines before it".into(),
                        events,
                    ));
                }
                return Ok(ArchiveCheck {
                    events,
                    broken: None,
                    checkpoint: Some(v),
                });
            }
            _ => return Ok(fail(n, format!("unknown line type {kind:?}"), events)),
        }
        sha.update(&line);
        sha.update(b"\n");
    }
    Ok(fail(
        n,
        "the file ends without its checkpoint".into(),
        events,
    ))
}
