//! What operators type, read the same way on the pages and in the API.

use supervise_store::clock;

/// A grant's duration as the CLI's `--for` reads it: `90s`, `30m`, `8h`, `7d`, more than 0.
pub(crate) fn grant_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = clock::parse_duration(text)
        .map_err(|_| format!("{text:?} is not a duration like 90s, 30m, 8h or 7d"))?;
    if d.is_zero() {
        return Err("a grant must last longer than 0; leave it out for one until revoked".into());
    }
    Ok(d)
}
