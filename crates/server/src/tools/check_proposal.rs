//! `check-proposal`: the non-blocking poll. A decision found is delivered (and archived), an
//! undecided proposal answers `pending`, anything else `unknown`. Never creates a proposal.

use serde_json::{Map, Value};
use supervise_protocol::Tool;
use supervise_store::{Bottle, StoreError};

use crate::answer::{self, Answer};
use crate::app::App;
use crate::bottles::Stale;
use crate::grace::{self, Via};

pub(crate) const NAME: &str = "check-proposal";

/// The parsed arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) proposal_id: String,
}

pub(crate) fn definition() -> Tool {
    super::schema::tool(
        NAME,
        "Check proposal",
        "Look up the status of one of your proposals by proposal_id, without waiting. A \
         decision is delivered once: after it has been returned, the id answers `unknown`.",
        super::schema::proposal_id_input_schema(),
        super::schema::proposal_output_schema(),
        false,
    )
}

pub(crate) fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::args::proposal_id_arg(args, NAME).map(|proposal_id| Args { proposal_id })
}

pub(crate) async fn apply(app: &App, bottle: &Bottle, args: Args) -> Result<Answer, Stale> {
    // Exactly one poll gets a decision; calls waiting on the same proposal get it as well.
    match app
        .waiters
        .poll(&app.store, bottle.id, &args.proposal_id)
        .await
    {
        Ok(d) => Ok(grace::delivered(d, &args.proposal_id, bottle, Via::Poll)),
        Err(StoreError::BottleGone(_)) => Err(Stale),
        Err(e) => Ok(answer::store_failure(&e, NAME)),
    }
}
