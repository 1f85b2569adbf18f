//! Git-push changes: a remote (a name, an allowed URL or user@host:path) and a ref, checked
//! by git's `check-ref-format` rules.

use serde_json::{Map, Value};

mod summary;

use super::{MAX_REF_LEN, MAX_REMOTE_LEN, invalid, refuse_unknown, required_str};
use crate::error::StoreResult;
use crate::text;
pub use summary::{MAX_SUBJECT_CHARS, MAX_SUBJECTS, describe_push, is_zero};
use summary::{object_id, validate_summary};

pub(super) fn normalise_git_push(obj: &Map<String, Value>) -> StoreResult<Value> {
    refuse_unknown(obj, &["remote", "ref", "old", "new", "summary"])?;
    let remote = validate_remote(required_str(obj, "remote")?)?;
    if !["old", "new", "summary"]
        .iter()
        .any(|f| obj.contains_key(*f))
    {
        // A standing push (from `propose-git-push`): a ref, or a namespace ending in `/*`.
        let reference = normalise_ref_pattern(required_str(obj, "ref")?)?;
        return Ok(serde_json::json!({ "remote": remote, "ref": reference }));
    }
    // One push through the gate: exactly (ref, old, new), with what git saw in it.
    let reference = normalise_ref(required_str(obj, "ref")?)?;
    let old = object_id("old", required_str(obj, "old")?)?;
    let new = object_id("new", required_str(obj, "new")?)?;
    if old == new {
        return Err(invalid("new", "must differ from old"));
    }
    if old.len() != new.len() {
        return Err(invalid("new", "must be the same kind of object id as old"));
    }
    let summary = validate_summary(obj.get("summary"), is_zero(&old), is_zero(&new))?;
    Ok(serde_json::json!({
        "remote": remote, "ref": reference, "old": old, "new": new, "summary": summary,
    }))
}

/// A standing grant's ref: a ref by [`normalise_ref`], or a namespace `prefix/*` whose
/// prefix is one (`agent/*` becomes `refs/heads/agent/*`).
pub fn normalise_ref_pattern(raw: &str) -> StoreResult<String> {
    match raw.strip_suffix("/*") {
        Some(prefix) if !prefix.is_empty() => {
            let full = normalise_ref(&format!("{prefix}/x"))?;
            Ok(format!("{}*", &full[..full.len() - 1]))
        }
        _ => normalise_ref(raw),
    }
}

/// Whether a standing grant's ref (exact, or ending in `/*`) covers `reference`.
pub fn ref_covers(pattern: &str, reference: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('/') => {
            reference.len() > prefix.len() && reference.starts_with(prefix)
        }
        _ => pattern == reference,
    }
}

/// URL schemes a remote may use: authenticated transports only. `http://` and `git://` are
/// plaintext, `file://` and paths reach the gate's own disk, and `transport::address`
/// runs a remote helper (`ext::` runs any command).
const REMOTE_SCHEMES: &[&str] = &["https", "ssh", "git+ssh", "ssh+git"];

/// Checks a remote: a remote name (`origin`), a URL of an allowed scheme
/// (`https://host/path`, `ssh://[user@]host[:port]/path`) without credentials, or an
/// scp-like address (`[user@]host:path`). Never option-like (a leading `-` is read by git or
/// ssh as an option), never a `transport::` helper form, never a local path. Returned as
/// given: a remote is compared and shown, not rewritten.
pub fn validate_remote(raw: &str) -> StoreResult<&str> {
    let field = "remote";
    if raw.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if raw.len() > MAX_REMOTE_LEN {
        return Err(invalid(
            field,
            format!("is longer than {MAX_REMOTE_LEN} bytes"),
        ));
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            field,
            "must not contain spaces or control characters",
        ));
    }
    refuse_invisible(field, raw)?;
    if raw.starts_with('-') {
        return Err(invalid(
            field,
            "must not start with `-`: git would read it as an option",
        ));
    }
    if let Some((transport, _)) = raw.split_once("::")
        && !transport.is_empty()
        && transport
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return Err(invalid(
            field,
            format!(
                "must not use a `{transport}::` transport: git would run a remote helper for it \
                 (give a remote name, an https:// or ssh:// URL, or user@host:path)"
            ),
        ));
    }
    if let Some((scheme, rest)) = raw.split_once("://") {
        return validate_remote_url(raw, scheme, rest);
    }
    if let Some((authority, path)) = raw.split_once(':')
        && !authority.contains('/')
    {
        // scp-like: [user@]host:path, as git reads a colon before any slash.
        let host = match authority.rsplit_once('@') {
            Some((user, host)) => {
                check_user(user)?;
                host
            }
            None => authority,
        };
        check_host(host)?;
        if path.is_empty() || path.starts_with('-') {
            return Err(invalid(
                field,
                "needs a path after `host:` that does not start with `-`",
            ));
        }
        return Ok(raw);
    }
    validate_remote_name(raw)
}

/// A remote name, by git's rules for `refs/remotes/<name>`, and one component only (a `/`
/// would make git take an unknown name for a local path).
fn validate_remote_name(raw: &str) -> StoreResult<&str> {
    let field = "remote";
    if raw.contains('/') || raw.contains('\\') {
        return Err(invalid(
            field,
            "must be a remote name without `/`, a URL (https://, ssh://) or user@host:path; \
             local paths are not allowed",
        ));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '@'))
    {
        return Err(invalid(
            field,
            format!("must not contain `{c}` in a remote name"),
        ));
    }
    if raw.starts_with('.') || raw.contains("..") || raw.ends_with('.') {
        return Err(invalid(
            field,
            "must not start or end with `.` or contain `..`",
        ));
    }
    if raw.ends_with(".lock") {
        return Err(invalid(field, "must not end with `.lock`"));
    }
    Ok(raw)
}

fn validate_remote_url<'a>(raw: &'a str, scheme: &str, rest: &str) -> StoreResult<&'a str> {
    let field = "remote";
    let scheme_lower = scheme.to_ascii_lowercase();
    if !REMOTE_SCHEMES.contains(&scheme_lower.as_str()) {
        return Err(invalid(
            field,
            format!(
                "uses the scheme `{scheme}://`; allowed are https:// and ssh:// \
                 (plaintext http:// and git://, file:// and local paths are not)"
            ),
        ));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => {
            if scheme_lower == "https" || userinfo.contains(':') {
                return Err(invalid(
                    field,
                    "must not carry credentials (user:password@ or a token@): drop them from \
                     the URL; the git gate authenticates the push",
                ));
            }
            check_user(userinfo)?;
            host_port
        }
        None => authority,
    };
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((v6, port)) if v6.parse::<std::net::Ipv6Addr>().is_ok() => {
                check_port(port)?;
                return Ok(raw);
            }
            _ => return Err(invalid(field, "has a malformed [IPv6] host")),
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => {
                check_port(&format!(":{port}"))?;
                host
            }
            None => host_port,
        }
    };
    check_host(host)?;
    Ok(raw)
}

/// A URL's or scp-like address's host: a DNS name or IPv4 literal in ASCII, never option-like.
fn check_host(host: &str) -> StoreResult<()> {
    if host.is_empty() {
        return Err(invalid("remote", "has an empty host"));
    }
    if host.starts_with('-') {
        return Err(invalid(
            "remote",
            "has a host starting with `-`: ssh would read it as an option",
        ));
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(invalid(
            "remote",
            "has a host that is not an ASCII name or address (write international names in punycode, xn--...)",
        ));
    }
    Ok(())
}

fn check_user(user: &str) -> StoreResult<()> {
    if user.is_empty() || user.starts_with('-') {
        return Err(invalid(
            "remote",
            "has an empty user, or one starting with `-` (ssh would read it as an option)",
        ));
    }
    if !user
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(invalid(
            "remote",
            "has a user name with characters other than letters, digits, `.`, `-` and `_`",
        ));
    }
    Ok(())
}

/// `""` or `:1`..`:65535`.
fn check_port(port: &str) -> StoreResult<()> {
    match port.strip_prefix(':') {
        None if port.is_empty() => Ok(()),
        Some(p) if p.parse::<u16>().is_ok_and(|n| n > 0) => Ok(()),
        _ => Err(invalid("remote", "has a port that is not 1-65535")),
    }
}

/// Invisible and format characters (the [`crate::text`] rule) have no place in a name git
/// or a person compares: refused, not merely escaped when shown.
fn refuse_invisible(field: &str, raw: &str) -> StoreResult<()> {
    if let Some(c) = raw.chars().find(|&c| text::needs_escape(c)) {
        return Err(invalid(
            field,
            format!(
                "must not contain invisible or format characters (U+{:04X})",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Normalises a ref by git's `check-ref-format` rules; a short branch name (`feature/x`)
/// becomes `refs/heads/feature/x`.
pub fn normalise_ref(raw: &str) -> StoreResult<String> {
    let field = "ref";
    if raw.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if raw.len() > MAX_REF_LEN {
        return Err(invalid(
            field,
            format!("is longer than {MAX_REF_LEN} bytes"),
        ));
    }
    if raw
        .chars()
        .any(|c| c.is_control() || c == ' ' || c == '\u{7f}')
    {
        return Err(invalid(
            field,
            "must not contain spaces or control characters",
        ));
    }
    refuse_invisible(field, raw)?;
    if raw.starts_with('-') {
        return Err(invalid(
            field,
            "must not start with `-`: git would read it as an option",
        ));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return Err(invalid(field, format!("must not contain `{c}`")));
    }
    if raw.contains("..") {
        return Err(invalid(field, "must not contain `..`"));
    }
    if raw.contains("@{") || raw == "@" {
        return Err(invalid(field, "must not contain `@{` or be `@`"));
    }
    if raw.contains("//") || raw.starts_with('/') || raw.ends_with('/') {
        return Err(invalid(
            field,
            "must not start or end with `/` or contain `//`",
        ));
    }
    if raw.ends_with('.') {
        return Err(invalid(field, "must not end with `.`"));
    }
    for component in raw.split('/') {
        if component.starts_with('.') {
            return Err(invalid(field, "has a component starting with `.`"));
        }
        if component.ends_with(".lock") {
            return Err(invalid(field, "has a component ending with `.lock`"));
        }
    }
    if raw.starts_with("refs/") {
        if raw.split('/').count() < 3 {
            return Err(invalid(
                field,
                "must name a ref below a namespace, e.g. refs/heads/feature/x",
            ));
        }
        Ok(raw.to_string())
    } else {
        Ok(format!("refs/heads/{raw}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_follow_check_ref_format() {
        assert_eq!(normalise_ref("feature/x").unwrap(), "refs/heads/feature/x");
        assert_eq!(normalise_ref("refs/tags/v1").unwrap(), "refs/tags/v1");
        for bad in [
            "refs/heads/../x",
            "a b",
            "x.lock",
            "refs/heads/.hidden",
            "x~1",
            "x^",
            "a:b",
            "/x",
            "x/",
            "a//b",
            "@",
            "x@{1}",
            "refs/x",
            "x.",
            "a\0b",
        ] {
            assert!(normalise_ref(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn namespaces_end_in_a_star_and_cover_what_is_below() {
        assert_eq!(
            normalise_ref_pattern("agent/*").unwrap(),
            "refs/heads/agent/*"
        );
        assert_eq!(
            normalise_ref_pattern("refs/heads/*").unwrap(),
            "refs/heads/*"
        );
        for bad in ["*", "/*", "a*/*", "agent/**", "refs/*"] {
            assert!(normalise_ref_pattern(bad).is_err(), "{bad:?}");
        }
        assert!(ref_covers("refs/heads/agent/*", "refs/heads/agent/x"));
        assert!(ref_covers("refs/heads/agent/*", "refs/heads/agent/x/y"));
        assert!(!ref_covers("refs/heads/agent/*", "refs/heads/agent"));
        assert!(!ref_covers("refs/heads/agent/*", "refs/heads/agents/x"));
        assert!(ref_covers("refs/heads/x", "refs/heads/x"));
        assert!(!ref_covers("refs/heads/x", "refs/heads/x/y"));
    }

    fn remote_refusal(remote: &str) -> String {
        match validate_remote(remote) {
            Err(crate::error::StoreError::Invalid { field, message }) => {
                assert_eq!(field, "remote", "{remote:?}");
                message
            }
            other => panic!("{remote:?} should be refused, got {other:?}"),
        }
    }

    #[test]
    fn remotes_that_are_names_urls_or_scp_addresses_are_accepted() {
        for ok in [
            "origin",
            "upstream",
            "my-fork_2",
            "https://github.com/org/repo.git",
            "HTTPS://github.com/org/repo",
            "https://git.example.com:8443/org/repo",
            "ssh://git@github.com/org/repo.git",
            "ssh://git@github.com:2222/org/repo.git",
            "ssh://[2001:db8::1]:22/repo",
            "git+ssh://git@host/repo",
            "git@github.com:org/repo.git",
            "host.example:repo",
        ] {
            assert_eq!(validate_remote(ok).unwrap(), ok);
        }
    }

    #[test]
    fn option_like_remotes_are_refused() {
        for bad in [
            "--receive-pack=touch /tmp/x",
            "--receive-pack=evil",
            "-oProxyCommand=evil",
            "-u",
        ] {
            let message = remote_refusal(bad);
            assert!(
                message.contains("`-`") || message.contains("spaces"),
                "{bad:?}: {message}"
            );
        }
        assert!(remote_refusal("ssh://-oProxyCommand=evil/x").contains("`-`"));
        assert!(remote_refusal("-oProxyCommand=evil@host:x").contains("`-`"));
        assert!(remote_refusal("git@-oProxyCommand=evil:x").contains("`-`"));
        assert!(remote_refusal("git@host:-x").contains("`-`"));
    }

    #[test]
    fn transport_helper_remotes_are_refused() {
        for bad in [
            "ext::sh",
            "ext::ssh%20-oProxyCommand=x",
            "fd::7",
            "fd::0,1",
            "foo+bar::x",
            "https::x",
        ] {
            let message = remote_refusal(bad);
            assert!(message.contains("::` transport"), "{bad:?}");
            assert!(
                !message.contains("  "),
                "one sentence, single-spaced: {message}"
            );
        }
    }

    #[test]
    fn other_schemes_and_paths_are_refused() {
        for bad in [
            "http://github.com/org/repo",
            "git://github.com/org/repo",
            "file:///srv/repo.git",
            "ftp://host/x",
        ] {
            assert!(remote_refusal(bad).contains("scheme"), "{bad:?}");
        }
        for bad in [
            "/srv/repo.git",
            "../repo",
            "./repo",
            "a/b",
            "..",
            ".hidden",
            "x.lock",
            "a\\b",
        ] {
            remote_refusal(bad);
        }
    }

    #[test]
    fn credentials_in_a_url_are_refused_with_what_to_do() {
        for bad in [
            "https://user:token@github.com/org/repo",
            "https://ghp_token@github.com/org/repo",
            "ssh://git:secret@github.com/org/repo",
        ] {
            let message = remote_refusal(bad);
            assert!(
                message.contains("credentials") && message.contains("drop them"),
                "{bad:?}: {message}"
            );
        }
    }

    #[test]
    fn invisible_characters_are_refused_in_remote_and_ref() {
        assert!(remote_refusal("ori\u{200b}gin").contains("U+200B"));
        assert!(remote_refusal("origin\u{202e}").contains("U+202E"));
        assert!(remote_refusal("origin\u{e0041}").contains("U+E0041"));
        for bad in ["ma\u{200d}in", "main\u{fe0f}", "\u{3164}", "x\u{2028}y"] {
            assert!(normalise_ref(bad).is_err(), "{bad:?}");
        }
        assert!(normalise_ref("-x").is_err());
        assert!(
            validate_remote("oriğin").is_ok(),
            "visible non-ASCII names are allowed (and flagged when lookalikes)"
        );
    }

    #[test]
    fn non_ascii_hosts_in_urls_are_refused() {
        assert!(remote_refusal("https://gіthub.com/org/repo").contains("ASCII"));
        assert!(remote_refusal("git@gіthub.com:org/repo").contains("ASCII"));
    }
}
