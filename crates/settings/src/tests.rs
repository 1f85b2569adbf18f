//! The layering on a small command: flags over the file over defaults, list replacement,
//! unknown keys and bad files, masking.

use std::io::Write;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command};

use super::*;

fn command() -> Command {
    Command::new("demo")
        .arg(
            Arg::new("listen")
                .long("listen")
                .default_value("127.0.0.1:1"),
        )
        .arg(Arg::new("db").long("db"))
        .arg(Arg::new("grace").long("grace").default_value("30"))
        .arg(Arg::new("bottle").long("bottle").action(ArgAction::Append))
        .arg(Arg::new("quiet").long("quiet").action(ArgAction::SetTrue))
        .arg(
            Arg::new(CONFIG_ARG)
                .long("config")
                .value_parser(clap::value_parser!(PathBuf)),
        )
        .arg(
            Arg::new(PRINT_CONFIG_ARG)
                .long("print-config")
                .action(ArgAction::SetTrue),
        )
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

fn run(args: &[&str]) -> Result<Layered, SettingsError> {
    let argv = std::iter::once("demo")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    parse(command(), argv, &[])
}

fn one(l: &Layered, id: &str) -> Option<String> {
    l.matches.get_one::<String>(id).cloned()
}

fn many(l: &Layered, id: &str) -> Vec<String> {
    l.matches
        .get_many::<String>(id)
        .map(|v| v.cloned().collect())
        .unwrap_or_default()
}

#[test]
fn a_flag_beats_the_file_and_the_file_beats_the_default() {
    let f = file("listen = \"0.0.0.0:9\"\ngrace = 5\ndb = \"/srv/s.db\"\nquiet = true\n");
    let path = f.path().to_str().unwrap();
    let l = run(&["--config", path, "--listen", "127.0.0.1:2"]).unwrap();
    assert_eq!(one(&l, "listen").as_deref(), Some("127.0.0.1:2"));
    assert_eq!(l.source("listen"), Some(Source::Flag));
    assert_eq!(one(&l, "grace").as_deref(), Some("5"));
    assert_eq!(l.source("grace"), Some(Source::File));
    assert_eq!(one(&l, "db").as_deref(), Some("/srv/s.db"));
    assert!(l.matches.get_flag("quiet"));
    let l = run(&["--listen", "127.0.0.1:2"]).unwrap();
    assert_eq!(one(&l, "grace").as_deref(), Some("30"));
    assert_eq!(l.source("grace"), Some(Source::Default));
}

#[test]
fn a_list_on_the_command_line_replaces_the_files_list() {
    let f = file("bottle = [\"a=10.0.0.1\", \"b=10.0.0.2\"]\n");
    let path = f.path().to_str().unwrap();
    let l = run(&["--config", path]).unwrap();
    assert_eq!(many(&l, "bottle"), ["a=10.0.0.1", "b=10.0.0.2"]);
    let l = run(&["--config", path, "--bottle", "c=10.0.0.3"]).unwrap();
    assert_eq!(many(&l, "bottle"), ["c=10.0.0.3"]);
}

#[test]
fn an_unknown_key_is_an_error_naming_it() {
    let f = file("listen = \"127.0.0.1:1\"\nlisten_addr = \"x\"\n");
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SettingsError::UnknownKey { ref key, .. } if key == "listen_addr"));
    assert!(
        msg.contains("`listen_addr`") && msg.contains("listen, db"),
        "{msg}"
    );
    for key in ["config", "print-config", "help"] {
        let f = file(&format!("{key} = true\n"));
        let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
        assert!(
            matches!(err, SettingsError::UnknownKey { .. }),
            "{key}: {err}"
        );
    }
}

#[test]
fn bad_files_are_errors_that_say_which_file() {
    let f = file("listen = \n");
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(matches!(err, SettingsError::Toml { .. }), "{err}");
    assert!(err.to_string().contains(f.path().to_str().unwrap()));

    let err = run(&["--config", "/nonexistent/supervise.toml"]).unwrap_err();
    assert!(matches!(err, SettingsError::Read { .. }), "{err}");

    let f = file("listen = [\"a\", \"b\"]\n");
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(err.to_string().contains("takes one value"), "{err}");

    let f = file("quiet = \"yes\"\n");
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(err.to_string().contains("switch"), "{err}");

    let f = file("[listen]\nx = 1\n");
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(matches!(err, SettingsError::BadValue { .. }), "{err}");
}

#[test]
fn the_description_masks_passwords_and_says_where_each_value_came_from() {
    let f = file("db = \"postgres://app:s3cret@db.internal/supervise\"\n");
    let path = f.path().to_str().unwrap();
    let l = run(&["--config", path, "--bottle", "a=10.0.0.1", "--print-config"]).unwrap();
    assert!(l.print_requested());
    let text = l.describe();
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains("db = \"postgres://app:****@db.internal/supervise\"  # config file"),
        "{text}"
    );
    assert!(
        text.contains("bottle = [\"a=10.0.0.1\"]  # flag --bottle"),
        "{text}"
    );
    assert!(text.contains("grace = \"30\"  # default"), "{text}");
    assert!(text.contains("quiet = false"), "{text}");
    // The description is itself a valid config file.
    let reread: toml::Table = text.parse().unwrap();
    assert_eq!(reread["grace"].as_str(), Some("30"));
}

#[test]
fn masking_hides_url_passwords_and_password_parameters() {
    assert_eq!(
        mask("postgres://app:pw@h:5432/db?sslmode=require"),
        "postgres://app:****@h:5432/db?sslmode=require"
    );
    assert_eq!(mask("postgres://app@h/db"), "postgres://app@h/db");
    assert_eq!(mask("/var/lib/supervise/s.db"), "/var/lib/supervise/s.db");
    assert_eq!(
        mask("host=h user=u password=pw dbname=d"),
        "host=h user=u password=**** dbname=d"
    );
    assert_eq!(
        mask("curl https://u:tok@hooks.example/x?a=1"),
        "curl https://u:****@hooks.example/x?a=1"
    );
}

#[test]
fn a_password_in_a_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let f = file("db = \"postgres://app:s3cret@db.internal/supervise\"\n");
    std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = run(&["--config", f.path().to_str().unwrap()]).unwrap_err();
    assert!(matches!(err, SettingsError::ReadableSecret(_)), "{err}");
    assert!(err.to_string().contains("chmod o-r"), "{err}");
    std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(run(&["--config", f.path().to_str().unwrap()]).is_ok());
    // Without a password, a readable file is fine.
    let f = file("listen = \"0.0.0.0:9\"\n");
    std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(run(&["--config", f.path().to_str().unwrap()]).is_ok());
}
