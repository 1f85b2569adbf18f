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
use super::squid::quote;

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
    let line = line.trim_end_matches(['\r', '\n']);
    let mut rest = line.trim_start();
    let mut next = || {
        let field = rest.split_ascii_whitespace().next()?;
        let at = rest.find(field).expect("found") + field.len();
        rest = rest[at..].trim_start();
        Some(field)
    };
    let id = next().unwrap_or("-");
    let (Some(src), Some(host), Some(port)) = (next(), next(), next()) else {
        return Err((id, "expected ID SRC HOST PORT [METHOD PATH]".into()));
    };
    let method = next();
    let path = rest;
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

async fn answer(helper: &mut Helper, line: &str) -> String {
    let l = match parse_line(line) {
        Ok(l) => l,
        Err((id, why)) => return format!("{id} ERR - {}", quote(&why)),
    };
    match helper.decide(l.src, l.host, l.port, l.request).await {
        Verdict::Allow(g) => format!("{} OK {g}", l.id),
        Verdict::Intercept(g) => format!("{} INTERCEPT {g}", l.id),
        Verdict::Refuse { proposal, why } => {
            let proposal = proposal.as_ref().map_or("-", |p| p.as_str());
            format!("{} ERR {proposal} {}", l.id, quote(&why))
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
