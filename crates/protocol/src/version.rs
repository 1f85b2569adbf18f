//! Protocol revisions served, what each one has, and `initialize` version negotiation.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// The handshake-era (`initialize`) revisions served, oldest first.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The per-request-metadata-era revisions served, oldest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every revision served, newest first: the order `server/discover` and `-32022` list them
/// in (as the specification's own example does).
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// The newest revision served.
pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// The newest handshake-era revision: what `initialize` answers when it cannot answer the
/// requested one.
pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

/// The revision to assume for a legacy request without an `MCP-Protocol-Version` header
/// (2025-06-18 and later transports say so).
pub const DEFAULT_WITHOUT_HEADER: ProtocolVersion = ProtocolVersion::V2025_03_26;

/// A protocol revision this server serves. Ordered by date, so `v >= V2025_06_18` works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2025-03-26: Streamable HTTP introduced; batches allowed.
    V2025_03_26,
    /// 2025-06-18: no batches; `structuredContent`, `outputSchema`, tool `title`.
    V2025_06_18,
    /// 2025-11-25: experimental tasks; last handshake-era revision.
    V2025_11_25,
    /// 2026-07-28: no handshake, no sessions; per-request `_meta`, `resultType`.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every revision served, oldest first.
    pub const ALL: [ProtocolVersion; 4] = [
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The revision named exactly `s` (e.g. `"2025-06-18"`), if served.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The revision's name, e.g. `"2025-06-18"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// True for the per-request-metadata era (2026-07-28 and later).
    pub const fn is_modern(self) -> bool {
        matches!(self, Self::V2026_07_28)
    }

    /// True for the `initialize` handshake era (2025-11-25 and earlier).
    pub const fn is_legacy(self) -> bool {
        !self.is_modern()
    }

    /// True where a POST body may be a JSON array of messages (2025-03-26 only).
    pub const fn allows_batch(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    /// True where tool results may carry `structuredContent` (2025-06-18 and later).
    pub const fn has_structured_content(self) -> bool {
        !matches!(self, Self::V2025_03_26)
    }

    /// True where tools may declare `outputSchema` (2025-06-18 and later).
    pub const fn has_output_schema(self) -> bool {
        self.has_structured_content()
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::parse(&s).ok_or_else(|| {
            de::Error::custom(format!(
                "unsupported protocol version {s:?} (supported: {})",
                SUPPORTED_VERSIONS.join(", ")
            ))
        })
    }
}

/// The revision to answer an `initialize` request with.
///
/// The requested revision when it is a handshake-era one served; otherwise
/// [`LATEST_LEGACY`] (an unknown version is not an error: the client decides whether it can
/// use the answer). `initialize` never selects the modern era.
pub fn negotiate(requested: &str) -> ProtocolVersion {
    ProtocolVersion::parse(requested)
        .filter(|v| v.is_legacy())
        .unwrap_or(LATEST_LEGACY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_lists_agree_with_the_enum() {
        let legacy: Vec<_> = ProtocolVersion::ALL
            .iter()
            .filter(|v| v.is_legacy())
            .map(|v| v.as_str())
            .collect();
        assert_eq!(legacy, LEGACY_VERSIONS);
        let modern: Vec<_> = ProtocolVersion::ALL
            .iter()
            .filter(|v| v.is_modern())
            .map(|v| v.as_str())
            .collect();
        assert_eq!(modern, MODERN_VERSIONS);
        let newest_first: Vec<_> = ProtocolVersion::ALL
            .iter()
            .rev()
            .map(|v| v.as_str())
            .collect();
        assert_eq!(newest_first, SUPPORTED_VERSIONS);
        assert_eq!(LATEST.as_str(), "2026-07-28");
        assert_eq!(LATEST_LEGACY.as_str(), "2025-11-25");
        assert_eq!(DEFAULT_WITHOUT_HEADER.as_str(), "2025-03-26");
    }

    #[test]
    fn parse_is_exact() {
        assert_eq!(
            ProtocolVersion::parse("2025-06-18"),
            Some(ProtocolVersion::V2025_06_18)
        );
        assert_eq!(ProtocolVersion::parse("2024-11-05"), None);
        assert_eq!(ProtocolVersion::parse(" 2025-06-18"), None);
        assert_eq!(ProtocolVersion::parse(""), None);
    }

    #[test]
    fn feature_switches_follow_the_changelogs() {
        use ProtocolVersion::*;
        assert!(V2025_03_26.allows_batch());
        assert!(!V2025_06_18.allows_batch());
        assert!(!V2026_07_28.allows_batch());
        assert!(!V2025_03_26.has_structured_content());
        assert!(V2025_06_18.has_structured_content());
        assert!(V2026_07_28.has_output_schema());
        assert!(!V2025_03_26.has_output_schema());
        assert!(V2026_07_28.is_modern());
        assert!(V2025_11_25.is_legacy());
        assert!(V2025_03_26 < V2025_06_18 && V2025_11_25 < V2026_07_28);
    }

    #[test]
    fn negotiate_answers_requested_legacy_else_latest_legacy() {
        assert_eq!(negotiate("2025-03-26"), ProtocolVersion::V2025_03_26);
        assert_eq!(negotiate("2025-06-18"), ProtocolVersion::V2025_06_18);
        assert_eq!(negotiate("2025-11-25"), ProtocolVersion::V2025_11_25);
        assert_eq!(negotiate("2024-11-05"), ProtocolVersion::V2025_11_25);
        assert_eq!(negotiate("1999-01-01"), ProtocolVersion::V2025_11_25);
        assert_eq!(negotiate("garbage"), ProtocolVersion::V2025_11_25);
        // initialize never selects the modern era, even when asked for it.
        assert_eq!(negotiate("2026-07-28"), ProtocolVersion::V2025_11_25);
    }

    #[test]
    fn serde_uses_the_date_string() {
        let v: ProtocolVersion = serde_json::from_str("\"2025-11-25\"").unwrap();
        assert_eq!(v, ProtocolVersion::V2025_11_25);
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"2025-11-25\"");
        let err = serde_json::from_str::<ProtocolVersion>("\"2024-11-05\"").unwrap_err();
        assert!(
            err.to_string().contains("unsupported protocol version"),
            "{err}"
        );
    }
}
