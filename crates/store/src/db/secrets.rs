//! The console's secrets: how one is made (32 bytes from the OS as unpadded base64url),
//! what is stored for it (only its SHA-256), and how long each kind lives.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::{StoreError, StoreResult};
use crate::model::Secret;

/// How long a sign-in link may wait to be spent.
pub const SIGN_IN_LINK_TTL: Duration = Duration::from_secs(15 * 60);
/// A session unused this long has ended.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);
/// A session ends this long after sign-in, however busy.
pub const SESSION_MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// What an API token starts with, so a leaked one is recognisable.
pub(super) const TOKEN_PREFIX: &str = "sv_";

/// A fresh secret: 32 bytes from the OS as unpadded base64url (43 characters), after
/// `prefix`.
pub(super) fn new_secret(prefix: &str) -> StoreResult<Secret> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| StoreError::Database(format!("no randomness from the OS: {e}")))?;
    Ok(Secret::new(format!(
        "{prefix}{}",
        URL_SAFE_NO_PAD.encode(bytes)
    )))
}

/// What is stored for a secret: its SHA-256, lowercase hex.
pub(super) fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
