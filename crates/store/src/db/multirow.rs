//! Multi-row statements: one text per row count from a fixed few ([`CHUNKS`]), so a batch of
//! any size is written in a few statements whose prepared forms each connection caches.
//! The batch filing (`proposals/batch.rs`) and the trail's `record_many` (`trail.rs`)
//! write through them.

use std::fmt::Write;

use sqlx::AnyConnection;

/// A statement being bound.
pub(super) type Insert<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

/// Rows per multi-row insert, largest first: a batch is written as a few statements of
/// these sizes, so the texts (and the prepared statements each connection caches) stay
/// few, and the largest stays far under SQLite's bound-parameter limit.
pub(super) const CHUNKS: [usize; 4] = [64, 16, 4, 1];

/// `head` then `rows` copies of `row` with each `?` numbered `$first`, `$first+1`, ….
pub(super) fn rows_sql(head: &str, row: &str, rows: usize, first: usize, tail: &str) -> String {
    let mut sql = String::from(head);
    let mut n = first;
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        for ch in row.chars() {
            if ch == '?' {
                let _ = write!(sql, "${n}");
                n += 1;
            } else {
                sql.push(ch);
            }
        }
    }
    sql.push_str(tail);
    sql
}

/// The chunk sizes that write `n` rows, largest first.
pub(super) fn chunks(mut n: usize) -> impl Iterator<Item = (usize, usize)> {
    std::iter::from_fn(move || {
        let i = CHUNKS.iter().position(|&s| s <= n)?;
        n -= CHUNKS[i];
        Some((i, CHUNKS[i]))
    })
}

/// Writes `rows` in the chunk sizes of [`chunks`], each chunk with its statement from
/// `sqls` (the text for that size, in [`CHUNKS`] order) and each row bound by `bind`.
pub(super) async fn insert_chunked<T>(
    conn: &mut AnyConnection,
    sqls: &'static [String; CHUNKS.len()],
    rows: &[T],
    bind: impl Fn(Insert<'static>, &T) -> Insert<'static>,
) -> sqlx::Result<()> {
    let mut at = 0;
    for (i, n) in chunks(rows.len()) {
        let q = rows[at..at + n]
            .iter()
            .fold(sqlx::query(sqls[i].as_str()), &bind);
        q.execute(&mut *conn).await?;
        at += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_numbers_its_rows_parameters_in_order() {
        assert_eq!(
            rows_sql("INSERT INTO t (a, b) VALUES ", "(?, 'x', ?)", 2, 1, ""),
            "INSERT INTO t (a, b) VALUES ($1, 'x', $2), ($3, 'x', $4)"
        );
    }

    #[test]
    fn a_batch_is_written_in_few_chunk_sizes() {
        let sizes = |n| chunks(n).map(|(_, s)| s).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(27), vec![16, 4, 4, 1, 1, 1]);
        assert_eq!(sizes(64), vec![64]);
        assert_eq!(sizes(130), vec![64, 64, 1, 1]);
    }
}
