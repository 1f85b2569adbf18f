//! Reading tool arguments: a typed value, or a `refused` answer naming the field to fix.

use serde_json::{Map, Value};

use crate::answer::{Answer, bad_argument as bad};

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
