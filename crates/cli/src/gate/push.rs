//! What one push contains: git's `OLD NEW REF` lines, and for each ref update the summary
//! an operator reviews (commits, subjects, diffstat, force, delete, create), computed with
//! git from the pushed objects.

use anyhow::{Result, bail};
use serde_json::{Value, json};
use supervise_store::RefUpdate;
use supervise_store::change::{MAX_SUBJECT_CHARS, MAX_SUBJECTS, is_zero};

use super::git::Git;

/// One `OLD NEW REF` line of the hook's stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub old: String,
    pub new: String,
    pub reference: String,
}

/// Parses the hook's stdin; a line that is not three fields is an error.
pub fn parse_lines(input: &str) -> Result<Vec<Line>> {
    let mut out = Vec::new();
    for raw in input.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = raw.split_whitespace().collect();
        let [old, new, reference] = fields.as_slice() else {
            bail!("git gave the hook a line that is not `OLD NEW REF`");
        };
        out.push(Line {
            old: old.to_string(),
            new: new.to_string(),
            reference: reference.to_string(),
        });
    }
    Ok(out)
}

/// The justification: a `justification=TEXT` push option, else the newest commit's subject,
/// else a sentence naming the update. Control characters (which the store refuses in a
/// justification) become spaces, so a commit subject can never make the push unreviewable.
pub fn justification(options: &[String], summary: &Value, line: &Line) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(2000)
            .collect()
    };
    let given = options
        .iter()
        .rev()
        .find_map(|o| o.strip_prefix("justification="))
        .map(clean)
        .filter(|t| !t.trim().is_empty())
        .or_else(|| {
            summary["subjects"]
                .get(0)
                .and_then(Value::as_str)
                .map(clean)
        })
        .filter(|t| !t.trim().is_empty());
    match given {
        Some(text) => text,
        None if summary["delete"] == true => format!("delete {}", line.reference),
        None => format!("push to {}", line.reference),
    }
}

/// The summary of one ref update, read with `git` from the quarantined objects.
pub fn summarise(git: &Git, line: &Line) -> Result<Value> {
    let create = is_zero(&line.old);
    let delete = is_zero(&line.new);
    if delete {
        return Ok(json!({
            "commits": 0, "subjects": [], "files_changed": 0, "insertions": 0,
            "deletions": 0, "force": false, "delete": true, "create": false,
        }));
    }
    let new = line.new.as_str();
    // Commits the push brings: all of new's history the repository has not got in any ref
    // (for a creation), or what old lacks (for an update).
    let range: Vec<&str> = if create {
        vec![new, "--not", "--all"]
    } else {
        vec![new, "--not", line.old.as_str()]
    };
    let commits: u64 = git
        .run(&[&["rev-list", "--count"][..], &range].concat())?
        .trim()
        .parse()
        .unwrap_or(0);
    let log = git.run(
        &[
            &["log", "--format=%s", "-n", &MAX_SUBJECTS.to_string()][..],
            &range,
            &["--"],
        ]
        .concat(),
    )?;
    let subjects: Vec<String> = log
        .lines()
        .map(|s| s.chars().take(MAX_SUBJECT_CHARS).collect())
        .collect();
    let force = !create && !git.test(&["merge-base", "--is-ancestor", &line.old, new])?;
    let base = if create {
        creation_base(git, new)?
    } else {
        line.old.clone()
    };
    let (files_changed, insertions, deletions) =
        parse_shortstat(&git.run(&["diff", "--shortstat", &base, new, "--"])?);
    Ok(json!({
        "commits": commits, "subjects": subjects, "files_changed": files_changed,
        "insertions": insertions, "deletions": deletions, "force": force,
        "delete": false, "create": create,
    }))
}

/// What the update contains (commits, files, patches, content flags), for the record kept
/// with its proposal; `None` for a deletion.
pub fn content(git: &Git, line: &Line) -> Result<Option<super::diff::Content>> {
    if is_zero(&line.new) {
        return Ok(None);
    }
    let new = line.new.as_str();
    let (base, range) = if is_zero(&line.old) {
        (creation_base(git, new)?, vec![new, "--not", "--all"])
    } else {
        (line.old.clone(), vec![new, "--not", line.old.as_str()])
    };
    super::diff::content(git, &base, new, &range).map(Some)
}

/// What a new ref's diffstat is measured from: the parent of its oldest commit the
/// repository lacks, or the empty tree when its whole history is new.
fn creation_base(git: &Git, new: &str) -> Result<String> {
    let fresh = git.run(&[
        "rev-list",
        "--reverse",
        "--topo-order",
        new,
        "--not",
        "--all",
    ])?;
    let oldest = fresh.lines().next().unwrap_or(new);
    let parent = format!("{oldest}^");
    if git.test(&["rev-parse", "--verify", "--quiet", &parent])? {
        return Ok(git.run(&["rev-parse", &parent])?.trim().to_string());
    }
    Ok(git
        .run(&["hash-object", "-t", "tree", "/dev/null"])?
        .trim()
        .to_string())
}

/// `" 3 files changed, 10 insertions(+), 2 deletions(-)"` → (3, 10, 2); absent parts are 0.
pub fn parse_shortstat(text: &str) -> (u64, u64, u64) {
    let (mut files, mut ins, mut del) = (0, 0, 0);
    for part in text.trim().split(", ") {
        let mut words = part.split_whitespace();
        let n: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
        match words.next() {
            Some(w) if w.starts_with("file") => files = n,
            Some(w) if w.starts_with("insertion") => ins = n,
            Some(w) if w.starts_with("deletion") => del = n,
            _ => {}
        }
    }
    (files, ins, del)
}

/// The store's view of one update.
pub fn ref_update(
    line: &Line,
    summary: Value,
    justification: String,
    diff: Option<supervise_store::PushDiff>,
) -> RefUpdate {
    RefUpdate {
        reference: line.reference.clone(),
        old: line.old.clone(),
        new: line.new.clone(),
        summary,
        justification,
        diff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortstat_lines_are_read() {
        assert_eq!(
            parse_shortstat(" 3 files changed, 10 insertions(+), 2 deletions(-)\n"),
            (3, 10, 2)
        );
        assert_eq!(parse_shortstat(" 1 file changed, 1 deletion(-)"), (1, 0, 1));
        assert_eq!(parse_shortstat(""), (0, 0, 0));
    }

    #[test]
    fn stdin_lines_and_justifications() {
        let lines = parse_lines("a b refs/heads/x\n\n").unwrap();
        assert_eq!(lines[0].reference, "refs/heads/x");
        assert!(parse_lines("a b\n").is_err());
        let summary = json!({"subjects": ["newest", "older"], "delete": false});
        let opts = vec!["ci.skip".to_string(), "justification=ship it".to_string()];
        assert_eq!(justification(&opts, &summary, &lines[0]), "ship it");
        assert_eq!(justification(&[], &summary, &lines[0]), "newest");
        let escape = json!({"subjects": ["a\u{1b}[2Jb"], "delete": false});
        assert_eq!(justification(&[], &escape, &lines[0]), "a [2Jb");
        let blank = vec!["justification=  ".to_string()];
        assert_eq!(
            justification(&blank, &json!({"subjects": []}), &lines[0]),
            "push to refs/heads/x"
        );
        let gone = json!({"subjects": [], "delete": true});
        assert_eq!(justification(&[], &gone, &lines[0]), "delete refs/heads/x");
    }
}
