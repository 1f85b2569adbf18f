//! Layered settings for the daemons (`supervise-server`, `supervise console`): a TOML
//! `--config FILE` under environment variables and command-line flags, on clap.
//!
//! Every long flag of the command is a key of the file, spelled as the flag (`db`,
//! `listen`, `grace = 30`, `bottle = ["demo=10.0.0.2"]`). The command line is parsed
//! once; each file key whose flag was given neither on the command line nor through its
//! environment variable (nor a flag it conflicts with) is then handed to clap as if it
//! were typed after the command line, and the whole is parsed again. So clap's own value
//! parsers check the file's values, and the order is flags, then environment, then the
//! file, then defaults; a list flag given on the command line replaces the file's list.
//! A key that names no flag is an error naming it.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// The id of the `--config FILE` argument on the commands that take one.
pub const CONFIG_ARG: &str = "config";
/// The id of the `--print-config` argument.
pub const PRINT_CONFIG_ARG: &str = "print_config";

/// Arguments that are never keys of the file.
const NOT_KEYS: &[&str] = &["help", "version", CONFIG_ARG, PRINT_CONFIG_ARG];

/// Why the settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The command line (or a file value, checked as one) is wrong: clap's message.
    #[error(transparent)]
    Clap(#[from] clap::Error),
    #[error("cannot read the config file {path}: {source}; check the path given to --config")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the config file {path} is not valid TOML: {message}")]
    Toml { path: PathBuf, message: String },
    #[error(
        "the config file {path} has an unknown key `{key}`; the keys are the long flags: {known}"
    )]
    UnknownKey {
        path: PathBuf,
        key: String,
        known: String,
    },
    #[error(
        "the config file {} holds a password and users outside its owner and group can read \
         it; fix: chmod o-r {} (or move the URL into a --db-file file)",
        .0.display(),
        .0.display()
    )]
    ReadableSecret(PathBuf),
    #[error("the config file {path}: key `{key}` {problem}")]
    BadValue {
        path: PathBuf,
        key: String,
        problem: String,
    },
}

/// Where an effective setting came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    Environment,
    File,
    Default,
}

/// The parsed command line with the file's settings in place.
#[derive(Debug)]
pub struct Layered {
    /// The matches clap made of the command line and the file together.
    pub matches: ArgMatches,
    /// The command (built), for [`Layered::describe`].
    command: Command,
    /// The subcommand path to the command that took `--config` (empty: the top).
    path: Vec<String>,
    /// The ids of the arguments whose values came from the file.
    from_file: BTreeSet<String>,
    /// Extra environment variables a binary reads itself, by argument id.
    extra_env: Vec<(String, String)>,
}

/// Parses `argv` with `command`, then reads the `--config` file of the innermost
/// subcommand that has one (when given) and parses again with its settings under the
/// flags and environment. `extra_env` names environment variables a binary reads itself
/// for an argument (argument id, variable): set and non-empty, they beat the file too.
pub fn parse(
    command: Command,
    argv: Vec<OsString>,
    extra_env: &[(&str, &str)],
) -> Result<Layered, SettingsError> {
    let mut command = command;
    command.build();
    let first = command.clone().try_get_matches_from(argv.clone())?;
    let extra_env: Vec<(String, String)> = extra_env
        .iter()
        .map(|(a, v)| (a.to_string(), v.to_string()))
        .collect();
    let (path, leaf_cmd, leaf) = innermost(&command, &first);
    let file = leaf
        .try_get_one::<PathBuf>(CONFIG_ARG)
        .ok()
        .flatten()
        .cloned();
    let Some(file) = file else {
        return Ok(Layered {
            matches: first,
            command,
            path,
            from_file: BTreeSet::new(),
            extra_env,
        });
    };
    let table = read_table(&file)?;
    let mut args = argv;
    let mut from_file = BTreeSet::new();
    for (key, value) in &table {
        let arg = leaf_cmd
            .get_arguments()
            .find(|a| {
                a.get_long() == Some(key.as_str()) && !NOT_KEYS.contains(&a.get_id().as_str())
            })
            .ok_or_else(|| SettingsError::UnknownKey {
                path: file.clone(),
                key: key.clone(),
                known: known_keys(leaf_cmd),
            })?;
        let id = arg.get_id().as_str();
        let explicit = |id: &str| {
            matches!(
                leaf.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            ) || extra_env
                .iter()
                .any(|(a, var)| a == id && std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        };
        // Conflicts are declared on one side (`--db-file` conflicts with `--db`): both count.
        let conflicting = leaf_cmd.get_arguments().filter(|other| {
            leaf_cmd
                .get_arg_conflicts_with(other)
                .iter()
                .any(|c| c.get_id() == arg.get_id())
                || leaf_cmd
                    .get_arg_conflicts_with(arg)
                    .iter()
                    .any(|c| c.get_id() == other.get_id())
        });
        if explicit(id) || conflicting.map(|a| a.get_id().as_str()).any(explicit) {
            continue;
        }
        let bad = |problem: &str| SettingsError::BadValue {
            path: file.clone(),
            key: key.clone(),
            problem: problem.to_string(),
        };
        let is_switch = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
        let repeatable = matches!(arg.get_action(), ArgAction::Append);
        let values: Vec<&toml::Value> = match value {
            toml::Value::Array(items) if repeatable => items.iter().collect(),
            toml::Value::Array(_) => return Err(bad("takes one value, not a list")),
            single => vec![single],
        };
        for v in values {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) if is_switch => {
                    if *b {
                        args.push(format!("--{key}").into());
                    }
                    continue;
                }
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(bad(
                        "must be a string, a number, a boolean or a list of them",
                    ));
                }
            };
            if is_switch {
                return Err(bad("is a switch: write true or false"));
            }
            args.push(format!("--{key}={text}").into());
        }
        from_file.insert(id.to_string());
    }
    let matches = command.clone().try_get_matches_from(args)?;
    Ok(Layered {
        matches,
        command,
        path,
        from_file,
        extra_env,
    })
}

/// The innermost subcommand's path, command and matches.
fn innermost<'a>(
    command: &'a Command,
    matches: &'a ArgMatches,
) -> (Vec<String>, &'a Command, &'a ArgMatches) {
    let (mut cmd, mut m, mut path) = (command, matches, Vec::new());
    while let Some((name, sub)) = m.subcommand() {
        match cmd.find_subcommand(name) {
            Some(c) => {
                cmd = c;
                m = sub;
                path.push(name.to_string());
            }
            None => break,
        }
    }
    (path, cmd, m)
}

fn read_table(file: &Path) -> Result<toml::Table, SettingsError> {
    let text = std::fs::read_to_string(file).map_err(|source| SettingsError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    // A password in a file others can read is no secret: refused before it is used.
    let others_read = std::fs::metadata(file).is_ok_and(|m| m.mode() & 0o004 != 0);
    if others_read && mask(&text) != text {
        return Err(SettingsError::ReadableSecret(file.to_path_buf()));
    }
    text.parse::<toml::Table>()
        .map_err(|e| SettingsError::Toml {
            path: file.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })
}

fn known_keys(cmd: &Command) -> String {
    let keys: Vec<&str> = cmd
        .get_arguments()
        .filter(|a| !NOT_KEYS.contains(&a.get_id().as_str()))
        .filter_map(|a| a.get_long())
        .collect();
    keys.join(", ")
}

impl Layered {
    /// The matches of the command that took `--config` (the innermost subcommand).
    pub fn leaf(&self) -> &ArgMatches {
        innermost(&self.command, &self.matches).2
    }

    /// Whether `--print-config` was given.
    pub fn print_requested(&self) -> bool {
        self.leaf()
            .try_get_one::<bool>(PRINT_CONFIG_ARG)
            .ok()
            .flatten()
            .copied()
            .unwrap_or(false)
    }

    /// Where the argument `id` got its value (`None`: it has none).
    pub fn source(&self, id: &str) -> Option<Source> {
        if self.from_file.contains(id) {
            return Some(Source::File);
        }
        match self.leaf().value_source(id) {
            Some(ValueSource::CommandLine) => Some(Source::Flag),
            Some(ValueSource::EnvVariable) => Some(Source::Environment),
            Some(ValueSource::DefaultValue) => Some(Source::Default),
            _ => None,
        }
    }

    /// The effective settings as a TOML document (usable as a config file), one key per
    /// line with where it came from; unset ones commented out. Every value goes through
    /// [`mask`], so a password in a URL never shows.
    pub fn describe(&self) -> String {
        let (_, cmd, leaf) = innermost(&self.command, &self.matches);
        let mut out = String::new();
        let name = std::iter::once(self.command.get_name().to_string())
            .chain(self.path.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "# effective settings of {name} (secrets masked)\n"
        ));
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            let Some(key) = arg.get_long() else { continue };
            if NOT_KEYS.contains(&id) {
                continue;
            }
            let raw: Vec<String> = leaf
                .get_raw(id)
                .map(|vals| vals.map(|v| v.to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            let env_extra = self.extra_env.iter().find_map(|(a, var)| {
                (a == id)
                    .then(|| {
                        std::env::var(var)
                            .ok()
                            .filter(|v| !v.is_empty())
                            .map(|v| (var, v))
                    })
                    .flatten()
            });
            let (value, whence) = match (self.source(id), env_extra) {
                (None, Some((var, v))) => (Some(quoted(&[v], false)), format!("environment {var}")),
                (None, None) => (None, "not set".to_string()),
                (Some(src), _) => {
                    let switch =
                        matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
                    let list = matches!(arg.get_action(), ArgAction::Append);
                    let value = if switch {
                        raw.first().cloned().unwrap_or_else(|| "false".into())
                    } else {
                        quoted(&raw, list)
                    };
                    let whence = match src {
                        Source::Flag => format!("flag --{key}"),
                        Source::Environment => match arg.get_env() {
                            Some(var) => format!("environment {}", var.to_string_lossy()),
                            None => "environment".to_string(),
                        },
                        Source::File => "config file".to_string(),
                        Source::Default => "default".to_string(),
                    };
                    (Some(value), whence)
                }
            };
            match value {
                Some(v) => out.push_str(&format!("{key} = {v}  # {whence}\n")),
                None => out.push_str(&format!("# {key} =  # {whence}\n")),
            }
        }
        out
    }
}

/// TOML text for the values: a string, or a list when `list`.
fn quoted(values: &[String], list: bool) -> String {
    let one = |v: &String| toml::Value::String(mask(v)).to_string();
    if list {
        let items: Vec<String> = values.iter().map(one).collect();
        format!("[{}]", items.join(", "))
    } else {
        values.first().map(one).unwrap_or_else(|| "\"\"".into())
    }
}

/// `text` with the password of every URL in it replaced by `****`
/// (`postgres://app:secret@db/x` → `postgres://app:****@db/x`), and the value of every
/// `password=` parameter too.
pub fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                let userinfo = &authority[..userinfo_end];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon]);
                        out.push_str(":****");
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    mask_parameter(&out, "password=")
}

/// Replaces the value after each `name` (up to `&`, white space or the end) with `****`.
fn mask_parameter(text: &str, name: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(found) = lower[pos..].find(name) {
        let start = pos + found + name.len();
        out.push_str(&text[pos..start]);
        let end = text[start..]
            .find(|c: char| c == '&' || c.is_whitespace())
            .map_or(text.len(), |e| start + e);
        out.push_str("****");
        pos = end;
    }
    out.push_str(&text[pos..]);
    out
}

#[cfg(test)]
mod tests;
