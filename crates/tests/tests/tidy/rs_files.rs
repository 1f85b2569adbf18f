//! Checks of each `.rs` file on its own: its `//!` opener, its length, its literals.

use crate::lex::lex;
use crate::{read, report, rust_files, shown};

/// The most lines a file under a crate's `src` may have.
const MAX_SRC_LINES: usize = 600;

/// A run of this many spaces inside a one-line string literal is the indentation of a
/// continuation line whose `\` was lost, not text anyone meant to print.
const LOST_CONTINUATION: usize = 10;

#[test]
fn every_rs_file_opens_with_a_doc_line() {
    let problems: Vec<String> = rust_files()
        .into_iter()
        .filter(|p| {
            let text = read(p);
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            !first.trim_start().starts_with("//!")
        })
        .map(|p| format!("{}:1", shown(&p)))
        .collect();
    report(
        "these files do not open with a `//!` line: make the first line say what the file is for",
        problems,
    );
}

#[test]
fn no_src_file_is_over_600_lines() {
    let problems: Vec<String> = rust_files()
        .into_iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "src"))
        .filter_map(|p| {
            let n = read(&p).lines().count();
            (n > MAX_SRC_LINES).then(|| format!("{}: {n} lines", shown(&p)))
        })
        .collect();
    report(
        &format!(
            "these `src` files are over {MAX_SRC_LINES} lines: split each into modules \
             (a folder with one file per part)"
        ),
        problems,
    );
}

#[test]
fn no_string_literal_carries_a_lost_line_continuation() {
    let mut problems = Vec::new();
    for p in rust_files() {
        for (line, text, raw) in lex(&read(&p)).strings {
            let text = join_continuations(&text);
            if raw || text.contains('\n') || text.contains("\\n") {
                continue;
            }
            if has_space_run(&text, LOST_CONTINUATION) {
                problems.push(format!("{}:{line}: \"{text}\"", shown(&p)));
            }
        }
    }
    report(
        &format!(
            "these one-line string literals carry a run of {LOST_CONTINUATION} or more spaces \
             between words: end the line before it with `\\` (which drops the next line's \
             indentation) or remove the spaces"
        ),
        problems,
    );
}

/// A literal's text as the compiler reads it across lines: `\` at a line's end drops the
/// newline and the next line's leading whitespace.
fn join_continuations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\\n") {
        out.push_str(&rest[..at]);
        rest = rest[at + 2..].trim_start();
    }
    out.push_str(rest);
    out
}

/// Whether `text` has `min` or more spaces in a row between two other characters.
fn has_space_run(text: &str, min: usize) -> bool {
    let inner = text.trim();
    let mut run = 0;
    for c in inner.chars() {
        if c == ' ' {
            run += 1;
            if run >= min {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[test]
fn a_space_run_is_found_between_words_only() {
    let gap = |n: usize| format!("has{}no name", " ".repeat(n));
    assert!(has_space_run(&gap(10), 10));
    assert!(!has_space_run(&gap(9), 10));
    assert!(!has_space_run("            indented", 10));
    assert_eq!(join_continuations("a \\\n      b"), "a b");
}
