//! Running `git` from the `pre-receive` hook. The pushed objects are not in the repository
//! yet: git keeps them in a quarantine directory and tells the hook where through its
//! environment, so every git command the gate runs inherits that environment unchanged
//! (never `env_clear`), and the variables that matter are checked to be passed on.

use std::ffi::OsString;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The variables through which git hands a hook its quarantined objects and repository.
pub const HOOK_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_QUARANTINE_PATH",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
];

/// git, run as the hook was: same working directory (the repository) and environment.
#[derive(Debug, Default)]
pub struct Git {
    /// Run in this repository (`git -C`), for commands outside a hook.
    pub dir: Option<std::path::PathBuf>,
}

impl Git {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        if let Some(dir) = &self.dir {
            c.arg("-C").arg(dir);
        }
        c.args(args).stdin(Stdio::null());
        // Inherited anyway; set explicitly so a future env change here cannot drop them.
        for name in HOOK_ENV {
            if let Some(value) = std::env::var_os(name) {
                c.env(name, value);
            }
        }
        c
    }

    /// Runs git and returns its stdout; a failure is an error naming the command.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("cannot run git {}", args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Starts git with its stdout piped, for output read as a stream.
    pub fn spawn(&self, args: &[&str]) -> Result<std::process::Child> {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run git {}", args.join(" ")))
    }

    /// Starts git with its stdin and stdout piped.
    pub fn spawn_with_stdin(&self, args: &[&str]) -> Result<std::process::Child> {
        self.command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run git {}", args.join(" ")))
    }

    /// Runs git and returns its stdout as bytes (`-z` output, blobs).
    pub fn bytes(&self, args: &[&str]) -> Result<Vec<u8>> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("cannot run git {}", args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    }

    /// Runs git for its exit status only: `Ok(true)` on 0, `Ok(false)` on 1.
    pub fn test(&self, args: &[&str]) -> Result<bool> {
        let out = self
            .command(args)
            .stdout(Stdio::null())
            .output()
            .with_context(|| format!("cannot run git {}", args.join(" ")))?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => bail!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    }
}

/// The push options the pusher gave (`git push -o KEY=VALUE`), from the hook's environment.
pub fn push_options() -> Vec<String> {
    let count: usize = std::env::var("GIT_PUSH_OPTION_COUNT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (0..count.min(100))
        .filter_map(|i| std::env::var_os(format!("GIT_PUSH_OPTION_{i}")))
        .map(|v: OsString| v.to_string_lossy().into_owned())
        .collect()
}
