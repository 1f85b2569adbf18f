//! The MCP tools: their definitions (names, schemas) and one module per tool, each with
//! `parse` (arguments to a typed call, or a `refused` answer naming the field) and `apply`.
//! An unknown tool name is a protocol error (-32602), decided by the caller.

mod args;
mod check_proposal;
mod list_proposals;
mod propose_egress;
mod propose_git_push;
mod schema;
mod withdraw_proposal;

use serde_json::{Map, Value};
use supervise_protocol::Tool;
use supervise_store::Bottle;

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;
use crate::grace::{Filed, Wait};

/// The tool names, in `tools/list` order.
pub(crate) const NAMES: [&str; 5] = [
    propose_egress::NAME,
    propose_git_push::NAME,
    check_proposal::NAME,
    list_proposals::NAME,
    withdraw_proposal::NAME,
];

/// One parsed call.
#[derive(Debug, Clone)]
pub(crate) enum Call {
    ProposeEgress(propose_egress::Args),
    ProposeGitPush(propose_git_push::Args),
    CheckProposal(check_proposal::Args),
    ListProposals,
    WithdrawProposal(withdraw_proposal::Args),
}

/// Parses a call of tool `name`: `None` for an unknown tool, `Some(Err)` for arguments that
/// are refused (a tool result, not a protocol error).
pub(crate) fn parse(name: &str, args: &Map<String, Value>) -> Option<Result<Call, Answer>> {
    Some(match name {
        propose_egress::NAME => propose_egress::parse(args).map(Call::ProposeEgress),
        propose_git_push::NAME => propose_git_push::parse(args).map(Call::ProposeGitPush),
        check_proposal::NAME => check_proposal::parse(args).map(Call::CheckProposal),
        list_proposals::NAME => list_proposals::parse(args).map(|()| Call::ListProposals),
        withdraw_proposal::NAME => withdraw_proposal::parse(args).map(Call::WithdrawProposal),
        _ => return None,
    })
}

/// Runs a parsed call for `bottle`; a proposal tool answers with a task when `wait` says
/// the call asked for one. When the store refuses `bottle` as a removed generation (a stale
/// attribution), the address is attributed again, once, and the call runs for the bottle
/// that has it now, or is refused when none does.
pub(crate) async fn apply(app: &App, bottle: &Bottle, call: Call, wait: Wait) -> Filed {
    let retry = call.clone();
    if let Ok(answer) = apply_as(app, bottle, call, wait).await {
        return answer;
    }
    let ip = bottle.ip;
    match Box::pin(app.bottles.reattribute(&app.store, bottle)).await {
        Ok(Some(fresh)) => {
            tracing::info!(%ip, stale = %bottle.slug, bottle = %fresh.slug, "address re-attributed: its bottle was removed");
            Box::pin(apply_as(app, &fresh, retry, wait))
                .await
                .unwrap_or_else(|Stale| unregistered(ip).into())
        }
        Ok(None) => {
            tracing::info!(%ip, stale = %bottle.slug, "refused: the bottle of this address was removed");
            unregistered(ip).into()
        }
        Err(e) => answer::store_failure(&e, "tools/call").into(),
    }
}

/// The bottle this address was attributed to is gone and no live bottle has the address;
/// the next request from it gets 403 like any unregistered address.
fn unregistered(ip: std::net::IpAddr) -> Answer {
    answer::refused(
        format!(
            "source address {ip} is no longer registered to any bottle (its bottle was removed)"
        ),
        None,
        &format!("an operator can register it with `supervise bottle add SLUG --ip {ip}`."),
    )
}

async fn apply_as(app: &App, bottle: &Bottle, call: Call, wait: Wait) -> Result<Filed, Stale> {
    match call {
        Call::ProposeEgress(a) => propose_egress::apply(app, bottle, a, wait).await,
        Call::ProposeGitPush(a) => propose_git_push::apply(app, bottle, a, wait).await,
        // Boxed: the store's futures are kilobytes, and these calls never wait, so they
        // should not size the state of the proposal calls that do (see `Method::call`).
        Call::CheckProposal(a) => Box::pin(check_proposal::apply(app, bottle, a))
            .await
            .map(Into::into),
        Call::ListProposals => Box::pin(list_proposals::apply(app, bottle))
            .await
            .map(Into::into),
        Call::WithdrawProposal(a) => Box::pin(withdraw_proposal::apply(app, bottle, a))
            .await
            .map(Into::into),
    }
}

/// Every tool's definition (with output schemas; [`Tool::for_version`] drops them for
/// revisions without).
pub(crate) fn definitions() -> Vec<Tool> {
    vec![
        propose_egress::definition(),
        propose_git_push::definition(),
        check_proposal::definition(),
        list_proposals::definition(),
        withdraw_proposal::definition(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                assert_eq!(
                    refused.status,
                    Some(answer::AnswerStatus::Refused),
                    "{tool} {args}"
                );
                let structured = refused.structured.to_value();
                let field = structured["field"].as_str().unwrap_or("");
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
