//! Rules versions in the database and the decisions they make at filing time. `rules set`
//! appends a version (who, when, SHA-256, event `rules-changed`); every filing reads the
//! newest version number (one primary-key lookup inside its write transaction) and parses
//! the text only when the number moved, so every process on the database decides by the
//! newest version from its next filing, without watching a file.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use tracing::instrument;

use super::Store;
use super::records::{insert_grant, load_proposal};
use super::rows::{self, PROPOSAL_COLUMNS, ProposalRow, RULES_ACTOR};
use super::trail::{NewEvent, actor_bottle, actor_of, record, record_delivered};
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, EventKind, Proposal, Status, Timestamp};
use crate::rules::{Evaluation, Facts, Outcome, RuleSet};

/// One stored rules version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesVersion {
    /// 1, 2, ... in the order set.
    pub version: i64,
    /// The file as given (empty: no rules).
    pub text: String,
    /// SHA-256 of `text`, lowercase hex.
    pub sha256: String,
    /// `operator:NAME` of whoever set it.
    pub set_by: String,
    pub set_at: Timestamp,
}

/// The rules a filing decides by: the newest version, parsed.
#[derive(Debug)]
pub struct InForce {
    pub version: i64,
    pub sha256: String,
    pub rules: RuleSet,
}

impl InForce {
    /// How the trail names the version: `rules v3 sha256:HEX`.
    pub fn provenance(&self) -> String {
        format!("rules v{} sha256:{}", self.version, self.sha256)
    }
}

/// The SHA-256 of a rules text, lowercase hex.
pub fn rules_sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

type VersionRow = (i64, String, String, String, String);

fn version_of((version, text, sha256, set_by, set_at): VersionRow) -> StoreResult<RulesVersion> {
    let set_at = rows::word("rules_versions", &version.to_string(), "set_at", &set_at)?;
    Ok(RulesVersion {
        version,
        text,
        sha256,
        set_by,
        set_at,
    })
}

impl Store {
    /// The proposals `rules test` replays: every one filed at or after `since` (all of
    /// them for `None`), of every host, oldest first. The window is the query's, so
    /// proposals filed before it are not read.
    pub async fn filed_since(&self, since: Option<&Timestamp>) -> StoreResult<Vec<Proposal>> {
        let now = Timestamp::now();
        let mut conn = self.inner.pool.acquire().await?;
        let rows: Vec<ProposalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{PROPOSAL_COLUMNS} WHERE ($1 IS NULL OR p.created_at >= $1) ORDER BY p.created_at, p.id"
        )))
        .bind(since.map(Timestamp::as_str))
        .fetch_all(&mut *conn)
        .await?;
        rows.into_iter().map(|r| r.at(&now)).collect()
    }

    /// Stores `text` as the new rules version after checking it (see [`RuleSet::parse`]);
    /// an empty text removes every rule. Admins only. Records `rules-changed` (note: the
    /// version and its SHA-256). Every process on the database decides by it from its next
    /// filing.
    #[instrument(skip(self, text, by), fields(operator = %by.name), err)]
    pub async fn set_rules(&self, text: &str, by: &Actor) -> StoreResult<RulesVersion> {
        if !by.is_admin() {
            return Err(StoreError::forbidden(by, "set rules"));
        }
        RuleSet::parse(text).map_err(|e| StoreError::Invalid {
            field: "rules".into(),
            message: e.to_string(),
        })?;
        let sha256 = rules_sha256(text);
        let set_by = actor_of(by);
        let mut w = self.write().await?;
        let now = Timestamp::now();
        let version: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) + 1 FROM rules_versions")
                .fetch_one(w.conn())
                .await?;
        sqlx::query(
            "INSERT INTO rules_versions (version, text, sha256, set_by, set_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(version)
        .bind(text)
        .bind(&sha256)
        .bind(&set_by)
        .bind(now.as_str())
        .execute(w.conn())
        .await?;
        let note = if text.trim().is_empty() {
            format!("rules v{version} (empty) sha256:{sha256}")
        } else {
            format!("rules v{version} sha256:{sha256}")
        };
        record(
            w.conn(),
            &now,
            NewEvent {
                note: Some(&note),
                via: Some(by.via),
                ..NewEvent::new(EventKind::RulesChanged, &set_by)
            },
        )
        .await?;
        w.commit().await?;
        tracing::info!(version, sha256, operator = %by.name, "rules set");
        Ok(RulesVersion {
            version,
            text: text.to_string(),
            sha256,
            set_by,
            set_at: now,
        })
    }

    /// Rules version `version`, or the newest (`None`); `Ok(None)` when there is none.
    pub async fn rules_version(&self, version: Option<i64>) -> StoreResult<Option<RulesVersion>> {
        let mut conn = self.inner.pool.acquire().await?;
        let row: Option<VersionRow> = sqlx::query_as(
            "SELECT version, text, sha256, set_by, set_at FROM rules_versions \
             WHERE version = COALESCE($1, (SELECT MAX(version) FROM rules_versions))",
        )
        .bind(version)
        .fetch_optional(&mut *conn)
        .await?;
        row.map(version_of).transpose()
    }

    /// The rules in force now, parsed (what the next filing decides by).
    pub async fn rules_in_force(&self) -> StoreResult<Option<Arc<InForce>>> {
        let mut conn = self.inner.pool.acquire().await?;
        self.in_force(&mut conn).await
    }

    /// The newest rules version, from the cache when its number has not moved. `None`:
    /// no rules (never set, or set empty, or unreadable by this build: logged, and
    /// humans decide).
    pub(super) async fn in_force(
        &self,
        conn: &mut AnyConnection,
    ) -> StoreResult<Option<Arc<InForce>>> {
        let newest: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM rules_versions")
                .fetch_one(&mut *conn)
                .await?;
        let cached = |slot: &Option<(i64, Option<Arc<InForce>>)>| match slot {
            Some((v, set)) if *v == newest => Some(set.clone()),
            _ => None,
        };
        if let Some(set) = cached(&self.inner.rules.lock().expect("not poisoned")) {
            return Ok(set);
        }
        let loaded = if newest == 0 {
            None
        } else {
            let (text, sha256): (String, String) =
                sqlx::query_as("SELECT text, sha256 FROM rules_versions WHERE version = $1")
                    .bind(newest)
                    .fetch_one(&mut *conn)
                    .await?;
            match RuleSet::parse(&text) {
                Ok(rules) if !rules.rules().is_empty() => Some(Arc::new(InForce {
                    version: newest,
                    sha256,
                    rules,
                })),
                Ok(_) => None,
                Err(e) => {
                    tracing::error!(version = newest, error = %e, "rules version does not parse: humans decide every proposal");
                    None
                }
            }
        };
        *self.inner.rules.lock().expect("not poisoned") = Some((newest, loaded.clone()));
        Ok(loaded)
    }
}

/// The facts of a freshly filed proposal, for the rules.
pub(super) fn facts<'a>(p: &'a Proposal, now: &Timestamp) -> Facts<'a> {
    Facts {
        slug: &p.bottle,
        host: &p.host,
        kind: p.kind,
        change: &p.change,
        flags: &p.flags,
        hits: p.hits,
        justification: &p.justification,
        time: now.to_time().unix_timestamp(),
    }
}

/// The actor of a rule's decision or match: `rules:ID`. Its rows store no `via` (the
/// columns' CHECK lists predate rules); they read back as `via: rules` (`rows::via_of`).
pub fn actor_rule(id: &str) -> String {
    format!("{RULES_ACTOR}{id}")
}

/// Inside the filing transaction, after `p` was inserted pending: records each shadow
/// match (`rule-matched`, what it would have decided) and applies an automatic outcome
/// (the decision, its grant, its event, all by `rules:ID`, read as via `rules`, noting the version
/// and hash). With `deliver`, an automatic decision is also delivered (archived,
/// `delivered`): the caller hands it to the agent on the same call. Returns the proposal
/// as it now reads, and whether a rule decided it.
pub(super) async fn apply(
    conn: &mut AnyConnection,
    now: &Timestamp,
    p: Proposal,
    in_force: &InForce,
    eval: &Evaluation,
    deliver: bool,
) -> StoreResult<(Proposal, bool)> {
    let provenance = in_force.provenance();
    let change_text = p.change.to_string();
    for m in &eval.shadow {
        let note = format!("shadow: would {}; {provenance}", would(&m.would));
        let actor = actor_rule(&m.rule);
        record(
            conn,
            now,
            NewEvent {
                bottle_id: Some(p.bottle_id),
                proposal_id: Some(&p.id),
                kind: Some(p.kind),
                change: Some(&change_text),
                note: Some(&note),
                ..NewEvent::new(EventKind::RuleMatched, &actor)
            },
        )
        .await?;
    }
    let (rule, status, event, note, grant_for) = match &eval.outcome {
        Outcome::Forbid { rule, note } => (
            rule,
            Status::Rejected,
            EventKind::Rejected,
            note.clone(),
            None,
        ),
        Outcome::Permit { rule, grant } => {
            (rule, Status::Approved, EventKind::Approved, None, *grant)
        }
        // The quorum of approvals is the humans': N is fixed on the proposal as it is filed.
        Outcome::Quorum(n) => {
            let mut p = p;
            if *n > p.quorum.needed {
                sqlx::query(
                    "UPDATE proposals SET quorum = $1 WHERE id = $2 AND status = 'pending'",
                )
                .bind(i64::from(*n))
                .bind(p.id.as_str())
                .execute(&mut *conn)
                .await?;
                p.quorum.needed = *n;
            }
            return Ok((p, false));
        }
        Outcome::Human => return Ok((p, false)),
    };
    let actor = actor_rule(rule);
    let granted = (status == Status::Approved).then_some(change_text.as_str());
    sqlx::query(
        "UPDATE proposals SET status = $1, decided_at = $2, decided_by = $3, decided_via = $4, \
         decision_note = $5, decision_change = $6 WHERE id = $7 AND status = 'pending'",
    )
    .bind(status.as_str())
    .bind(now.as_str())
    .bind(&actor)
    .bind(Option::<&str>::None)
    .bind(note.as_deref())
    .bind(granted)
    .bind(p.id.as_str())
    .execute(&mut *conn)
    .await?;
    let grant_id = match granted {
        Some(change) => Some(insert_grant(conn, &p, change, &actor, now, grant_for).await?),
        None => None,
    };
    let event_note = match &note {
        Some(n) => format!("{n} ({provenance})"),
        None => provenance.clone(),
    };
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(&p.id),
            grant_id: grant_id.as_deref(),
            kind: Some(p.kind),
            change: granted,
            note: Some(&event_note),
            ..NewEvent::new(event, &actor)
        },
    )
    .await?;
    let mut decided = load_proposal(conn, &p.id, now)
        .await?
        .ok_or_else(|| StoreError::ProposalNotFound(p.id.to_string()))?;
    if deliver {
        sqlx::query("UPDATE proposals SET archived_at = $1 WHERE id = $2 AND archived_at IS NULL")
            .bind(now.as_str())
            .bind(decided.id.as_str())
            .execute(&mut *conn)
            .await?;
        record_delivered(conn, now, &decided, &actor_bottle(&decided.bottle)).await?;
        decided.archived_at = Some(now.clone());
    }
    tracing::info!(bottle = %decided.bottle, proposal = %decided.id, status = %status, rule = %rule, version = in_force.version, "proposal decided by a rule");
    Ok((decided, true))
}

/// What a shadow match would have done, in words.
fn would(o: &Outcome) -> String {
    match o {
        Outcome::Human => "go to a human (a never-automatic flag)".into(),
        Outcome::Quorum(n) => format!("need {n} approvals"),
        other => other.describe(),
    }
}
