//! Streamable HTTP header names and decoding of 2026-07-28 header values (`=?base64?…?=`).
//!
//! Names are lower-case, as `http::HeaderName::from_static` requires; header names compare
//! case-insensitively anyway.

use crate::error::{Error, Result};

/// `MCP-Protocol-Version`: the revision in use (legacy: after `initialize`; modern: every POST).
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`: mirrors the body's `method` (2026-07-28, every request).
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`: mirrors `params.name` (`tools/call`, `prompts/get`) or `params.uri`
/// (`resources/read`) (2026-07-28).
pub const NAME: &str = "mcp-name";
/// Prefix of `Mcp-Param-{Name}` headers mirroring tool arguments marked `x-mcp-header`.
pub const PARAM_PREFIX: &str = "mcp-param-";
/// `Mcp-Session-Id`: legacy-era session id (this server mints none; 2026-07-28 ignores it).
pub const SESSION_ID: &str = "mcp-session-id";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Decode a 2026-07-28 header value (`Mcp-Name`, `Mcp-Param-*`) for comparison with the body.
///
/// Surrounding spaces and tabs are trimmed. A value of the exact (case-sensitive) form
/// `=?base64?{standard base64}?=` is decoded to its UTF-8 text (padding optional). Any
/// other value is returned as is, and must consist of visible ASCII, spaces and tabs.
pub fn decode_header_value(raw: &str) -> Result<String> {
    let value = raw.trim_matches([' ', '\t']);
    if let Some(encoded) = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX))
    {
        let bytes = base64_decode(encoded)?;
        return String::from_utf8(bytes).map_err(|_| Error::NotUtf8);
    }
    if let Some(bad) = value
        .chars()
        .find(|&c| !(c == '\t' || (' '..='~').contains(&c)))
    {
        return Err(Error::InvalidCharacter(bad));
    }
    Ok(value.to_owned())
}

/// Decode standard base64 (RFC 4648 §4), with or without `=` padding.
fn base64_decode(input: &str) -> Result<Vec<u8>> {
    let bytes = input.as_bytes();
    let data = bytes
        .strip_suffix(b"==")
        .or_else(|| bytes.strip_suffix(b"="))
        .unwrap_or(bytes);
    let padded = data.len() != bytes.len();
    // Padding, when present, must complete a 4-character group; one leftover character
    // can never encode a whole byte.
    if (padded && !bytes.len().is_multiple_of(4)) || data.len() % 4 == 1 {
        return Err(Error::InvalidBase64 {
            position: data.len(),
        });
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for (position, &c) in data.iter().enumerate() {
        let sextet = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(Error::InvalidBase64 { position }),
        };
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding examples from the 2026-07-28 Streamable HTTP page ("Value Encoding").
    #[test]
    fn decodes_the_spec_examples() {
        let cases = [
            ("us-west1", "us-west1"),
            ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
            ("=?base64?IHBhZGRlZCA=?=", " padded "),
            ("=?base64?bGluZTEKbGluZTI=?=", "line1\nline2"),
            ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ];
        for (raw, want) in cases {
            assert_eq!(decode_header_value(raw).unwrap(), want, "decoding {raw:?}");
        }
    }

    #[test]
    fn trims_surrounding_whitespace_outside_and_around_the_sentinel() {
        assert_eq!(
            decode_header_value("  get_weather\t").unwrap(),
            "get_weather"
        );
        assert_eq!(
            decode_header_value(" =?base64?IHBhZGRlZCA=?= ").unwrap(),
            " padded "
        );
    }

    #[test]
    fn padding_is_optional() {
        assert_eq!(
            decode_header_value("=?base64?IHBhZGRlZCA?=").unwrap(),
            " padded "
        );
        assert_eq!(decode_header_value("=?base64?YQ?=").unwrap(), "a");
        assert_eq!(decode_header_value("=?base64?YQ==?=").unwrap(), "a");
        assert_eq!(decode_header_value("=?base64?YWI?=").unwrap(), "ab");
        assert_eq!(decode_header_value("=?base64?YWJj?=").unwrap(), "abc");
        assert_eq!(decode_header_value("=?base64??=").unwrap(), "");
    }

    #[test]
    fn decodes_plus_and_slash() {
        assert_eq!(
            decode_header_value("=?base64?fn5+Pz8/?=").unwrap(),
            "~~~???"
        );
        assert_eq!(
            decode_header_value("=?base64?w7/Dvj4/?=").unwrap(),
            "\u{ff}\u{fe}>?"
        );
        assert_eq!(
            decode_header_value("=?base64?aMOpbGxvIHfDtnJsZCA+Pj4gPz8/?=").unwrap(),
            "h\u{e9}llo w\u{f6}rld >>> ???"
        );
    }

    #[test]
    fn sentinel_is_case_sensitive_and_must_be_complete() {
        // Not the sentinel: returned verbatim.
        assert_eq!(
            decode_header_value("=?BASE64?YQ==?=").unwrap(),
            "=?BASE64?YQ==?="
        );
        assert_eq!(
            decode_header_value("=?base64?YQ==").unwrap(),
            "=?base64?YQ=="
        );
        assert_eq!(decode_header_value("=?base64?=").unwrap(), "=?base64?=");
    }

    #[test]
    fn rejects_bad_base64() {
        assert_eq!(
            decode_header_value("=?base64?SGVs*G8=?="),
            Err(Error::InvalidBase64 { position: 4 })
        );
        // A lone character cannot encode a byte.
        assert!(matches!(
            decode_header_value("=?base64?YWJjZ?="),
            Err(Error::InvalidBase64 { .. })
        ));
        // Padding that does not complete a group, and padding in the middle.
        assert!(decode_header_value("=?base64?YQ=?=").is_err());
        assert!(decode_header_value("=?base64?YQ==YQ==?=").is_err());
        // Valid base64 of bytes that are not UTF-8 (0xff 0xfe).
        assert_eq!(decode_header_value("=?base64?//4=?="), Err(Error::NotUtf8));
    }

    #[test]
    fn rejects_control_and_non_ascii_characters_in_plain_values() {
        assert_eq!(
            decode_header_value("a\nb"),
            Err(Error::InvalidCharacter('\n'))
        );
        assert_eq!(
            decode_header_value("caf\u{e9}"),
            Err(Error::InvalidCharacter('\u{e9}'))
        );
        assert_eq!(decode_header_value("a b\tc").unwrap(), "a b\tc");
    }

    #[test]
    fn error_messages_fit_after_failed_to() {
        let e = decode_header_value("=?base64?!!!!?=").unwrap_err();
        assert_eq!(
            format!("failed to {e}"),
            "failed to decode header value: invalid base64 at byte 0"
        );
    }
}
