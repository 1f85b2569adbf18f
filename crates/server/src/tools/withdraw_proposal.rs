//! `withdraw-proposal`: the caller takes back its own undecided proposal.

use serde_json::{Map, Value};
use supervise_protocol::Tool;
use supervise_store::{Bottle, StoreError};

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;

pub(crate) const NAME: &str = "withdraw-proposal";

/// The parsed arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) proposal_id: String,
}

pub(crate) fn definition() -> Tool {
    super::schema::tool(
        NAME,
        "Withdraw proposal",
        "Withdraw one of your undecided proposals (when you no longer need it). A decided \
         proposal cannot be withdrawn: read its decision with check-proposal.",
        super::schema::proposal_id_input_schema(),
        super::schema::proposal_output_schema(),
        false,
    )
}

pub(crate) fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::args::proposal_id_arg(args, NAME).map(|proposal_id| Args { proposal_id })
}

pub(crate) async fn apply(app: &App, bottle: &Bottle, args: Args) -> Result<Answer, Stale> {
    Ok(
        match app.store.withdraw(bottle.id, &args.proposal_id).await {
            Ok(p) => {
                tracing::info!(bottle = %bottle.slug, proposal = %p.id, "proposal withdrawn by the agent");
                answer::withdrawn(&p)
            }
            Err(StoreError::BottleGone(_)) => return Err(Stale),
            Err(StoreError::ProposalNotFound(_)) => answer::unknown(&args.proposal_id),
            Err(StoreError::NotPending { status, .. }) => answer::refused(
                format!(
                    "proposal {} is already {status} and cannot be withdrawn",
                    args.proposal_id
                ),
                Some("proposal_id"),
                "call check-proposal with this id to read its outcome.",
            ),
            Err(e) => answer::store_failure(&e, NAME),
        },
    )
}
