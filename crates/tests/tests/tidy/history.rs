//! Docs and comments describe the software as it is: phrases that tell its history (issue
//! numbers, work sessions, rounds, what it did before) are refused in `README.md`, `docs/*.md` and
//! every comment of every `.rs` file. The history is in git.

use std::path::Path;

use crate::lex::lex;
use crate::{files, read, report, root, rust_files, shown};

/// The refused phrases, word by word: `a|b` is either word, `<n>` a number (`12`, `#12`).
const PHRASES: &[&str] = &[
    "issue <n>",
    "issues <n>",
    "finding <n>",
    "follow-up <n>",
    "this session",
    "round two|three|four|five",
    "previously",
    "it|this|that|which|we used to",
    "used to be",
    "before|after|since this change",
];

/// A text's words, lower-cased, each with its line. `None` separates texts that are not
/// one run of prose (two comments apart), so no phrase spans them.
type Words = Vec<Option<(usize, String)>>;

fn words_of(line: usize, text: &str, out: &mut Words) {
    for w in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '#' | '-' | '\''))) {
        let w = w.trim_matches(|c| c == '-' || c == '\'');
        if !w.is_empty() {
            out.push(Some((line, w.to_lowercase())));
        }
    }
}

fn matches(pattern: &str, word: &str) -> bool {
    pattern.split('|').any(|p| {
        if p == "<n>" {
            let digits = word.trim_start_matches('#');
            !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        } else {
            p == word
        }
    })
}

/// Each refused phrase in `words`: (line, the phrase as written).
fn hits(words: &Words) -> Vec<(usize, String)> {
    let phrases: Vec<Vec<&str>> = PHRASES.iter().map(|p| p.split(' ').collect()).collect();
    let mut out = Vec::new();
    for start in 0..words.len() {
        let Some((line, first)) = &words[start] else {
            continue;
        };
        for parts in phrases.iter().filter(|parts| matches(parts[0], first)) {
            let Some(window) = words.get(start..start + parts.len()) else {
                continue;
            };
            let found: Option<Vec<&str>> = window
                .iter()
                .zip(parts)
                .map(|(w, p)| {
                    w.as_ref()
                        .filter(|(_, w)| matches(p, w))
                        .map(|(_, w)| w.as_str())
                })
                .collect();
            if let Some(found) = found {
                out.push((*line, found.join(" ")));
            }
        }
    }
    out
}

fn check(path: &Path, words: &Words, problems: &mut Vec<String>) {
    for (line, text) in hits(words) {
        problems.push(format!("{}:{line}: \"{text}\"", shown(path)));
    }
}

#[test]
fn docs_and_comments_carry_no_history() {
    let mut problems = Vec::new();
    let mut docs = vec![root().join("README.md")];
    docs.extend(
        files(&root().join("docs"), ".md")
            .into_iter()
            .filter(|p| p.parent() == Some(&root().join("docs"))),
    );
    for doc in docs {
        let mut words = Words::new();
        for (i, l) in read(&doc).lines().enumerate() {
            words_of(i + 1, l, &mut words);
        }
        check(&doc, &words, &mut problems);
    }
    for file in rust_files() {
        let mut words = Words::new();
        let mut last = 0;
        for (line, text) in lex(&read(&file)).comments {
            if line > last + 1 {
                words.push(None);
            }
            words_of(line, &text, &mut words);
            last = line;
        }
        check(&file, &words, &mut problems);
    }
    report(
        "these docs and comments tell the software's history (it belongs in git): say what \
         the software does, without issue numbers, sessions, rounds or what it did before",
        problems,
    );
}

#[test]
fn a_phrase_is_found_across_lines_and_only_whole() {
    let mut words = Words::new();
    words_of(1, "It", &mut words);
    words_of(2, "used to cost more; see issue #12", &mut words);
    words_of(3, "the sandbox is used to pin; a tissue 3", &mut words);
    let found: Vec<String> = hits(&words)
        .into_iter()
        .map(|(l, t)| format!("{l}:{t}"))
        .collect();
    assert_eq!(found, ["1:it used to", "2:issue #12"]);
}
