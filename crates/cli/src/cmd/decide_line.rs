//! `supervise decide`: the line helper a proxy that sees requests (the mitmproxy addon)
//! asks. It reads `ID SRC HOST PORT [METHOD PATH]` lines and answers each, in order, with
//! `ID OK GRANT_ID`, `ID INTERCEPT GRANT_ID` (a connection only grants limited to methods or
//! paths cover: intercept it and ask for each request inside) or
//! `ID ERR PROPOSAL_ID message="..."` (`-` when no proposal was filed or found), from the
//! store's one egress decision, until stdin closes. Like `squid-acl`, it never creates the
//! database and never exits because of it.

use std::io::Write;
use std::net::IpAddr;

use anyhow::Result;
use supervise_store::HttpRequest;

use super::Ctx;
use super::egress_helper::{Helper, Options, Verdict, serve};
use super::squid::push_quoted;

/// Runs the helper until stdin closes.
pub async fn run(ctx: &Ctx, options: Options, out: &mut dyn Write) -> Result<()> {
    let options = Options {
        intercept: true,
        ..options
    };
    serve("decide", ctx, options, out, answer).await
}

/// One parsed line.
#[derive(Debug, PartialEq, Eq)]
pub struct Lookup<'a> {
    pub id: &'a str,
    pub src: IpAddr,
    pub host: &'a str,
    pub port: u16,
    /// METHOD and PATH (the rest of the line), when the proxy sees the request.
    pub request: Option<HttpRequest<'a>>,
}

/// Splits a line. `Err` carries the id (`-` when there is none) and why the line is not a
/// lookup. PATH is the rest of the line after METHOD, so a path holding a space arrives
/// whole and is refused by the path rule rather than misread.
pub fn parse_line(line: &str) -> Result<Lookup<'_>, (&str, String)> {
    let mut rest = line.trim_end_matches(['\r', '\n']);
    let mut next = || {
        rest = rest.trim_start();
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let (field, after) = rest.split_at(end);
        rest = after;
        (!field.is_empty()).then_some(field)
    };
    let id = next().unwrap_or("-");
    let (Some(src), Some(host), Some(port)) = (next(), next(), next()) else {
        return Err((id, "expected ID SRC HOST PORT [METHOD PATH]".into()));
    };
    let method = next();
    let path = rest.trim_start();
    let Ok(src) = src
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return Err((id, format!("source {src:?} is not an IP address")));
    };
    let port = match port.parse::<u32>() {
        Ok(p @ 1..=65535) => p as u16,
        _ => return Err((id, format!("port {port:?} is not 1-65535"))),
    };
    let request = match (method, path) {
        (None, _) => None,
        (Some(_), "") => return Err((id, "METHOD needs a PATH after it".into())),
        (Some(method), path) => Some(HttpRequest { method, path }),
    };
    Ok(Lookup {
        id,
        src,
        host,
        port,
        request,
    })
}

/// Appends the answer to `line` to `out`.
async fn answer(helper: &mut Helper, line: &str, out: &mut String) {
    let l = match parse_line(line) {
        Ok(l) => l,
        Err((id, why)) => {
            out.push_str(id);
            out.push_str(" ERR - ");
            push_quoted(out, &why);
            return;
        }
    };
    out.push_str(l.id);
    match helper.decide(l.src, l.host, l.port, l.request).await {
        Verdict::Allow(g) => {
            out.push_str(" OK ");
            out.push_str(g.id.as_str());
        }
        Verdict::Intercept(g) => {
            out.push_str(" INTERCEPT ");
            out.push_str(g.as_str());
        }
        Verdict::Refuse { proposal, why } => {
            out.push_str(" ERR ");
            out.push_str(proposal.as_ref().map_or("-", |p| p.as_str()));
            out.push(' ');
            push_quoted(out, &why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_and_without_requests() {
        let l = parse_line("7 127.0.0.2 pypi.org 443\n").unwrap();
        assert_eq!(
            (l.id, l.host, l.port, l.request),
            ("7", "pypi.org", 443, None)
        );
        let l = parse_line("a1 127.0.0.2 pypi.org 443 GET /simple/x?y=1 z\r\n").unwrap();
        assert_eq!(
            l.request,
            Some(HttpRequest {
                method: "GET",
                path: "/simple/x?y=1 z"
            })
        );
        assert_eq!(parse_line("9 127.0.0.2 a.test 443 GET").unwrap_err().0, "9");
        assert_eq!(parse_line("9 127.0.0.2 a.test 0").unwrap_err().0, "9");
        assert_eq!(parse_line("").unwrap_err().0, "-");
        assert!(parse_line("1 not-an-ip a.test 443").is_err());
    }
}
