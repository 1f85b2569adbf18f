//! The content flags other than secrets: from a file's paths and modes (`executable-added`,
//! `ci-config`) and from a hunk's added lines (`install-script`). Each finding names the file
//! and what was seen.

use regex::Regex;
use std::sync::LazyLock;
use supervise_store::Flag;
use supervise_store::model::{DiffFile, Finding};

/// Paths (or path prefixes, ending in `/`) of CI definitions: what runs with CI's secrets.
const CI_PATHS: &[&str] = &[
    ".github/workflows/",
    ".github/actions/",
    ".gitea/workflows/",
    ".forgejo/workflows/",
    ".gitlab-ci.yml",
    ".gitlab-ci.yaml",
    ".gitlab/ci/",
    ".circleci/",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "azure-pipelines.yaml",
    ".azure-pipelines/",
    "bitbucket-pipelines.yml",
    ".buildkite/",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/",
    "appveyor.yml",
    ".appveyor.yml",
    ".cirrus.yml",
    ".pre-commit-config.yaml",
];

/// Whether `path` is a CI definition (at the repository's root, as CI systems read them).
pub fn is_ci(path: &str) -> bool {
    CI_PATHS.iter().any(|p| match p.strip_suffix('/') {
        Some(_) => path.starts_with(p),
        None => path == *p,
    })
}

fn push(out: &mut Vec<Finding>, flag: Flag, path: &str, rule: String) {
    out.push(Finding {
        flag: flag.as_str().into(),
        path: path.into(),
        rule,
        masked: None,
    });
}

/// Flags of one file from its paths and modes; `target` is a symlink's new target.
pub fn file_flags(f: &DiffFile, target: Option<&str>, out: &mut Vec<Finding>) {
    let path = f.path();
    if f.status != "deleted" {
        let newly = f.status == "added"
            || f.old_mode
                .as_deref()
                .is_some_and(|m| !m.starts_with("executable"));
        if f.mode == "executable" && newly {
            push(out, Flag::ExecutableAdded, path, "executable file".into());
        }
        if let Some(target) = target
            && leaves_repository(path, target)
        {
            push(
                out,
                Flag::ExecutableAdded,
                path,
                format!(
                    "symlink to {}",
                    target.chars().take(200).collect::<String>()
                ),
            );
        }
    }
    for p in [f.old_path.as_deref(), f.new_path.as_deref()]
        .into_iter()
        .flatten()
    {
        if is_ci(p) {
            push(out, Flag::CiConfig, p, "CI definition".into());
            break;
        }
    }
}

/// Whether a symlink at `path` pointing at `target` resolves outside the repository.
pub fn leaves_repository(path: &str, target: &str) -> bool {
    if target.starts_with('/') || target.starts_with('~') {
        return true;
    }
    let mut depth: i64 = path.matches('/').count() as i64;
    for part in target.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// npm's and composer's lifecycle scripts, which run on install.
static NPM_SCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#""(preinstall|install|postinstall|prepare|prepublish|prepublishOnly|prepack|postpack|preuninstall|uninstall|postuninstall)"\s*:"#,
    )
    .expect("a valid regex")
});
static COMPOSER_SCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(pre-install-cmd|post-install-cmd|pre-update-cmd|post-update-cmd|post-autoload-dump)"\s*:"#)
        .expect("a valid regex")
});

/// Flags of a hunk's added lines in `path`.
pub fn fragment_flags(path: &str, fragment: &str, out: &mut Vec<Finding>) {
    let name = path.rsplit('/').next().unwrap_or(path);
    let regex = match name {
        "package.json" => &*NPM_SCRIPT,
        "composer.json" => &*COMPOSER_SCRIPT,
        _ => return,
    };
    for caps in regex.captures_iter(fragment) {
        let script = caps.get(1).map_or("", |m| m.as_str());
        if !out
            .iter()
            .any(|f| f.flag == Flag::InstallScript.as_str() && f.path == path && f.rule == script)
        {
            push(out, Flag::InstallScript, path, script.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_that_leave_the_repository_and_ci_paths() {
        assert!(leaves_repository("a/link", "/etc/passwd"));
        assert!(leaves_repository("a/link", "../../x"));
        assert!(!leaves_repository("a/link", "../x"));
        assert!(!leaves_repository("link", "docs/readme"));
        assert!(is_ci(".github/workflows/ci.yml"));
        assert!(is_ci(".gitlab-ci.yml"));
        assert!(!is_ci("docs/.gitlab-ci.yml.md"));
    }

    #[test]
    fn lifecycle_scripts_in_package_json_are_install_scripts() {
        let mut out = Vec::new();
        fragment_flags(
            "package.json",
            "  \"postinstall\": \"sh postinstall.sh\",\n",
            &mut out,
        );
        fragment_flags("lib/package.json", "\"test\": \"jest\"\n", &mut out);
        fragment_flags("notes.json", "\"postinstall\": \"x\"\n", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule, "postinstall");
    }
}
