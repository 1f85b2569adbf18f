//! Counting approvals toward a proposal's quorum, inside the decision's write transaction:
//! each distinct operator's approval of the change under approval is one row of
//! `approvals`; a modify replaces that change and starts a new count (a new round) with the
//! modifier's own approval as its first.

use serde_json::Value;
use sqlx::AnyConnection;

use super::trail::{NewEvent, actor_of, record};
use crate::change;
use crate::error::{StoreError, StoreResult};
use crate::model::{Actor, EventKind, Proposal, Timestamp, Verdict};

/// What an approve or modify did to a proposal that needs more than one approval.
pub(super) enum Counted {
    /// Counted, and more approvals are needed: the proposal stays pending.
    Short,
    /// The last approval needed was counted: decide the proposal with this change.
    Reached(Value),
}

/// Counts `by`'s approve (or modify) of `p` (pending, [`Quorum::is_counted`]) and records
/// `approval-added`. The same operator approving the same round again is
/// [`StoreError::AlreadyApproved`], with nothing written.
///
/// [`Quorum::is_counted`]: crate::model::Quorum::is_counted
pub(super) async fn count(
    conn: &mut AnyConnection,
    p: &Proposal,
    verdict: &Verdict,
    by: &Actor,
    note: Option<&str>,
    now: &Timestamp,
) -> StoreResult<Counted> {
    let round: i64 = sqlx::query_scalar("SELECT approval_round FROM proposals WHERE id = $1")
        .bind(p.id.as_str())
        .fetch_one(&mut *conn)
        .await?;
    let current = p.quorum.change.as_ref().unwrap_or(&p.change);
    let (round, change, given) = match verdict {
        Verdict::Modify(patch) => {
            let merged = change::normalise(p.kind, &change::merge(current, patch))?;
            let round = round + 1;
            sqlx::query(
                "UPDATE proposals SET approval_round = $1, approving_change = $2 \
                 WHERE id = $3 AND status = 'pending'",
            )
            .bind(round)
            .bind(merged.to_string())
            .bind(p.id.as_str())
            .execute(&mut *conn)
            .await?;
            (round, merged, 1)
        }
        _ => {
            let already: Option<i64> = sqlx::query_scalar(
                "SELECT 1 FROM approvals WHERE proposal_id = $1 AND round = $2 AND operator = $3",
            )
            .bind(p.id.as_str())
            .bind(round)
            .bind(by.name.as_str())
            .fetch_optional(&mut *conn)
            .await?;
            if already.is_some() {
                return Err(StoreError::AlreadyApproved {
                    id: p.id.to_string(),
                    operator: by.name.clone(),
                    given: p.quorum.given,
                    needed: p.quorum.needed,
                });
            }
            (round, current.clone(), p.quorum.given + 1)
        }
    };
    let change_text = change.to_string();
    sqlx::query(
        "INSERT INTO approvals (proposal_id, round, operator, change, at, via, note) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(p.id.as_str())
    .bind(round)
    .bind(by.name.as_str())
    .bind(change_text.as_str())
    .bind(now.as_str())
    .bind(by.via.as_str())
    .bind(note)
    .execute(&mut *conn)
    .await?;
    let text = count_note(
        given,
        p.quorum.needed,
        matches!(verdict, Verdict::Modify(_)),
        note,
    );
    record(
        conn,
        now,
        NewEvent {
            bottle_id: Some(p.bottle_id),
            proposal_id: Some(p.id.as_str()),
            kind: Some(p.kind),
            change: Some(&change_text),
            note: Some(&text),
            via: Some(by.via),
            ..NewEvent::new(EventKind::ApprovalAdded, &actor_of(by))
        },
    )
    .await?;
    Ok(if given >= p.quorum.needed {
        Counted::Reached(change)
    } else {
        Counted::Short
    })
}

/// The note of an `approval-added` event: `1 of 2`, `1 of 2 for a modified change`, then
/// the operator's own note after a colon.
fn count_note(given: u32, needed: u32, modified: bool, note: Option<&str>) -> String {
    let mut text = format!("{given} of {needed}");
    if modified {
        text.push_str(" for a modified change");
    }
    if let Some(note) = note {
        text.push_str(": ");
        text.push_str(note);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::count_note;

    #[test]
    fn the_note_says_how_many_of_how_many() {
        assert_eq!(count_note(1, 2, false, None), "1 of 2");
        assert_eq!(
            count_note(1, 3, true, Some("narrowed")),
            "1 of 3 for a modified change: narrowed"
        );
    }
}
