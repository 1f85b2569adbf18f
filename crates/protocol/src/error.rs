//! The crate's error type, for failures that are not JSON-RPC error objects.

/// A failure of this crate's own parsing helpers (JSON-RPC failures are [`crate::ErrorObject`]s).
///
/// Messages fit after "failed to".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `=?base64?…?=` header value holds a character outside the base64 alphabet, misplaced
    /// padding, or an impossible length.
    #[error("decode header value: invalid base64 at byte {position}")]
    InvalidBase64 {
        /// Byte offset inside the encoded part (after `=?base64?`).
        position: usize,
    },
    /// A `=?base64?…?=` header value decodes to bytes that are not UTF-8.
    #[error("decode header value: the decoded bytes are not UTF-8")]
    NotUtf8,
    /// A plain (not base64) header value holds a character a header value may not carry.
    #[error("decode header value: character {0:?} is not allowed in a plain header value")]
    InvalidCharacter(char),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
