//! `propose-git-push`: ask for a ref to be pushable to a remote through the git gate.

use serde_json::{Map, Value, json};
use supervise_protocol::Tool;
use supervise_store::{Bottle, Kind};

use crate::App;
use crate::answer::Answer;

pub const NAME: &str = "propose-git-push";

/// The parsed arguments.
#[derive(Debug)]
pub struct Args {
    pub remote: String,
    pub git_ref: String,
    pub justification: String,
}

pub fn definition() -> Tool {
    super::tool(
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
                    "description": super::JUSTIFICATION_SCHEMA,
                    "minLength": 1,
                    "maxLength": 2000
                }
            },
            "required": ["remote", "ref", "justification"],
            "additionalProperties": false
        }),
        super::proposal_output_schema(),
        false,
    )
}

pub fn parse(args: &Map<String, Value>) -> Result<Args, Answer> {
    super::refuse_unknown(args, &["remote", "ref", "justification"], NAME)?;
    Ok(Args {
        remote: super::required_string(args, "remote", NAME)?,
        git_ref: super::required_string(args, "ref", NAME)?,
        justification: super::required_string(args, "justification", NAME)?,
    })
}

pub async fn apply(app: &App, bottle: &Bottle, args: Args) -> Answer {
    let change = json!({ "remote": args.remote, "ref": args.git_ref });
    super::file_and_wait(app, bottle, Kind::GitPush, change, args.justification, NAME).await
}
