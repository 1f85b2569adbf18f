//! Tidy: checks that read the source tree and the docs, in the style of rust-analyzer's
//! `tidy.rs`. Nothing is built or run; each check reads files and says what to change.
//!
//! - `rs_files`: every `.rs` file opens with a `//!` line; no `src` file is over 600 lines;
//!   no string literal carries the indentation a lost `\` line continuation leaves;
//! - `deps`: every dependency of every crate is in ARCHITECTURE's "Crates" table;
//! - `history`: the docs and the comments describe the software, not its history;
//! - `cycles`: no module import cycle inside any crate.
//!
//! Run: `cargo test -p supervise-tests --test tidy`.

mod cycles;
mod deps;
mod history;
mod lex;
mod rs_files;

use std::path::{Path, PathBuf};

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A path relative to the workspace root, for messages.
pub fn shown(path: &Path) -> String {
    let root = root().canonicalize().unwrap_or_else(|_| root());
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// Every file under `dir` whose name ends with `ext`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "target") {
                    stack.push(p);
                }
            } else if p.to_string_lossy().ends_with(ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every `.rs` file under `crates/`.
pub fn rust_files() -> Vec<PathBuf> {
    files(&root().join("crates"), ".rs")
}

/// The workspace's crate folders (`crates/NAME` with a `Cargo.toml`), sorted.
pub fn crate_dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .expect("read crates/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    out.sort();
    out
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Fails with every problem found, one per line, under a heading that says what to do.
pub fn report(what_to_do: &str, problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "\n{what_to_do}\n\n{}\n",
        problems.join("\n")
    );
}
