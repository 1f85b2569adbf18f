//! A push's recorded content on its proposal page: the commits, what the content scan found
//! (a secret only masked), the file list with status and counts, and each file's patch as
//! lines classed added, removed, hunk header or context, with a `+`/`−` gutter so a line
//! reads as added or removed without colour. All of it agent text, made visible here and
//! HTML-escaped by the template.

use supervise_store::{DiffFile, PushDiff};

use crate::view;

pub(crate) struct LineView {
    /// `add`, `del`, `hunk`, `meta` or `ctx`.
    pub class: &'static str,
    /// `+`, `−`, or a space.
    pub sign: &'static str,
    pub text: String,
}

pub(crate) struct FileView {
    pub path: String,
    pub status: String,
    pub mode: Option<String>,
    pub binary: bool,
    pub added: u64,
    pub removed: u64,
    pub truncated: bool,
    pub lines: Vec<LineView>,
}

pub(crate) struct DiffView {
    pub commits: Vec<(String, String, String)>,
    pub more_commits: bool,
    pub findings: Vec<(String, String, String)>,
    pub files: Vec<FileView>,
    pub truncated: bool,
}

impl DiffView {
    pub(crate) fn of(d: &PushDiff) -> DiffView {
        DiffView {
            commits: d
                .commits
                .iter()
                .map(|c| {
                    (
                        c.id.chars().take(12).collect(),
                        view::untrusted(&c.subject),
                        view::untrusted(&c.author),
                    )
                })
                .collect(),
            more_commits: d.commits_truncated,
            findings: d
                .findings
                .iter()
                .map(|f| {
                    let what = match &f.masked {
                        Some(m) => format!("{} {}", f.rule, m),
                        None => f.rule.clone(),
                    };
                    (
                        f.flag.clone(),
                        view::untrusted(&f.path),
                        view::untrusted(&what),
                    )
                })
                .collect(),
            files: d.files.iter().map(file).collect(),
            truncated: d.truncated,
        }
    }
}

fn file(f: &DiffFile) -> FileView {
    let path = match (&f.old_path, &f.new_path) {
        (Some(old), Some(new)) if old != new => format!("{old} → {new}"),
        _ => f.path().to_string(),
    };
    let mode = match (&f.old_mode, f.mode.as_str()) {
        (Some(old), new) => Some(format!("{old} → {new}")),
        (None, "file" | "none") => None,
        (None, m) => Some(m.to_string()),
    };
    FileView {
        path: view::untrusted(&path),
        status: f.status.clone(),
        mode,
        binary: f.binary,
        added: f.added,
        removed: f.removed,
        truncated: f.truncated,
        lines: f.patch.lines().map(line).collect(),
    }
}

fn line(l: &str) -> LineView {
    let (class, sign, text) = if l.starts_with("+++ ") || l.starts_with("--- ") {
        ("meta", " ", l)
    } else if let Some(rest) = l.strip_prefix('+') {
        ("add", "+", rest)
    } else if let Some(rest) = l.strip_prefix('-') {
        ("del", "−", rest)
    } else if l.starts_with("@@") {
        ("hunk", " ", l)
    } else if let Some(rest) = l.strip_prefix(' ') {
        ("ctx", " ", rest)
    } else {
        ("meta", " ", l)
    };
    LineView {
        class,
        sign,
        text: view::untrusted(text),
    }
}
