//! `propose-git-push`: ask for a ref to be pushable to a remote through the git gate.

use serde_json::{Map, Value, json};
use supervise_protocol::Tool;
use supervise_store::{Bottle, Kind};

use crate::answer::Answer;
use crate::app::App;
use crate::bottles::Stale;
use crate::grace::{Filed, Wait};

pub(crate) const NAME: &str = "propose-git-push";

/// The parsed arguments.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) remote: String,
    pub(crate) git_ref: String,
    pub(crate) justification: String,
}

pub(crate) fn definition() -> Tool {
    super::schema::tool(
        NAME,
        "Propose git push",
        "Ask the human operator to allow pushing a ref to a git remote through the git gate. \
         Waits briefly for a decision; if none comes in time the answer is `pending` with a \
         proposal_id: poll check-proposal with it later instead of proposing again.",
        json!({
            "type": "object",
            "properties": {
                "remote": {
                    "type": "string",
                    "description": "The remote's name or URL, e.g. origin or https://git.example.com/team/repo.git.",
                    "minLength": 1,
                    "maxLength": 512
                },
                "ref": {
                    "type": "string",
                    "description": "The full ref to push, e.g. refs/heads/feature/x.",
                    "minLength": 1,
                    "maxLength": 255
                },
                "justification": {
                    "type": "string",
                    "description": super::schema::JUSTIFICATION_SCHEMA,
                    "minLength": 1,
                    "maxLength": 2000
                }
            },
            "required": ["remote", "ref", "justification"],
            "additionalProperties": false
        }),
        super::schema::proposal_output_schema(),
        false,
    )
}

pub(crate) fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::args::refuse_unknown(args, &["remote", "ref", "justification"], NAME)?;
    Ok(Args {
        remote: super::args::required_string(args, "remote", NAME)?,
        git_ref: super::args::required_string(args, "ref", NAME)?,
        justification: super::args::required_string(args, "justification", NAME)?,
    })
}

pub(crate) async fn apply(
    app: &App,
    bottle: &Bottle,
    args: Args,
    wait: Wait,
) -> Result<Filed, Stale> {
    let change = json!({ "remote": args.remote, "ref": args.git_ref });
    crate::grace::file(
        app,
        bottle,
        Kind::GitPush,
        change,
        args.justification,
        NAME,
        wait,
    )
    .await
}
