//! ARCHITECTURE's "Crates" table against every crate's `Cargo.toml`: each dependency is
//! listed in its crate's row, in "may depend on" (normal and build dependencies) or in
//! "its tests also use" (dev-only ones), and nothing is listed that the crate does not use.

use std::collections::BTreeSet;
use std::path::Path;

use crate::{crate_dirs, read, report, root, shown};

/// A crate's dependencies by name: (normal and build, dev-only).
fn manifest_deps(manifest: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
    let mut section = String::new();
    for line in read(manifest).lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').to_string();
            // `[dependencies.NAME]`: the table form of one dependency.
            if let Some((kind, name)) = section.rsplit_once('.')
                && kind.ends_with("dependencies")
                && !name.contains('\'')
            {
                let set = if kind.ends_with("dev-dependencies") {
                    &mut dev
                } else {
                    &mut normal
                };
                set.insert(name.to_string());
            }
            continue;
        }
        let set = if section.ends_with("dev-dependencies") {
            &mut dev
        } else if section.ends_with("dependencies") {
            &mut normal
        } else {
            continue;
        };
        let name: String = line
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        if !name.is_empty() {
            set.insert(name);
        }
    }
    let dev = dev.difference(&normal).cloned().collect();
    (normal, dev)
}

/// One row of the table: the crate's folder name, and the names in its two lists.
struct Row {
    dir: String,
    normal: BTreeSet<String>,
    dev: BTreeSet<String>,
}

/// The names in one cell: a comma-separated list, each item's name first (`sqlx
/// (SQLite, …)`, `` `rustix` ``); workspace crates by their short name (`store`); `–` for
/// none.
fn cell_names(cell: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in cell.chars().chain([',']) {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                let name: String = item
                    .trim()
                    .trim_start_matches('`')
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
                item.clear();
            }
            _ if depth == 0 => item.push(c),
            _ => {}
        }
    }
    out
}

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_start_matches('|')
        .trim_end_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

/// The "Crates" table of `docs/ARCHITECTURE.md`.
fn table() -> Vec<Row> {
    let doc = read(&root().join("docs/ARCHITECTURE.md"));
    let mut lines = doc
        .lines()
        .skip_while(|l| l.trim() != "## Crates")
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    let header = cells(
        lines
            .next()
            .expect("ARCHITECTURE.md has a \"## Crates\" table"),
    );
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("the Crates table has no column {name:?}: {header:?}"))
    };
    let (normal, dev) = (column("may depend on"), column("its tests also use"));
    lines
        .skip(1)
        .map(|l| {
            let c = cells(l);
            let dir = c[0]
                .split("`crates/")
                .nth(1)
                .and_then(|rest| rest.split('`').next())
                .unwrap_or_else(|| panic!("a Crates row names no `crates/DIR`: {l}"))
                .to_string();
            Row {
                dir,
                normal: cell_names(&c[normal]),
                dev: cell_names(&c[dev]),
            }
        })
        .collect()
}

/// `supervise-store` is listed as `store`.
fn short(name: &str) -> String {
    name.strip_prefix("supervise-").unwrap_or(name).to_string()
}

#[test]
fn every_dependency_is_in_the_architecture_table() {
    let rows = table();
    let mut problems = Vec::new();
    for dir in crate_dirs() {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let manifest = dir.join("Cargo.toml");
        let Some(row) = rows.iter().find(|r| r.dir == name) else {
            problems.push(format!("crates/{name}: no row in the table"));
            continue;
        };
        let (normal, dev) = manifest_deps(&manifest);
        let normal: BTreeSet<String> = normal.iter().map(|d| short(d)).collect();
        let dev: BTreeSet<String> = dev.iter().map(|d| short(d)).collect();
        for d in normal.difference(&row.normal) {
            problems.push(format!(
                "{}: `{d}` is missing from \"may depend on\"",
                shown(&manifest)
            ));
        }
        for d in dev.difference(&row.dev) {
            problems.push(format!(
                "{}: `{d}` (dev-dependency) is missing from \"its tests also use\"",
                shown(&manifest)
            ));
        }
        for d in row.normal.difference(&normal) {
            problems.push(format!(
                "crates/{name}: \"may depend on\" lists `{d}`, not a dependency of the crate"
            ));
        }
        for d in row.dev.difference(&dev) {
            problems.push(format!(
                "crates/{name}: \"its tests also use\" lists `{d}`, not a dev-only dependency"
            ));
        }
    }
    report(
        "docs/ARCHITECTURE.md's \"Crates\" table and the crates' Cargo.toml disagree: list \
         every dependency in its crate's row (workspace crates by their short name, \
         dev-only ones under \"its tests also use\") and drop what the crate no longer uses",
        problems,
    );
}

#[test]
fn a_cell_lists_names_before_their_notes() {
    let names = cell_names("sqlx (SQLite, PostgreSQL, Any), `rustix`, unicode-normalization, –");
    let want: BTreeSet<String> = ["sqlx", "rustix", "unicode-normalization"]
        .map(String::from)
        .into();
    assert_eq!(names, want);
}
