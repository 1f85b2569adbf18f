//! The exit codes `supervise` promises to scripts (SPEC "Operator CLI"), and how an error
//! becomes one line on stderr.

use std::io;

use supervise_store::StoreError;

/// The command did what was asked (a broken pipe on stdout also ends here: the reader
/// stopped listening, which is not a failure).
pub const SUCCESS: u8 = 0;
/// Refused: unknown id, already decided, invalid change, unknown bottle or grant, no
/// database at the path, the database busy. Nothing was changed; stderr says why.
pub const REFUSED: u8 = 1;
/// Usage: unknown command or flag, a missing or malformed argument (including a `--change`
/// that is not a JSON object and a `--for` that is not a duration). clap reports these.
pub const USAGE: u8 = 2;

/// A usage problem found after parsing (no operator name to record): `main` prints it and
/// exits [`USAGE`].
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// `check` found the answer is no: it has printed why on stdout, so `main` exits
/// [`REFUSED`] without an `error:` line.
#[derive(Debug)]
pub struct NotAllowed;

impl std::fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not allowed")
    }
}

impl std::error::Error for NotAllowed {}

/// Whether `err` is (or was caused by) writing to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The one line printed on stderr for a refusal: the context chain joined with `: `,
/// with any store error worded for an operator.
pub fn message(err: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in err.chain() {
        let text = match cause.downcast_ref::<StoreError>() {
            Some(store) => store_message(store),
            None => cause.to_string(),
        };
        parts.push(text);
        // A store error is always the root; its own source is an implementation detail.
        if cause.downcast_ref::<StoreError>().is_some() {
            break;
        }
    }
    parts.join(": ").replace(['\n', '\r'], " ")
}

fn store_message(err: &StoreError) -> String {
    match err {
        StoreError::Missing(path) => format!(
            "no supervise database at {} (check --db, --db-file, SUPERVISE_DB or SUPERVISE_DB_FILE; `supervise bottle add` \
             or supervise-server creates one)",
            path.display()
        ),
        StoreError::Invalid { field, message } if field == "operator" || field == "bottles" => {
            format!("invalid {field}: {message}")
        }
        StoreError::Invalid { field, message } => format!("invalid change: {field} {message}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_found_through_context() {
        let err = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe)).context("print");
        assert!(is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }

    #[test]
    fn messages_are_one_line_and_name_the_field() {
        let err = anyhow::Error::new(StoreError::Invalid {
            field: "port".into(),
            message: "must be 1-65535, got 0".into(),
        })
        .context("cannot modify proposal x");
        assert_eq!(
            message(&err),
            "cannot modify proposal x: invalid change: port must be 1-65535, got 0"
        );
    }
}
