//! Egress changes: a host (a DNS name, an IP literal or `*.domain`), a port, optionally
//! limited to some methods and a path prefix ([`super::request`]), and where a domain stands
//! in the public suffix list.

use serde_json::{Map, Value};

use super::{invalid, refuse_unknown, required_str};
use crate::error::StoreResult;
use std::borrow::Cow;
use std::net::IpAddr;

pub(super) fn normalise_egress(obj: &Map<String, Value>) -> StoreResult<Value> {
    refuse_unknown(obj, &["host", "port", "methods", "path_prefix"])?;
    let host = normalise_host(required_str(obj, "host")?)?;
    let port = match obj.get("port") {
        None | Some(Value::Null) => 443,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(p @ 1..=65535) => p as u16,
            _ => return Err(invalid("port", format!("must be 1-65535, got {n}"))),
        },
        Some(_) => return Err(invalid("port", "must be a number from 1 to 65535")),
    };
    let mut out = Map::new();
    out.insert("host".into(), Value::from(host));
    out.insert("port".into(), Value::from(port));
    super::request::normalise_limits(obj, &mut out)?;
    Ok(Value::Object(out))
}

/// Normalises a host: a DNS name (lower-cased, trailing dot dropped), an IP literal
/// (canonical text, IPv6 without brackets), or `*.domain` where `domain` is not itself a
/// public suffix of the list's ICANN section (`*.co.uk` would cover every domain registered
/// under it) nor a top-level domain. Schemes, paths, ports, spaces, non-ASCII names (use
/// punycode `xn--`) are refused.
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
    // Most names arrive in lower case already: copied once, at the end.
    let lower = if raw.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(raw.to_ascii_lowercase())
    } else {
        Cow::Borrowed(raw)
    };
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
    let mut labels = 0;
    for label in rest.split('.') {
        labels += 1;
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
    if wildcard
        && (labels < 2
            || matches!(
                public_suffix(rest),
                Some(PublicSuffix::Icann | PublicSuffix::Unlisted)
            ))
    {
        return Err(invalid(
            field,
            format!(
                "a wildcard must cover a registered domain (*.example.{rest}), not the public \
                 suffix {rest}, under which anyone may register names"
            ),
        ));
    }
    Ok(name.to_string())
}

/// Which section of the public suffix list names a domain itself as a public suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PublicSuffix {
    /// Registries' own suffixes (`com`, `co.uk`): anyone may register a name under one.
    Icann,
    /// Suffixes companies open to their customers (`github.io`, `s3.amazonaws.com`): each
    /// name under one is another customer's.
    Private,
    /// Not on the list: a single label the list does not know (`internal`), a top-level
    /// domain by the list's default rule.
    Unlisted,
}

/// Whether `domain` (normalised: lower case, no trailing dot, no `*.`) is itself a public
/// suffix, and of which section, by the public suffix list compiled into the `psl` crate
/// (no file or network is read). `None`: a registered domain or a name under one.
pub(crate) fn public_suffix(domain: &str) -> Option<PublicSuffix> {
    let suffix = psl::suffix(domain.as_bytes())?;
    if suffix.as_bytes() != domain.as_bytes() {
        return None;
    }
    Some(match suffix.typ() {
        Some(psl::Type::Icann) => PublicSuffix::Icann,
        Some(psl::Type::Private) => PublicSuffix::Private,
        None => PublicSuffix::Unlisted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::normalise;
    use crate::error::StoreError;
    use crate::model::Kind;
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
    fn a_wildcard_over_a_public_suffix_is_refused() {
        for (host, suffix) in [
            ("*.co.uk", "co.uk"),
            ("*.com.au", "com.au"),
            ("*.github.io", ""),
            ("*.com", "com"),
            ("*.internal", "internal"),
        ] {
            match normalise_host(host) {
                Err(err) if !suffix.is_empty() => {
                    let text = err.to_string();
                    assert!(
                        text.contains(&format!("public suffix {suffix}")),
                        "{host}: {text}"
                    );
                }
                Ok(_) if suffix.is_empty() => {}
                other => panic!("{host}: {other:?}"),
            }
        }
        for host in [
            "*.example.co.uk",
            "*.example.com",
            "*.example.test",
            "*.corp.internal",
            "*.user.github.io",
            "co.uk",
        ] {
            assert!(normalise_host(host).is_ok(), "{host}");
        }
    }

    #[test]
    fn public_suffixes_by_section() {
        assert_eq!(public_suffix("github.io"), Some(PublicSuffix::Private));
        assert_eq!(
            public_suffix("s3.amazonaws.com"),
            Some(PublicSuffix::Private)
        );
        assert_eq!(public_suffix("co.uk"), Some(PublicSuffix::Icann));
        assert_eq!(public_suffix("example.co.uk"), None);
        assert_eq!(public_suffix("user.github.io"), None);
        assert_eq!(public_suffix("internal"), Some(PublicSuffix::Unlisted));
        assert_eq!(public_suffix("example.test"), None);
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
}
