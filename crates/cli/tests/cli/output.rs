//! Output plumbing: a closed pipe, colour, and agent text that cannot smuggle escapes.

use std::process::Stdio;

use serde_json::json;
use supervise_store::Kind;

use crate::util::Env;

#[test]
fn a_closed_pipe_is_not_an_error() {
    let env = Env::new();
    for i in 0..40 {
        env.egress(&format!("h{i}.example.com"), 443);
    }
    let mut child = env
        .cmd(&["audit"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal_and_never_in_json() {
    let env = Env::new();
    env.egress("10.0.0.1", 22);
    assert!(!env.ok(&["list"]).contains('\x1b'));
    assert!(env.ok(&["--color", "always", "list"]).contains("\x1b[31m"));
    assert!(
        !env.ok(&["--color", "always", "list", "--json"])
            .contains('\x1b')
    );
    let no_color = env.cmd(&["list"]).env("NO_COLOR", "1").output().unwrap();
    assert!(!String::from_utf8_lossy(&no_color.stdout).contains('\x1b'));
}

#[test]
fn agent_text_cannot_smuggle_terminal_escapes_or_reorder_text() {
    let env = Env::new();
    let id = env.propose(
        Kind::Egress,
        json!({"host": "a.example.com"}),
        "harmless\u{202e}txt.exe and more",
    );
    for args in [vec!["list"], vec!["show", id.as_str()], vec!["audit"]] {
        let out = env.ok(&args);
        assert!(!out.contains('\u{202e}'), "{args:?}: {out}");
        assert!(out.contains("\\u{202e}"), "{args:?}: {out}");
    }
}
