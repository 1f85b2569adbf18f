//! The duration syntax shared by the server and the CLI (`90s`, `10m`, `8h`, `7d`), and
//! durations as an operator reads them. The stored time itself is [`crate::model::Timestamp`].

use std::time::Duration;

use time::OffsetDateTime;

use crate::error::{StoreError, StoreResult};
use crate::model::parse_time;

/// Seconds from now until the stored time `text` (negative when past); `None` when `text`
/// is not a stored time.
pub fn seconds_until(text: &str) -> Option<i64> {
    parse_time(text).map(|t| (t - OffsetDateTime::now_utc()).whole_seconds())
}

/// Parses `90s`, `10m`, `8h`, `7d`, or plain seconds (`30`). `0` means zero.
pub fn parse_duration(text: &str) -> StoreResult<Duration> {
    let t = text.trim();
    let bad = || StoreError::Invalid {
        field: "duration".into(),
        message: format!("{text:?} is not a duration like 90s, 10m, 8h or 7d"),
    };
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .filter(|&s| s <= 100 * 365 * 86_400)
    .ok_or_else(bad)?;
    Ok(Duration::from_secs(secs))
}

/// Writes a duration the way an operator reads it: `1d 2h`, `5m 3s`, `42s`.
pub fn humanize(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{sec}s"),
        (0, 0, _) => format!("{m}m {sec}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("8h").unwrap(), Duration::from_secs(28_800));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        for bad in ["", "m", "10x", "-1s", "1.5h", "99999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_read_and_humanize() {
        let a = crate::model::Timestamp::after(Duration::from_secs(120));
        assert!(seconds_until(&a).is_some_and(|s| (118..=120).contains(&s)));
        assert!(seconds_until("not a time").is_none());
        assert_eq!(humanize(90), "1m 30s");
        assert_eq!(humanize(90_000), "1d 1h");
    }
}
