//! What the tools answer: a human-readable text ending with one "what to do next" line, and
//! the same facts as `structuredContent` (SPEC "MCP tools"). Store rows are converted here,
//! explicitly, into the JSON the agent sees.

mod allowed;
mod status;
mod structured;

pub(crate) use allowed::already_allowed;

use serde_json::{Map, Value, json};
use supervise_protocol::{
    CallToolResult, Content, ProtocolVersion, ServerInfoMeta, TextToolResult,
};
use supervise_store::present::describe;
use supervise_store::{Kind, Proposal, Status, StoreError};

pub(crate) use status::AnswerStatus;
use structured::ProposalForm;
pub(crate) use structured::Structured;

/// One tool answer, before it is shaped for a protocol revision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// The proposal's status, `Unknown` or `Refused`; `None` for list-proposals.
    pub(crate) status: Option<AnswerStatus>,
    pub(crate) text: String,
    pub(crate) structured: Structured,
}

impl Answer {
    /// `isError` is true exactly for these statuses.
    pub(crate) fn is_error(&self) -> bool {
        self.status.is_some_and(AnswerStatus::is_error)
    }

    /// The `tools/call` result for `version` (no `structuredContent` before 2025-06-18).
    pub(crate) fn into_result(self, version: ProtocolVersion) -> CallToolResult {
        let is_error = self.is_error();
        CallToolResult::new(vec![Content::text(self.text)])
            .with_structured_content(self.structured.into_value())
            .with_is_error(is_error)
            .for_version(version)
    }

    /// The `tools/call` result for `version`, written to the wire straight from this answer:
    /// the bytes of [`Answer::into_result_value`] (and in 2026-07-28 of `modern_result` with
    /// the server's identity, which `server_info` carries) without building that tree.
    pub(crate) fn to_wire<'a>(
        &'a self,
        version: ProtocolVersion,
        server_info: Option<&'a ServerInfoMeta>,
    ) -> TextToolResult<'a, Structured> {
        TextToolResult {
            text: &self.text,
            structured: version.has_structured_content().then_some(&self.structured),
            is_error: self.is_error(),
            modern: server_info,
        }
    }

    /// [`Answer::into_result`] as the JSON it serialises to, built by moving the text and
    /// the structured content into place: the reference [`Answer::to_wire`] is held to.
    #[cfg(test)]
    pub(crate) fn into_result_value(self, version: ProtocolVersion) -> Value {
        let is_error = self.is_error();
        let mut text = Map::new();
        text.insert("type".into(), Value::from("text"));
        text.insert("text".into(), Value::String(self.text));
        let mut out = Map::new();
        out.insert("content".into(), Value::Array(vec![Value::Object(text)]));
        if version.has_structured_content() {
            out.insert("structuredContent".into(), self.structured.into_value());
        }
        out.insert("isError".into(), Value::Bool(is_error));
        Value::Object(out)
    }
}

/// What the agent can rely on after an approval: where the grant takes effect and until
/// when ("egress to pypi.org:443 is allowed through the proxy from now on, until 18:00 UTC").
fn relied_on(kind: Kind, granted: &str, d: Option<&supervise_store::Decision>) -> String {
    let through = match kind {
        Kind::Egress => "the proxy",
        Kind::GitPush => "the git gate",
    };
    let until = match d.and_then(|d| d.grant_expires_at.as_ref()) {
        None => "until revoked".to_string(),
        Some(t) => {
            // RFC 3339 with milliseconds: 2026-12-01T18:00:05.000Z.
            let (date, time) = (t.get(..10).unwrap_or(t), t.get(11..19).unwrap_or(""));
            let time = time.strip_suffix(":00").unwrap_or(time);
            let today = supervise_store::Timestamp::now();
            if today.get(..10) == Some(date) {
                format!("until {time} UTC")
            } else {
                format!("until {date} {time} UTC")
            }
        }
    };
    format!("{granted} is allowed through {through} from now on, {until}")
}

/// The structured form of a proposal: `proposal_id`, `status`, `kind`, `proposal` (the
/// change plus justification) and, once decided, `decision`.
pub(crate) fn proposal_json(p: &Proposal, status: AnswerStatus) -> Value {
    structured(
        p.id.to_string(),
        status,
        p.kind,
        p.change.as_object().cloned().unwrap_or_default(),
        p.justification.clone(),
        p.decision.as_ref(),
    )
}

fn structured(
    id: String,
    status: AnswerStatus,
    kind: Kind,
    mut proposal: Map<String, Value>,
    justification: String,
    decision: Option<&supervise_store::Decision>,
) -> Value {
    proposal.insert("justification".into(), Value::String(justification));
    let mut out = Map::new();
    out.insert("proposal_id".into(), Value::String(id));
    out.insert("status".into(), Value::from(status.as_str()));
    out.insert("kind".into(), Value::from(kind.as_str()));
    out.insert("proposal".into(), Value::Object(proposal));
    if let Some(d) = decision {
        out.insert(
            "decision".into(),
            json!({
                "change": d.change,
                "note": d.note,
                "decided_by": d.decided_by,
                "decided_at": d.decided_at,
            }),
        );
    }
    Value::Object(out)
}

/// A list item: the proposal object plus `created_at` and `hits`.
pub(crate) fn list_item(p: &Proposal) -> Value {
    let mut v = proposal_json(p, p.status.into());
    if let Value::Object(m) = &mut v {
        m.insert("created_at".into(), Value::from(p.created_at.clone()));
        m.insert("hits".into(), Value::from(p.hits));
        if let Some(exp) = &p.expires_at {
            m.insert("expires_at".into(), Value::from(exp.clone()));
        }
    }
    v
}

fn answer(status: AnswerStatus, p: &Proposal, body: String, next: String) -> Answer {
    Answer {
        status: Some(status),
        text: with_next(body, &next),
        structured: Structured::Json(proposal_json(p, status)),
    }
}

/// An answer's text: what happened, then its one "what to do next" line.
fn with_next(mut body: String, next: &str) -> String {
    body.push_str("\nNext: ");
    body.push_str(next);
    body
}

/// Still undecided: the id and the pointer to `check-proposal`. Takes the proposal, the
/// answer of every pending poll, so its fields move into the answer.
pub(crate) fn pending(p: Proposal) -> Answer {
    use std::fmt::Write as _;
    // Sized for the whole text, the next line included, so it is written in one buffer.
    let mut body = String::with_capacity(320);
    let _ = write!(
        body,
        "Proposal {id} ({what}) is pending: the operator has not decided it yet.",
        id = p.id,
        what = describe(p.kind, &p.change)
    );
    match &p.expires_at {
        Some(e) => {
            let _ = write!(body, " It stays queued until {e} unless decided.");
        }
        None => body.push_str(" It stays queued until decided."),
    }
    let next = format!(
        "poll check-proposal with proposal_id {} in a minute; do not propose again.",
        p.id
    );
    Answer {
        status: Some(AnswerStatus::Pending),
        text: with_next(body, &next),
        structured: Structured::Proposal(Box::new(ProposalForm {
            id: p.id.into(),
            status: AnswerStatus::Pending,
            kind: p.kind,
            change: match p.change {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            justification: p.justification,
            decision: p.decision,
        })),
    }
}

/// A delivered decision (approved, modified or rejected), or an expiry.
pub(crate) fn delivered(p: &Proposal) -> Answer {
    let what = describe(p.kind, &p.change);
    let d = p.decision.as_ref();
    let by = d
        .map(|d| format!(" by {} at {}", d.decided_by, d.decided_at))
        .unwrap_or_default();
    let note = d
        .and_then(|d| d.note.clone())
        .map(|n| format!(" Note: {n}"))
        .unwrap_or_default();
    match p.status {
        Status::Approved => answer(
            AnswerStatus::Approved,
            p,
            format!("Proposal {} ({what}) was approved{by}.{note}", p.id),
            format!("{}; go ahead.", relied_on(p.kind, &what, d)),
        ),
        Status::Modified => {
            let granted = d
                .and_then(|d| d.change.as_ref())
                .map(|c| describe(p.kind, c))
                .unwrap_or_else(|| what.clone());
            answer(
                AnswerStatus::Modified,
                p,
                format!(
                    "Proposal {} ({what}) was approved with a change{by}: the operator granted \
                     {granted} instead.{note}",
                    p.id
                ),
                format!(
                    "{} (not {what}); adapt to it.",
                    relied_on(p.kind, &granted, d)
                ),
            )
        }
        Status::Rejected => {
            let reason = d
                .and_then(|d| d.note.clone())
                .unwrap_or_else(|| "no reason given".into());
            answer(
                AnswerStatus::Rejected,
                p,
                format!("Proposal {} ({what}) was rejected{by}.{note}", p.id),
                format!("rejected: {reason}; do not retry the same change."),
            )
        }
        Status::Expired => expired(p),
        Status::Withdrawn => answer(
            AnswerStatus::Withdrawn,
            p,
            format!("Proposal {} ({what}) was withdrawn.", p.id),
            "propose again only if you still need it.".into(),
        ),
        Status::Pending => pending(p.clone()),
    }
}

/// Undecided past its expiry (now archived).
pub(crate) fn expired(p: &Proposal) -> Answer {
    let what = describe(p.kind, &p.change);
    answer(
        AnswerStatus::Expired,
        p,
        format!(
            "Proposal {} ({what}) expired: no operator decided it in time. It is no longer queued.",
            p.id
        ),
        "propose it again only if you still need it, with a clear justification.".into(),
    )
}

/// An identical change was rejected within the cooldown: answered with that rejection.
pub(crate) fn auto_rejected(p: &Proposal) -> Answer {
    let what = describe(p.kind, &p.change);
    let reason = p
        .decision
        .as_ref()
        .and_then(|d| d.note.clone())
        .unwrap_or_else(|| "no reason given".into());
    let by = p
        .decision
        .as_ref()
        .map(|d| format!(" by {} at {}", d.decided_by, d.decided_at))
        .unwrap_or_default();
    answer(
        AnswerStatus::Rejected,
        p,
        format!(
            "The same change ({what}) was rejected recently{by} as proposal {}; nothing new was \
             queued. Note: {reason}",
            p.id
        ),
        format!("rejected: {reason}; do not retry the same change."),
    )
}

/// Withdrawn at the agent's request.
pub(crate) fn withdrawn(p: &Proposal) -> Answer {
    let what = describe(p.kind, &p.change);
    answer(
        AnswerStatus::Withdrawn,
        p,
        format!(
            "Proposal {} ({what}) is withdrawn as you asked; the operator will not see it in the queue.",
            p.id
        ),
        "nothing to poll; propose again if you need it after all.".into(),
    )
}

/// Withdrawn while a call waited on it: by `withdraw-proposal` from another call, or because
/// the bottle was removed.
pub(crate) fn withdrawn_while_waiting(p: &Proposal) -> Answer {
    let what = describe(p.kind, &p.change);
    answer(
        AnswerStatus::Withdrawn,
        p,
        format!(
            "Proposal {} ({what}) was withdrawn while this call waited (by withdraw-proposal, \
             or because the bottle was removed); the operator will not decide it.",
            p.id
        ),
        "nothing to poll; propose again if you still need it.".into(),
    )
}

/// No open proposal of this bottle has the id.
pub(crate) fn unknown(id: &str) -> Answer {
    Answer {
        status: Some(AnswerStatus::Unknown),
        text: format!(
            "No open proposal {id} for this bottle: the id is unknown, belongs to another \
             bottle, or its answer was already delivered (a decision is delivered once).\nNext: \
             do not poll this id again; call list-proposals to see your open proposals."
        ),
        structured: Structured::Json(
            json!({ "proposal_id": id, "status": AnswerStatus::Unknown.as_str() }),
        ),
    }
}

/// The call was refused: invalid input, or a limit reached. `field` names the argument to
/// blame, when one is.
pub(crate) fn refused(error: impl Into<String>, field: Option<&str>, next: &str) -> Answer {
    let error = error.into();
    let mut structured = Map::new();
    structured.insert("status".into(), Value::from(AnswerStatus::Refused.as_str()));
    structured.insert("error".into(), Value::from(error.clone()));
    if let Some(f) = field {
        structured.insert("field".into(), Value::from(f));
    }
    Answer {
        status: Some(AnswerStatus::Refused),
        text: with_next(format!("Refused: {error}"), next),
        structured: Structured::Json(Value::Object(structured)),
    }
}

/// A refusal blaming the argument `field` of `tool`.
pub(crate) fn bad_argument(field: &str, message: &str, tool: &str) -> Answer {
    refused(
        format!("invalid {field}: {message}"),
        Some(field),
        &format!("fix the `{field}` argument and call {tool} again."),
    )
}

/// The answer for a store failure that is nobody's input.
pub(crate) fn store_failure(e: &StoreError, tool: &str) -> Answer {
    match e {
        StoreError::Busy => refused(
            "the proposal database is busy",
            None,
            &format!("call {tool} again in a few seconds."),
        ),
        // The operator has to act on the file (the cause is in the error); retrying alone
        // will not help until then.
        StoreError::FileReplaced(_)
        | StoreError::ReadOnly(_)
        | StoreError::DiskFull(_)
        | StoreError::WorldWritable(_)
        | StoreError::Symlink(_) => {
            tracing::error!(error = %e, tool, "store failure");
            refused(
                format!("the server's database could not serve this call: {e}"),
                None,
                &format!(
                    "tell your user the operator must fix the database; call {tool} again once \
                     they have."
                ),
            )
        }
        other => {
            tracing::error!(error = %other, tool, "store failure");
            refused(
                format!("the server's database could not serve this call: {other}"),
                None,
                &format!("call {tool} again in a minute; tell your user if it keeps failing."),
            )
        }
    }
}

/// The answer to `list-proposals`.
pub(crate) fn list(proposals: &[Proposal]) -> Answer {
    let items: Vec<Value> = proposals.iter().map(list_item).collect();
    let mut text = String::new();
    if proposals.is_empty() {
        text.push_str("You have no open proposals.\nNext: propose a change when you need one.");
    } else {
        text.push_str(&format!(
            "{} open proposal(s), oldest first:\n",
            proposals.len()
        ));
        for p in proposals {
            text.push_str(&format!(
                "- {} [{}] {} (asked {} time(s), since {})\n",
                p.id,
                p.status,
                describe(p.kind, &p.change),
                p.hits,
                p.created_at
            ));
        }
        let decided = proposals.iter().any(|p| p.status != Status::Pending);
        text.push_str(if decided {
            "Next: call check-proposal with each decided id to receive its decision; do not \
             propose the pending ones again."
        } else {
            "Next: wait for the operator; poll check-proposal with an id in a minute; do not \
             propose these again."
        });
    }
    Answer {
        status: None,
        text,
        structured: Structured::Json(json!({ "proposals": items })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_error_exactly_for_the_failing_statuses() {
        for (status, want) in [
            (AnswerStatus::Pending, false),
            (AnswerStatus::Approved, false),
            (AnswerStatus::Modified, false),
            (AnswerStatus::Rejected, true),
            (AnswerStatus::Expired, true),
            (AnswerStatus::Withdrawn, true),
            (AnswerStatus::Unknown, true),
            (AnswerStatus::Refused, true),
        ] {
            let a = Answer {
                status: Some(status),
                text: String::new(),
                structured: Structured::Json(Value::Null),
            };
            assert_eq!(a.is_error(), want, "{status}");
        }
    }

    #[test]
    fn the_result_value_is_what_the_typed_result_serialises_to() {
        let answers = [
            refused("invalid port: too big", Some("port"), "fix it."),
            unknown("019ad3c2-7f10-7b4e-9a51-4c2d8e6f0a11"),
        ];
        for version in [
            ProtocolVersion::V2025_03_26,
            ProtocolVersion::V2025_11_25,
            ProtocolVersion::V2026_07_28,
        ] {
            for a in &answers {
                let typed = serde_json::to_value(a.clone().into_result(version)).unwrap();
                assert_eq!(a.clone().into_result_value(version), typed, "{version:?}");
            }
        }
    }

    #[test]
    fn refused_names_the_field_and_ends_with_next() {
        let a = refused("invalid port: too big", Some("port"), "fix it.");
        assert_eq!(
            a.structured.to_value(),
            json!({"status": "refused", "error": "invalid port: too big", "field": "port"})
        );
        assert!(a.text.ends_with("\nNext: fix it."));
        let r = a.into_result(ProtocolVersion::V2025_03_26);
        assert!(r.structured_content.is_none());
        assert_eq!(r.is_error, Some(true));
    }

    #[test]
    fn approvals_say_what_the_agent_can_rely_on() {
        let d = |exp: Option<&str>| supervise_store::Decision {
            change: None,
            note: None,
            decided_by: "op".into(),
            via: Some(supervise_store::Via::Cli),
            decided_at: supervise_store::Timestamp::now(),
            grant_id: None,
            grant_expires_at: exp.map(|e| e.parse().unwrap()),
        };
        let what = "egress to pypi.org:443";
        assert_eq!(
            relied_on(Kind::Egress, what, Some(&d(None))),
            "egress to pypi.org:443 is allowed through the proxy from now on, until revoked"
        );
        assert_eq!(
            relied_on(
                Kind::Egress,
                what,
                Some(&d(Some("2999-01-02T18:00:00.000Z")))
            ),
            "egress to pypi.org:443 is allowed through the proxy from now on, until 2999-01-02 18:00 UTC"
        );
        let today = &supervise_store::Timestamp::now()[..10];
        let at = format!("{today}T18:00:05.000Z");
        assert!(
            relied_on(Kind::GitPush, "push of x to origin", Some(&d(Some(&at))))
                .ends_with("through the git gate from now on, until 18:00:05 UTC")
        );
    }
}
