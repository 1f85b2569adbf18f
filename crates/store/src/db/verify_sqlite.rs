//! `audit verify` on SQLite: the whole check in one read transaction on a connection of its
//! own ([`sqlite_read`]), the event rows streamed by one statement and hashed where SQLite
//! holds them, with the same walk ([`Walk`]) and cross-checks as PostgreSQL's.

use std::path::Path;

use super::sqlite_read::{ReadConn, Stmt, Value};
use super::verify::{
    CHECKPOINT, CROSS_CHECKS, GENESIS, LEFT_BEHIND, ROW_COLUMNS, TrailCheck, Walk, left_behind,
    parse_checkpoint, start_of,
};
use crate::error::{StoreError, StoreResult};

/// Checks the trail of the SQLite file at `path` (see [`super::Store::verify_trail`]).
/// Runs on the calling thread: call it where blocking is allowed.
pub(super) fn verify(path: &Path, head: Option<&str>, busy_ms: i32) -> StoreResult<TrailCheck> {
    let conn = ReadConn::open(path, busy_ms)?;
    conn.exec(c"BEGIN")?;
    let check = check(&conn, head);
    // A read transaction: ending it cannot lose anything, whatever the check found.
    let end = conn.exec(c"COMMIT");
    let check = check?;
    end?;
    Ok(check)
}

fn check(conn: &ReadConn, head: Option<&str>) -> StoreResult<TrailCheck> {
    let genesis = {
        let mut q = conn.prepare(GENESIS)?;
        match q.step()?.then(|| q.value(0)) {
            Some(Value::Text(t)) => String::from_utf8_lossy(t).into_owned(),
            _ => {
                return Err(StoreError::Database(
                    "the chain's genesis is missing".into(),
                ));
            }
        }
    };
    let cp = {
        let mut q = conn.prepare(CHECKPOINT)?;
        if q.step()? {
            match (q.value(0), q.value(1)) {
                (Value::Integer(seq), Value::Text(note)) => {
                    parse_checkpoint(seq, std::str::from_utf8(note).ok())
                }
                _ => None,
            }
        } else {
            None
        }
    };
    let (start, cut, after) = start_of(genesis, cp.as_ref());
    // Rows at or below the checkpoint's cut that are still there were not archived.
    let mut left = None;
    if let Some((_, c)) = &cp {
        let mut q = conn.prepare(LEFT_BEHIND)?;
        q.bind_i64(1, c.through_seq)?;
        if q.step()?
            && let Value::Integer(seq) = q.value(0)
        {
            left = Some(left_behind(seq));
        }
    }
    let mut walk = Walk::new(&start, head, left);
    let mut rows = conn.prepare(&format!(
        "SELECT {ROW_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq"
    ))?;
    rows.bind_i64(1, after)?;
    while rows.step()? {
        if !row(&rows, &mut walk) {
            break;
        }
    }
    drop(rows);
    let mut mismatches = Vec::new();
    for (what, sql) in CROSS_CHECKS {
        let mut q = conn.prepare(sql)?;
        // Every check but the last is bounded by the cut.
        if q.parameters() > 0 {
            q.bind_text(1, &cut)?;
        }
        if q.step()? {
            let id = match q.value(0) {
                Value::Text(t) => String::from_utf8_lossy(t).into_owned(),
                Value::Integer(i) => i.to_string(),
                _ => String::new(),
            };
            mismatches.push(what.replace("{}", &id));
        }
    }
    Ok(walk.finish(start, mismatches))
}

/// Hands the current row of [`ROW_COLUMNS`] to the walk; `false` once it may stop.
fn row(rows: &Stmt<'_>, walk: &mut Walk<'_>) -> bool {
    let Value::Integer(seq) = rows.value(0) else {
        // `seq` is the table's integer primary key: SQLite never returns another type.
        return walk.bad_row(0, "seq");
    };
    // The columns' types are what the STRICT table allows: NOT NULL text for the first
    // three, an integer or NULL for the bottle, text or NULL for the rest.
    let mut decimal = Decimal::default();
    let bottle = match rows.value(5) {
        Value::Integer(b) => Some(decimal.of(b)),
        Value::Null => None,
        _ => return walk.bad_row(seq, "bottle_id"),
    };
    let mut fields: [Option<&[u8]>; 10] = [None; 10];
    for (i, field) in fields.iter_mut().enumerate() {
        *field = match (i, rows.value(i as i32 + 1)) {
            (4, _) => bottle,
            (_, Value::Text(t)) => Some(t),
            (3.., Value::Null) => None,
            (_, _) => return walk.bad_row(seq, COLUMNS[i]),
        };
    }
    let stored = match rows.value(11) {
        Value::Text(h) => Some(h),
        Value::Null => None,
        _ => return walk.bad_row(seq, "hash"),
    };
    walk.row(seq, fields, stored)
}

/// The hashed columns' names, for a row whose field has the wrong type.
const COLUMNS: [&str; 10] = [
    "at",
    "event",
    "actor",
    "via",
    "bottle_id",
    "proposal_id",
    "grant_id",
    "kind",
    "change",
    "note",
];

/// An integer's decimal text, written on the stack (what the canonical form hashes).
#[derive(Default)]
struct Decimal {
    digits: [u8; 20],
}

impl Decimal {
    fn of(&mut self, n: i64) -> &[u8] {
        let mut at = self.digits.len();
        let mut rest = n.unsigned_abs();
        loop {
            at -= 1;
            self.digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if n < 0 {
            at -= 1;
            self.digits[at] = b'-';
        }
        &self.digits[at..]
    }
}

#[cfg(test)]
mod tests {
    use super::Decimal;

    #[test]
    fn an_integer_is_written_as_rust_and_sqlite_write_it() {
        for n in [0, 7, 10, -1, 1234567890, i64::MAX, i64::MIN] {
            assert_eq!(Decimal::default().of(n), n.to_string().as_bytes());
        }
    }
}
