//! The answer to asking for what a grant in force already allows: approved at once from
//! the grant, with no proposal (`already_allowed`, `grant_id`, `proposal_id: null`).

use serde_json::{Map, Value};
use supervise_store::Grant;
use supervise_store::present::describe;

use super::{Answer, AnswerStatus, with_next};

/// `status: approved`, the text naming the grant and its end.
pub(crate) fn already_allowed(grant: &Grant, justification: String) -> Answer {
    let what = describe(grant.kind, &grant.change);
    let until = match &grant.expires_at {
        Some(end) => format!("until {end}"),
        None => "until revoked".to_owned(),
    };
    let body = format!(
        "Already allowed: grant {} ({what}) covers this, {until}. Nothing was queued.",
        grant.id
    );
    let mut proposal = grant.change.as_object().cloned().unwrap_or_default();
    proposal.insert("justification".into(), Value::String(justification));
    let mut out = Map::new();
    out.insert("proposal_id".into(), Value::Null);
    out.insert(
        "status".into(),
        Value::from(AnswerStatus::Approved.as_str()),
    );
    out.insert("kind".into(), Value::from(grant.kind.as_str()));
    out.insert("already_allowed".into(), Value::Bool(true));
    out.insert("grant_id".into(), Value::from(grant.id.as_str()));
    out.insert(
        "grant_expires_at".into(),
        grant
            .expires_at
            .as_ref()
            .map_or(Value::Null, |t| Value::from(t.as_str())),
    );
    out.insert("proposal".into(), Value::Object(proposal));
    Answer {
        status: Some(AnswerStatus::Approved),
        text: with_next(body, &format!("go ahead: {what} is allowed {until}.")),
        structured: super::Structured::Json(Value::Object(out)),
    }
}
