//! What a proposal asks for: the kinds of change, their validation and normalisation, and
//! the deterministic risk flags an operator sees before deciding.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::{Map, Value};

use crate::error::{StoreError, StoreResult};

/// The kinds of policy change an agent can propose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Reach a host (and port) through the egress proxy.
    Egress,
    /// Push a ref to a remote through the git gate.
    GitPush,
}

impl Kind {
    /// The name used in the database, JSON and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Egress => "egress",
            Kind::GitPush => "git-push",
        }
    }

    /// Parses `egress` or `git-push`.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "egress" => Some(Kind::Egress),
            "git-push" => Some(Kind::GitPush),
            _ => None,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest justification accepted, in characters.
pub const MAX_JUSTIFICATION_CHARS: usize = 2000;
/// Longest git remote accepted, in bytes.
pub const MAX_REMOTE_LEN: usize = 512;
/// Longest ref accepted, in bytes.
pub const MAX_REF_LEN: usize = 255;

fn invalid(field: &str, message: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Checks a justification: 1 to 2000 characters, not blank, no NUL or other control
/// characters except newlines and tabs. Returns it with surrounding white space trimmed.
pub fn validate_justification(text: &str) -> StoreResult<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid("justification", "must not be empty"));
    }
    let chars = trimmed.chars().count();
    if chars > MAX_JUSTIFICATION_CHARS {
        return Err(invalid(
            "justification",
            format!("is {chars} characters; at most {MAX_JUSTIFICATION_CHARS} are allowed"),
        ));
    }
    if trimmed
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    {
        return Err(invalid(
            "justification",
            "must not contain NUL or other control characters",
        ));
    }
    Ok(trimmed.to_string())
}

/// Validates a change of `kind` given as a JSON object (the tool arguments without the
/// justification) and returns its normalised form. Unknown fields are refused, so a typo
/// never silently widens or narrows a request.
pub fn normalise(kind: Kind, change: &Value) -> StoreResult<Value> {
    let obj = change
        .as_object()
        .ok_or_else(|| invalid("change", "must be a JSON object"))?;
    match kind {
        Kind::Egress => normalise_egress(obj),
        Kind::GitPush => normalise_git_push(obj),
    }
}

fn refuse_unknown(obj: &Map<String, Value>, known: &[&str]) -> StoreResult<()> {
    if let Some(extra) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(
            extra,
            format!("is not a known field (expected: {})", known.join(", ")),
        ));
    }
    Ok(())
}

fn required_str<'a>(obj: &'a Map<String, Value>, field: &str) -> StoreResult<&'a str> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(invalid(field, "is required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid(field, "must be a string")),
    }
}

fn normalise_egress(obj: &Map<String, Value>) -> StoreResult<Value> {
    refuse_unknown(obj, &["host", "port"])?;
    let host = normalise_host(required_str(obj, "host")?)?;
    let port = match obj.get("port") {
        None | Some(Value::Null) => 443,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(p @ 1..=65535) => p as u16,
            _ => return Err(invalid("port", format!("must be 1-65535, got {n}"))),
        },
        Some(_) => return Err(invalid("port", "must be a number from 1 to 65535")),
    };
    Ok(serde_json::json!({ "host": host, "port": port }))
}

/// Normalises a host: a DNS name (lower-cased, trailing dot dropped), an IP literal
/// (canonical text, IPv6 without brackets), or `*.domain` with at least two labels after the
/// star. Schemes, paths, ports, spaces, non-ASCII names (use punycode `xn--`) are refused.
pub fn normalise_host(raw: &str) -> StoreResult<String> {
    let field = "host";
    if raw.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if raw.contains("://") {
        return Err(invalid(
            field,
            "must be a bare host name, without a scheme such as https://",
        ));
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            field,
            "must not contain spaces or control characters",
        ));
    }
    if raw.contains('/') {
        return Err(invalid(field, "must be a bare host name, without a path"));
    }
    if !raw.is_ascii() {
        return Err(invalid(
            field,
            "must be ASCII: write international names in punycode (xn--...)",
        ));
    }
    let unbracketed = raw
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(raw);
    if let Ok(ip) = unbracketed.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    if raw.contains(':') {
        return Err(invalid(
            field,
            "must not include a port: pass the port in the port field",
        ));
    }
    if raw.contains('@') {
        return Err(invalid(field, "must not include user information (@)"));
    }
    let lower = raw.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if name.len() > 253 {
        return Err(invalid(field, "is longer than 253 characters"));
    }
    let (wildcard, rest) = match name.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    if name == "*" {
        return Err(invalid(
            field,
            "`*` alone would allow every host; name a domain (*.example.com)",
        ));
    }
    let labels: Vec<&str> = rest.split('.').collect();
    for label in &labels {
        if label.is_empty() {
            return Err(invalid(field, "has an empty label (two dots in a row?)"));
        }
        if label.contains('*') {
            return Err(invalid(
                field,
                "may use `*` only as the whole first label (*.example.com)",
            ));
        }
        if label.len() > 63 {
            return Err(invalid(field, "has a label longer than 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(invalid(
                field,
                "may contain only letters, digits, hyphens and dots",
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(invalid(
                field,
                "has a label that starts or ends with a hyphen",
            ));
        }
    }
    if wildcard && labels.len() < 2 {
        return Err(invalid(
            field,
            "a wildcard must cover a registered domain (*.example.com), not a whole top-level domain",
        ));
    }
    Ok(name.to_string())
}

fn normalise_git_push(obj: &Map<String, Value>) -> StoreResult<Value> {
    refuse_unknown(obj, &["remote", "ref"])?;
    let remote = required_str(obj, "remote")?;
    if remote.is_empty() {
        return Err(invalid("remote", "must not be empty"));
    }
    if remote.len() > MAX_REMOTE_LEN {
        return Err(invalid(
            "remote",
            format!("is longer than {MAX_REMOTE_LEN} bytes"),
        ));
    }
    if remote.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "remote",
            "must not contain spaces or control characters",
        ));
    }
    let reference = normalise_ref(required_str(obj, "ref")?)?;
    Ok(serde_json::json!({ "remote": remote, "ref": reference }))
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

/// The canonical text of a normalised change, used to spot identical re-proposals.
/// serde_json keeps object keys sorted, so equal changes give equal keys.
pub fn change_key(change: &Value) -> String {
    change.to_string()
}

/// Merges `patch` over `base` (top-level fields only), the rule for `modify`.
pub fn merge(base: &Value, patch: &Map<String, Value>) -> Value {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    for (k, v) in patch {
        merged.insert(k.clone(), v.clone());
    }
    Value::Object(merged)
}

/// Risk flags of a normalised change: short, stable names, in a fixed order.
pub fn flags(kind: Kind, change: &Value) -> Vec<&'static str> {
    let mut out = Vec::new();
    match kind {
        Kind::Egress => {
            let host = change.get("host").and_then(Value::as_str).unwrap_or("");
            let port = change.get("port").and_then(Value::as_u64).unwrap_or(443);
            if host.starts_with("*.") {
                out.push("wildcard-host");
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                out.push("ip-literal");
                out.extend(ip_flags(ip));
            } else if let Some(ip) = disguised_ipv4(host) {
                out.push("disguised-ip");
                out.extend(ip_flags(IpAddr::V4(ip)));
            }
            if port != 80 && port != 443 {
                out.push("unusual-port");
            }
        }
        Kind::GitPush => {
            let reference = change.get("ref").and_then(Value::as_str).unwrap_or("");
            if reference == "refs/heads/main" || reference == "refs/heads/master" {
                out.push("default-branch");
            }
            if reference.starts_with("refs/tags/") {
                out.push("tag");
            } else if !reference.starts_with("refs/heads/") {
                out.push("ref-outside-heads");
            }
        }
    }
    out
}

/// Flags for an operator's modified change: its own flags, plus `widened` when it carries a
/// flag the proposed change did not, or when its wildcard covers the proposed host.
pub fn modified_flags(kind: Kind, proposed: &Value, modified: &Value) -> Vec<&'static str> {
    let before = flags(kind, proposed);
    let mut after = flags(kind, modified);
    let mut widened = after.iter().any(|f| !before.contains(f));
    if kind == Kind::Egress {
        let old = proposed.get("host").and_then(Value::as_str).unwrap_or("");
        let new = modified.get("host").and_then(Value::as_str).unwrap_or("");
        if let Some(domain) = new.strip_prefix("*.")
            && old != new
            && (old == domain || old.ends_with(&format!(".{domain}")))
        {
            widened = true;
        }
    }
    if widened {
        after.push("widened");
    }
    after
}

fn ip_flags(ip: IpAddr) -> Vec<&'static str> {
    let mut out = Vec::new();
    match ip {
        IpAddr::V4(v4) => {
            if v4 == Ipv4Addr::new(169, 254, 169, 254) {
                out.push("cloud-metadata");
            }
            if v4.is_loopback() {
                out.push("loopback");
            }
            if v4.is_private() {
                out.push("private-ip");
            }
            if v4.is_link_local() {
                out.push("link-local");
            }
            let o = v4.octets();
            if o[0] == 100 && (64..128).contains(&o[1]) {
                out.push("cgnat");
            }
            if v4.is_unspecified() {
                out.push("unspecified");
            }
        }
        IpAddr::V6(v6) => {
            if v6 == "fd00:ec2::254".parse::<Ipv6Addr>().expect("literal") {
                out.push("cloud-metadata");
            }
            if let Some(v4) = v6.to_ipv4_mapped() {
                return {
                    let mut inner = ip_flags(IpAddr::V4(v4));
                    inner.retain(|f| !out.contains(f));
                    out.extend(inner);
                    out
                };
            }
            let seg = v6.segments();
            if v6.is_loopback() {
                out.push("loopback");
            }
            if (seg[0] & 0xfe00) == 0xfc00 {
                out.push("private-ip");
            }
            if (seg[0] & 0xffc0) == 0xfe80 {
                out.push("link-local");
            }
            if v6.is_unspecified() {
                out.push("unspecified");
            }
        }
    }
    out
}

/// An IPv4 address written as something other than a dotted quad: a single decimal or hex
/// number (`3232235777`, `0xc0a80001`), or dotted parts in hex or octal (`0x7f.1`, `0177.0.0.1`).
/// Resolvers and HTTP clients accept these, so they are flagged like the address itself.
fn disguised_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        let n = if let Some(hex) = p.strip_prefix("0x") {
            u64::from_str_radix(hex, 16).ok()?
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()?
        } else if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse::<u64>().ok()?
        } else {
            return None;
        };
        nums.push(n);
    }
    let last_bits = 8 * (5 - nums.len() as u32);
    let (head, last) = nums.split_at(nums.len() - 1);
    if head.iter().any(|&n| n > 255) || last[0] >= (1u64 << last_bits.min(32)) {
        return None;
    }
    let mut value: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        value |= n << (24 - 8 * i as u64);
    }
    value |= last[0];
    Some(Ipv4Addr::from(value as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(err: StoreError) -> String {
        match err {
            StoreError::Invalid { field, .. } => field,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn hosts_normalise() {
        assert_eq!(normalise_host("Example.COM.").unwrap(), "example.com");
        assert_eq!(normalise_host("*.Example.com").unwrap(), "*.example.com");
        assert_eq!(normalise_host("[::1]").unwrap(), "::1");
        assert_eq!(normalise_host("10.0.0.1").unwrap(), "10.0.0.1");
        assert_eq!(
            normalise_host("xn--bcher-kva.de").unwrap(),
            "xn--bcher-kva.de"
        );
    }

    #[test]
    fn bad_hosts_are_refused() {
        for bad in [
            "",
            "https://example.com",
            "example.com/path",
            "exa mple.com",
            "bücher.de",
            "*",
            "*.com",
            "a.*.com",
            "example.com:443",
            "a..b",
            "-a.com",
            "a\0b.com",
            "user@example.com",
            "ex'ample.com",
        ] {
            assert!(normalise_host(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn egress_port_rules() {
        let ok = normalise(Kind::Egress, &json!({"host": "a.com"})).unwrap();
        assert_eq!(ok, json!({"host": "a.com", "port": 443}));
        for port in [json!(0), json!(70000), json!(-1), json!("443"), json!(1.5)] {
            let err = normalise(Kind::Egress, &json!({"host": "a.com", "port": port})).unwrap_err();
            assert_eq!(field_of(err), "port");
        }
        let err = normalise(Kind::Egress, &json!({"host": "a.com", "prot": 1})).unwrap_err();
        assert_eq!(field_of(err), "prot");
        let err = normalise(Kind::Egress, &json!({"port": 1})).unwrap_err();
        assert_eq!(field_of(err), "host");
    }

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
    fn justification_rules() {
        assert_eq!(validate_justification("  need it \n").unwrap(), "need it");
        assert!(validate_justification("   ").is_err());
        assert!(validate_justification("a\0b").is_err());
        assert!(validate_justification(&"x".repeat(2000)).is_ok());
        assert!(validate_justification(&"x".repeat(2001)).is_err());
        assert!(validate_justification(&"é".repeat(2000)).is_ok());
    }

    #[test]
    fn risk_flags_table() {
        let cases: &[(Kind, Value, &[&str])] = &[
            (Kind::Egress, json!({"host": "a.com", "port": 443}), &[]),
            (Kind::Egress, json!({"host": "a.com", "port": 80}), &[]),
            (
                Kind::Egress,
                json!({"host": "*.a.com", "port": 443}),
                &["wildcard-host"],
            ),
            (
                Kind::Egress,
                json!({"host": "a.com", "port": 22}),
                &["unusual-port"],
            ),
            (
                Kind::Egress,
                json!({"host": "10.1.2.3", "port": 443}),
                &["ip-literal", "private-ip"],
            ),
            (
                Kind::Egress,
                json!({"host": "127.0.0.1", "port": 443}),
                &["ip-literal", "loopback"],
            ),
            (
                Kind::Egress,
                json!({"host": "169.254.169.254", "port": 80}),
                &["ip-literal", "cloud-metadata", "link-local"],
            ),
            (
                Kind::Egress,
                json!({"host": "fd00:ec2::254", "port": 80}),
                &["ip-literal", "cloud-metadata", "private-ip"],
            ),
            (
                Kind::Egress,
                json!({"host": "100.64.0.1", "port": 443}),
                &["ip-literal", "cgnat"],
            ),
            (
                Kind::Egress,
                json!({"host": "fe80::1", "port": 443}),
                &["ip-literal", "link-local"],
            ),
            (
                Kind::Egress,
                json!({"host": "8.8.8.8", "port": 443}),
                &["ip-literal"],
            ),
            (
                Kind::Egress,
                json!({"host": "2130706433", "port": 443}),
                &["disguised-ip", "loopback"],
            ),
            (
                Kind::Egress,
                json!({"host": "0x7f000001", "port": 443}),
                &["disguised-ip", "loopback"],
            ),
            (
                Kind::Egress,
                json!({"host": "0xa9.0xfe.0xa9.0xfe", "port": 443}),
                &["disguised-ip", "cloud-metadata", "link-local"],
            ),
            (
                Kind::Egress,
                json!({"host": "0177.0.0.1", "port": 443}),
                &["disguised-ip", "loopback"],
            ),
            (
                Kind::GitPush,
                json!({"remote": "origin", "ref": "refs/heads/feature/x"}),
                &[],
            ),
            (
                Kind::GitPush,
                json!({"remote": "origin", "ref": "refs/heads/main"}),
                &["default-branch"],
            ),
            (
                Kind::GitPush,
                json!({"remote": "origin", "ref": "refs/heads/master"}),
                &["default-branch"],
            ),
            (
                Kind::GitPush,
                json!({"remote": "origin", "ref": "refs/tags/v1.0"}),
                &["tag"],
            ),
            (
                Kind::GitPush,
                json!({"remote": "origin", "ref": "refs/notes/x"}),
                &["ref-outside-heads"],
            ),
        ];
        for (kind, change, want) in cases {
            assert_eq!(&flags(*kind, change), want, "{change}");
        }
    }

    #[test]
    fn widening_is_flagged() {
        let p = json!({"host": "api.a.com", "port": 443});
        assert_eq!(
            modified_flags(Kind::Egress, &p, &json!({"host": "*.a.com", "port": 443})),
            vec!["wildcard-host", "widened"]
        );
        assert!(
            modified_flags(Kind::Egress, &p, &json!({"host": "api.a.com", "port": 443})).is_empty()
        );
        let wild = json!({"host": "*.a.com", "port": 443});
        assert_eq!(
            modified_flags(Kind::Egress, &wild, &wild),
            vec!["wildcard-host"]
        );
        let g = json!({"remote": "origin", "ref": "refs/heads/x"});
        assert_eq!(
            modified_flags(
                Kind::GitPush,
                &g,
                &json!({"remote": "origin", "ref": "refs/heads/main"})
            ),
            vec!["default-branch", "widened"]
        );
    }

    #[test]
    fn merge_overrides_fields() {
        let base = json!({"host": "a.com", "port": 443});
        let patch = json!({"port": 8443});
        assert_eq!(
            merge(&base, patch.as_object().unwrap()),
            json!({"host": "a.com", "port": 8443})
        );
    }
}
