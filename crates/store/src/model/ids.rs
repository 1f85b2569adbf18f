//! Identities and time as types: proposal, grant and bottle ids, and the stored timestamp.
//! Each is text (or a number) only at the SQL and JSON edges, serialised exactly as stored.

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;
use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

use super::vocab::UnknownName;

const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// A point in time as the database stores it: UTC RFC 3339 text with milliseconds
/// (`2026-11-30T12:00:00.000Z`). Fixed width, so ordering the text orders the times.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(String);

/// A proposal's id: a UUIDv7 (unguessable, time-ordered).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProposalId(String);

/// A grant's id: a UUIDv7.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantId(String);

/// A bottle generation's id: a removed and re-added slug gets a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BottleId(i64);

impl BottleId {
    /// The row id, for the SQL edge and for callers that key maps by it.
    pub fn get(self) -> i64 {
        self.0
    }

    /// A bottle id as read from the database.
    pub fn from_row(id: i64) -> BottleId {
        BottleId(id)
    }
}

impl fmt::Display for BottleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl ProposalId {
    /// A fresh, time-ordered id.
    pub(crate) fn generate() -> ProposalId {
        ProposalId(uuid::Uuid::now_v7().to_string())
    }

    /// An id as read from the database (ids are opaque text; nothing to check).
    pub(crate) fn from_row(id: String) -> ProposalId {
        ProposalId(id)
    }
}

impl GrantId {
    /// A fresh, time-ordered id.
    pub(crate) fn generate() -> GrantId {
        GrantId(uuid::Uuid::now_v7().to_string())
    }

    /// An id as read from the database.
    pub(crate) fn from_row(id: String) -> GrantId {
        GrantId(id)
    }
}

impl Timestamp {
    /// The current time.
    pub fn now() -> Timestamp {
        Timestamp::from_time(OffsetDateTime::now_utc())
    }

    /// `d` from now.
    pub fn after(d: Duration) -> Timestamp {
        Timestamp::from_time(OffsetDateTime::now_utc() + d)
    }

    /// `d` ago.
    pub fn before(d: Duration) -> Timestamp {
        Timestamp::from_time(OffsetDateTime::now_utc() - d)
    }

    /// `d` after this time.
    pub fn plus(&self, d: Duration) -> Timestamp {
        Timestamp::from_time(self.to_time() + d)
    }

    /// `d` before this time.
    pub fn minus(&self, d: Duration) -> Timestamp {
        Timestamp::from_time(self.to_time() - d)
    }

    /// `t` in the stored form. Written digit by digit for years 0 to 9999: polls compare
    /// against the current time, and the general formatter cost about 2k instructions. Other
    /// years (never stored in practice) go through it.
    fn from_time(t: OffsetDateTime) -> Timestamp {
        let t = t.to_offset(time::UtcOffset::UTC);
        let Ok(year) = u16::try_from(t.year()) else {
            return Timestamp::formatted(t);
        };
        if year > 9999 {
            return Timestamp::formatted(t);
        }
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: u32| {
            for i in (at..at + width).rev() {
                out[i] = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, u32::from(year));
        put(5, 2, u32::from(u8::from(t.month())));
        put(8, 2, u32::from(t.day()));
        put(11, 2, u32::from(t.hour()));
        put(14, 2, u32::from(t.minute()));
        put(17, 2, u32::from(t.second()));
        put(20, 3, u32::from(t.millisecond()));
        Timestamp(String::from_utf8(out.to_vec()).expect("ASCII digits"))
    }

    fn formatted(t: OffsetDateTime) -> Timestamp {
        Timestamp(t.format(FORMAT).expect("UTC time always formats"))
    }

    /// The instant this text names.
    pub fn to_time(&self) -> OffsetDateTime {
        parse_time(&self.0).expect("a Timestamp always holds a valid time")
    }

    /// Seconds from now until this time (negative when past).
    pub fn seconds_until(&self) -> i64 {
        (self.to_time() - OffsetDateTime::now_utc()).whole_seconds()
    }

    /// The stored text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A time an operator typed: RFC 3339 with any offset (`2026-12-01T08:00:00+01:00`),
    /// or a date (`2026-12-01`, its midnight UTC).
    pub fn parse_given(text: &str) -> Option<Timestamp> {
        use time::format_description::well_known::Rfc3339;
        if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
            return Some(Timestamp::from_time(t));
        }
        let date = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(text, date)
            .ok()
            .map(|d| Timestamp::from_time(d.midnight().assume_utc()))
    }
}

/// Parses the stored form: the format's `Z` is a literal, not an offset component, so parse
/// the wall-clock time and pin it to UTC.
pub(crate) fn parse_time(text: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(text, FORMAT)
        .ok()
        .map(time::PrimitiveDateTime::assume_utc)
}

impl FromStr for Timestamp {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Timestamp, UnknownName> {
        match parse_time(s) {
            Some(_) => Ok(Timestamp(s.to_string())),
            None => Err(UnknownName {
                what: "time",
                name: s.to_string(),
            }),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Reading, comparing, displaying and serialising a text newtype as its text.
macro_rules! text_impls {
    ($name:ident) => {
        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(v: $name) -> serde_json::Value {
                serde_json::Value::String(v.0)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

text_impls!(Timestamp);
text_impls!(ProposalId);
text_impls!(GrantId);

impl ProposalId {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl GrantId {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for ProposalId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProposalId, D::Error> {
        String::deserialize(d).map(ProposalId)
    }
}

impl<'de> serde::Deserialize<'de> for GrantId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GrantId, D::Error> {
        String::deserialize(d).map(GrantId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_and_order() {
        let a = Timestamp::now();
        assert_eq!(a.len(), 24, "{a}");
        assert_eq!(a.as_str().parse::<Timestamp>().unwrap(), a);
        assert!(Timestamp::after(Duration::from_secs(1)) > a);
        assert!(Timestamp::before(Duration::from_secs(1)) < a);
        assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a}\""));
        for bad in ["", "2026-11-30", "2026-11-30T12:00:00Z", "yesterday"] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_digit_by_digit_form_is_the_formatters() {
        let mut instants = vec![
            time::macros::datetime!(1970-01-01 00:00:00 UTC),
            time::macros::datetime!(0000-01-01 00:00:00 UTC),
            time::macros::datetime!(2024-02-29 23:59:59.999 UTC),
            time::macros::datetime!(2026-12-31 23:59:59.999999999 UTC),
            time::macros::datetime!(9999-12-31 23:59:59.999 UTC),
            time::macros::datetime!(2026-06-01 10:00:00 +02:00),
            OffsetDateTime::now_utc(),
        ];
        // Every 997,331 seconds and 7 ms, from 1970 to beyond 2100.
        let mut t = time::macros::datetime!(1970-01-01 00:00:00.001 UTC);
        while t.year() < 2110 {
            instants.push(t);
            t += time::Duration::seconds(997_331) + time::Duration::milliseconds(7);
        }
        for t in instants {
            let utc = t.to_offset(time::UtcOffset::UTC);
            assert_eq!(
                Timestamp::from_time(t).as_str(),
                utc.format(FORMAT).unwrap(),
                "{t}"
            );
        }
    }
}
