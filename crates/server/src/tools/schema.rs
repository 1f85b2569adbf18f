//! What the tools declare in `tools/list`: the shared shape of a tool definition and the
//! schemas several tools use.

use serde_json::{Value, json};
use supervise_protocol::{Tool, ToolAnnotations};

use crate::answer::AnswerStatus;

/// A tool definition with its output schema and annotations.
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
            "proposal_id": { "type": ["string", "null"], "description": "null when a grant already allows the change (already_allowed)." },
            "already_allowed": { "type": "boolean", "description": "true: a grant in force already allows this change; nothing was queued." },
            "grant_id": { "type": "string", "description": "With already_allowed: the grant that allows it." },
            "grant_expires_at": { "type": ["string", "null"], "description": "With already_allowed: when that grant ends (RFC 3339); null until revoked." },
            "status": {
                "type": "string",
                "enum": AnswerStatus::ALL.map(AnswerStatus::as_str)
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

/// The description of every `justification` argument.
pub(crate) const JUSTIFICATION_SCHEMA: &str =
    "Why the task needs this, for the human operator who decides (1-2000 characters).";

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
