//! What a proposal asks for: validation and normalisation of each kind of change, the key
//! that spots identical re-proposals, and (in [`flags`]) the deterministic risk flags an
//! operator sees before deciding. One submodule per kind: [`egress`], [`git_push`].

mod confirm;
mod egress;
mod flags;
mod git_push;
mod request;

use serde_json::{Map, Value};

use crate::error::{StoreError, StoreResult};
pub use crate::model::Kind;

pub use confirm::needs_confirmation;
pub use egress::normalise_host;
pub use flags::{
    CONTENT_FLAGS, NEVER_AUTOMATIC, address_flags, flags, modified_flags, never_automatic,
};
pub use git_push::{
    MAX_SUBJECT_CHARS, MAX_SUBJECTS, describe_push, is_zero, normalise_ref, normalise_ref_pattern,
    ref_covers, validate_remote,
};
pub use request::{
    MAX_METHODS, MAX_PATH_PREFIX, is_limited, is_method, limits, normal_path, normalise_path,
    request_fits,
};

/// Longest justification accepted, in characters.
pub const MAX_JUSTIFICATION_CHARS: usize = 2000;
/// Longest git remote accepted, in bytes.
pub const MAX_REMOTE_LEN: usize = 512;
/// Longest ref accepted, in bytes.
pub const MAX_REF_LEN: usize = 255;

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Checks a justification: 1 to 2000 characters, not blank, no NUL or other control
/// characters except newlines and tabs. Returns it with surrounding white space trimmed.
pub fn validate_justification(text: &str) -> StoreResult<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid("justification", "must not be empty"));
    }
    let chars = trimmed.chars().count();
    if chars > MAX_JUSTIFICATION_CHARS {
        return Err(invalid(
            "justification",
            format!("is {chars} characters; at most {MAX_JUSTIFICATION_CHARS} are allowed"),
        ));
    }
    if trimmed
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    {
        return Err(invalid(
            "justification",
            "must not contain NUL or other control characters",
        ));
    }
    Ok(trimmed.to_string())
}

/// Validates a change of `kind` given as a JSON object (the tool arguments without the
/// justification) and returns its normalised form. Unknown fields are refused, so a typo
/// never silently widens or narrows a request.
pub fn normalise(kind: Kind, change: &Value) -> StoreResult<Value> {
    let obj = change
        .as_object()
        .ok_or_else(|| invalid("change", "must be a JSON object"))?;
    match kind {
        Kind::Egress => egress::normalise_egress(obj),
        Kind::GitPush => git_push::normalise_git_push(obj),
    }
}

pub(crate) fn refuse_unknown(obj: &Map<String, Value>, known: &[&str]) -> StoreResult<()> {
    if let Some(extra) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(
            extra,
            format!("is not a known field (expected: {})", known.join(", ")),
        ));
    }
    Ok(())
}

pub(crate) fn required_str<'a>(obj: &'a Map<String, Value>, field: &str) -> StoreResult<&'a str> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(invalid(field, "is required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid(field, "must be a string")),
    }
}

/// The canonical text of a normalised change, used to spot identical re-proposals.
/// serde_json keeps object keys sorted, so equal changes give equal keys. A gate push's
/// `summary` is what git saw, not what is asked: the same (remote, ref, old, new) is the
/// same change.
pub fn change_key(change: &Value) -> String {
    match change.as_object() {
        Some(obj) if obj.contains_key("summary") => {
            let mut key = obj.clone();
            key.remove("summary");
            Value::Object(key).to_string()
        }
        _ => change.to_string(),
    }
}

/// Merges `patch` over `base` (top-level fields only), the rule for `modify`.
pub fn merge(base: &Value, patch: &Map<String, Value>) -> Value {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    for (k, v) in patch {
        merged.insert(k.clone(), v.clone());
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn justification_rules() {
        assert_eq!(validate_justification("  need it \n").unwrap(), "need it");
        assert!(validate_justification("   ").is_err());
        assert!(validate_justification("a\0b").is_err());
        assert!(validate_justification(&"x".repeat(2000)).is_ok());
        assert!(validate_justification(&"x".repeat(2001)).is_err());
        assert!(validate_justification(&"é".repeat(2000)).is_ok());
    }

    #[test]
    fn merge_overrides_fields() {
        let base = json!({"host": "a.com", "port": 443});
        let patch = json!({"port": 8443});
        assert_eq!(
            merge(&base, patch.as_object().unwrap()),
            json!({"host": "a.com", "port": 8443})
        );
    }
}
