//! What a push contains, as the gate recorded it for review: its commits, and per file the
//! paths, status, mode, counts and unified patch, within the caps, truncation stated; and
//! the content findings (a matched secret only masked).

use serde::{Deserialize, Serialize};

/// Commits a push's record lists, newest first.
pub const MAX_DIFF_COMMITS: usize = 100;
/// Bytes of one file's patch kept.
pub const MAX_FILE_PATCH: usize = 64 * 1024;
/// Bytes of patch kept for a whole push.
pub const MAX_PUSH_PATCH: usize = 1024 * 1024;

/// The recorded content of one pushed ref update.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PushDiff {
    /// Newest first, at most [`MAX_DIFF_COMMITS`].
    pub commits: Vec<PushCommit>,
    /// Whether the push brings more commits than are listed.
    pub commits_truncated: bool,
    pub files: Vec<DiffFile>,
    /// Whether any file's patch, or the list of patches, was cut by a cap.
    pub truncated: bool,
    /// What the content scan found (secrets masked), in the order found.
    pub findings: Vec<Finding>,
}

/// One commit of a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushCommit {
    pub id: String,
    /// `Name <email>`, as the commit says.
    pub author: String,
    pub subject: String,
}

/// One file a push changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffFile {
    /// `None` for an added file.
    pub old_path: Option<String>,
    /// `None` for a deleted file.
    pub new_path: Option<String>,
    /// `added`, `modified`, `deleted`, `renamed` or `mode-change`.
    pub status: String,
    /// `file`, `executable`, `symlink` or `submodule` (the new side's, else the old's).
    pub mode: String,
    /// The old side's mode when it differs from the new side's.
    pub old_mode: Option<String>,
    pub binary: bool,
    pub added: u64,
    pub removed: u64,
    /// The unified patch (3 lines of context) as kept: whole, cut at
    /// [`MAX_FILE_PATCH`], or empty when the push's cap was reached before it.
    pub patch: String,
    /// Whether `patch` is not the whole patch.
    pub truncated: bool,
}

impl DiffFile {
    /// The path to name the file by: the new one, else the old one.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// Something the content scan flagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The flag's name (`secret-in-diff`, `executable-added`, `ci-config`, `install-script`).
    pub flag: String,
    pub path: String,
    /// The secret rule's id (`aws-access-token`), or what was seen for other flags.
    pub rule: String,
    /// For a secret: its first 4 characters, then `…`; never the whole secret.
    pub masked: Option<String>,
}

/// A secret as it may be stored and shown: its first 4 characters, then `…`.
pub fn mask_secret(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}…")
}
