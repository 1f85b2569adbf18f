//! A gate push's own fields: the object ids it moves the ref between and the summary git
//! computed of it, checked so an operator reads what was really pushed.

use serde_json::{Map, Value};

use crate::change::invalid;
use crate::error::StoreResult;

/// Subjects a push summary lists, newest first.
pub const MAX_SUBJECTS: usize = 20;
/// Longest subject kept, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Whether an object id is git's "no object" (all zeros): a creation's old, a deletion's new.
pub fn is_zero(id: &str) -> bool {
    id.bytes().all(|b| b == b'0')
}

/// A push summary in words, for review: what kind of update, the diffstat and the listed
/// subjects, each through `subject` (which escapes it for where it is shown), plus how many
/// commits the summary does not list. The CLI's `show` and the console's proposal page
/// both print these lines.
pub fn describe_push(summary: &Value, subject: impl Fn(&str) -> String) -> (Vec<String>, u64) {
    let n = |name: &str| summary[name].as_u64().unwrap_or(0);
    let plural =
        |count: u64, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    if summary["delete"] == true {
        return (vec!["deletes the ref".into()], 0);
    }
    let mut what = vec![plural(n("commits"), "commit")];
    if summary["create"] == true {
        what.push("creates the ref".into());
    }
    if summary["force"] == true {
        what.push("FORCE PUSH: rewrites history (old is not an ancestor of new)".into());
    }
    let mut lines = vec![
        what.join(", "),
        format!(
            "{} changed, {} insertions(+), {} deletions(-)",
            plural(n("files_changed"), "file"),
            n("insertions"),
            n("deletions")
        ),
    ];
    let subjects = summary["subjects"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for s in subjects {
        lines.push(format!("- {}", subject(s.as_str().unwrap_or(""))));
    }
    (lines, n("commits").saturating_sub(subjects.len() as u64))
}

/// A full object id: 40 (SHA-1) or 64 (SHA-256) hex digits, returned lower-cased.
pub(super) fn object_id(field: &str, raw: &str) -> StoreResult<String> {
    if !matches!(raw.len(), 40 | 64) || !raw.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            field,
            "must be a full object id (40 or 64 hex digits)",
        ));
    }
    Ok(raw.to_ascii_lowercase())
}

/// The gate's summary of a push: counts, the first subjects, and what kind of update it is.
/// `create` and `delete` must agree with the ids.
pub(super) fn validate_summary(
    raw: Option<&Value>,
    create: bool,
    delete: bool,
) -> StoreResult<Value> {
    let field = "summary";
    let obj = match raw {
        Some(Value::Object(obj)) => obj,
        None | Some(Value::Null) => return Err(invalid(field, "is required with old and new")),
        Some(_) => return Err(invalid(field, "must be a JSON object")),
    };
    const COUNTS: [&str; 4] = ["commits", "files_changed", "insertions", "deletions"];
    const BOOLS: [&str; 3] = ["force", "delete", "create"];
    let known: Vec<&str> = COUNTS
        .iter()
        .chain(&BOOLS)
        .chain(&["subjects", "content"])
        .copied()
        .collect();
    if let Some(extra) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(field, format!("has an unknown field `{extra}`")));
    }
    let mut out = Map::new();
    for name in COUNTS {
        let n = obj.get(name).and_then(Value::as_u64).ok_or_else(|| {
            invalid(
                field,
                format!("needs `{name}`, a whole number of at least 0"),
            )
        })?;
        out.insert(name.into(), n.into());
    }
    for name in BOOLS {
        let b = obj
            .get(name)
            .and_then(Value::as_bool)
            .ok_or_else(|| invalid(field, format!("needs `{name}`, true or false")))?;
        out.insert(name.into(), b.into());
    }
    if out["create"] != create || out["delete"] != delete {
        return Err(invalid(
            field,
            "says create/delete unlike its ids (old all zeros is a creation, new a deletion)",
        ));
    }
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid(field, "needs `subjects`, a list of strings"))?;
    if subjects.len() > MAX_SUBJECTS {
        return Err(invalid(
            field,
            format!("lists more than {MAX_SUBJECTS} subjects"),
        ));
    }
    let mut kept = Vec::with_capacity(subjects.len());
    for s in subjects {
        let s = s
            .as_str()
            .ok_or_else(|| invalid(field, "has a subject that is not a string"))?;
        if s.chars().count() > MAX_SUBJECT_CHARS {
            return Err(invalid(
                field,
                format!("has a subject longer than {MAX_SUBJECT_CHARS} characters"),
            ));
        }
        kept.push(Value::from(s));
    }
    out.insert("subjects".into(), kept.into());
    if let Some(raw) = obj.get("content") {
        let names = raw
            .as_array()
            .ok_or_else(|| invalid(field, "has `content` that is not a list of flags"))?;
        let mut content = Vec::with_capacity(names.len());
        for flag in crate::change::CONTENT_FLAGS {
            if names.iter().any(|n| n.as_str() == Some(flag.as_str())) {
                content.push(Value::from(flag.as_str()));
            }
        }
        if content.len() != names.len() {
            return Err(invalid(
                field,
                "has `content` naming something that is not a content flag (once each)",
            ));
        }
        if !content.is_empty() {
            out.insert("content".into(), content.into());
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::super::normalise_git_push;
    use serde_json::Value;

    #[test]
    fn a_summary_reads_as_lines_with_its_subjects_escaped_by_the_caller() {
        let s = serde_json::json!({"commits": 3, "subjects": ["fix <b>", "add"],
            "files_changed": 1, "insertions": 2, "deletions": 0, "force": true,
            "delete": false, "create": false});
        let (lines, unlisted) = super::describe_push(&s, |t| t.replace('<', "&lt;"));
        assert_eq!(
            lines,
            [
                "3 commits, FORCE PUSH: rewrites history (old is not an ancestor of new)",
                "1 file changed, 2 insertions(+), 0 deletions(-)",
                "- fix &lt;b>",
                "- add",
            ]
        );
        assert_eq!(unlisted, 1);
        let (lines, unlisted) = super::describe_push(&summary(false, true), str::to_owned);
        assert_eq!((lines, unlisted), (vec!["deletes the ref".to_string()], 0));
    }

    fn summary(create: bool, delete: bool) -> Value {
        serde_json::json!({"commits": 1, "subjects": ["s"], "files_changed": 1,
            "insertions": 1, "deletions": 0, "force": false, "delete": delete, "create": create})
    }

    #[test]
    fn a_gate_push_is_bound_to_its_ids_and_summary() {
        let old = "a".repeat(40);
        let new = "B".repeat(40);
        let zero = "0".repeat(40);
        let push = |old: &str, new: &str, summary: Value| {
            let obj = serde_json::json!({"remote": "origin", "ref": "agent/x", "old": old,
                "new": new, "summary": summary});
            normalise_git_push(obj.as_object().unwrap())
        };
        let ok = push(&old, &new, summary(false, false)).unwrap();
        assert_eq!(ok["new"], "b".repeat(40));
        assert_eq!(ok["ref"], "refs/heads/agent/x");
        assert!(push(&zero, &new, summary(true, false)).is_ok());
        assert!(push(&old, &zero, summary(false, true)).is_ok());
        assert!(
            push(&zero, &new, summary(false, false)).is_err(),
            "create must agree"
        );
        assert!(push(&old, &old, summary(false, false)).is_err());
        assert!(push("abc", &new, summary(false, false)).is_err());
        assert!(push(&old, &new, Value::Null).is_err());
        let mut extra = summary(false, false);
        extra["evil"] = true.into();
        assert!(push(&old, &new, extra).is_err());
        let mut many = summary(false, false);
        many["subjects"] = vec!["s"; 21].into();
        assert!(push(&old, &new, many).is_err());
        let wild = serde_json::json!({"remote": "origin", "ref": "agent/*", "old": old,
            "new": new, "summary": summary(false, false)});
        assert!(
            normalise_git_push(wild.as_object().unwrap()).is_err(),
            "one push, one ref"
        );
    }
}
