//! What an egress grant may limit beyond host and port: the request's method (`methods`) and
//! path (`path_prefix`), and the one normalisation a request path goes through before it is
//! compared with a prefix (used for the prefix a proposal asks for and for every request a
//! proxy asks about, so both are read alike).

use serde_json::{Map, Value};

use super::invalid;
use crate::error::StoreResult;

/// Longest `path_prefix` accepted, in bytes.
pub const MAX_PATH_PREFIX: usize = 1024;
/// Most methods one grant may list.
pub const MAX_METHODS: usize = 16;

/// Normalises a request path (origin form, as in `GET /simple/x?y HTTP/1.1`) for comparison
/// with a grant's `path_prefix`: the query and fragment are dropped, percent-escapes of
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`) are decoded and the others written with
/// upper-case hex, and dot segments are removed. Refused outright (`Err` says why): a path
/// not starting with `/`, an invalid escape, an encoded `/` or `\` (servers disagree on
/// whether it separates segments), a `\` itself, a control character or space, and a `..`
/// that would climb above the root.
pub fn normalise_path(raw: &str) -> Result<String, String> {
    let end = raw.find(['?', '#']).unwrap_or(raw.len());
    let raw = &raw[..end];
    if !raw.starts_with('/') {
        return Err("a request path must start with /".into());
    }
    let bytes = raw.as_bytes();
    let mut decoded = String::with_capacity(raw.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(hi), Some(lo)) = (
                    bytes.get(i + 1).copied().and_then(hex),
                    bytes.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err("the path has an invalid percent-escape".into());
                };
                let c = (hi * 16 + lo) as u8;
                if c == b'/' || c == b'\\' {
                    return Err("the path holds an encoded / or \\".into());
                }
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    decoded.push(c as char);
                } else {
                    decoded.push_str(&format!("%{c:02X}"));
                }
                i += 3;
            }
            b'\\' => return Err("the path holds a \\".into()),
            c if c <= b' ' || c == 0x7f => {
                return Err("the path holds a space or control character".into());
            }
            _ => {
                // Non-ASCII bytes arrive only inside valid UTF-8 (`raw` is a str): copy the
                // whole character.
                let ch = raw[i..].chars().next().expect("in bounds");
                decoded.push(ch);
                i += ch.len_utf8();
                continue;
            }
        }
        if b != b'%' {
            i += 1;
        }
    }
    // Dot segments (RFC 3986 5.2.4), with a `..` above the root refused rather than dropped.
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = decoded[1..].split('/').collect();
    let last = segments.len() - 1;
    for (n, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if n == last {
                    out.push("");
                }
            }
            ".." => {
                if out.pop().is_none() {
                    return Err("the path climbs above the root with ..".into());
                }
                if n == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    Ok(format!("/{}", out.join("/")))
}

/// The path as [`normalise_path`] returns it, borrowed, when normalising would only cut
/// the query and fragment off: it starts with `/` and holds no percent-escape, `\`,
/// space, control or non-ASCII byte, and no `.` or `..` segment. `None`: normalise it.
/// Most paths a proxy asks about are already normal; this spares them the copy.
pub fn normal_path(raw: &str) -> Option<&str> {
    let end = raw.find(['?', '#']).unwrap_or(raw.len());
    let path = &raw[..end];
    let plain = path.starts_with('/')
        && path
            .bytes()
            .all(|b| b > b' ' && b < 0x7f && b != b'%' && b != b'\\');
    if !plain || path[1..].split('/').any(|seg| seg == "." || seg == "..") {
        return None;
    }
    Some(path)
}

/// Whether `method` is an HTTP method token (upper-case letters, as every registered
/// method is written).
pub fn is_method(method: &str) -> bool {
    !method.is_empty() && method.len() <= 32 && method.bytes().all(|b| b.is_ascii_uppercase())
}

/// Normalises the optional `methods` and `path_prefix` of an egress change into `out`:
/// methods upper-cased, deduplicated and sorted (at least one, at most [`MAX_METHODS`]);
/// the prefix normalised like a request path (so a query or an encoded `/` is refused).
pub(super) fn normalise_limits(
    obj: &Map<String, Value>,
    out: &mut Map<String, Value>,
) -> StoreResult<()> {
    match obj.get("methods") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let mut methods = Vec::new();
            for item in items {
                let Some(m) = item.as_str() else {
                    return Err(invalid("methods", "must be a list of method names"));
                };
                let m = m.to_ascii_uppercase();
                if !is_method(&m) {
                    return Err(invalid(
                        "methods",
                        format!("{m:?} is not an HTTP method (GET, HEAD, POST, ...)"),
                    ));
                }
                methods.push(m);
            }
            methods.sort();
            methods.dedup();
            if methods.is_empty() {
                return Err(invalid(
                    "methods",
                    "must name at least one method; leave it out to allow every method",
                ));
            }
            if methods.len() > MAX_METHODS {
                return Err(invalid(
                    "methods",
                    format!("names more than {MAX_METHODS} methods"),
                ));
            }
            out.insert("methods".into(), Value::from(methods));
        }
        Some(_) => return Err(invalid("methods", "must be a list of method names")),
    }
    match obj.get("path_prefix") {
        None | Some(Value::Null) => {}
        Some(Value::String(raw)) => {
            if raw.len() > MAX_PATH_PREFIX {
                return Err(invalid(
                    "path_prefix",
                    format!("is longer than {MAX_PATH_PREFIX} bytes"),
                ));
            }
            if raw.contains(['?', '#']) {
                return Err(invalid(
                    "path_prefix",
                    "must be a path without a query or fragment",
                ));
            }
            let prefix = normalise_path(raw).map_err(|why| invalid("path_prefix", why))?;
            out.insert("path_prefix".into(), Value::from(prefix));
        }
        Some(_) => return Err(invalid("path_prefix", "must be a path such as /simple/")),
    }
    Ok(())
}

/// The limits of an egress change: its methods (`None`: every method) and path prefix.
pub fn limits(change: &Value) -> (Option<Vec<&str>>, Option<&str>) {
    let methods = change
        .get("methods")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect());
    let prefix = change.get("path_prefix").and_then(Value::as_str);
    (methods, prefix)
}

/// Whether an egress change is limited to some methods or paths.
pub fn is_limited(change: &Value) -> bool {
    change.get("methods").is_some() || change.get("path_prefix").is_some()
}

/// Whether the change's limits let a request through: `method` (upper case) one of its
/// methods and `path` (normalised by [`normalise_path`]) starting with its prefix.
pub fn request_fits(change: &Value, method: &str, path: &str) -> bool {
    let (methods, prefix) = limits(change);
    methods.is_none_or(|m| m.contains(&method)) && prefix.is_none_or(|p| path.starts_with(p))
}

/// Whether the limits of `modified` let through a request those of `proposed` would not:
/// a method the proposal did not name (or every method), or a path outside its prefix.
pub fn limits_widened(proposed: &Value, modified: &Value) -> bool {
    let (old_m, old_p) = limits(proposed);
    let (new_m, new_p) = limits(modified);
    let methods_wider = match (old_m, new_m) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(old), Some(new)) => new.iter().any(|m| !old.contains(m)),
    };
    let path_wider = match (old_p, new_p) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(old), Some(new)) => !new.starts_with(old),
    };
    methods_wider || path_wider
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_normalise() {
        for (raw, want) in [
            ("/simple/", "/simple/"),
            ("/simple/x?q=/../..", "/simple/x"),
            ("/a/./b/../c", "/a/c"),
            ("/a/b/..", "/a/"),
            ("/a/.", "/a/"),
            ("/%73imple/%7e", "/simple/~"),
            ("/a/%2e%2E/simple/", "/simple/"),
            ("/a%20b", "/a%20b"),
            ("/a%3f", "/a%3F"),
            ("//x", "//x"),
            ("/", "/"),
            ("/a#frag", "/a"),
        ] {
            assert_eq!(normalise_path(raw).as_deref(), Ok(want), "{raw}");
        }
    }

    /// The shortcut agrees with the normalisation wherever it answers, and answers for
    /// plain paths.
    #[test]
    fn normal_paths_are_what_normalising_returns() {
        for raw in [
            "/simple/",
            "/simple/x?q=/../..",
            "/a/./b/../c",
            "/a/b/..",
            "/a/.",
            "/a/.b/..c/",
            "/%73imple/%7e",
            "/a%20b",
            "//x",
            "/",
            "/a#frag",
            "/a\\b",
            "/a b",
            "/..",
            "simple/",
            "",
            "/caf\u{e9}/",
        ] {
            if let Some(p) = normal_path(raw) {
                assert_eq!(normalise_path(raw).as_deref(), Ok(p), "{raw:?}");
            }
        }
        assert_eq!(normal_path("/simple/x/?q=1"), Some("/simple/x/"));
        assert_eq!(normal_path("/a/.b/..c/"), Some("/a/.b/..c/"));
        assert_eq!(normal_path("/a/./b"), None);
        assert_eq!(normal_path("/a/.."), None);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        for raw in [
            "simple/",
            "/a%2fb",
            "/a%2Fb",
            "/a%5cb",
            "/a\\b",
            "/..",
            "/a/../..",
            "/%2e%2e/x",
            "/a%zz",
            "/a%2",
            "/a b",
            "*",
            "",
        ] {
            assert!(normalise_path(raw).is_err(), "{raw:?} should be refused");
        }
    }

    #[test]
    fn requests_fit_limits() {
        let c = json!({"host": "pypi.org", "port": 443, "methods": ["GET", "HEAD"], "path_prefix": "/simple/"});
        assert!(request_fits(&c, "GET", "/simple/x"));
        assert!(!request_fits(&c, "POST", "/simple/x"));
        assert!(!request_fits(&c, "GET", "/other"));
        assert!(request_fits(
            &json!({"host": "a.test", "port": 443}),
            "DELETE",
            "/"
        ));
    }

    #[test]
    fn widening_limits() {
        let p = json!({"methods": ["GET"], "path_prefix": "/simple/"});
        assert!(!limits_widened(
            &p,
            &json!({"methods": ["GET"], "path_prefix": "/simple/x/"})
        ));
        assert!(limits_widened(&p, &json!({"path_prefix": "/simple/"})));
        assert!(limits_widened(
            &p,
            &json!({"methods": ["GET", "POST"], "path_prefix": "/simple/"})
        ));
        assert!(limits_widened(
            &p,
            &json!({"methods": ["GET"], "path_prefix": "/"})
        ));
        assert!(!limits_widened(&json!({}), &json!({"methods": ["GET"]})));
    }
}
