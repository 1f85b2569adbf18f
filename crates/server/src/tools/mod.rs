//! The MCP tools: their definitions (names, schemas) and one module per tool, each with
//! `parse` (arguments to a typed call, or a `refused` answer naming the field) and `apply`.
//! An unknown tool name is a protocol error (-32602), decided by the caller.

pub mod check_proposal;
pub mod list_proposals;
pub mod propose_egress;
pub mod propose_git_push;
pub mod withdraw_proposal;

use serde_json::{Map, Value, json};
use supervise_protocol::{Tool, ToolAnnotations};
use supervise_store::{Bottle, Delivery, Kind, NewProposal, Proposed, StoreError};

use crate::App;
use crate::answer::{self, Answer};
use crate::waiters::Waited;

/// The tool names, in `tools/list` order.
pub const NAMES: [&str; 5] = [
    propose_egress::NAME,
    propose_git_push::NAME,
    check_proposal::NAME,
    list_proposals::NAME,
    withdraw_proposal::NAME,
];

/// One parsed call.
#[derive(Debug)]
pub enum Call {
    ProposeEgress(propose_egress::Args),
    ProposeGitPush(propose_git_push::Args),
    CheckProposal(check_proposal::Args),
    ListProposals,
    WithdrawProposal(withdraw_proposal::Args),
}

/// Parses a call of tool `name`: `None` for an unknown tool, `Some(Err)` for arguments that
/// are refused (a tool result, not a protocol error).
pub fn parse(name: &str, args: &Map<String, Value>) -> Option<Result<Call, Answer>> {
    Some(match name {
        propose_egress::NAME => propose_egress::parse(args).map(Call::ProposeEgress),
        propose_git_push::NAME => propose_git_push::parse(args).map(Call::ProposeGitPush),
        check_proposal::NAME => check_proposal::parse(args).map(Call::CheckProposal),
        list_proposals::NAME => list_proposals::parse(args).map(|()| Call::ListProposals),
        withdraw_proposal::NAME => withdraw_proposal::parse(args).map(Call::WithdrawProposal),
        _ => return None,
    })
}

/// Runs a parsed call for `bottle`.
pub async fn apply(app: &App, bottle: &Bottle, call: Call) -> Answer {
    match call {
        Call::ProposeEgress(a) => propose_egress::apply(app, bottle, a).await,
        Call::ProposeGitPush(a) => propose_git_push::apply(app, bottle, a).await,
        Call::CheckProposal(a) => check_proposal::apply(app, bottle, a).await,
        Call::ListProposals => list_proposals::apply(app, bottle).await,
        Call::WithdrawProposal(a) => withdraw_proposal::apply(app, bottle, a).await,
    }
}

/// Every tool's definition (with output schemas; [`Tool::for_version`] drops them for
/// revisions without).
pub fn definitions() -> Vec<Tool> {
    vec![
        propose_egress::definition(),
        propose_git_push::definition(),
        check_proposal::definition(),
        list_proposals::definition(),
        withdraw_proposal::definition(),
    ]
}

pub(crate) fn tool(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    read_only: bool,
) -> Tool {
    let mut t = Tool::new(name, description, input);
    t.title = Some(title.into());
    t.output_schema = Some(output);
    let mut ann = ToolAnnotations::default();
    ann.title = Some(title.into());
    ann.read_only_hint = Some(read_only);
    ann.destructive_hint = Some(false);
    ann.open_world_hint = Some(false);
    t.annotations = Some(ann);
    t
}

/// The output schema of the answers about one proposal.
pub(crate) fn proposal_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "proposal_id": { "type": "string" },
            "status": {
                "type": "string",
                "enum": ["pending", "approved", "modified", "rejected", "expired", "withdrawn", "unknown", "refused"]
            },
            "kind": { "type": "string", "enum": ["egress", "git-push"] },
            "proposal": { "type": "object", "description": "The change as proposed, with its justification." },
            "decision": {
                "type": "object",
                "properties": {
                    "change": { "type": ["object", "null"], "description": "The change granted; null when rejected." },
                    "note": { "type": ["string", "null"] },
                    "decided_by": { "type": "string" },
                    "decided_at": { "type": "string", "description": "RFC 3339" }
                }
            },
            "error": { "type": "string", "description": "Why the call was refused." },
            "field": { "type": "string", "description": "The argument to blame, when one is." }
        },
        "required": ["status"]
    })
}

pub(crate) const JUSTIFICATION_SCHEMA: &str =
    "Why the task needs this, for the human operator who decides (1-2000 characters).";

/// Reads a required string argument.
pub(crate) fn required_string(
    args: &Map<String, Value>,
    field: &str,
    tool: &str,
) -> Result<String, Answer> {
    match args.get(field) {
        None | Some(Value::Null) => Err(bad(field, "is required", tool)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(field, "must be a string", tool)),
    }
}

/// Refuses arguments the tool does not know (a typo must not silently change a request).
pub(crate) fn refuse_unknown(
    args: &Map<String, Value>,
    known: &[&str],
    tool: &str,
) -> Result<(), Answer> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(extra) => {
            let expected = if known.is_empty() {
                "it takes no arguments".to_string()
            } else {
                format!("expected: {}", known.join(", "))
            };
            Err(bad(
                extra,
                &format!("is not an argument of {tool} ({expected})"),
                tool,
            ))
        }
        None => Ok(()),
    }
}

/// A refusal blaming `field`.
pub(crate) fn bad(field: &str, message: &str, tool: &str) -> Answer {
    answer::refused(
        format!("invalid {field}: {message}"),
        Some(field),
        &format!("fix the `{field}` argument and call {tool} again."),
    )
}

/// The answer for a store failure that is nobody's input.
pub(crate) fn store_failure(e: &StoreError, tool: &str) -> Answer {
    match e {
        StoreError::Busy => answer::refused(
            "the proposal database is busy",
            None,
            &format!("call {tool} again in a few seconds."),
        ),
        other => {
            tracing::error!(error = %other, tool, "store failure");
            answer::refused(
                "the server could not reach its database",
                None,
                &format!("call {tool} again in a minute; tell your user if it keeps failing."),
            )
        }
    }
}

/// The input schema of the tools that take only a `proposal_id`.
pub(crate) fn proposal_id_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "proposal_id": {
                "type": "string",
                "description": "The proposal_id a propose-* call returned.",
                "minLength": 1
            }
        },
        "required": ["proposal_id"],
        "additionalProperties": false
    })
}

/// The `proposal_id` of a tool that takes only that: required, a string, not blank.
pub(crate) fn proposal_id_arg(args: &Map<String, Value>, tool: &str) -> Result<String, Answer> {
    refuse_unknown(args, &["proposal_id"], tool)?;
    let proposal_id = required_string(args, "proposal_id", tool)?
        .trim()
        .to_string();
    if proposal_id.is_empty() {
        return Err(bad("proposal_id", "must not be empty", tool));
    }
    Ok(proposal_id)
}

/// Files a proposal through the writer, then waits up to the grace window for a decision.
pub(crate) async fn file_and_wait(
    app: &App,
    bottle: &Bottle,
    kind: Kind,
    change: Value,
    justification: String,
    tool: &str,
) -> Answer {
    let filed = app
        .writer
        .propose(NewProposal {
            bottle_id: bottle.id,
            kind,
            change,
            justification,
        })
        .await;
    let p = match filed {
        Ok(Proposed::AutoRejected(p)) => return answer::auto_rejected(&p),
        Ok(Proposed::Created(p)) => p,
        Ok(Proposed::Repeated(p)) => p,
        Err(StoreError::Invalid { field, message }) => {
            let field = if field == "change" {
                "arguments".to_string()
            } else {
                field
            };
            return bad(&field, &message, tool);
        }
        Err(e @ StoreError::PendingCapReached { .. }) => {
            return answer::refused(
                e.to_string(),
                None,
                "wait for the operator to decide your open proposals (list-proposals shows them) before proposing more.",
            );
        }
        Err(e) => return store_failure(&e, tool),
    };
    if app.config.grace.is_zero() || *app.shutdown.borrow() {
        return answer::pending(&p);
    }
    let _place = match app.budget.try_acquire(bottle.id) {
        Ok(place) => place,
        Err(full) => {
            tracing::debug!(bottle = %bottle.slug, proposal = %p.id, ?full, "wait limit reached; answering pending at once");
            return answer::pending(&p);
        }
    };
    let deadline = tokio::time::Instant::now() + app.config.grace;
    let waited = app
        .waiters
        .wait(&app.store, bottle.id, &p.id, deadline, app.shutdown.clone())
        .await;
    match waited {
        Waited::Delivered(d) => match *d {
            Delivery::Decided(d) => {
                tracing::info!(bottle = %bottle.slug, proposal = %d.id, status = %d.status, "decision delivered while waiting");
                answer::delivered(&d)
            }
            Delivery::Expired(d) => answer::expired(&d),
            Delivery::Pending(d) => answer::pending(&d),
            Delivery::Unknown => answer::unknown(&p.id),
        },
        Waited::TimedOut | Waited::ShuttingDown => answer::pending(&p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_only_tools_refuse_the_same_bad_ids() {
        for tool in [check_proposal::NAME, withdraw_proposal::NAME] {
            for args in [
                json!({}),
                json!({"proposal_id": "   "}),
                json!({"proposal_id": 7}),
                json!({"proposal_id": "x", "extra": 1}),
            ] {
                let refused = match parse(tool, args.as_object().unwrap()) {
                    Some(Err(a)) => a,
                    other => panic!("{tool} {args}: expected a refusal, got {other:?}"),
                };
                assert_eq!(refused.status, Some("refused"), "{tool} {args}");
                let field = refused.structured["field"].as_str().unwrap_or("");
                assert!(
                    field == "proposal_id" || field == "extra",
                    "{tool} {args}: {field}"
                );
            }
            let ok = parse(tool, json!({"proposal_id": " abc "}).as_object().unwrap());
            assert!(matches!(ok, Some(Ok(_))), "{tool}");
        }
    }

    #[test]
    fn a_tool_without_arguments_says_so() {
        let args = json!({"bottle": "other"});
        let Some(Err(refused)) = parse(list_proposals::NAME, args.as_object().unwrap()) else {
            panic!("list-proposals takes no arguments");
        };
        assert!(
            refused.text.contains("(it takes no arguments)"),
            "{}",
            refused.text
        );
    }
}
