//! `supervise squid-acl`: Squid's `external_acl_type` helper. It reads one lookup per line,
//! `[CHANNEL] SRC HOST PORT [more fields, ignored]` (`%SRC %DST %PORT`, with or without
//! `concurrency=`), and answers each in order with `[CHANNEL] OK` or
//! `[CHANNEL] ERR message="..."`, from the store's one egress decision as the database is at
//! that moment, until stdin closes.
//!
//! It never creates the database and never exits because of it: a busy, missing or moved
//! file is an `ERR` with a message (the request is refused, which is the safe answer), and
//! the next lookup tries again, reopening the file when the path names it once more.

use std::io::Write;
use std::net::IpAddr;

use anyhow::Result;

use super::Ctx;
use super::egress_helper::{Helper, Options, Verdict, serve};

/// Longest `message=` text sent back to Squid.
const MAX_MESSAGE: usize = 300;

/// Runs the helper until stdin closes.
pub async fn run(ctx: &Ctx, options: Options, out: &mut dyn Write) -> Result<()> {
    let options = Options {
        intercept: false,
        ..options
    };
    serve("squid-acl", ctx, options, out, answer).await
}

/// Appends the reply to one line to `out`. Squid cannot see requests: a grant limited to
/// methods or paths never lets a connection through here.
async fn answer(helper: &mut Helper, line: &str, out: &mut String) {
    let lookup = match parse_line(line) {
        Ok(l) => l,
        Err((channel, why)) => {
            push_channel(out, channel);
            out.push_str("ERR ");
            push_quoted(out, &why);
            return;
        }
    };
    push_channel(out, lookup.channel);
    match helper
        .decide(lookup.src, lookup.host, lookup.port, None)
        .await
    {
        Verdict::Allow(_) => out.push_str("OK"),
        Verdict::Intercept(g) => {
            out.push_str("ERR ");
            push_quoted(
                out,
                &format!(
                    "only grant {g}, limited to methods or paths, covers it, and Squid cannot \
                     see requests"
                ),
            );
        }
        Verdict::Refuse { why, .. } => {
            out.push_str("ERR ");
            push_quoted(out, &why);
        }
    }
}

/// `CHANNEL ` when the line had one.
fn push_channel(out: &mut String, channel: Option<&str>) {
    if let Some(c) = channel {
        out.push_str(c);
        out.push(' ');
    }
}

/// One parsed lookup.
#[derive(Debug, PartialEq, Eq)]
pub struct Lookup<'a> {
    pub channel: Option<&'a str>,
    pub src: IpAddr,
    pub host: &'a str,
    pub port: u16,
}

/// Splits a request line. The channel is there when the first field is all digits (an
/// address never is); everything after PORT is ignored. `Err` carries the channel (so the
/// answer can still be matched) and why the line is not a lookup.
pub fn parse_line(line: &str) -> Result<Lookup<'_>, (Option<&str>, String)> {
    let mut fields = line.split_ascii_whitespace().peekable();
    let channel = fields
        .next_if(|f| f.bytes().all(|b| b.is_ascii_digit()))
        .filter(|f| !f.is_empty());
    let fail = |why: String| Err((channel, why));
    let (Some(src), Some(host), Some(port)) = (fields.next(), fields.next(), fields.next()) else {
        return fail("expected SRC HOST PORT (external_acl_type ... %SRC %DST %PORT)".into());
    };
    let Ok(src) = src
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return fail(format!("source {src:?} is not an IP address"));
    };
    let port = match port.parse::<u32>() {
        Ok(p @ 1..=65535) => p as u16,
        _ => return fail(format!("port {port:?} is not 1-65535")),
    };
    Ok(Lookup {
        channel,
        src,
        host,
        port,
    })
}

/// Appends `message="..."` to `out`: text Squid (and the mitmproxy addon) reads back
/// safely, printable ASCII without quotes or backslashes, one line, at most
/// [`MAX_MESSAGE`] characters.
pub fn push_quoted(out: &mut String, message: &str) {
    out.push_str("message=\"");
    out.extend(
        message
            .chars()
            .map(|c| match c {
                '"' | '\\' => '\'',
                c if c.is_ascii_graphic() || c == ' ' => c,
                _ => '?',
            })
            .take(MAX_MESSAGE),
    );
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote(message: &str) -> String {
        let mut out = String::new();
        push_quoted(&mut out, message);
        out
    }

    #[test]
    fn lines_with_and_without_channels() {
        let l = parse_line("127.0.0.2 pypi.org 443\n").unwrap();
        assert_eq!((l.channel, l.host, l.port), (None, "pypi.org", 443));
        let l = parse_line("7 127.0.0.2 pypi.org 443 - extra").unwrap();
        assert_eq!((l.channel, l.port), (Some("7"), 443));
        let l = parse_line("0 ::1 [::1] 80").unwrap();
        assert_eq!(l.src, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(parse_line("3 127.0.0.2 a.test 0").unwrap_err().0, Some("3"));
        assert_eq!(parse_line("127.0.0.2 a.test 65536").unwrap_err().0, None);
        assert!(parse_line("").is_err());
        assert!(parse_line("garbage").is_err());
        assert!(parse_line("1 not-an-ip a.test 443").is_err());
    }

    #[test]
    fn messages_cannot_break_the_reply() {
        assert_eq!(quote("a \"b\" \\ c\nd"), "message=\"a 'b' ' c?d\"");
        assert_eq!(quote(&"x".repeat(1000)).len(), MAX_MESSAGE + 10);
    }
}
