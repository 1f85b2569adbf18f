//! `supervise backup FILE`: a consistent copy of the SQLite database while servers write to
//! it (`Store::backup`, `VACUUM INTO`); PostgreSQL is refused with the `pg_dump` line.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use supervise_store::Store;

use super::Ctx;

pub async fn run(ctx: &Ctx, store: &Store, file: &Path, out: &mut dyn Write) -> Result<()> {
    let size = store.backup(file).await?;
    writeln!(
        out,
        "backed up {} to {} ({size} bytes); check it with: sqlite3 {} 'PRAGMA integrity_check'",
        ctx.shown_db(),
        file.display(),
        file.display()
    )?;
    Ok(())
}
