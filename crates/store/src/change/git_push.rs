//! Git-push changes: a remote and a ref, checked by git's `check-ref-format` rules.

use serde_json::{Map, Value};

use super::{MAX_REF_LEN, MAX_REMOTE_LEN, invalid, refuse_unknown, required_str};
use crate::error::StoreResult;

pub(super) fn normalise_git_push(obj: &Map<String, Value>) -> StoreResult<Value> {
    refuse_unknown(obj, &["remote", "ref"])?;
    let remote = required_str(obj, "remote")?;
    if remote.is_empty() {
        return Err(invalid("remote", "must not be empty"));
    }
    if remote.len() > MAX_REMOTE_LEN {
        return Err(invalid(
            "remote",
            format!("is longer than {MAX_REMOTE_LEN} bytes"),
        ));
    }
    if remote.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "remote",
            "must not contain spaces or control characters",
        ));
    }
    let reference = normalise_ref(required_str(obj, "ref")?)?;
    Ok(serde_json::json!({ "remote": remote, "ref": reference }))
}

/// Normalises a ref by git's `check-ref-format` rules; a short branch name (`feature/x`)
/// becomes `refs/heads/feature/x`.
pub fn normalise_ref(raw: &str) -> StoreResult<String> {
    let field = "ref";
    if raw.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if raw.len() > MAX_REF_LEN {
        return Err(invalid(
            field,
            format!("is longer than {MAX_REF_LEN} bytes"),
        ));
    }
    if raw
        .chars()
        .any(|c| c.is_control() || c == ' ' || c == '\u{7f}')
    {
        return Err(invalid(
            field,
            "must not contain spaces or control characters",
        ));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return Err(invalid(field, format!("must not contain `{c}`")));
    }
    if raw.contains("..") {
        return Err(invalid(field, "must not contain `..`"));
    }
    if raw.contains("@{") || raw == "@" {
        return Err(invalid(field, "must not contain `@{` or be `@`"));
    }
    if raw.contains("//") || raw.starts_with('/') || raw.ends_with('/') {
        return Err(invalid(
            field,
            "must not start or end with `/` or contain `//`",
        ));
    }
    if raw.ends_with('.') {
        return Err(invalid(field, "must not end with `.`"));
    }
    for component in raw.split('/') {
        if component.starts_with('.') {
            return Err(invalid(field, "has a component starting with `.`"));
        }
        if component.ends_with(".lock") {
            return Err(invalid(field, "has a component ending with `.lock`"));
        }
    }
    if raw.starts_with("refs/") {
        if raw.split('/').count() < 3 {
            return Err(invalid(
                field,
                "must name a ref below a namespace, e.g. refs/heads/feature/x",
            ));
        }
        Ok(raw.to_string())
    } else {
        Ok(format!("refs/heads/{raw}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_follow_check_ref_format() {
        assert_eq!(normalise_ref("feature/x").unwrap(), "refs/heads/feature/x");
        assert_eq!(normalise_ref("refs/tags/v1").unwrap(), "refs/tags/v1");
        for bad in [
            "refs/heads/../x",
            "a b",
            "x.lock",
            "refs/heads/.hidden",
            "x~1",
            "x^",
            "a:b",
            "/x",
            "x/",
            "a//b",
            "@",
            "x@{1}",
            "refs/x",
            "x.",
            "a\0b",
        ] {
            assert!(normalise_ref(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
