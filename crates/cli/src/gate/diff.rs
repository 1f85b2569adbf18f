//! What one ref update contains, read with git from the quarantined objects: the commits,
//! the files (`git diff --raw -z` and `--numstat -z`, machine-readable and split on NUL) and
//! the unified patch (`git diff -p`, read as a stream and split into files at their
//! `diff --git` headers and into hunks at `@@`). The whole stream is scanned for content
//! flags ([`super::scan`]) while a capped copy is kept for review, a matched secret masked in
//! it; a stream over [`MAX_SCAN`] is cut short and flagged `large-push`.

use std::io::{BufRead, BufReader, Read};

use anyhow::{Context, Result};
use supervise_store::model::{
    DiffFile, Finding, MAX_DIFF_COMMITS, MAX_FILE_PATCH, MAX_PUSH_PATCH, PushCommit, PushDiff,
    mask_secret,
};
use supervise_store::{Flag, change::CONTENT_FLAGS};

use super::git::Git;
use super::scan;

/// Bytes of patch the gate reads of one ref update before it stops scanning.
pub const MAX_SCAN: u64 = 32 * 1024 * 1024;
/// Longest line read whole; a longer one is read (and scanned) in pieces of this size.
const MAX_LINE: u64 = 1024 * 1024;

/// The recorded content of an update and the content flags it trips, in `CONTENT_FLAGS`
/// order.
#[derive(Debug, Default)]
pub struct Content {
    pub diff: PushDiff,
    pub flags: Vec<Flag>,
}

/// The content of the update `base..new`; `range` selects its commits (`new --not ...`).
pub fn content(git: &Git, base: &str, new: &str, range: &[&str]) -> Result<Content> {
    let mut diff = PushDiff {
        commits: commits(git, range)?,
        ..PushDiff::default()
    };
    if diff.commits.len() > MAX_DIFF_COMMITS {
        diff.commits.truncate(MAX_DIFF_COMMITS);
        diff.commits_truncated = true;
    }
    let (files, links) = files(git, base, new)?;
    diff.files = files;
    let mut found = Found::default();
    for (f, link) in diff.files.iter().zip(&links) {
        let target = match link {
            Some(id) => {
                Some(String::from_utf8_lossy(&git.bytes(&["cat-file", "blob", id])?).into_owned())
            }
            None => None,
        };
        scan::file_flags(f, target.as_deref(), &mut found.findings);
    }
    let cut = patches(git, base, new, &mut diff.files, &mut found)?;
    diff.truncated = diff.files.iter().any(|f| f.truncated);
    let mut flags: Vec<Flag> = Vec::new();
    for flag in CONTENT_FLAGS {
        if found.findings.iter().any(|f| f.flag == flag.as_str())
            || (*flag == Flag::LargePush && cut)
        {
            flags.push(*flag);
        }
    }
    diff.findings = found.findings;
    Ok(Content { diff, flags })
}

/// The update's commits, newest first, one more than the record keeps (to know it cut).
fn commits(git: &Git, range: &[&str]) -> Result<Vec<PushCommit>> {
    let n = (MAX_DIFF_COMMITS + 1).to_string();
    let out = git.bytes(
        &[
            &["log", "-z", "--format=%H%x1f%an <%ae>%x1f%s", "-n", &n][..],
            range,
            &["--"],
        ]
        .concat(),
    )?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let text = String::from_utf8_lossy(r);
            let mut parts = text.splitn(3, '\u{1f}');
            let mut next = || parts.next().unwrap_or("").trim().to_string();
            PushCommit {
                id: next(),
                author: next(),
                subject: next(),
            }
        })
        .collect())
}

/// git's mode in words.
fn mode_name(mode: &str) -> &'static str {
    match mode {
        "100755" => "executable",
        "120000" => "symlink",
        "160000" => "submodule",
        "000000" => "none",
        _ => "file",
    }
}

/// The files of `base..new`, with status, modes and counts, patches still empty; and for
/// each, the object id of a symlink's new target.
type Files = (Vec<DiffFile>, Vec<Option<String>>);

fn files(git: &Git, base: &str, new: &str) -> Result<Files> {
    let raw = git.bytes(&["diff", "--raw", "-z", "-M", "--no-abbrev", base, new, "--"])?;
    let mut fields = raw
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut out = Vec::new();
    let mut links = Vec::new();
    while let Some(meta) = fields.next() {
        let Some(meta) = meta.strip_prefix(':') else {
            continue;
        };
        let parts: Vec<&str> = meta.split(' ').collect();
        let [old_mode, new_mode, _old_id, new_id, status] = parts[..] else {
            continue;
        };
        let first = fields.next().unwrap_or_default();
        let (old_path, new_path, status) = match status.chars().next() {
            Some('A') => (None, Some(first), "added"),
            Some('D') => (Some(first), None, "deleted"),
            Some('R') => (Some(first), fields.next(), "renamed"),
            Some('C') => (None, fields.next(), "added"),
            Some('T') => (Some(first.clone()), Some(first), "mode-change"),
            _ => (Some(first.clone()), Some(first), "modified"),
        };
        let mode = mode_name(if new_mode == "000000" {
            old_mode
        } else {
            new_mode
        });
        let old_name = mode_name(old_mode);
        out.push(DiffFile {
            old_path,
            new_path,
            status: status.to_string(),
            mode: mode.to_string(),
            old_mode: (old_mode != new_mode && old_name != "none" && mode_name(new_mode) != "none")
                .then(|| format!("{old_name} ({old_mode})")),
            binary: false,
            added: 0,
            removed: 0,
            patch: String::new(),
            truncated: false,
        });
        links.push((new_mode == "120000").then(|| new_id.to_string()));
    }
    let numstat = git.bytes(&["diff", "--numstat", "-z", "-M", base, new, "--"])?;
    let mut fields = numstat.split(|b| *b == 0);
    let mut i = 0;
    while let Some(head) = fields.next() {
        if head.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(head);
        let mut parts = text.splitn(3, '\t');
        let added = parts.next().unwrap_or("-");
        let removed = parts.next().unwrap_or("-");
        if parts.next().unwrap_or("").is_empty() {
            // A rename: the old and new paths follow as fields of their own.
            fields.next();
            fields.next();
        }
        if let Some(f) = out.get_mut(i) {
            f.binary = added == "-";
            f.added = added.parse().unwrap_or(0);
            f.removed = removed.parse().unwrap_or(0);
            if f.status == "modified" && f.old_mode.is_some() && f.added + f.removed == 0 {
                f.status = "mode-change".into();
            }
        }
        i += 1;
    }
    Ok((out, links))
}

/// What the scan found so far.
#[derive(Debug, Default)]
pub struct Found {
    pub findings: Vec<Finding>,
}

/// Reads the patch stream, keeping each file's capped, masked copy and scanning every hunk;
/// `true` when it stopped at [`MAX_SCAN`].
fn patches(
    git: &Git,
    base: &str,
    new: &str,
    files: &mut [DiffFile],
    found: &mut Found,
) -> Result<bool> {
    let mut child = git.spawn(&[
        "diff",
        "-p",
        "-M",
        "-U3",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        base,
        new,
        "--",
    ])?;
    let stdout = child.stdout.take().context("git diff has no stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut state = Stream {
        files,
        index: None,
        hunk: String::new(),
        fragment: String::new(),
        in_hunk: false,
        kept: 0,
        found,
    };
    let mut read: u64 = 0;
    let mut line = Vec::new();
    let mut cut = false;
    loop {
        line.clear();
        let n = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > MAX_SCAN {
            cut = true;
            break;
        }
        state.line(&String::from_utf8_lossy(&line));
    }
    state.end_file();
    if cut {
        for f in state.files.iter_mut().skip(state.index.map_or(0, |i| i)) {
            f.truncated = true;
        }
        let _ = child.kill();
    }
    let _ = child.wait();
    Ok(cut)
}

/// The patch stream's reader state.
struct Stream<'a> {
    files: &'a mut [DiffFile],
    index: Option<usize>,
    hunk: String,
    /// The hunk's added lines, without their `+`, for the scan.
    fragment: String,
    in_hunk: bool,
    /// Bytes of patch kept for the whole push.
    kept: usize,
    found: &'a mut Found,
}

/// A hunk scanned whole once it grows past this (a huge hunk is scanned in pieces).
const MAX_HUNK: usize = 1024 * 1024;

impl Stream<'_> {
    fn line(&mut self, line: &str) {
        if line.starts_with("diff --git ") {
            self.end_file();
            self.index = Some(self.index.map_or(0, |i| i + 1));
            self.in_hunk = false;
        }
        if line.starts_with("@@") {
            self.end_hunk();
            self.in_hunk = true;
        }
        if self.in_hunk
            && let Some(added) = line.strip_prefix('+')
        {
            self.fragment.push_str(added);
        }
        self.hunk.push_str(line);
        if self.hunk.len() > MAX_HUNK {
            self.end_hunk();
        }
    }

    fn end_file(&mut self) {
        self.end_hunk();
    }

    /// Scans the hunk's added lines, masks what was found, keeps what fits.
    fn end_hunk(&mut self) {
        let mut text = std::mem::take(&mut self.hunk);
        let fragment = std::mem::take(&mut self.fragment);
        let Some(f) = self.index.and_then(|i| self.files.get_mut(i)) else {
            return;
        };
        let path = f.path().to_string();
        if !fragment.is_empty() {
            for s in super::secrets::scan(&path, &fragment) {
                let masked = mask_secret(&s.secret);
                // A secret over several lines (a private key) is masked line by line: its
                // first line as the finding, the others left out.
                for (i, piece) in s.secret.lines().enumerate() {
                    if piece.trim().is_empty() {
                        continue;
                    }
                    let with = if i == 0 {
                        masked.clone()
                    } else {
                        "…".to_string()
                    };
                    text = text.replace(piece, &with);
                }
                self.found.findings.push(Finding {
                    flag: Flag::SecretInDiff.as_str().into(),
                    path: path.clone(),
                    rule: s.rule,
                    masked: Some(masked),
                });
            }
            scan::fragment_flags(&path, &fragment, &mut self.found.findings);
        }
        let room = (MAX_FILE_PATCH - f.patch.len().min(MAX_FILE_PATCH))
            .min(MAX_PUSH_PATCH - self.kept.min(MAX_PUSH_PATCH));
        if f.truncated {
            return;
        }
        if text.len() <= room {
            f.patch.push_str(&text);
            self.kept += text.len();
        } else {
            // Whole lines only, so a masked secret is never cut into a longer prefix.
            let cut = text[..floor_char(&text, room)]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            f.patch.push_str(&text[..cut]);
            self.kept += cut;
            f.truncated = true;
        }
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
