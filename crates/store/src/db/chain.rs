//! The hash chain over the audit trail: the canonical form of an event row and its link,
//! the one definition both writing ([`super::trail`]) and checking ([`super::verify`]) use.
//! docs/SCHEMA.md ("The hash chain") states the same form for an auditor's own script.

use sha2::{Digest, Sha256};

/// The hashed fields of one event row, as stored (times as their stored text, the bottle
/// as its integer id, the change as its stored JSON text), in canonical order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link<'a> {
    pub at: &'a str,
    pub event: &'a str,
    pub actor: &'a str,
    pub via: Option<&'a str>,
    pub bottle_id: Option<i64>,
    pub proposal_id: Option<&'a str>,
    pub grant_id: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub change: Option<&'a str>,
    pub note: Option<&'a str>,
}

/// Appends one field: NULL is the single byte `-`; a value is its UTF-8 length in bytes
/// as ASCII decimal, `:`, then its bytes (an integer is its decimal text).
fn field(msg: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        None => msg.push(b'-'),
        Some(bytes) => {
            decimal(msg, bytes.len());
            msg.push(b':');
            msg.extend_from_slice(bytes);
        }
    }
}

/// Appends `n` as ASCII decimal.
fn decimal(msg: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    msg.extend_from_slice(&digits[at..]);
}

/// The message a row's hash is taken over, appended to `msg`: `prev` (the previous row's
/// hash, or the genesis, as its 64 hex characters) followed by the ten fields of [`Link`]
/// in order, each as [`field`] writes it. The checker ([`super::verify`]) hands the
/// fields as the bytes it read, so both sides share this one definition.
pub(crate) fn canonical(msg: &mut Vec<u8>, prev: &[u8], fields: [Option<&[u8]>; 10]) {
    msg.extend_from_slice(prev);
    for value in fields {
        field(msg, value);
    }
}

/// Lowercase hex SHA-256 of `msg`.
pub(crate) fn hex_digest(msg: &[u8]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in Sha256::digest(msg).iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 15)];
    }
    out
}

/// The row's hash: lowercase hex SHA-256 of its [`canonical`] message after `prev`.
pub(crate) fn link(prev: &str, row: &Link<'_>) -> String {
    let bottle = row.bottle_id.map(|b| b.to_string());
    let mut msg = Vec::with_capacity(256);
    canonical(
        &mut msg,
        prev.as_bytes(),
        [
            Some(row.at),
            Some(row.event),
            Some(row.actor),
            row.via,
            bottle.as_deref(),
            row.proposal_id,
            row.grant_id,
            row.kind,
            row.change,
            row.note,
        ]
        .map(|v| v.map(str::as_bytes)),
    );
    hex_digest(&msg).iter().map(|&b| char::from(b)).collect()
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_is_the_documented_one() {
        let prev = "0".repeat(64);
        let row = Link {
            at: "2026-12-02T00:00:00.000Z",
            event: "proposed",
            actor: "bottle:dev",
            via: None,
            bottle_id: Some(7),
            proposal_id: Some("p1"),
            grant_id: None,
            kind: Some("egress"),
            change: Some("{\"host\":\"a.b\",\"port\":443}"),
            note: Some("é"),
        };
        let msg = format!(
            "{prev}24:2026-12-02T00:00:00.000Z8:proposed10:bottle:dev-1:72:p1-6:egress\
             25:{{\"host\":\"a.b\",\"port\":443}}2:é"
        );
        assert_eq!(link(&prev, &row), hex(&Sha256::digest(msg.as_bytes())));
    }
}
